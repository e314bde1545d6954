"""Tensor programs: the workload model of transformers (attention, GEMM, SwiGLU, norms), beside
the CNN layers of :mod:`npusched.workload.network` and not a special case of them.

A :class:`TensorProgram` is a DAG of :class:`TensorOp` over :class:`Tensor` of any rank, each
dimension named (``tokens``, ``heads``, ``features``, …). A tensor is an ``input`` (the
program's activations from outside), a ``weight`` (a parameter, in DRAM), a ``cache`` (a KV
cache, a DRAM operand that is not a parameter: decode reads one of length L) or an
``activation`` that an op produces. The operators (:data:`KINDS`):

- ``gemm``: ``A[..., M, K] · B[K, N]`` with ``B`` a weight (a linear layer), optional bias;
- ``matmul``: ``A[..., M, K] · B[..., K, N]`` of two activations or an activation and a cache
  (Q·Kᵀ, P·V), batch dimensions broadcast as numpy's ``matmul``; ``trans_b`` reads ``B`` as
  ``[..., N, K]``, a view (the transpose before it costs nothing);
- ``eltwise``: ``fn`` (``silu``, ``gelu``, ``exp``, ``relu``, ``mul``, ``add``, …) of one or two
  activations, broadcast as numpy does;
- ``softmax``, ``layernorm``, ``rmsnorm`` over the last dimension: a reduction pass and then an
  element-wise pass (:data:`PASSES`); the norms' scale (and LayerNorm's bias) are parameters;
- ``transpose`` (``perm``) and ``reshape`` (``shape``), and ``slice`` (``shape`` from
  ``offset``: one output of a ``Split``): a reshape and a slice are views of row-major data,
  and so is a transpose of the last two dimensions that only ``matmul``/``gemm`` read as
  their second operand (the importers fold it into ``trans_b``); any other transpose moves
  data (:meth:`TensorProgram.is_view`).

Counts, per op and in total, all exact from the shapes: MACs (``gemm``, ``matmul``), element
operations of the other ops (output elements × passes), parameters, and bytes (every operand
read once and the output written once, at ``bits`` per element; views move nothing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

FORMAT = "npusched/tensor-program/v1"
ROLES = ("input", "weight", "cache", "activation")
KINDS = ("gemm", "matmul", "eltwise", "softmax", "layernorm", "rmsnorm", "transpose", "reshape",
         "slice")
UNARY = ("silu", "gelu", "exp", "relu", "sigmoid", "tanh", "erf", "sqrt", "identity", "scale")
BINARY = ("mul", "add", "sub", "div")
PASSES = {"eltwise": 1, "softmax": 2, "layernorm": 2, "rmsnorm": 2, "transpose": 1,
          "reshape": 1, "slice": 1}  # fmt: skip
"""Passes over the data of the ops without MACs: a normalisation reads its row once to reduce
it and once more to scale it."""


@dataclass(frozen=True)
class Tensor:
    """A tensor: ``dims`` names its dimensions, ``shape`` their sizes, ``role`` one of
    :data:`ROLES`."""

    name: str
    dims: tuple[str, ...]
    shape: tuple[int, ...]
    role: str = "activation"

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"tensor {self.name}: role is one of {', '.join(ROLES)}")
        if len(self.dims) != len(self.shape) or min(self.shape, default=1) < 1:
            raise ValueError(f"tensor {self.name}: one positive size per named dimension, "
                             f"got {self.dims} {self.shape}")  # fmt: skip

    @property
    def elements(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)


@dataclass(frozen=True)
class TensorOp:
    """One operator (module docstring): ``inputs`` and ``output`` are tensor names; ``fn`` the
    element-wise function, ``perm`` a transpose's order, ``shape`` a reshape's target,
    ``trans_b`` a matmul's transposed second operand, ``bias`` a gemm's bias tensor, ``offset``
    a slice's first index in each dimension (its ``shape`` the output's)."""

    name: str
    kind: str
    inputs: tuple[str, ...]
    output: str
    fn: str = ""
    perm: tuple[int, ...] = ()
    shape: tuple[int, ...] = ()
    trans_b: bool = False
    bias: str = ""
    offset: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"op {self.name}: kind is one of {', '.join(KINDS)}")
        arity = {"gemm": 2, "matmul": 2}.get(self.kind, 1)
        if self.kind == "eltwise":
            if self.fn not in UNARY + BINARY:
                raise ValueError(f"op {self.name}: fn is one of {', '.join(UNARY + BINARY)}")
            arity = 2 if self.fn in BINARY else 1
        if self.kind in ("layernorm", "rmsnorm"):
            if not 2 <= len(self.inputs) <= 3:
                raise ValueError(f"op {self.name}: a norm takes its input and 1 or 2 parameters")
            arity = len(self.inputs)
        if len(self.inputs) != arity:
            raise ValueError(f"op {self.name}: {self.kind} {self.fn} takes {arity} inputs, "
                             f"got {len(self.inputs)}")  # fmt: skip


def _broadcast(a: tuple[int, ...], b: tuple[int, ...], what: str) -> tuple[int, ...]:
    out = []
    for x, y in zip(reversed((1,) * (len(b) - len(a)) + a), reversed((1,) * (len(a) - len(b))
                                                                      + b), strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError(f"{what}: shapes {a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(reversed(out))


@dataclass(frozen=True, eq=False)
class TensorProgram:
    """Tensors and the ops in topological order; every op's output is inferred from its inputs
    and must match the tensor declared under its name (dimension names are the declaration's)."""

    name: str
    tensors: dict[str, Tensor]
    ops: tuple[TensorOp, ...]
    source: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        known = {k for k, t in self.tensors.items() if t.role != "activation"}
        seen: set[str] = set()
        for op in self.ops:
            if op.name in seen:
                raise ValueError(f"duplicate op name {op.name!r}")
            seen.add(op.name)
            for x in (*op.inputs, *([op.bias] if op.bias else [])):
                if x not in known:
                    raise ValueError(f"op {op.name}: input {x!r} is not an earlier tensor")
            out = self.tensors.get(op.output)
            if out is None or out.role != "activation" or op.output in known:
                raise ValueError(f"op {op.name}: output {op.output!r} is not a new activation")
            got = self.infer(op)
            if got != out.shape:
                raise ValueError(f"op {op.name}: output shape {got}, declared {out.shape}")
            known.add(op.output)

    # --- shapes ---------------------------------------------------------------------------

    def infer(self, op: TensorOp) -> tuple[int, ...]:
        """The output shape of ``op`` from its inputs' shapes."""
        s = [self.tensors[x].shape for x in op.inputs]
        what = f"op {op.name}"
        if op.kind in ("gemm", "matmul"):
            a, b = s
            if op.kind == "gemm" and (self.tensors[op.inputs[1]].role != "weight" or len(b) != 2):
                raise ValueError(f"{what}: a gemm's second operand is a 2-d weight")
            b = b[:-2] + (b[-1], b[-2]) if op.trans_b else b
            if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
                raise ValueError(f"{what}: inner dimensions {a} · {b} differ")
            if op.bias and self.tensors[op.bias].shape != (b[-1],):
                raise ValueError(f"{what}: bias shape {self.tensors[op.bias].shape} ≠ ({b[-1]},)")
            return _broadcast(a[:-2], b[:-2], what) + (a[-2], b[-1])
        if op.kind == "eltwise":
            return s[0] if len(s) == 1 else _broadcast(s[0], s[1], what)
        if op.kind in ("layernorm", "rmsnorm"):
            for p in op.inputs[1:]:
                if self.tensors[p].shape != (s[0][-1],):
                    raise ValueError(f"{what}: a norm's parameters have the last dimension")
            return s[0]
        if op.kind == "transpose":
            if sorted(op.perm) != list(range(len(s[0]))):
                raise ValueError(f"{what}: perm {op.perm} does not order {len(s[0])} dimensions")
            return tuple(s[0][p] for p in op.perm)
        if op.kind == "reshape":
            if math.prod(op.shape) != math.prod(s[0]):
                raise ValueError(f"{what}: reshape {s[0]} to {op.shape} changes the size")
            return op.shape
        if op.kind == "slice":
            if len(op.offset) != len(s[0]) or len(op.shape) != len(s[0]) or any(
                    o < 0 or o + n > d for o, n, d in zip(op.offset, op.shape, s[0], strict=True)):
                raise ValueError(f"{what}: slice {op.shape} at {op.offset} is not inside {s[0]}")
            return op.shape
        return s[0]  # softmax

    # --- counts ---------------------------------------------------------------------------

    def consumers(self) -> dict[str, list[TensorOp]]:
        """Tensor name → the ops that read it."""
        out: dict[str, list[TensorOp]] = {k: [] for k in self.tensors}
        for op in self.ops:
            for x in op.inputs:
                out[x].append(op)
        return out

    def is_view(self, op: TensorOp) -> bool:
        """Whether ``op`` moves no data: a reshape, or a transpose of the last two dimensions
        that only ``gemm``/``matmul`` read as their second operand (they read it transposed)."""
        if op.kind in ("reshape", "slice"):
            return True
        if op.kind != "transpose":
            return False
        n = len(op.perm)
        swap = n >= 2 and op.perm == (*range(n - 2), n - 1, n - 2)
        readers = self.consumers()[op.output]
        return swap and bool(readers) and all(
            r.kind in ("gemm", "matmul") and r.inputs[1] == op.output for r in readers)

    def macs(self, op: TensorOp | None = None) -> int:
        """MACs of ``op`` (``gemm``, ``matmul``: output elements × the inner dimension), or of
        the program."""
        if op is None:
            return sum(self.macs(o) for o in self.ops)
        if op.kind not in ("gemm", "matmul"):
            return 0
        return self.tensors[op.output].elements * self.tensors[op.inputs[0]].shape[-1]

    def operations(self, op: TensorOp) -> int:
        """Element operations of an op without MACs: output elements × :data:`PASSES` (0 for a
        view and for ``gemm``/``matmul``)."""
        if op.kind in ("gemm", "matmul") or self.is_view(op):
            return 0
        return self.tensors[op.output].elements * PASSES[op.kind]

    def params(self, op: TensorOp | None = None) -> int:
        """Parameters (weights and biases, norm scales and biases) of ``op`` or the program."""
        if op is None:
            return sum(t.elements for t in self.tensors.values() if t.role == "weight")
        names = [x for x in (*op.inputs, op.bias) if x and self.tensors[x].role == "weight"]
        return sum(self.tensors[x].elements for x in names)

    def bytes(self, op: TensorOp, bits: int = 8) -> int:
        """Bytes ``op`` moves: each operand read once, the output written once (0 for a
        view)."""
        if self.is_view(op):
            return 0
        names = [*op.inputs, *([op.bias] if op.bias else []), op.output]
        return sum(self.tensors[x].elements for x in names) * bits // 8

    def gemm_networks(self) -> list[Any]:
        """Each ``gemm`` and ``matmul`` as a one-layer CNN for the per-layer searches (Flexer's
        OoO scheduler, TSO's tile sizes): a 1 × 1 convolution of ``N`` outputs over ``K``
        inputs at ``M`` positions of one row (input ``(K, 1, M)``), the same loop nest and MACs
        per head; a batched matmul is that layer once per head (its ``source["repeat"]``: the
        product of the batch dimensions), whose second operand the layer reads as weights."""
        from npusched.workload.layers import INPUT, Layer
        from npusched.workload.network import Network

        out = []
        for op in self.ops:
            if op.kind not in ("gemm", "matmul"):
                continue
            shape = self.tensors[op.output].shape
            k = self.tensors[op.inputs[0]].shape[-1]
            layer = Layer(op.name, "conv", (INPUT,), out_channels=shape[-1], bias=bool(op.bias))
            out.append(Network(f"{self.name}.{op.name}", (k, 1, shape[-2]), (layer,),
                               {"program": self.name, "op": op.name, "kind": op.kind,
                                "repeat": math.prod(shape[:-2])}))  # fmt: skip
        return out

    # --- JSON -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The program as ``npusched/tensor-program/v1`` JSON."""
        def op_dict(op: TensorOp) -> dict[str, Any]:
            d: dict[str, Any] = {"name": op.name, "kind": op.kind, "inputs": list(op.inputs),
                                 "output": op.output}  # fmt: skip
            for key, default in (("fn", ""), ("perm", ()), ("shape", ()), ("trans_b", False),
                                 ("bias", ""), ("offset", ())):  # fmt: skip
                v = getattr(op, key)
                if v != default:
                    d[key] = list(v) if isinstance(v, tuple) else v
            return d

        return {
            "format": FORMAT, "name": self.name, "source": self.source,
            "tensors": [{"name": t.name, "dims": list(t.dims), "shape": list(t.shape),
                         "role": t.role} for t in self.tensors.values()],
            "ops": [op_dict(op) for op in self.ops],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TensorProgram:
        """The program of :meth:`to_dict`'s form (``ValueError`` on an inconsistent one)."""
        tensors = {t["name"]: Tensor(t["name"], tuple(t["dims"]), tuple(t["shape"]), t["role"])
                   for t in data["tensors"]}  # fmt: skip
        ops = tuple(TensorOp(**{k: tuple(v) if isinstance(v, list) else v  # type: ignore[arg-type]
                                for k, v in o.items()}) for o in data["ops"])  # fmt: skip
        return cls(data["name"], tensors, ops, dict(data.get("source", {})))
