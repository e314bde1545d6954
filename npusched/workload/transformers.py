"""Transformer layers as tensor programs (:mod:`npusched.workload.tensor`): the builders behind
the zoo's BERT, ViT, GPT-2 and LLaMA entries (``tools/make_zoo.py``), usable at any size.

- :func:`encoder_layer`: multi-head self-attention and a two-layer MLP with LayerNorms, after the
  residuals (BERT, Devlin et al. 2019) or before them (``pre_norm``: ViT, Dosovitskiy et al.
  2021; GPT-2, Radford et al. 2019);
- :func:`llama_layer`: LLaMA-3's decoder layer (Grattafiori et al. 2024, Table 3 for 8B):
  RMSNorms, grouped-query attention (``kv_heads`` keys and values shared by ``heads //
  kv_heads`` query heads each, a dimension that broadcasts in the score matmul) and the SwiGLU
  MLP; with ``cache`` it is a decode step, one token against a KV cache of that length in DRAM.

How the heads run: the Q, K and V projections are GEMMs over the tokens; a reshape (a view)
splits their columns into heads and a transpose moves the heads in front of the tokens (data
movement, as ``torch.onnx.export`` writes it); the score matmul reads K transposed (a view);
the attention output goes back by a transpose and a reshape. Not modelled: the causal mask and
the rotary embedding (element-wise, a few passes over Q and K), dropout; the score's scaling is
one element-wise pass. The decode step's new K and V are computed and written, and attention
reads the cache of ``cache`` entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npusched.workload.tensor import Tensor, TensorOp, TensorProgram


@dataclass
class _Builder:
    """Collects tensors and ops; each method adds one op and returns its output's name."""

    name: str
    tensors: dict[str, Tensor] = field(default_factory=dict)
    ops: list[TensorOp] = field(default_factory=list)

    def tensor(self, name: str, dims: tuple[str, ...], shape: tuple[int, ...],
               role: str = "activation") -> str:  # fmt: skip
        self.tensors[name] = Tensor(name, dims, shape, role)
        return name

    def op(self, name: str, kind: str, inputs: tuple[str, ...], dims: tuple[str, ...],
           out: tuple[int, ...], **kw: Any) -> str:  # fmt: skip
        self.tensor(name, dims, out)
        self.ops.append(TensorOp(name, kind, inputs, name, **kw))
        return name

    def linear(self, name: str, x: str, n: int, bias: bool) -> str:
        t, k = self.tensors[x].shape
        w = self.tensor(f"{name}.w", ("in", "out"), (k, n), "weight")
        b = self.tensor(f"{name}.b", ("out",), (n,), "weight") if bias else ""
        return self.op(name, "gemm", (x, w), ("tokens", "features"), (t, n), bias=b)

    def norm(self, name: str, x: str, kind: str) -> str:
        d = self.tensors[x].shape[-1]
        params = [self.tensor(f"{name}.g", ("features",), (d,), "weight")]
        if kind == "layernorm":
            params.append(self.tensor(f"{name}.b", ("features",), (d,), "weight"))
        return self.op(name, kind, (x, *params), self.tensors[x].dims, self.tensors[x].shape)

    def eltwise(self, name: str, fn: str, *xs: str) -> str:
        return self.op(name, "eltwise", xs, self.tensors[xs[0]].dims, self.tensors[xs[0]].shape,
                       fn=fn)  # fmt: skip

    def heads(self, name: str, x: str, groups: int, per: int, dh: int) -> str:
        """``[T, groups·per·dh]`` → ``[groups, per, T, dh]``: a reshape (view), a transpose."""
        t = self.tensors[x].shape[0]
        v = self.op(f"{name}.split", "reshape", (x,), ("tokens", "kv_heads", "group", "dh"),
                    (t, groups, per, dh), shape=(t, groups, per, dh))  # fmt: skip
        return self.op(name, "transpose", (v,), ("kv_heads", "group", "tokens", "dh"),
                       (groups, per, t, dh), perm=(1, 2, 0, 3))  # fmt: skip

    def attention(self, name: str, q: str, k: str, v: str) -> str:
        """Softmax(q·kᵀ)·v per head, back to ``[T, heads·dh]``."""
        g, p, t, dh = self.tensors[q].shape
        keys = self.tensors[k].shape[2]
        s = self.op(f"{name}.scores", "matmul", (q, k), ("kv_heads", "group", "tokens", "keys"),
                    (g, p, t, keys), trans_b=True)  # fmt: skip
        s = self.eltwise(f"{name}.scale", "scale", s)
        a = self.op(f"{name}.softmax", "softmax", (s,), self.tensors[s].dims, (g, p, t, keys))
        y = self.op(f"{name}.pv", "matmul", (a, v), ("kv_heads", "group", "tokens", "dh"),
                    (g, p, t, dh))  # fmt: skip
        y = self.op(f"{name}.merge", "transpose", (y,), ("tokens", "kv_heads", "group", "dh"),
                    (t, g, p, dh), perm=(2, 0, 1, 3))  # fmt: skip
        return self.op(f"{name}.out", "reshape", (y,), ("tokens", "features"), (t, g * p * dh),
                       shape=(t, g * p * dh))  # fmt: skip

    def build(self, source: dict[str, Any]) -> TensorProgram:
        return TensorProgram(self.name, dict(self.tensors), tuple(self.ops), source)


def encoder_layer(name: str, tokens: int, d: int, heads: int, d_ff: int, *, pre_norm: bool = False,
                  source: dict[str, Any] | None = None) -> TensorProgram:  # fmt: skip
    """A transformer encoder (or GPT-2 decoder) layer: self-attention with ``heads`` heads of
    ``d // heads``, an MLP of ``d_ff`` with GELU, biases everywhere, LayerNorms after the
    residuals or, with ``pre_norm``, before the attention and the MLP."""
    b = _Builder(name)
    x = b.tensor("x", ("tokens", "features"), (tokens, d), "input")
    dh = d // heads
    h = b.norm("ln1", x, "layernorm") if pre_norm else x
    q, k, v = (b.heads(f"{z}h", b.linear(z, h, d, True), heads, 1, dh) for z in "qkv")
    y = b.linear("o", b.attention("attn", q, k, v), d, True)
    r = b.eltwise("res1", "add", x, y)
    r = r if pre_norm else b.norm("ln1", r, "layernorm")
    h = b.norm("ln2", r, "layernorm") if pre_norm else r
    f = b.linear("fc2", b.eltwise("gelu", "gelu", b.linear("fc1", h, d_ff, True)), d, True)
    out = b.eltwise("res2", "add", r, f)
    if not pre_norm:
        b.norm("ln2", out, "layernorm")
    return b.build(source or {})


def llama_layer(name: str, tokens: int, *, d: int = 4096, heads: int = 32, kv_heads: int = 8,
                d_ff: int = 14336, cache: int = 0,
                source: dict[str, Any] | None = None) -> TensorProgram:  # fmt: skip
    """A LLaMA-3 decoder layer (module docstring) at ``tokens`` tokens of prefill, or with
    ``cache`` > 0 a decode step (``tokens`` new tokens against a KV cache of ``cache``); the
    defaults are LLaMA-3-8B's."""
    b = _Builder(name)
    x = b.tensor("x", ("tokens", "features"), (tokens, d), "input")
    dh, per = d // heads, heads // kv_heads
    h = b.norm("attn_norm", x, "rmsnorm")
    q = b.heads("qh", b.linear("q", h, d, False), kv_heads, per, dh)
    k = b.heads("kh", b.linear("k", h, kv_heads * dh, False), kv_heads, 1, dh)
    v = b.heads("vh", b.linear("v", h, kv_heads * dh, False), kv_heads, 1, dh)
    if cache:  # attention reads the cache; the new K and V are written to it
        k = b.tensor("k_cache", ("kv_heads", "group", "keys", "dh"), (kv_heads, 1, cache, dh),
                     "cache")  # fmt: skip
        v = b.tensor("v_cache", ("kv_heads", "group", "keys", "dh"), (kv_heads, 1, cache, dh),
                     "cache")  # fmt: skip
    y = b.linear("o", b.attention("attn", q, k, v), d, False)
    r = b.eltwise("res1", "add", x, y)
    h = b.norm("mlp_norm", r, "rmsnorm")
    gate = b.eltwise("silu", "silu", b.linear("gate", h, d_ff, False))
    m = b.eltwise("swiglu", "mul", gate, b.linear("up", h, d_ff, False))
    b.eltwise("res2", "add", r, b.linear("down", m, d, False))
    return b.build(source or {})
