"""State of one ONNX import (:mod:`npusched.io.onnx_import`): the activations, constants and
layers found so far, and the helpers that check a node and map its output.

Constants are known by their shape; a constant's value is read only when asked for
(:meth:`ImportState.value`), so weights stored as external data are never read."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, NoReturn

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

from npusched.common.errors import InputError
from npusched.workload.layers import INPUT, Layer, Shape

Dims = tuple[int | None, ...]

NUMPY_BINARY = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.divide,
    "Pow": np.power,
}
"""Element-wise arithmetic on constants (folded with numpy)."""


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

    def __init__(self, model: onnx.ModelProto, path: str, base_dir: str | None) -> None:
        self.model = model
        self.path = path
        self.base_dir = base_dir
        self.graph = model.graph
        self.consts: dict[str, tuple[int, ...]] = {}  # shape of every constant tensor
        self.const_values: dict[str, np.ndarray] = {}  # values read or computed so far
        self.const_tensors: dict[str, onnx.TensorProto] = {}  # initializers, Constant tensors
        self.const_nodes: dict[str, onnx.NodeProto] = {}  # arithmetic on constants, not yet done
        self.external_files: list[str] = []  # external data files the model refers to
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
        """Raise the import's error for ``node``: an :class:`~npusched.common.errors.InputError`
        naming the file, the node (``node NAME (OpType)``, its first output's name when it has none)
        and ``reason``.

        Raises
        ------
        InputError
            Always.
        """
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

    def add_const(self, name: str, tensor: onnx.TensorProto) -> None:
        """Record the constant ``name`` held by ``tensor`` (by its dims; its value unread)."""
        self.consts[name] = tuple(int(d) for d in tensor.dims)
        self.const_tensors[name] = tensor

    def set_const(self, name: str, value: np.ndarray) -> None:
        """Record the constant ``name`` with its ``value`` known (a ``Constant`` node's ``value_*``
        attribute): its shape, and the value :meth:`value` returns."""
        self.consts[name] = tuple(int(d) for d in value.shape)
        self.const_values[name] = value

    def value(self, node: onnx.NodeProto, name: str) -> np.ndarray:
        """The value of the constant ``name`` read by ``node``: arithmetic on constants is done
        now, a tensor stored as external data is read now (beside the model)."""
        if name not in self.const_values:
            src = self.const_nodes.get(name)
            if src is not None:
                args = [self.value(src, t) for t in src.input if t]
                op = NUMPY_BINARY.get(src.op_type)
                self.const_values[name] = op(args[0], args[1]) if op else args[0]
            else:
                tensor = self.const_tensors[name]
                if uses_external_data(tensor):
                    try:
                        load_external(tensor, self.base_dir)
                    except ValueError as err:
                        self.fail(node, f"needs the value of {name!r}, {err}")
                self.const_values[name] = numpy_helper.to_array(tensor)
        return self.const_values[name]

    def shape_of(self, node: onnx.NodeProto, tensor: str) -> tuple[int, ...]:
        """Static shape of a weight tensor (constant, or graph input with a known shape)."""
        if tensor in self.consts:
            return self.consts[tensor]
        dims = self.dims.get(tensor)
        if dims is None or any(d is None for d in dims):
            self.fail(node, f"weight {tensor!r} has no static shape")
        return tuple(int(d) for d in dims if d is not None)

    def exclusive(self, tensor: str) -> bool:
        """``tensor`` is read by exactly one node and is not a graph output."""
        return self.consumers[tensor] == 1 and tensor not in self.outputs

    def unique_name(self, node: onnx.NodeProto) -> str:
        """The layer name of ``node``: its name (or first output's name; its operator's, lower case,
        when neither gives one) with every run of characters outside ``[A-Za-z0-9_.-]`` replaced by
        ``_`` and leading or trailing ``_`` dropped, made unique with a ``_2``, ``_3``, ... suffix.
        The name is reserved from then on (``input`` is from the start)."""
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
        """Fold a bias (or batch normalization) into the layer that produced ``a``: that layer gets
        ``bias=True``."""
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


def external_location(tensor: onnx.TensorProto) -> str:
    """The file (relative to the model's folder) holding ``tensor``'s external data."""
    return next((e.value for e in tensor.external_data if e.key == "location"), "")


def load_external(tensor: onnx.TensorProto, base_dir: str | None) -> None:
    """Read ``tensor``'s external data into it (in place) from its file in ``base_dir``
    (``None``: a model given in memory, whose external files cannot be located).

    Raises
    ------
    ValueError
        The file is missing or unreadable; the message completes "needs the value of NAME, ...".
    """
    location = external_location(tensor)
    where = f"stored in the external data file {location!r}"
    if base_dir is None:
        raise ValueError(f"{where}, which cannot be located for a model given in memory")
    if not os.path.isfile(os.path.join(base_dir or ".", location)):
        raise ValueError(
            f"{where}, which is missing beside the model (without it only the weights' shapes "
            "can be read)"
        )
    try:
        load_external_data_for_tensor(tensor, base_dir)
    except Exception as err:  # truncated file, a location outside base_dir, ...
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"{where}, which cannot be read: {first}") from None


def load_model(path: str) -> onnx.ModelProto:
    """An ONNX file without its external data (weights: dims only); an unreadable or empty one
    raises :class:`InputError` naming the file."""
    try:
        model = onnx.load(path, load_external_data=False)
    except OSError as err:
        raise InputError(path, "(file)", err.strerror or str(err)) from None
    except Exception as err:  # protobuf DecodeError and friends
        raise InputError(path, "(file)", f"not a readable ONNX model: {err}") from None
    if not model.graph.node:
        raise InputError(path, "graph", "no nodes (empty or not an ONNX model)")
    return model


SUB_BYTE = {onnx.TensorProto.INT4: 4, onnx.TensorProto.UINT4: 4}
"""Element types narrower than the one byte numpy stores them in: their bits."""


def element_bits(model: onnx.ModelProto) -> int | None:
    """Bits of one element of the graph's first non-constant input (else its first
    initializer): the type the workload computes in, as Stream 2.1.1 prices every operand
    (``stream/stages/estimation/zigzag_cost_estimator.py``, ``create_operand_precision``);
    ``None`` where the graph declares no typed tensor."""
    inits = {t.name for t in model.graph.initializer}
    types = [i.type.tensor_type.elem_type for i in model.graph.input if i.name not in inits]
    types += [t.data_type for t in model.graph.initializer]
    for t in types:
        if t:
            return SUB_BYTE.get(t) or onnx.helper.tensor_dtype_to_np_dtype(t).itemsize * 8
    return None
