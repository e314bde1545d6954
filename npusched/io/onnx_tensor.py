"""ONNX import of tensor programs (:class:`~npusched.workload.tensor.TensorProgram`): the
transformer graphs of ``torch.onnx.export`` and Stream's workloads (``attention_head.onnx``,
``swiglu_*.onnx``), which the CNN importer (:mod:`npusched.io.onnx_import`) does not take.

:func:`read_workload_onnx` is the one entry for ONNX files: a graph with one non-constant input
of shape ``[1, C, H, W]`` is a CNN (:func:`~npusched.io.onnx_import.read_onnx`); any other is a
tensor program, read here. Weights are never read, only their dims (initializers declared
without data import as well).

**Roles.** An initializer is a ``weight``. A graph input that is read only as the second operand
of ``MatMul``/``Gemm`` and has rank 2 is a weight given as an input (``attention_head.onnx``'s
``wQ``, ``wK``, ``wV``); every other graph input is an ``input``.

==========================================  ======================================================
ONNX                                        tensor op
==========================================  ======================================================
``MatMul``, ``Gemm``                        ``gemm`` where the second operand is a 2-d weight,
                                            else ``matmul``; ``Gemm``'s ``transB`` on a weight
                                            reads it transposed, its ``C`` is the bias
``Transpose`` of the last two dimensions    folded into the ``matmul`` reading it (``trans_b``)
only read as a matmul's second operand
other ``Transpose``, ``Reshape``            ``transpose``, ``reshape``
``Softmax`` over the last axis              ``softmax``
``LayerNormalization``,                     ``layernorm``, ``rmsnorm`` over the last axis
``RMSNormalization``,
``SimplifiedLayerNormalization``
``Silu``, ``Gelu``, ``Relu``, ``Exp``,      ``eltwise`` of one activation
``Sigmoid``, ``Tanh``, ``Erf``, ``Sqrt``
``Mul``, ``Add``, ``Sub``, ``Div``,         ``eltwise`` of two activations; by a constant:
``Pow``                                     ``eltwise`` ``scale``
``Split``                                   one ``slice`` (a view) per output
``Identity``                                nothing: its output is its input (of a weight: a
                                            weight of its own, as the exporter deduplicated
                                            two equal parameters)
==========================================  ======================================================

Dimension names: a graph input's ``dim_param`` where it has one; otherwise the last two
dimensions of an activation are ``tokens`` and ``features`` (``batch``, ``heads`` … before
them), and a weight's are ``in`` and ``out``. Every failure is an
:class:`~npusched.common.errors.InputError` naming the file, the node and the reason.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import onnx
from onnx import helper

from npusched.common.errors import InputError
from npusched.io.onnx_state import element_bits, load_model
from npusched.workload.tensor import Tensor, TensorOp, TensorProgram

UNARY = {"Silu": "silu", "Gelu": "gelu", "Relu": "relu", "Exp": "exp", "Sigmoid": "sigmoid",
         "Tanh": "tanh", "Erf": "erf", "Sqrt": "sqrt"}  # fmt: skip
BINARY = {"Mul": "mul", "Add": "add", "Sub": "sub", "Div": "div", "Pow": "mul"}
NORMS = {"LayerNormalization": "layernorm", "RMSNormalization": "rmsnorm",
         "SimplifiedLayerNormalization": "rmsnorm"}  # fmt: skip
LEADING = ("batch", "heads", "group")
SUPPORTED = tuple(sorted({"MatMul", "Gemm", "Transpose", "Reshape", "Softmax", "Split",
                          "Identity", "Constant", *UNARY, *BINARY, *NORMS}))  # fmt: skip
"""ONNX operators a tensor program is read from (the module docstring's table)."""


def _dims(vi: Any) -> list[int | str]:
    return [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]


def is_cnn(model: onnx.ModelProto) -> bool:
    """Whether ``model`` has one non-constant input of rank 4 (a CNN's ``[1, C, H, W]``)."""
    inits = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    return len(inputs) == 1 and len(_dims(inputs[0])) == 4


def read_workload_onnx(path: str | os.PathLike[str], name: str | None = None,
                       dims: dict[str, int] | None = None) -> Any:  # fmt: skip
    """An ONNX file as a CNN :class:`~npusched.workload.network.Network` or a
    :class:`~npusched.workload.tensor.TensorProgram` (module docstring); ``dims`` gives the
    graph inputs' symbolic dimensions their values (:func:`set_dims`, ``--dim NAME=N``)."""
    path = str(path)
    model = load_model(path)
    set_dims(model, path, dims or {})
    if is_cnn(model):
        from npusched.io.onnx_import import read_onnx

        return read_onnx(path, name)
    return read_tensor_onnx(model, path, name or Path(path).stem)


def set_dims(model: onnx.ModelProto, path: str, dims: dict[str, int]) -> None:
    """Give each graph input's symbolic dimension (``dim_param``) named in ``dims`` its value;
    a name no input has, or a value below 1, is an :class:`InputError`."""
    found: set[str] = set()
    for vi in model.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param in dims:
                found.add(d.dim_param)
                d.dim_value = dims[d.dim_param]
    for key, value in dims.items():
        if key not in found:
            raise InputError(path, f"--dim {key}", "no graph input has a dimension of that name")
        if value < 1:
            raise InputError(path, f"--dim {key}", f"a dimension needs a size >= 1, got {value}")


def _names(rank: int, role: str) -> tuple[str, ...]:
    if role == "weight" and rank == 2:
        return ("in", "out")
    tail = ("tokens", "features")[-rank:] if rank else ()
    head = [LEADING[k] if k < len(LEADING) else f"d{k}" for k in range(rank - len(tail))]
    return (*head, *tail)


def read_tensor_onnx(model: onnx.ModelProto, path: str, name: str) -> TensorProgram:
    """The tensor program of ``model`` (module docstring)."""
    try:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    except Exception as err:
        reason = (str(err).strip().splitlines() or [type(err).__name__])[-1]
        raise InputError(path, "(shape inference)", reason) from None
    g = model.graph
    shapes: dict[str, tuple[int, ...]] = {t.name: tuple(t.dims) for t in g.initializer}
    consts = {t.name: t for t in g.initializer}
    for vi in [*g.input, *g.value_info, *g.output]:
        dims = _dims(vi)
        if vi.name not in shapes and dims:
            free = [d for d in dims if not isinstance(d, int)]
            if free:
                raise InputError(path, f"graph.input {vi.name}",
                                 f"dimension {free[0]!r} of {dims} has no value; give it one "
                                 f"with --dim {free[0]}=N")  # fmt: skip
            if any(int(d) < 1 for d in dims):
                raise InputError(path, f"graph.input {vi.name}", f"zero size in {dims}")
            shapes[vi.name] = tuple(int(d) for d in dims)
    for node in g.node:  # Constant nodes: values
        if node.op_type == "Constant":
            consts[node.output[0]] = helper.get_attribute_value(node.attribute[0])
    readers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in g.node:
        for k, x in enumerate(node.input):
            readers.setdefault(x, []).append((node, k))
    tensors: dict[str, Tensor] = {}
    for vi in g.input:
        if vi.name in consts:
            continue
        if vi.name not in shapes:
            raise InputError(path, f"graph.input {vi.name}",
                             "no tensor shape (a tensor program needs every input's dimensions)")
        uses = readers.get(vi.name, [])
        weight = bool(uses) and len(shapes[vi.name]) == 2 and all(
            n.op_type in ("MatMul", "Gemm") and k == 1 for n, k in uses)
        role = "weight" if weight else "input"
        named = [d.dim_param or n for d, n in zip(vi.type.tensor_type.shape.dim,
                                                  _names(len(shapes[vi.name]), role), strict=True)]
        tensors[vi.name] = Tensor(vi.name, tuple(named), shapes[vi.name], role)
    for t in g.initializer:
        if len(t.dims) >= 1 and any(n.op_type not in ("Reshape",) for n, _ in
                                    readers.get(t.name, [])):  # fmt: skip
            tensors[t.name] = Tensor(t.name, _names(len(t.dims), "weight"), tuple(t.dims),
                                     "weight")  # fmt: skip
    ops = _Ops(path, shapes, consts, tensors, readers)
    for node in g.node:
        ops.add(node)
    try:
        return TensorProgram(name, tensors, tuple(ops.out), {
            "format": "onnx", "file": path, "producer": model.producer_name,
            "opset": max((o.version for o in model.opset_import), default=0),
            "precision_bits": element_bits(model)})
    except ValueError as err:
        raise InputError(path, "graph", str(err)) from None


class _Ops:
    """The ops of a graph, node by node (``Transpose`` nodes folded into the matmuls they
    feed)."""

    def __init__(self, path: str, shapes: dict[str, tuple[int, ...]], consts: dict[str, Any],
                 tensors: dict[str, Tensor], readers: dict[str, Any]) -> None:  # fmt: skip
        self.path, self.shapes, self.consts, self.tensors = path, shapes, consts, tensors
        self.readers = readers
        self.out: list[TensorOp] = []
        self.alias: dict[str, str] = {}  # a folded transpose's output -> its input
        self.folded: set[str] = set()
        self.names: set[str] = set()

    def _fail(self, node: onnx.NodeProto, reason: str) -> InputError:
        return InputError(self.path, f"node {node.name or node.output[0]} ({node.op_type})", reason)

    def _act(self, name: str, like: str | None = None) -> None:
        shape = self.shapes[name]
        dims = self.tensors[like].dims if like and self.tensors[like].shape == shape else None
        self.tensors[name] = Tensor(name, dims or _names(len(shape), "activation"), shape)

    def _emit(self, node: onnx.NodeProto, kind: str, inputs: list[str], **kw: Any) -> None:
        name = node.name or node.output[0]
        while name in self.names:
            name += "_"
        self.names.add(name)
        self._act(node.output[0], inputs[0])
        self.out.append(TensorOp(name, kind, tuple(inputs), node.output[0], **kw))

    def add(self, node: onnx.NodeProto) -> None:
        op, ins = node.op_type, [self.alias.get(x, x) for x in node.input if x]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if op == "Constant":
            return
        if op == "Identity":
            w = self.tensors.get(ins[0])
            if w is not None and w.role == "weight":  # a parameter the exporter deduplicated
                self.tensors[node.output[0]] = Tensor(node.output[0], w.dims, w.shape, "weight")
            else:
                self.alias[node.output[0]] = ins[0]
            return None
        if op == "Split":
            return self._split(node, ins, attrs)
        if op in ("MatMul", "Gemm"):
            return self._matmul(node, ins, attrs)
        if op == "Transpose":
            perm = tuple(attrs.get("perm", range(len(self.shapes[ins[0]]))[::-1]))
            n = len(perm)
            readers = self.readers.get(node.output[0], [])
            if (n >= 2 and perm == (*range(n - 2), n - 1, n - 2) and readers
                    and all(r.op_type == "MatMul" and k == 1 for r, k in readers)):
                self.alias[node.output[0]] = ins[0]
                self.folded.add(node.output[0])
                return None
            return self._emit(node, "transpose", ins[:1], perm=perm)
        if op == "Reshape":
            return self._emit(node, "reshape", ins[:1], shape=self.shapes[node.output[0]])
        if op == "Softmax":
            rank = len(self.shapes[ins[0]])
            if attrs.get("axis", -1) not in (-1, rank - 1):
                raise self._fail(node, f"softmax over axis {attrs['axis']}; only the last")
            return self._emit(node, "softmax", ins)
        if op in NORMS:
            rank = len(self.shapes[ins[0]])
            if attrs.get("axis", -1) not in (-1, rank - 1):
                raise self._fail(node, "a normalisation over other than the last axis")
            return self._emit(node, NORMS[op], ins[:3])
        if op in UNARY:
            return self._emit(node, "eltwise", ins[:1], fn=UNARY[op])
        if op in BINARY:
            acts = [x for x in ins if x not in self.consts]
            if len(acts) == 1:
                return self._emit(node, "eltwise", acts, fn="scale")
            return self._emit(node, "eltwise", ins, fn=BINARY[op])
        raise self._fail(node, f"operator not supported in tensor programs; supported: "
                               f"{', '.join(SUPPORTED)}")

    def _split(self, node: onnx.NodeProto, ins: list[str], attrs: dict[str, Any]) -> None:
        shape = self.shapes[ins[0]]
        axis = attrs.get("axis", 0) % len(shape)
        start = 0
        for out in node.output:
            part = self.shapes[out]
            offset = tuple(start if d == axis else 0 for d in range(len(shape)))
            sub = onnx.helper.make_node("Split", ins, [out], name=f"{node.name or out}.{out}")
            self._emit(sub, "slice", ins[:1], shape=part, offset=offset)
            start += part[axis]

    def _matmul(self, node: onnx.NodeProto, ins: list[str], attrs: dict[str, Any]) -> None:
        if attrs.get("transA", 0):
            raise self._fail(node, "transA is not supported")
        a, b = ins[0], ins[1]
        folded = node.input[1] in self.folded
        trans = bool(attrs.get("transB", 0)) != folded
        wt = self.tensors.get(b)
        if wt is not None and wt.role == "weight" and len(wt.shape) == 2:
            if trans:  # a stored [N, K] weight is read as [K, N]: declare it so
                self.tensors[b] = Tensor(b, wt.dims[::-1], wt.shape[::-1], "weight")
            bias = ins[2] if len(ins) > 2 and ins[2] in self.tensors else ""
            return self._emit(node, "gemm", [a, b], bias=bias)
        return self._emit(node, "matmul", [a, b], trans_b=trans)
