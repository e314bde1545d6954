"""The ONNX nodes of a CNN that join, fold or pass through activations
(:mod:`npusched.io.onnx_import`): ``Concat``, ``Sum``/``Add`` of activations, batch
normalization folded or absorbed, reshapes, and the element-wise maps absorbed into a layer."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import onnx

from npusched.io.onnx_state import Act, ImportState


class MergeOps(ImportState):
    """The import's handlers of the nodes that make no layer of their own."""

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
