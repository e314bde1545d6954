"""ONNX import: a convolutional network exported to ONNX as a
:class:`~npusched.workload.network.Network` at batch 1.

The model is loaded with :func:`onnx.load` without its external data and shaped by
:func:`onnx.shape_inference.infer_shapes` (strict mode, with data propagation). It must have exactly
one non-constant input of shape ``[1, C, H, W]``; a batch above 1 or a symbolic (dynamic) dimension
is rejected.

Weights are never read: an initializer (or ``Constant``) counts by the dims its ``TensorProto``
records, which are there even when its data is stored in an external file (``.onnx`` files over
2 GB, or files shipped without their weights, such as ZigZag's ``zigzag/inputs/workload/*.onnx``,
whose ``resnet18.external`` etc. are not distributed). Only the constants whose values shape
inference or the import reads are read (:data:`VALUE_INPUTS`: the target shape of ``Reshape``, the
axes input of ``Squeeze``/``Unsqueeze``/``ReduceMean``/``ReduceMax``; and the inputs of
constant-only arithmetic that computes one), from the external file beside the model when stored
there. When that file is missing, the import fails naming the node that needs the value, the tensor
and the file. Should shape inference need another externally stored value (an operator the import
does not support anyway), all the external data is read, as :func:`onnx.load` would have, if its
files are present. ``source["external_data"]`` lists the external files the model refers to, read
or not.

Nodes map onto layers as follows.

==========================================  ======================================================
ONNX                                        npusched
==========================================  ======================================================
``Conv`` (2-D)                              ``conv``; ``auto_pad`` ``SAME_UPPER``/``SAME_LOWER``/
                                            ``VALID`` become explicit pads; ``bias`` if it has
                                            ``B``
``Gemm``; ``MatMul`` by a constant matrix   ``fc`` (``transA`` must be 0); ``bias`` if ``Gemm``
                                            has ``C``
``MaxPool``, ``AveragePool``                ``maxpool``, ``avgpool``; ``ceil_mode`` becomes extra
                                            bottom/right padding that yields the inferred size
``GlobalAveragePool``, ``GlobalMaxPool``,   ``avgpool``/``maxpool`` with ``global_pool``
``ReduceMean``/``ReduceMax`` over H and W
``Add``/``Sum`` of two or more activations  ``add`` (same shapes; no broadcasting)
``Concat`` on the channel axis              ``concat``
==========================================  ======================================================

Everything else that is supported makes no layer; its output maps onto the producer layer's:

* ``BatchNormalization`` directly on a ``conv``/``fc`` output that nothing else reads is folded
  into that layer, which gets ``bias=True`` (folding creates a per-channel bias
  ``β - γ μ / √(σ² + ε)`` even when the convolution had none). The folded count is recorded in
  ``source["folded_batchnorm"]``. A batch normalization anywhere else (e.g. pre-activation, on the
  input) is a per-channel affine map with no MACs in the layer model: it is absorbed and listed in
  ``source["unfolded_batchnorm"]``; its scale and shift are not counted as parameters.
* ``Add``/``Sub`` of a constant on a ``conv``/``fc`` output that nothing else reads is that
  layer's bias (``bias=True``; counted as ``"Add (bias)"`` in ``source["absorbed"]``);
  elsewhere, and ``Mul``/``Div``/``Pow`` by a constant anywhere, it is an absorbed element-wise
  map.
* Activations (``Relu``, ``Clip``, ``Sigmoid``, ``HardSwish``, ``Softmax``, ... see
  :data:`ACTIVATIONS`), ``Dropout`` and ``Identity``; an element-wise ``Mul``/``Div``/``Sub``/
  ``Pow`` of two activations of the same layer (``x · σ(x)``, decomposed GELU).
* ``Flatten``, ``Reshape``, ``Squeeze``, ``Unsqueeze`` that give ``[1, C·H·W]`` (what ``fc``
  reads) or keep ``[1, C, H, W]``; ``Constant`` nodes and constant-only arithmetic.

Absorbed node counts per operator are in ``source["absorbed"]``. Layer names are the ONNX node
names (the first output's name when a node has none), with every run of characters outside
``[A-Za-z0-9_.-]`` replaced by ``_`` and leading or trailing ``_`` dropped
(``/layer1/layer1.0/conv1/Conv`` → ``layer1_layer1.0_conv1_Conv``), made unique with a ``_2``,
``_3``, ... suffix (the name ``input`` is reserved for the network input). Every failure,
including an unreadable file, is an :class:`~npusched.common.errors.InputError` naming the file, the
node (``node NAME (OpType)``) or field, and the reason.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.external_data_helper import load_external_data_for_model, uses_external_data

from npusched.common.errors import InputError
from npusched.io.onnx_state import (
    NUMPY_BINARY,
    Act,
    ImportState,
    external_location,
    load_external,
)
from npusched.workload.layers import INPUT, Shape
from npusched.workload.network import Network

ACTIVATIONS = frozenset(
    {
        "Relu",
        "LeakyRelu",
        "PRelu",
        "ThresholdedRelu",
        "Elu",
        "Selu",
        "Celu",
        "Gelu",
        "Clip",
        "Sigmoid",
        "HardSigmoid",
        "HardSwish",
        "Tanh",
        "Softplus",
        "Softsign",
        "Mish",
        "Erf",
        "Abs",
        "Neg",
        "Sqrt",
        "Exp",
        "Softmax",
        "LogSoftmax",
        "LRN",
    }
)
"""Element-wise (or per-position) maps absorbed into their producer layer."""

PASSTHROUGH = frozenset({"Identity", "Dropout"})
RESHAPES = frozenset({"Flatten", "Reshape", "Squeeze", "Unsqueeze"})
ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Pow"})
VALUE_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "ReduceMean": (1,),
    "ReduceMax": (1,),
}
"""Inputs (by position) whose values, not only shapes, shape inference or the import reads."""


class Importer(ImportState):
    """One import; :meth:`run` walks the nodes in their (topological) order."""

    # ---- the walk -----------------------------------------------------------------------------

    def run(self, name: str) -> Network:
        """Import the whole graph as the network ``name``.

        Records the initializers (by their dims) and ONNX's inferred shapes, reads the input
        (:meth:`read_input`), maps every node in order (:meth:`node`) and builds the network, whose
        ``source`` records the file, graph, producer, opset, the folded and unfolded batch
        normalizations, the absorbed operators and the external data files.

        Parameters
        ----------
        name
            The network's name.

        Returns
        -------
        Network
            The layers in the graph's order, at batch 1.

        Raises
        ------
        InputError
            The input is not a static ``[1, C, H, W]``, a node is unsupported or malformed, or the
            graph makes no layer.
        """
        graph = self.graph
        for init in graph.initializer:
            self.add_const(init.name, init)
        for vi in [*graph.input, *graph.value_info, *graph.output]:
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                self.dims[vi.name] = tuple(
                    d.dim_value if d.HasField("dim_value") else None
                    for d in vi.type.tensor_type.shape.dim
                )
        input_shape = self.read_input()
        for node in graph.node:
            self.node(node)
        if not self.layers:
            raise InputError(
                self.path, "graph", "no layers (conv, fc, pooling, add, concat) in the model"
            )
        source: dict[str, Any] = {
            "format": "onnx",
            "file": self.path,
            "graph": graph.name,
            "producer": f"{self.model.producer_name} {self.model.producer_version}".strip(),
            "opset": max(
                (o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")),
                default=0,
            ),
            "folded_batchnorm": self.folded_bn,
            "unfolded_batchnorm": self.unfolded_bn,
            "absorbed": dict(sorted(self.absorbed.items())),
            "external_data": self.external_files,
        }
        try:
            return Network(name, input_shape, tuple(self.layers), source)
        except ValueError as err:  # pragma: no cover - add_layer checks every layer already
            raise InputError(self.path, "graph", str(err)) from None

    def read_input(self) -> Shape:
        """The network's input: the graph's one non-constant input, mapped as the activation
        :data:`~npusched.workload.layers.INPUT`.

        Returns
        -------
        Shape
            Its ``(C, H, W)``.

        Raises
        ------
        InputError
            There is not exactly one non-constant input, or it has no shape, a rank other than 4, a
            dynamic dimension, a batch other than 1 or an empty dimension.
        """
        inputs = [vi for vi in self.graph.input if vi.name not in self.consts]
        if len(inputs) != 1:
            names = [vi.name for vi in inputs]
            raise InputError(
                self.path, "graph.input", f"expected exactly one non-constant input, got {names}"
            )
        vi = inputs[0]
        field = f"input {vi.name}"
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            raise InputError(self.path, field, "has no tensor shape")
        dims = list(vi.type.tensor_type.shape.dim)
        if len(dims) != 4:
            raise InputError(self.path, field, f"rank {len(dims)}; expected [1, C, H, W]")
        values: list[int] = []
        for axis, d in enumerate(dims):
            if not d.HasField("dim_value"):
                label = repr(d.dim_param) if d.dim_param else "unknown"
                raise InputError(
                    self.path,
                    field,
                    f"dynamic dimension {label} at axis {axis}; export with a fixed batch-1 "
                    "shape (or fix it with onnx.tools.update_model_dims)",
                )
            values.append(int(d.dim_value))
        if values[0] != 1:
            raise InputError(self.path, field, f"batch {values[0]}; only batch 1 is supported")
        if min(values) < 1:
            raise InputError(self.path, field, f"empty shape {values}")
        self.values[vi.name] = Act(INPUT, (values[1], values[2], values[3]), 4, raw=False)
        return (values[1], values[2], values[3])

    def node(self, node: onnx.NodeProto) -> None:
        """Map one node: a ``Constant`` (:meth:`constant`), arithmetic on constants only
        (:meth:`fold_constant`), or anything else through :meth:`dispatch`.

        Raises
        ------
        InputError
            The operator is of a custom domain, unsupported or malformed (an attribute a handler
            cannot read), named with the node.
        """
        op = node.op_type
        if node.domain not in ("", "ai.onnx"):
            self.fail(node, f"unsupported operator {node.domain}.{op} (custom domain)")
        attrs: dict[str, Any] = {}
        for a in node.attribute:
            v = helper.get_attribute_value(a)
            attrs[a.name] = v.decode() if isinstance(v, bytes) else v
        if op == "Constant":
            self.constant(node, attrs)
            return
        data = [t for t in node.input if t]
        if data and all(t in self.consts for t in data):
            self.fold_constant(node)
            return
        try:
            self.dispatch(node, attrs)
        except InputError:
            raise
        except (ValueError, TypeError, IndexError, KeyError) as err:  # malformed attributes
            self.fail(node, f"malformed node: {err}")

    def dispatch(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """Hand ``node`` (its attributes decoded in ``attrs``) to its handler: the method
        ``op_<OpType>`` if there is one, else absorb it (activations, ``Identity``, ``Dropout``),
        treat it as a reshape (:meth:`reshape`) or element-wise arithmetic (:meth:`elementwise`).

        Raises
        ------
        InputError
            The operator is not supported (the message lists those that are).
        """
        op = node.op_type
        handler = getattr(self, f"op_{op}", None)
        if handler is not None:
            handler(node, attrs)
        elif op in ACTIVATIONS:
            self.absorb(node, self.act(node, node.input[0]))
        elif op in PASSTHROUGH:
            self.absorb(node, self.act(node, node.input[0]), keep_raw=True)
        elif op in RESHAPES:
            self.reshape(node)
        elif op in ELEMENTWISE:
            self.elementwise(node)
        else:
            self.fail(
                node,
                f"unsupported operator {op}; supported: Conv, Gemm, MatMul, MaxPool, "
                "AveragePool, GlobalAveragePool, GlobalMaxPool, ReduceMean/ReduceMax (H, W), "
                "Add, Sum, Concat, BatchNormalization, activations, Flatten/Reshape, "
                "Dropout, Identity",
            )

    # ---- constants ----------------------------------------------------------------------------

    def constant(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """Record a ``Constant`` node's output: a tensor ``value`` by its dims (its data read only
        when needed), a ``value_*`` attribute (float, ints, ...) with its value.

        Raises
        ------
        InputError
            The constant is sparse or has no value attribute.
        """
        if isinstance(attrs.get("value"), onnx.TensorProto):
            self.add_const(node.output[0], attrs["value"])  # read when needed
            return
        keys = [k for k in attrs if k.startswith("value_")]
        if not keys or isinstance(attrs[keys[0]], onnx.SparseTensorProto):
            self.fail(node, "unsupported Constant form")
        self.set_const(node.output[0], np.asarray(attrs[keys[0]]))

    def fold_constant(self, node: onnx.NodeProto) -> None:
        """Nodes whose inputs are all constant: the simple ones give a constant whose shape is
        known now and whose value is computed when needed (:meth:`value`); others are refused."""
        args = [t for t in node.input if t]
        if node.op_type in NUMPY_BINARY and len(args) == 2:
            a, b = self.consts[args[0]], self.consts[args[1]]
            try:
                shape = np.broadcast_shapes(a, b)
            except ValueError:
                self.fail(node, f"constants of shapes {list(a)} and {list(b)} do not broadcast")
        elif node.op_type in ("Identity", "Cast") and len(args) == 1:
            shape = self.consts[args[0]]
        else:
            self.fail(node, f"unsupported operator {node.op_type} on constants only")
        self.consts[node.output[0]] = tuple(int(d) for d in shape)
        self.const_nodes[node.output[0]] = node

    # ---- layers -------------------------------------------------------------------------------

    def op_Conv(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``Conv`` → a ``conv`` layer: output channels and kernel from the weight's shape, groups,
        strides, dilations and explicit pads (:meth:`~npusched.io.onnx_state.ImportState.pads`);
        ``bias`` if it has the ``B`` input.

        Raises
        ------
        InputError
            The input is not ``[1, C, H, W]``, the weight is missing, not 4-D (only 2-D
            convolutions), disagrees with ``kernel_shape`` or does not fit the input's channels with
            ``group``.
        """
        x = self.act(node, node.input[0], rank=4)
        if len(node.input) < 2:
            self.fail(node, "needs a weight input")
        w = self.shape_of(node, node.input[1])
        if len(w) != 4:
            self.fail(node, f"weight shape {list(w)}: only 2-D convolutions are supported")
        kernel = (w[2], w[3])
        if list(attrs.get("kernel_shape", kernel)) != list(kernel):
            self.fail(node, f"kernel_shape {attrs['kernel_shape']} disagrees with weight {list(w)}")
        groups = int(attrs.get("group", 1))
        if w[1] * groups != x.shape[0]:
            self.fail(
                node, f"weight {list(w)} with group {groups} does not fit {x.shape[0]} channels"
            )
        stride = _pair(attrs.get("strides", (1, 1)))
        dilation = _pair(attrs.get("dilations", (1, 1)))
        pad = self.pads(node, attrs, x.shape[1:], kernel, stride, dilation)
        bias = len(node.input) > 2 and bool(node.input[2])
        self.add_layer(
            node,
            "conv",
            [x],
            out_channels=w[0],
            kernel=kernel,
            stride=stride,
            pad=pad,
            dilation=dilation,
            groups=groups,
            bias=bias,
        )

    def op_Gemm(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``Gemm`` → an ``fc`` layer (:meth:`fc`) of ``B``'s output features (``transB`` honoured);
        ``bias`` if it has the ``C`` input.

        Raises
        ------
        InputError
            ``transA`` is 1, the input is not a flattened ``[1, N]`` or ``B`` is not a matrix.
        """
        a = self.act(node, node.input[0], rank=2)
        if attrs.get("transA", 0):
            self.fail(node, "transA=1 is not supported (the activation must be [1, N])")
        b = self.shape_of(node, node.input[1])
        if len(b) != 2:
            self.fail(node, f"B shape {list(b)} must be a matrix")
        n, k = (b[1], b[0]) if attrs.get("transB", 0) else b
        self.fc(node, a, n, k, bias=len(node.input) > 2 and bool(node.input[2]))

    def op_MatMul(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``MatMul`` of a flattened activation by a constant matrix ``[N, K]`` → an ``fc`` layer
        (:meth:`fc`) without bias.

        Raises
        ------
        InputError
            Both operands are activations, the first is not ``[1, N]`` or the second is not a
            matrix.
        """
        if node.input[1] in self.values:
            self.fail(node, "MatMul of two activations is not supported (weights must be constant)")
        a = self.act(node, node.input[0], rank=2)
        b = self.shape_of(node, node.input[1])
        if len(b) != 2:
            self.fail(node, f"weight shape {list(b)} must be a matrix [N, K]")
        self.fc(node, a, b[0], b[1], bias=False)

    def fc(self, node: onnx.NodeProto, a: Act, n: int, k: int, bias: bool) -> None:
        """Add the ``fc`` layer of ``node`` reading ``a`` through an ``n × k`` weight: ``k``
        outputs.

        Raises
        ------
        InputError
            ``n`` is not the number of features of ``a`` (``C · H · W``).
        """
        c, h, w = a.shape
        if n != c * h * w:
            self.fail(node, f"weight reads {n} features, the input has {c * h * w}")
        self.add_layer(node, "fc", [a], out_channels=k, bias=bias)

    def pool(self, node: onnx.NodeProto, attrs: dict[str, Any], op: str) -> None:
        """``MaxPool``/``AveragePool`` → a ``maxpool``/``avgpool`` layer (``op``); ``ceil_mode``
        becomes extra bottom/right padding that yields ONNX's output size (pooling has no MACs, so
        the padding costs nothing).

        Raises
        ------
        InputError
            The ``Indices`` output is read, the input is not ``[1, C, H, W]``, or ``kernel_shape``
            is missing or not 2-D.
        """
        if len(node.output) > 1 and node.output[1] and self.consumers[node.output[1]]:
            self.fail(node, "the Indices output is not supported")
        x = self.act(node, node.input[0], rank=4)
        if "kernel_shape" not in attrs:
            self.fail(node, "kernel_shape is required")
        if len(attrs["kernel_shape"]) != 2:
            self.fail(node, f"kernel_shape {attrs['kernel_shape']}: only 2-D pooling")
        kernel = _pair(attrs["kernel_shape"])
        stride = _pair(attrs.get("strides", (1, 1)))
        dilation = _pair(attrs.get("dilations", (1, 1)))
        pad = list(self.pads(node, attrs, x.shape[1:], kernel, stride, dilation))
        if attrs.get("ceil_mode", 0):
            # ceil_mode: extra bottom/right padding (no MACs in pooling) that reaches ONNX's size
            dims = self.dims.get(node.output[0])
            for axis in (0, 1):
                n, r, s, d = x.shape[1 + axis], kernel[axis], stride[axis], dilation[axis]
                span = n + pad[2 * axis] + pad[2 * axis + 1] - d * (r - 1) - 1
                target = -(-span // s) + 1
                if dims is not None and len(dims) == 4 and dims[2 + axis] is not None:
                    target = int(dims[2 + axis] or 0)
                pad[2 * axis + 1] += max(0, (target - 1) * s - span)
        self.add_layer(
            node,
            op,
            [x],
            kernel=kernel,
            stride=stride,
            pad=(pad[0], pad[1], pad[2], pad[3]),
            dilation=dilation,
        )

    def op_MaxPool(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``MaxPool`` → a ``maxpool`` layer (:meth:`pool`)."""
        self.pool(node, attrs, "maxpool")

    def op_AveragePool(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``AveragePool`` → an ``avgpool`` layer (:meth:`pool`)."""
        self.pool(node, attrs, "avgpool")

    def global_pool(self, node: onnx.NodeProto, op: str, keepdims: bool = True) -> None:
        """Add a ``global_pool`` layer ``op`` (``avgpool`` or ``maxpool``) over the whole ``H × W``
        of ``node``'s input; with ``keepdims`` false its output is seen flattened as ``[1, C]``
        (rank 2), as ``fc`` reads it.

        Raises
        ------
        InputError
            The input is not ``[1, C, H, W]``, or without ``keepdims`` ONNX's inferred output is not
            ``[1, C]``.
        """
        x = self.act(node, node.input[0], rank=4)
        out = node.output[0]
        if not keepdims:  # check and map a [1, C] output; the layer itself is [1, C, 1, 1]
            dims = self.dims.pop(out, None)
            if dims is not None and dims != (1, x.shape[0]):
                self.fail(node, f"ONNX infers output shape {list(dims)}, expected [1, C]")
        self.add_layer(node, op, [x], global_pool=True)
        if not keepdims:
            self.values[out] = replace(self.values[out], rank=2)

    def op_GlobalAveragePool(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``GlobalAveragePool`` → an ``avgpool`` layer with ``global_pool``
        (:meth:`global_pool`)."""
        self.global_pool(node, "avgpool")

    def op_GlobalMaxPool(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``GlobalMaxPool`` → a ``maxpool`` layer with ``global_pool`` (:meth:`global_pool`)."""
        self.global_pool(node, "maxpool")

    def reduce(self, node: onnx.NodeProto, attrs: dict[str, Any], op: str) -> None:
        """``ReduceMean``/``ReduceMax`` over ``H`` and ``W`` → a global pooling ``op``
        (:meth:`global_pool`), keeping the dims unless ``keepdims`` is 0; the axes come from the
        attribute (opset < 18) or the constant second input (opset 18).

        Raises
        ------
        InputError
            The axes are not a constant, or not exactly ``{2, 3}`` (negative axes count from the
            end).
        """
        axes = attrs.get("axes")
        if axes is None and len(node.input) > 1 and node.input[1]:
            if node.input[1] not in self.consts:
                self.fail(node, "axes must be constant")
            axes = self.value(node, node.input[1]).tolist()
        if axes is None or sorted(int(a) % 4 for a in axes) != [2, 3]:
            self.fail(node, f"only a reduction over H and W (axes 2, 3) is supported, got {axes}")
        self.act(node, node.input[0], rank=4)
        self.global_pool(node, op, keepdims=bool(attrs.get("keepdims", 1)))

    def op_ReduceMean(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``ReduceMean`` over ``H, W`` → a global ``avgpool`` (:meth:`reduce`)."""
        self.reduce(node, attrs, "avgpool")

    def op_ReduceMax(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``ReduceMax`` over ``H, W`` → a global ``maxpool`` (:meth:`reduce`)."""
        self.reduce(node, attrs, "maxpool")

    def op_Concat(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``Concat`` on the channel axis → a ``concat`` layer of its inputs.

        Raises
        ------
        InputError
            An input is not ``[1, C, H, W]`` or the axis is not 1 (or -3).
        """
        xs = [self.act(node, t) for t in node.input if t]
        if any(x.rank != 4 for x in xs) or int(attrs.get("axis", 1)) % 4 != 1:
            self.fail(node, "only Concat of [1, C, H, W] activations on the channel axis (1)")
        self.add_layer(node, "concat", xs)

    def op_Sum(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``Sum``: of one activation, absorbed; of two or more, an ``add`` layer
        (:meth:`add_activations`)."""
        xs = [self.act(node, t) for t in node.input if t]
        if len(xs) == 1:
            self.absorb(node, xs[0], keep_raw=True)
        else:
            self.add_activations(node, xs)

    def add_activations(self, node: onnx.NodeProto, xs: list[Act]) -> None:
        """Add the ``add`` layer of ``node`` over the activations ``xs``; flattened inputs give a
        flattened output.

        Raises
        ------
        InputError
            The activations' shapes or ranks differ (no broadcasting).
        """
        if any(x.shape != xs[0].shape or x.rank != xs[0].rank for x in xs):
            shapes = [list(x.shape) for x in xs]
            self.fail(node, f"element-wise add needs equal shapes (no broadcasting), got {shapes}")
        self.add_layer(node, "add", xs)
        if xs[0].rank == 2:
            self.values[node.output[0]] = replace(self.values[node.output[0]], rank=2)

    def op_BatchNormalization(self, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
        """``BatchNormalization``: folded into the ``conv``/``fc`` layer whose output it alone reads
        (that layer gets ``bias=True``; counted in ``source["folded_batchnorm"]``), absorbed
        anywhere else (listed in ``source["unfolded_batchnorm"]``).

        Raises
        ------
        InputError
            A training-mode output (running mean or variance) is read.
        """
        if any(o and self.consumers[o] for o in node.output[1:]):
            self.fail(node, "training-mode outputs (running mean/var) are not supported")
        x = self.act(node, node.input[0])
        if x.raw and self.exclusive(node.input[0]):
            self.fold_bias(x)
            self.folded_bn += 1
            self.values[node.output[0]] = replace(x, raw=self.exclusive(node.output[0]))
        else:
            self.unfolded_bn.append(node.name or node.output[0])
            self.absorb(node, x)

    # ---- absorbed -----------------------------------------------------------------------------

    def reshape(self, node: onnx.NodeProto) -> None:
        """``Flatten``/``Reshape``/``Squeeze``/``Unsqueeze``: absorbed when ONNX infers ``[1,
        C·H·W]`` (the output is then seen flattened, as ``fc`` reads it) or ``[1, C, H, W]``.

        Raises
        ------
        InputError
            The output shape is unknown or neither of those.
        """
        x = self.act(node, node.input[0])
        dims = self.dims.get(node.output[0])
        c, h, w = x.shape
        if dims == (1, c * h * w):
            rank = 2
        elif dims == (1, c, h, w):
            rank = 4
        else:
            got = "unknown" if dims is None else list(dims)
            self.fail(
                node,
                f"output shape {got} is neither [1, {c * h * w}] (flattened for fc) nor "
                f"[1, {c}, {h}, {w}]",
            )
        self.absorb(node, x, keep_raw=True)
        self.values[node.output[0]] = replace(self.values[node.output[0]], rank=rank)

    def elementwise(self, node: onnx.NodeProto) -> None:
        """Add/Sub/Mul/Div/Pow with a constant, or of two activations."""
        if len(node.input) != 2:
            self.fail(node, "expects two inputs")
        acts = [t for t in node.input if t in self.values]
        if len(acts) == 2:
            a, b = self.act(node, acts[0]), self.act(node, acts[1])
            if node.op_type == "Add":
                self.add_activations(node, [a, b])
            elif a.src == b.src and a.shape == b.shape and a.rank == b.rank:
                self.absorb(node, a)  # x · σ(x) and the like
            else:
                self.fail(
                    node,
                    f"element-wise {node.op_type} of two different layers' outputs is not "
                    "supported (only Add is a layer)",
                )
            return
        if not acts:
            self.act(node, node.input[0])  # reports the missing input
        x = self.act(node, acts[0])
        const_name = node.input[1] if node.input[0] == acts[0] else node.input[0]
        if const_name not in self.consts:
            self.act(node, const_name)
        shape = self.consts[const_name]  # only its shape matters
        size = int(np.prod(shape))
        dims = self.dims.get(node.output[0])
        expect = (1, *x.shape) if x.rank == 4 else (1, x.shape[0] * x.shape[1] * x.shape[2])
        if dims is not None and dims != expect:
            self.fail(node, f"broadcasting a constant changes the shape to {list(dims)}")
        # a bias: one value, or one per channel (size K on axis 1 once broadcast, 1 elsewhere)
        aligned = (1,) * (x.rank - len(shape)) + shape
        per_channel = size == 1 or (
            len(aligned) == x.rank and aligned[1] == size == self.layer_width(x)
        )
        if node.op_type in ("Add", "Sub") and x.raw and self.exclusive(acts[0]) and per_channel:
            self.fold_bias(x)
            self.values[node.output[0]] = replace(x, raw=self.exclusive(node.output[0]))
            self.absorbed[f"{node.op_type} (bias)"] += 1
        else:
            self.absorb(node, x)


def _pair(v: Any) -> tuple[int, int]:
    t = tuple(int(x) for x in v)
    if len(t) != 2:
        raise ValueError(f"expected two values, got {list(t)}")
    return (t[0], t[1])


def _graph_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The initializers and the ``Constant`` nodes' tensors of the main graph."""
    tensors = list(model.graph.initializer)
    for node in model.graph.node:
        if node.op_type == "Constant":
            tensors += [a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR]
    return tensors


def _read_needed_values(model: onnx.ModelProto, path: str, base_dir: str | None) -> None:
    """Read (in place) the external data of the constants whose values shape inference or the
    import needs: :data:`VALUE_INPUTS`, and the inputs of constant-only arithmetic that feeds
    one. Weights (read by their dims) stay unread."""
    graph = model.graph
    tensors = {t.name: t for t in graph.initializer}
    constant = set(tensors)
    folded: set[str] = set()  # outputs of nodes whose inputs are all constant
    for node in graph.node:
        if node.op_type == "Constant":
            for a in node.attribute:
                if a.type == onnx.AttributeProto.TENSOR and node.output:
                    tensors[node.output[0]] = a.t
            constant.update(o for o in node.output if o)
            continue
        data = [t for t in node.input if t]
        if data and all(t in constant for t in data):
            constant.update(o for o in node.output if o)
            folded.update(o for o in node.output if o)
    needed: dict[str, tuple[int, int]] = {}  # tensor -> (node, input) of its first value read
    for k in reversed(range(len(graph.node))):  # consumers before producers
        node = graph.node[k]
        positions = VALUE_INPUTS.get(node.op_type, ())
        if any(o in folded and o in needed for o in node.output):
            positions = tuple(range(len(node.input)))
        for i in positions:
            if i < len(node.input) and node.input[i]:
                needed[node.input[i]] = min((k, i), needed.get(node.input[i], (k, i)))
    for name, (k, _) in sorted(needed.items(), key=lambda item: item[1]):
        tensor = tensors.get(name)
        if tensor is not None and uses_external_data(tensor):
            try:
                load_external(tensor, base_dir)
            except ValueError as err:
                node = graph.node[k]
                label = node.name or (node.output[0] if node.output else "?")
                raise InputError(
                    path, f"node {label} ({node.op_type})", f"needs the value of {name!r}, {err}"
                ) from None


def _infer_shapes(model: onnx.ModelProto, path: str) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as err:
        reason = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise InputError(path, "(shape inference)", reason) from None


def read_onnx(
    path_or_model: str | os.PathLike[str] | onnx.ModelProto, name: str | None = None
) -> Network:
    """Read an ONNX CNN as a batch-1 :class:`~npusched.workload.network.Network`.

    Parameters
    ----------
    path_or_model
        An ``.onnx`` file (its external data files, if any, beside it and read only for the
        values the import needs) or a loaded :class:`onnx.ModelProto` (whose external data, if
        not loaded with it, cannot be located: a value the import needs from it is an error).
    name
        Network name; default the file's stem (or the graph's name for a model).

    Returns
    -------
    Network
        Layers in the graph's order, with ``source`` recording the file, producer, opset, the
        folded and unfolded batch normalizations and the absorbed operators.

    Raises
    ------
    InputError
        The file cannot be read or shaped, the input is not ``[1, C, H, W]`` with static
        dimensions, a node is unsupported or malformed (named with its operator), or a value
        a node needs is stored in a missing external data file.
    """
    base_dir: str | None
    if isinstance(path_or_model, onnx.ModelProto):
        model = path_or_model
        path = f"<onnx model {model.graph.name or '?'}>"
        default_name = model.graph.name or "onnx"
        base_dir = None  # its external data files, if any, cannot be located
    else:
        path = str(path_or_model)
        default_name = Path(path).stem
        base_dir = os.path.dirname(path)
        try:
            model = onnx.load(path, load_external_data=False)  # weights: dims only
        except OSError as err:
            raise InputError(path, "(file)", err.strerror or str(err)) from None
        except Exception as err:  # protobuf DecodeError and friends
            raise InputError(path, "(file)", f"not a readable ONNX model: {err}") from None
    if not model.graph.node:
        raise InputError(path, "graph", "no nodes (empty or not an ONNX model)")
    external = sorted(
        {external_location(t) for t in _graph_tensors(model) if uses_external_data(t)}
    )
    if external:
        _read_needed_values(model, path, base_dir)
    try:
        inferred = _infer_shapes(model, path)
    except InputError as err:
        # shape inference read a value outside VALUE_INPUTS: read all external data, as
        # onnx.load would have, and try again
        if not external or base_dir is None or "external" not in err.reason:
            raise
        missing = [f for f in external if not os.path.isfile(os.path.join(base_dir or ".", f))]
        if missing:
            raise InputError(
                path, err.field, f"{err.reason}; external data file(s) {missing} missing"
            ) from None
        try:
            load_external_data_for_model(model, base_dir)
        except Exception as load_err:
            raise InputError(
                path,
                err.field,
                f"{err.reason}; reading the external data failed: "
                f"{(str(load_err).strip().splitlines() or [type(load_err).__name__])[0]}",
            ) from None
        inferred = _infer_shapes(model, path)
    importer = Importer(inferred, path, base_dir)
    importer.external_files = external
    try:
        return importer.run(name or default_name)
    except InputError:
        raise
    except (ValueError, TypeError, IndexError, KeyError) as err:  # malformed attributes etc.
        raise InputError(path, "graph", f"malformed model: {err}") from None
