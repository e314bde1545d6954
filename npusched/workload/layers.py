"""DNN layers at batch 1: shapes, MACs, parameters and receptive fields.

Tensors are ``(C, H, W)``. A convolution with ``K`` filters of ``R × S`` over ``C`` input
channels in ``groups`` groups, stride ``(sy, sx)``, dilation ``(dy, dx)`` and padding
``(top, bottom, left, right)`` has

.. math::

    OH = \\left\\lfloor \\frac{H + p_t + p_b - d_y (R - 1) - 1}{s_y} \\right\\rfloor + 1, \\qquad
    \\text{MACs} = K \\cdot OH \\cdot OW \\cdot \\frac{C}{g} \\cdot R \\cdot S,

and parameters ``K · C/g · R · S`` (+ ``K`` with bias). Fully connected layers are ``1 × 1``
convolutions over a ``C × 1 × 1`` input after flattening (``C`` = all input elements). Pooling has
the convolution's geometry with ``K = C`` and no MACs; element-wise add and concat have none.
"""

from __future__ import annotations

from dataclasses import dataclass

OPS = ("conv", "fc", "maxpool", "avgpool", "add", "concat")
INPUT = "input"  # name of the network input in ``Layer.inputs``

Shape = tuple[int, int, int]


@dataclass(frozen=True)
class Layer:
    """One layer. ``inputs`` name producer layers (or :data:`INPUT`); shapes come from
    :class:`~npusched.workload.network.Network`, which knows the producers.

    Parameters
    ----------
    name
        Unique within the network.
    op
        One of :data:`OPS`. ``fc`` flattens its input; ``avgpool`` with ``global_pool`` pools the
        whole plane.
    inputs
        Producer names; ``add`` needs two or more of one shape, ``concat`` stacks channels.
    out_channels
        ``K`` of ``conv`` and ``fc`` (pooling, add and concat keep or sum their input channels).
    kernel, stride, dilation
        ``(R, S)``, ``(sy, sx)``, ``(dy, dx)``.
    pad
        ``(top, bottom, left, right)``.
    groups
        ``conv`` only; ``groups = C = K`` is depthwise.
    bias
        ``conv`` and ``fc``: a bias per output channel (counts as parameters).
    global_pool
        ``maxpool``/``avgpool`` over the whole input plane.
    """

    name: str
    op: str
    inputs: tuple[str, ...]
    out_channels: int = 0
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = True
    global_pool: bool = False

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"layer {self.name}: unknown op {self.op!r}; choose from {OPS}")
        if not self.inputs:
            raise ValueError(f"layer {self.name}: needs at least one input")
        if self.op in ("conv", "fc") and self.out_channels < 1:
            raise ValueError(f"layer {self.name}: out_channels must be at least 1")
        if min(*self.kernel, *self.stride, *self.dilation, self.groups) < 1 or min(self.pad) < 0:
            raise ValueError(
                f"layer {self.name}: kernel, stride, dilation, groups >= 1 and pad >= 0"
            )
        if self.op == "add" and len(self.inputs) < 2:
            raise ValueError(f"layer {self.name}: add needs two or more inputs")
        if self.op not in ("add", "concat") and len(self.inputs) != 1:
            raise ValueError(f"layer {self.name}: {self.op} takes one input")

    # ---- geometry -----------------------------------------------------------------------------

    def output_shape(self, in_shapes: list[Shape]) -> Shape:
        """``(K, OH, OW)`` for the given input shapes (checked)."""
        c, h, w = in_shapes[0]
        if self.op == "concat":
            if any(s[1:] != (h, w) for s in in_shapes):
                raise ValueError(f"layer {self.name}: concat inputs differ in H, W: {in_shapes}")
            return (sum(s[0] for s in in_shapes), h, w)
        if self.op == "add":
            if any(s != in_shapes[0] for s in in_shapes):
                raise ValueError(f"layer {self.name}: add inputs differ in shape: {in_shapes}")
            return in_shapes[0]
        if self.op == "fc":
            return (self.out_channels, 1, 1)
        if self.global_pool:
            return (c, 1, 1)
        if self.op == "conv" and (c % self.groups or self.out_channels % self.groups):
            raise ValueError(
                f"layer {self.name}: groups {self.groups} must divide C={c} and "
                f"K={self.out_channels}"
            )
        k = self.out_channels if self.op == "conv" else c
        oh = self._out_len(h, 0)
        ow = self._out_len(w, 1)
        if oh < 1 or ow < 1:
            raise ValueError(f"layer {self.name}: output would be empty for input {in_shapes[0]}")
        return (k, oh, ow)

    def _out_len(self, n: int, axis: int) -> int:
        r, s, d = self.kernel[axis], self.stride[axis], self.dilation[axis]
        lo, hi = self.pad[2 * axis], self.pad[2 * axis + 1]
        return (n + lo + hi - d * (r - 1) - 1) // s + 1

    def input_range(self, axis: int, lo: int, hi: int, size: int) -> tuple[int, int]:
        """Input rows (``axis`` 0) or columns (1) that output ``[lo, hi)`` reads: its receptive
        field, clipped to the input's ``size``; ``[0, size)`` for global pooling and fc.

        .. math:: [\\,lo \\cdot s - p,\\; (hi - 1) \\cdot s - p + d (R - 1) + 1\\,) \\cap [0, size)
        """
        if hi <= lo:
            return (0, 0)
        if self.op in ("add", "concat"):
            return (lo, hi)
        if self.op == "fc" or self.global_pool:
            return (0, size)
        r, s, d = self.kernel[axis], self.stride[axis], self.dilation[axis]
        p = self.pad[2 * axis]
        first = lo * s - p
        last = (hi - 1) * s - p + d * (r - 1) + 1
        return (max(0, first), min(size, last))

    # ---- counts -------------------------------------------------------------------------------

    def macs(self, in_shapes: list[Shape]) -> int:
        """Multiply-accumulates at batch 1 (0 for pooling, add, concat)."""
        k, oh, ow = self.output_shape(in_shapes)
        c, h, w = in_shapes[0]
        if self.op == "conv":
            return k * oh * ow * (c // self.groups) * self.kernel[0] * self.kernel[1]
        if self.op == "fc":
            return k * c * h * w
        return 0

    def params(self, in_shapes: list[Shape]) -> int:
        """Weights (+ biases) of ``conv`` and ``fc``; 0 otherwise."""
        c, h, w = in_shapes[0]
        k = self.out_channels
        if self.op == "conv":
            weights = k * (c // self.groups) * self.kernel[0] * self.kernel[1]
            return weights + (k if self.bias else 0)
        if self.op == "fc":
            return k * c * h * w + (k if self.bias else 0)
        return 0
