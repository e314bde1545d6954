"""State of one ONNX import (:mod:`npusched.io.onnx_import`): the activations, constants and
layers found so far, and the helpers that check a node and map its output."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, NoReturn

import numpy as np
import onnx

from npusched.common.errors import InputError
from npusched.workload.layers import INPUT, Layer, Shape

Dims = tuple[int | None, ...]


@dataclass(frozen=True)
class Act:
    """An activation tensor: the output of layer ``src`` (or the input), whose (C, H, W) is
    ``shape``, seen as ``[1, C, H, W]`` (``rank`` 4) or flattened ``[1, C·H·W]`` (``rank`` 2).
    ``raw``: still the layer's own output, read by nothing else, so a bias or batch norm on it
    folds into the layer."""

    src: str
    shape: Shape
    rank: int
    raw: bool


class ImportState:
    """What one import has seen so far, and the helpers every node handler uses."""

    def __init__(self, model: onnx.ModelProto, path: str) -> None:
        self.model = model
        self.path = path
        self.graph = model.graph
        self.consts: dict[str, np.ndarray] = {}
        self.dims: dict[str, Dims] = {}
        self.values: dict[str, Act] = {}
        self.layers: list[Layer] = []
        self.pos: dict[str, int] = {}
        self.names: set[str] = {INPUT}
        self.absorbed: Counter[str] = Counter()
        self.folded_bn = 0
        self.unfolded_bn: list[str] = []
        self.consumers: Counter[str] = Counter(
            t for node in self.graph.node for t in node.input if t
        )
        self.outputs = {o.name for o in self.graph.output}

    # ---- helpers ------------------------------------------------------------------------------

    def fail(self, node: onnx.NodeProto, reason: str) -> NoReturn:
        label = node.name or (node.output[0] if node.output else "?")
        raise InputError(self.path, f"node {label} ({node.op_type})", reason)

    def act(self, node: onnx.NodeProto, tensor: str, rank: int | None = None) -> Act:
        """The activation ``tensor`` (of the given rank, if any) read by ``node``."""
        if tensor in self.values:
            a = self.values[tensor]
            if rank is not None and a.rank != rank:
                want = "[1, C, H, W]" if rank == 4 else "a flattened [1, N]"
                self.fail(node, f"input {tensor!r} must be {want} activation, got rank {a.rank}")
            return a
        if tensor in self.consts:
            self.fail(node, f"input {tensor!r} is a constant; an activation is needed")
        self.fail(node, f"input {tensor!r} is not produced by an earlier node")

    def shape_of(self, node: onnx.NodeProto, tensor: str) -> tuple[int, ...]:
        """Static shape of a weight tensor (constant, or graph input with a known shape)."""
        if tensor in self.consts:
            return tuple(int(d) for d in self.consts[tensor].shape)
        dims = self.dims.get(tensor)
        if dims is None or any(d is None for d in dims):
            self.fail(node, f"weight {tensor!r} has no static shape")
        return tuple(int(d) for d in dims if d is not None)

    def exclusive(self, tensor: str) -> bool:
        """``tensor`` is read by exactly one node and is not a graph output."""
        return self.consumers[tensor] == 1 and tensor not in self.outputs

    def unique_name(self, node: onnx.NodeProto) -> str:
        raw = node.name or (node.output[0] if node.output else "")
        base = re.sub(r"[^A-Za-z0-9_.-]+", "_", raw).strip("_") or node.op_type.lower()
        name, k = base, 2
        while name in self.names:
            name, k = f"{base}_{k}", k + 1
        self.names.add(name)
        return name

    def add_layer(self, node: onnx.NodeProto, op: str, inputs: list[Act], **kw: Any) -> None:
        """Append a layer for ``node``, check its shape against ONNX's and map its output."""
        name = self.unique_name(node)
        try:
            layer = Layer(name, op, tuple(a.src for a in inputs), **kw)
            shape = layer.output_shape([a.shape for a in inputs])
        except ValueError as err:
            self.fail(node, str(err))
        rank = 2 if op == "fc" else 4
        expect = (1, *shape) if rank == 4 else (1, shape[0])
        out = node.output[0]
        dims = self.dims.get(out)
        if dims is not None and dims != expect:
            self.fail(
                node, f"ONNX infers output shape {list(dims)}, the layer model {list(expect)}"
            )
        self.pos[name] = len(self.layers)
        self.layers.append(layer)
        self.values[out] = Act(name, shape, rank, raw=op in ("conv", "fc") and self.exclusive(out))

    def absorb(self, node: onnx.NodeProto, a: Act, keep_raw: bool = False) -> None:
        """Map ``node``'s first output onto ``a``'s layer (no layer of its own)."""
        self.absorbed[node.op_type] += 1
        raw = keep_raw and a.raw and self.exclusive(node.output[0])
        self.values[node.output[0]] = replace(a, raw=raw)

    def layer_width(self, a: Act) -> int:
        """Size of ``a``'s axis 1: channels (rank 4) or features (rank 2)."""
        c, h, w = a.shape
        return c if a.rank == 4 else c * h * w

    def fold_bias(self, a: Act) -> None:
        k = self.pos[a.src]
        self.layers[k] = replace(self.layers[k], bias=True)

    def pads(
        self,
        node: onnx.NodeProto,
        attrs: dict[str, Any],
        hw: tuple[int, int],
        kernel: tuple[int, int],
        stride: tuple[int, int],
        dilation: tuple[int, int],
    ) -> tuple[int, int, int, int]:
        """Explicit ``(top, bottom, left, right)`` from ``pads`` or ``auto_pad``."""
        auto = attrs.get("auto_pad", "NOTSET")
        if auto == "NOTSET":
            p = [int(v) for v in attrs.get("pads", [0, 0, 0, 0])]
            if len(p) != 4 or min(p) < 0:
                self.fail(node, f"pads {p} must be four non-negative numbers")
            return (p[0], p[2], p[1], p[3])  # ONNX: [top, left, bottom, right]
        if auto == "VALID":
            return (0, 0, 0, 0)
        if auto not in ("SAME_UPPER", "SAME_LOWER"):
            self.fail(node, f"unknown auto_pad {auto!r}")
        out: list[int] = []
        for n, r, s, d in zip(hw, kernel, stride, dilation, strict=True):
            total = max(0, (-(-n // s) - 1) * s + d * (r - 1) + 1 - n)
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            out += [lo, total - lo]
        return (out[0], out[1], out[2], out[3])
