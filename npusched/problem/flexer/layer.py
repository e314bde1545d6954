"""Flexer's problem: the tiled convolution of one layer on ``n`` NPUs sharing a global buffer, and
the schedules that run it (Min, Kwon, Egger, CGO 2023, §2.2–§3, Fig. 3).

A layer tiled by ``(t_oc, t_oh, t_ow, t_ic)`` is a DFG of operations ``tCONV (k, y, x, c)``
(Fig. 3c) that read an input tile ``IN[c, y, x]``, a weight tile ``WT[k, c]`` and, for ``c > 0``,
the partial sum ``OT[k, y, x]`` left by ``(k, y, x, c − 1)``, and write ``OT[k, y, x]`` in
place. The only edges of the DFG are these partial-sum chains. Data tiles are numbered once:
inputs first, then weights, then output tiles; an output tile is one block for its whole chain
(accumulators of ``psum_bytes`` per element while the chain runs, written back at the output
precision when it ends).

A :class:`FlexerSchedule` records everything a checker needs: the NPU and time of each
operation, every DRAM transfer, and every *residency* — a data tile occupying the address range
``[addr, addr + size)`` of the global buffer during ``[start, end)``; the schedulers add why
each operation and transfer waited (:class:`Waits`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from npusched.workload.layers import Layer

IntArray = NDArray[np.int64]

#: Data types, as in Fig. 10 (``PS`` is an output tile written back before its chain ends).
IN, WT, OT = 0, 1, 2
TYPE_NAMES = ("IN", "WT", "OT")
TRANSFER_TYPES = ("input", "weight", "psum", "output")


def supports(layer: Layer) -> bool:
    """Layers Flexer tiles: dense convolutions and fully connected layers."""
    return layer.op == "fc" or (layer.op == "conv" and layer.groups == 1)


@dataclass(frozen=True, eq=False)
class TiledConv:
    """The DFG of one tiled layer (Fig. 3) with data sizes in bytes and latencies in cycles.

    Operations are numbered as :meth:`Tiling.index` (``C`` innermost), so ``o − 1`` is the
    partial-sum predecessor of every operation with ``c > 0``.

    Attributes
    ----------
    name
        Layer name.
    counts
        Tiles per dimension ``(n_k, n_y, n_x, n_c)``.
    data_type
        ``IN``, ``WT`` or ``OT`` per data tile.
    data_bytes
        Size of each data tile in the buffer (output tiles: ``psum_bytes`` per element while
        ``n_c > 1``).
    out_bytes
        Bytes written to DRAM when an output tile is final (element precision).
    op_in, op_wt, op_ot
        Data tiles each operation reads (``op_ot`` is read for ``c > 0`` and always written).
    op_c
        Input-channel tile index ``c`` of each operation.
    latency
        Cycles of each operation on one NPU (the cost model).
    """

    name: str
    counts: tuple[int, int, int, int]
    data_type: IntArray
    data_bytes: IntArray
    out_bytes: IntArray
    op_in: IntArray
    op_wt: IntArray
    op_ot: IntArray
    op_c: IntArray
    latency: IntArray
    tiles: tuple[int, int, int, int] = (0, 0, 0, 0)
    _uses: IntArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n = self.op_in.size
        for a in (self.op_wt, self.op_ot, self.op_c, self.latency):
            if a.size != n:
                raise ValueError("operation arrays differ in length")
        if (self.data_bytes <= 0).any() or (self.latency <= 0).any():
            raise ValueError("data sizes and latencies must be positive")
        uses = np.bincount(self.op_in, minlength=self.n_data) + np.bincount(
            self.op_wt, minlength=self.n_data
        )
        uses += np.bincount(self.op_ot, minlength=self.n_data)
        object.__setattr__(self, "_uses", uses.astype(np.int64))

    @property
    def n_ops(self) -> int:
        """Number of operations (tile computations, :math:`n_k n_y n_x n_c`)."""
        return int(self.op_in.size)

    @property
    def n_data(self) -> int:
        """Number of data tiles (IN, WT and OT together), the length of ``data_type``."""
        return int(self.data_type.size)

    @property
    def uses(self) -> IntArray:
        """Operations that read or write each data tile."""
        return self._uses

    def operands(self, o: int) -> tuple[int, int, int]:
        """``(IN, WT, OT)`` data tiles of operation ``o``."""
        return int(self.op_in[o]), int(self.op_wt[o]), int(self.op_ot[o])

    def pred(self, o: int) -> int | None:
        """Partial-sum predecessor of ``o`` (``None`` for ``c = 0``)."""
        return o - 1 if self.op_c[o] > 0 else None

    def last_in_chain(self, o: int) -> bool:
        """Whether ``o`` is the last operation of its partial-sum chain (``c = n_c − 1``): its
        output tile is final after it."""
        return bool(self.op_c[o] == self.counts[3] - 1)

    def footprint(self, o: int) -> int:
        """Bytes one operation needs on chip at once."""
        return int(self.data_bytes[list(self.operands(o))].sum())

    def once_cycles(self, bandwidth: float) -> tuple[int, int]:
        """DRAM cycles (each transfer :func:`dram_cycles`) of loading every input and weight
        tile once, and of writing every output tile once."""
        loads = self.data_bytes[self.data_type < OT]
        outs = self.out_bytes[self.data_type == OT]
        return tuple(  # type: ignore[return-value]
            int(np.maximum(1, np.ceil(b / bandwidth)).sum()) for b in (loads, outs)
        )

    def onchip_bytes(self) -> dict[str, int]:
        """Transfers with unlimited on-chip memory (Fig. 10, bar *on-chip*): every input and
        weight tile loaded once, every output written once."""
        t = self.data_type
        return {
            "input": int(self.data_bytes[t == IN].sum()),
            "weight": int(self.data_bytes[t == WT].sum()),
            "psum": 0,
            "output": int(self.out_bytes[t == OT].sum()),
        }


TransferKind = Literal["load", "writeback"]


@dataclass(frozen=True)
class Transfer:
    """One DRAM transfer: ``load`` brings a tile on chip, ``writeback`` stores a partial sum
    (``kind`` of data ``psum``) or a final output (``output``)."""

    kind: TransferKind
    data: int
    nbytes: int
    start: int
    end: int
    dtype: str  # one of TRANSFER_TYPES


@dataclass(frozen=True)
class Residency:
    """Data tile ``data`` occupies ``[addr, addr + size)`` of the global buffer in
    ``[start, end)``."""

    data: int
    addr: int
    size: int
    start: int
    end: int


@dataclass(frozen=True, eq=False)
class Waits:
    """Why each operation and transfer of a schedule started when it did, as the scheduler
    saw it (what :func:`~npusched.heuristics.flexer.explain.time_split` reads).

    Attributes
    ----------
    ready
        ``(n_ops, 3)``: when each operand (IN, WT, OT) of each operation was on chip and valid
        as the operation was placed; it starts at the latest of these and its NPU's free time.
    asked
        ``(n_transfers, 3)``, one row per :attr:`FlexerSchedule.transfers`: the earliest start
        each constraint allowed — the NPU whose time a load runs on free (−1: none), the
        load's block of the buffer free (−1 for write-backs), the data available (a partial
        sum back in DRAM before its reload; a write-back's value computed). The transfer
        starts in the DRAM channel's first idle gap from the latest of the three.

    Raises
    ------
    ValueError
        An array is not ``(rows, 3)``.
    """

    ready: IntArray
    asked: IntArray

    def __post_init__(self) -> None:
        for name, a in (("ready", self.ready), ("asked", self.asked)):
            if a.ndim != 2 or a.shape[1] != 3:
                raise ValueError(f"waits.{name} must have 3 columns, got shape {a.shape}")


@dataclass
class FlexerSchedule:
    """A schedule of one :class:`TiledConv` on ``n_npus`` NPUs with a global buffer of
    ``capacity`` bytes and a DRAM channel of ``bandwidth`` bytes per cycle.

    ``order`` lists the operation sets in the order they were issued (Algorithm 1, line 21).
    """

    problem: TiledConv
    n_npus: int
    capacity: int
    bandwidth: float
    npu: IntArray
    start: IntArray
    end: IntArray
    transfers: list[Transfer]
    residencies: list[Residency]
    order: list[tuple[int, ...]]
    method: str = ""
    waits: Waits | None = None  # recorded by the OoO and static schedulers

    @property
    def latency(self) -> int:
        """Cycles until the last operation and the last transfer end."""
        last = max((t.end for t in self.transfers), default=0)
        return int(max(int(self.end.max(initial=0)), last))

    @property
    def transfer_bytes(self) -> int:
        """DRAM bytes of every transfer: loads, partial-sum write-backs and final outputs (the
        bytes term of Flexer's metric, latency × bytes)."""
        return sum(t.nbytes for t in self.transfers)

    def bytes_by_type(self) -> dict[str, int]:
        """:attr:`transfer_bytes` split by the transfers' data type: every key of
        ``TRANSFER_TYPES`` (``input``, ``weight``, ``psum`` — partial sums written back and
        reloaded — and ``output``), 0 when none moved."""
        out = dict.fromkeys(TRANSFER_TYPES, 0)
        for t in self.transfers:
            out[t.dtype] += t.nbytes
        return out

    def loads_per_tile(self) -> IntArray:
        """How often each data tile is loaded (Fig. 10's reload counts; output tiles count
        their partial-sum reloads)."""
        n = np.zeros(self.problem.n_data, np.int64)
        for t in self.transfers:
            if t.kind == "load":
                n[t.data] += 1
        return n

    def metric(self, kind: str = "latency*bytes") -> float:
        """The search metric (Algorithm 1, line 5): ``latency*bytes`` (default), ``latency``
        or ``bytes``."""
        if kind == "latency*bytes":
            return float(self.latency) * float(self.transfer_bytes)
        if kind == "latency":
            return float(self.latency)
        if kind == "bytes":
            return float(self.transfer_bytes)
        raise ValueError(f"unknown metric {kind!r}; choose latency*bytes, latency or bytes")


def dram_cycles(nbytes: int, bandwidth: float) -> int:
    """Cycles of a transfer on the DRAM channel: ``⌈bytes / bandwidth⌉``."""
    return max(1, math.ceil(nbytes / bandwidth))


@dataclass(frozen=True, eq=False)
class SpillRequest:
    """A spill-victim choice of Flexer's memory manager (§4.1, Algorithm 2): the memory map as
    segments in address order — ``sizes``, remaining ``uses`` (0 for free and dead segments),
    whether each is ``movable`` (operands of the set being issued are not) and ``live`` — and
    the ``required`` contiguous bytes. What ``solve(…, "flexer-spill")`` takes; its solution is
    the list of segment indices to free.

    Raises
    ------
    ValueError
        The lists differ in length, or a size or use count is negative.
    """

    sizes: Sequence[int]
    uses: Sequence[int]
    movable: Sequence[bool]
    live: Sequence[bool]
    required: int

    def __post_init__(self) -> None:
        n = len(self.sizes)
        if not len(self.uses) == len(self.movable) == len(self.live) == n:
            raise ValueError("sizes, uses, movable and live differ in length")
        if any(v < 0 for v in self.sizes) or any(v < 0 for v in self.uses):
            raise ValueError("sizes and uses must be non-negative")


@dataclass(frozen=True, eq=False)
class FlexerInstance:
    """One tiled layer on ``n_npus`` NPUs sharing a global buffer of ``capacity`` bytes and a
    DRAM channel of ``bandwidth`` bytes per cycle; loads overlap earlier operations with
    ``prefetch``. What ``solve(…, "flexer-cpsat")`` schedules.

    Raises
    ------
    ValueError
        A non-positive NPU count, capacity or bandwidth.
    """

    problem: TiledConv
    n_npus: int
    capacity: int
    bandwidth: float
    prefetch: bool = False

    def __post_init__(self) -> None:
        if self.n_npus < 1 or self.capacity < 1 or self.bandwidth <= 0:
            raise ValueError("NPUs, buffer and bandwidth must be positive")
