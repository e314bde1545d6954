"""The ONNX nodes that make layers of a CNN (:mod:`npusched.io.onnx_import`): ``Conv``,
``Gemm``/``MatMul`` by a constant matrix (``fc``), pooling, global pooling and its ``ReduceMean``/
``ReduceMax`` forms."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import onnx

from npusched.io.onnx_state import Act, ImportState


class LayerOps(ImportState):
    """The import's handlers of the nodes that make layers (``op_<OpType>``)."""

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


def _pair(v: Any) -> tuple[int, int]:
    t = tuple(int(x) for x in v)
    if len(t) != 2:
        raise ValueError(f"expected two values, got {list(t)}")
    return (t[0], t[1])
