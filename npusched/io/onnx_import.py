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
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.external_data_helper import load_external_data_for_model, uses_external_data

from npusched.common.errors import InputError
from npusched.io.onnx_layers import LayerOps
from npusched.io.onnx_merge import MergeOps
from npusched.io.onnx_state import (
    NUMPY_BINARY,
    Act,
    element_bits,
    external_location,
    load_external,
    load_model,
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


class Importer(LayerOps, MergeOps):
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
            "precision_bits": element_bits(self.model),
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
        model = load_model(path)  # weights: dims only
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
