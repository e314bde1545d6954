"""The loop nest of one μop (a tile of a layer), what every intra-core cost model takes.

A tile of a convolution computes ``K`` output channels at ``OY × OX`` output positions over ``C``
input channels (of one group) and an ``FY × FX`` kernel, with strides ``SY, SX`` and dilations
``DY, DX``; an fc layer is ``K × C`` with the rest 1; a ``gemm`` tile (a tensor program's
GEMM or batched matmul) is ``K`` columns over ``C`` of reduction at ``OY × OX`` rows (heads ×
rows), a 1 × 1 convolution to every model but ZigZag, which is given a matmul. Pooling,
element-wise add and concat read ``inputs`` operands of ``K × OY × OX`` (pooling over its
window) and have no weights; an element-wise tile of a function such as SiLU takes
``cycles_per_op`` cycles an element (:data:`CYCLES_PER_OP`). The three operands are ZigZag's
and Stream's: weights ``W``, inputs ``I`` and outputs ``O``.
"""

from __future__ import annotations

from dataclasses import dataclass

from npusched.workload.layers import Layer


def psum_bytes(elem_bytes: int) -> int:
    """Bytes of a partial sum: twice the operands', at most 32 bits (Stream's TPU-like core keeps
    16-bit partial sums of 8-bit operands; 16- and 32-bit operands accumulate in 32 bits)."""
    return min(4, 2 * elem_bytes)


def _read(out: int, kernel: int, stride: int, dilation: int) -> int:
    """Input positions ``out`` windows of ``kernel`` taps read along one axis."""
    span = (kernel - 1) * dilation + 1
    return out * kernel if stride >= span else (out - 1) * stride + span


#: Operations an intra-core cost model distinguishes (a conv with ``groups = C = K`` is ``dwconv``).
KINDS = ("conv", "dwconv", "fc", "gemm", "pool", "add", "concat")

CYCLES_PER_OP = {"silu": 4, "sigmoid": 4, "exp": 4, "softmax": 7}
"""Cycles an element-wise function takes per element on a core's lanes, where more than one:
Stream 2.1.1 charges SiLU, Sigmoid and Exp 4 (``ZigZagCostEstimator.get_cc_per_op``); a
softmax, which npusched prices as one tile, is the four nodes Stream splits it into: a max, an
exp, a sum and a division, 1 + 4 + 1 + 1."""


def cycles_per_op(fn: str) -> int:
    """Cycles per element of the element-wise function ``fn`` (:data:`CYCLES_PER_OP`; 1 for
    the others)."""
    return CYCLES_PER_OP.get(fn.lower(), 1)


@dataclass(frozen=True)
class TileShape:
    """One μop's loop nest (module docstring); ``kind`` is one of :data:`KINDS`."""

    kind: str
    K: int
    C: int = 1
    OY: int = 1
    OX: int = 1
    FY: int = 1
    FX: int = 1
    SY: int = 1
    SX: int = 1
    DY: int = 1
    DX: int = 1
    in_channels: int = 0
    inputs: int = 1
    cycles_per_op: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown tile kind {self.kind!r}; choose from {', '.join(KINDS)}")
        dims = (self.K, self.C, self.OY, self.OX, self.FY, self.FX, self.SY, self.SX)
        if min(dims + (self.DY, self.DX, self.inputs, self.cycles_per_op)) < 1:
            raise ValueError(f"a tile's loop extents must be >= 1, got {self}")
        if self.in_channels == 0:
            object.__setattr__(self, "in_channels", self.C if self.has_weights else self.K)

    @classmethod
    def of(cls, layer: Layer, lk: int, ly: int, lx: int, lc: int) -> TileShape:
        """The tile ``(lk, ly, lx, lc)`` (output channels, rows, columns, reduction; the
        partitioner's :data:`~npusched.partition.grid.DIMS`) of ``layer``."""
        if layer.op == "fc":
            return cls("fc", lk, lc)
        if layer.op in ("add", "concat"):
            return cls(layer.op, lk, 1, ly, lx, inputs=len(layer.inputs) if layer.op == "add"
                       else 1)  # fmt: skip
        fy, fx = (1, 1) if layer.global_pool else layer.kernel
        geo = dict(FY=fy, FX=fx, SY=layer.stride[0], SX=layer.stride[1], DY=layer.dilation[0],
                   DX=layer.dilation[1])  # fmt: skip
        if layer.op != "conv":  # pooling: a window per output, channel k reads channel k
            if layer.global_pool:  # the whole plane: its rows and columns are the window
                return cls("pool", lk, 1, 1, 1, FY=ly, FX=lx)
            return cls("pool", lk, 1, ly, lx, **geo)
        if layer.groups > 1 and lc == 1:
            return cls("dwconv", lk, 1, ly, lx, in_channels=lk, **geo)
        groups_read = -(-lk * layer.groups // layer.out_channels) if layer.groups > 1 else 1
        return cls("conv", lk, lc, ly, lx, in_channels=lc * groups_read, **geo)

    @property
    def has_weights(self) -> bool:
        """Whether the tile has a weight operand ``W`` (``conv``, ``dwconv``, ``fc``), whose
        :meth:`operations` are MACs spread over the PE array; pooling, add and concat have no
        weights, and their ``in_channels`` default to ``K`` (channel ``k`` reads channel
        ``k``)."""
        return self.kind in ("conv", "dwconv", "fc", "gemm")

    @property
    def IY(self) -> int:
        """Input rows the tile reads: its windows' span, or ``OY · FY`` rows when a stride
        longer than the window skips rows (a 1 × 1 stride-2 downsample reads every other)."""
        return _read(self.OY, self.FY, self.SY, self.DY)

    @property
    def IX(self) -> int:
        """Input columns the tile reads (as :attr:`IY`)."""
        return _read(self.OX, self.FX, self.SX, self.DX)

    def loops(self) -> dict[str, int]:
        """Loop extents ``K, C, OY, OX, FY, FX`` (the PE array's view)."""
        return {"K": self.K, "C": self.C, "OY": self.OY, "OX": self.OX, "FY": self.FY,
                "FX": self.FX}  # fmt: skip

    def operations(self) -> int:
        """MACs (conv, fc) or element reads (pooling: the window per output; add: one per
        input)."""
        if self.has_weights:
            return self.K * self.C * self.OY * self.OX * self.FY * self.FX
        return self.K * self.OY * self.OX * self.FY * self.FX * self.inputs

    def elements(self) -> dict[str, int]:
        """Elements of each operand: ``W``, ``I`` (all inputs) and ``O``."""
        w = self.K * self.C * self.FY * self.FX if self.has_weights else 0
        i = self.in_channels * self.IY * self.IX * self.inputs
        if self.kind == "fc":
            i = self.C
        return {"W": w, "I": i, "O": self.K * self.OY * self.OX}

    def key(self) -> tuple[int | str, ...]:
        """A hashable identity (the cost caches' key)."""
        return (self.kind, self.K, self.C, self.OY, self.OX, self.FY, self.FX, self.SY, self.SX,
                self.DY, self.DX, self.in_channels, self.inputs, self.cycles_per_op)  # fmt: skip
