"""The engine Flexer's out-of-order scheduler (:mod:`~npusched.heuristics.flexer.ooo`) and the
static loop-order baseline (:mod:`~npusched.heuristics.flexer.static`) share (§3–§4, §5).

Both run one engine, :class:`Engine`, that issues *operation sets* of up to ``n`` operations
(one per NPU) in order. Issuing a set (Algorithm 1, lines 21–28):

1. pins all operands of the set, then places every operand that is not on chip in the buffer
   (:class:`~npusched.heuristics.flexer.memory.Buffer` or the static
   :class:`~npusched.heuristics.flexer.memory.Regions`), spilling victims — a partial sum is
   written back, inputs and weights are dropped;
2. runs each operation on the NPU that frees first. Its missing operands are loaded first on
   the DRAM channel (one transfer at a time, ``⌈bytes / bandwidth⌉`` cycles, in the earliest
   idle gap once the NPU is free, the space is free and the data is in DRAM), so the NPU's
   time is ``lat(total) = lat(o) + lat(p) + lat(l)`` as in §3; with ``prefetch`` the loads
   start as soon as the space is free instead, overlapping earlier operations;
3. starts the operation when its NPU, operands and partial-sum predecessor are ready and runs
   it for the cost model's latency;
4. frees the data no later operation uses: an input or weight when its last reader ends, an
   output tile after its write-back (only partial sums and outputs are written back).

The engine records why each operation and transfer started when it did
(:class:`~npusched.problem.flexer.layer.Waits`: operands' ready times, each transfer's earliest
start per constraint), for both schedulers; :func:`~npusched.heuristics.flexer.explain.time_split`
reads them to split the latency into compute, stalls and idle time.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from npusched.heuristics.flexer.memory import Buffer, Regions
from npusched.heuristics.scheduling.routed_list import Timeline
from npusched.problem.flexer.layer import (
    OT,
    FlexerSchedule,
    Residency,
    TiledConv,
    Transfer,
    Waits,
    dram_cycles,
)

__all__ = ["Engine", "Pruned", "Tables", "TimeUp", "problem_tables", "set_operands"]


class Pruned(Exception):
    """A schedule stopped because it cannot beat the best metric of the search."""


class TimeUp(Exception):
    """A schedule stopped because the search's deadline passed."""


class Tables(NamedTuple):
    """What every engine of a problem reads and none changes (:func:`problem_tables`)."""

    size: list[int]  # bytes per tile
    cycles: list[int]  # DRAM cycles of a tile's transfer
    dtype: list[int]  # each tile's type (IN, WT, OT)
    lat: list[int]  # each operation's latency
    opd: list[tuple[int, int, int]]  # each operation's input, weight and output tile
    first: list[bool]  # the operation starts its partial-sum chain
    uses: list[int]  # each tile's use count (an engine copies it)
    once_cycles: tuple[int, int]  # DRAM cycles of the first loads and of the write-backs
    work: int  # the operations' total latency
    once: int  # bytes every schedule moves (each tile once)


@lru_cache(maxsize=4)
def problem_tables(p: TiledConv, bandwidth: float) -> Tables:
    """The :class:`Tables` of ``p`` at ``bandwidth``. Kept for the last few problems: a search
    schedules each tiling in every dataflow."""
    opd = list(zip(p.op_in.tolist(), p.op_wt.tolist(), p.op_ot.tolist(), strict=True))
    return Tables(
        size=p.data_bytes.tolist(),
        cycles=np.maximum(1, np.ceil(p.data_bytes / bandwidth)).astype(np.int64).tolist(),
        dtype=p.data_type.tolist(), lat=p.latency.tolist(), opd=opd,
        first=(p.op_c == 0).tolist(), uses=p.uses.tolist(),
        once_cycles=p.once_cycles(bandwidth), work=int(p.latency.sum()),
        once=sum(p.onchip_bytes().values()),
    )  # fmt: skip


def set_operands(
    opd: Sequence[tuple[int, int, int]], size: Sequence[int], ops: Sequence[int]
) -> list[int]:
    """Distinct operands of the operations ``ops`` (``opd``: each operation's input, weight and
    output tile), largest first (``size``: bytes per tile; ties in order of appearance)."""
    return sorted(dict.fromkeys(d for o in ops for d in opd[o]), key=lambda d: -size[d])


class Engine:
    """Issues operation sets on ``n`` NPUs with a memory and one DRAM channel; records the
    :class:`~npusched.problem.flexer.layer.FlexerSchedule`."""

    def __init__(
        self,
        p: TiledConv,
        n: int,
        capacity: int,
        bandwidth: float,
        memory: Buffer | Regions,
        prefetch: bool = False,
    ) -> None:
        self.p, self.n, self.capacity, self.bw, self.mem = p, n, capacity, bandwidth, memory
        self.prefetch = prefetch
        t = problem_tables(p, bandwidth)  # read only, shared by every engine of the problem
        self.size, self.cycles, self.dtype, self.lat = t.size, t.cycles, t.dtype, t.lat
        self.opd, self.first = t.opd, t.first
        self.rem = t.uses[:]
        nd = p.n_data
        self.ready = [0] * nd  # data valid on chip from
        self.last = [0] * nd  # end of the last issued operation that uses it
        self.in_dram = [0] * nd  # partial sum in DRAM from
        self.dirty = [False] * nd
        self.seen = [False] * nd  # loaded (inputs, weights) or written (outputs) once
        self.extra_bytes = 0  # bytes moved beyond each tile once (reloads, partial sums)
        self.once = t.once
        # cycles still to come for certain: on the NPUs every operation and (loads on the NPU's
        # time) the first load of every input and weight tile; on the DRAM channel those loads
        # and every output's write-back
        loads, writes = t.once_cycles
        self.todo = t.work + (0 if prefetch else loads)
        self.dram_todo = loads + writes
        self.dram_busy = 0
        self.res: dict[int, tuple[int, int]] = {}  # resident data → (address, since)
        self.npu_free = [0] * n
        self.dram = Timeline()
        self.transfers: list[Transfer] = []
        self.residencies: list[Residency] = []
        self.npu = np.full(p.n_ops, -1, np.int64)
        self.start = np.zeros(p.n_ops, np.int64)
        self.end = np.zeros(p.n_ops, np.int64)
        self.order: list[tuple[int, ...]] = []
        # why things waited (Waits): operands' ready times per op, constraints per transfer
        self.waited: list[tuple[int, ...]] = [(0, 0, 0)] * p.n_ops
        self.asked: list[tuple[int, int, int]] = []

    def fork(self) -> Engine:
        """An independent copy for a branch of :mod:`~npusched.heuristics.flexer.beam`: the
        problem's tables are shared (read only); every container a schedule changes is copied,
        lists shallowly (their items are numbers, tuples or frozen records)."""
        out = copy.copy(self)
        for name in ("ready", "last", "in_dram", "dirty", "seen", "rem", "npu_free"):
            setattr(out, name, getattr(self, name)[:])
        for name in ("transfers", "residencies", "order", "waited", "asked"):
            setattr(out, name, getattr(self, name)[:])
        out.res = dict(self.res)
        out.mem = self.mem.copy()  # type: ignore[union-attr]
        out.dram = Timeline()
        out.dram.starts, out.dram.ends = self.dram.starts[:], self.dram.ends[:]
        out.npu, out.start, out.end = self.npu.copy(), self.start.copy(), self.end.copy()
        return out

    # ---- DRAM ----------------------------------------------------------------------------

    def _book(
        self,
        kind: str,
        d: int,
        nbytes: int,
        earliest: int,
        dtype: str,
        asked: tuple[int, int, int] | None = None,
    ) -> int:
        dur = dram_cycles(nbytes, self.bw)
        t = self.dram.first_free(earliest, dur)
        self.dram.add(t, dur)
        self.asked.append(asked or (-1, -1, earliest))
        self.dram_busy += dur
        self.transfers.append(Transfer(kind, d, nbytes, t, t + dur, dtype))  # type: ignore[arg-type]
        if dtype == "psum" or (dtype != "output" and self.seen[d]):
            self.extra_bytes += nbytes
        else:
            self.dram_todo -= dur
            if dtype != "output" and not self.prefetch:
                self.todo -= dur
        self.seen[d] = True
        return t + dur

    def _load(self, d: int, earliest: int, npu: int = -1) -> None:
        """Load ``d`` into its reserved block, free from ``earliest``, once the NPU it runs on
        is free at ``npu`` and ``d`` is in DRAM."""
        kind = ("input", "weight", "psum")[self.dtype[d]]
        why = (npu, earliest, self.in_dram[d])
        self.ready[d] = self._book("load", d, self.size[d], max(why), kind, why)
        self.res[d] = (self.res[d][0], self.transfers[-1].start)

    def _leave(self, d: int, at: int) -> None:
        addr, since = self.res.pop(d)
        self.residencies.append(Residency(d, addr, self.size[d], since, max(at, since)))

    def _evict(self, d: int) -> int:
        """Spill ``d``: write back a modified partial sum; drop inputs and weights."""
        if self.dirty[d]:
            end = self._book("writeback", d, self.size[d], self.ready[d], "psum")
            self.in_dram[d], self.dirty[d] = end, False
        else:
            end = max(self.last[d], self.ready[d])
        self._leave(d, end)
        return end

    # ---- issuing a set --------------------------------------------------------------------

    def operands(self, ops: Sequence[int]) -> list[int]:
        """Distinct operands of ``ops``, largest first (the order they are placed in: large
        blocks first pack better)."""
        return set_operands(self.opd, self.size, ops)

    def issue(self, ops: Sequence[int]) -> None:
        """Issue the operation set ``ops`` (Algorithm 1, lines 21–28; steps 1–4 of the module
        notes): place its operands, spilling as the memory decides, book their loads on the
        DRAM channel, run each operation on the NPU that frees first, and free (writing back
        outputs) the data no later operation uses. The set is appended to the order.

        Raises
        ------
        NoFit
            An operand does not fit next to the pinned operands of the set.
        """
        self.order.append(tuple(ops))
        data = self.operands(ops)
        pinned = set(data)
        new_out = {self.opd[o][2] for o in ops if self.first[o]}
        if isinstance(self.mem, Buffer):
            self.mem.now = min(self.npu_free)
        placed: dict[int, int] = {}  # data placed but not loaded yet → its space is free from
        for d in data:
            if d in self.res:
                if isinstance(self.mem, Regions):
                    self.mem.touch(d)
                continue
            free_at = self.mem.place(d, self.size[d], pinned, self.rem, self._evict)
            self.res[d] = (self.mem.address(d), free_at)
            if d in new_out:
                self.ready[d] = free_at
            elif self.prefetch:
                self._load(d, free_at)
            else:
                placed[d] = free_at
        for o in self._run_order(ops):
            k = min(range(self.n), key=self.npu_free.__getitem__)
            for d in self.opd[o]:  # lat(total) = lat(l) + lat(o): loads on the op's NPU time
                if d in placed:
                    self._load(d, placed.pop(d), self.npu_free[k])
            self.waited[o] = ready = tuple(self.ready[d] for d in self.opd[o])
            s = max(self.npu_free[k], *ready)
            e = s + self.lat[o]
            self.todo -= self.lat[o]
            self.npu[o], self.start[o], self.end[o], self.npu_free[k] = k, s, e, e
            for d in self.opd[o]:
                self.rem[d] -= 1
                self.last[d] = max(self.last[d], e)
            ot = self.opd[o][2]
            self.ready[ot], self.dirty[ot] = e, True
        for d in data:
            if self.rem[d] == 0:
                at = self.last[d]
                if self.dtype[d] == OT:
                    out = int(self.p.out_bytes[d])
                    at = self._book("writeback", d, out, self.ready[d], "output")
                    self.dirty[d] = False
                self._leave(d, at)
                self.mem.free(d, at)

    def latency_bound(self) -> float:
        """A lower bound on the final latency: the NPUs' busy time so far plus the work still
        certain to come, spread over ``n`` NPUs (without prefetch an NPU waits for its
        operation's loads, so first loads count as NPU time); and the DRAM channel's busy time
        so far plus the transfers still certain to come (one transfer at a time). Without
        prefetch none of those can start before the first NPU is free, so the channel's time
        after that, the transfers still to come included, also bounds the latency."""
        dram = self.dram_busy + self.dram_todo
        if not self.prefetch:  # every transfer still to come starts once some NPU is free
            m = min(self.npu_free)
            later = sum(e - max(s, m) for s, e in self.dram.after(m))
            dram = max(dram, m + later + self.dram_todo)
        return max((sum(self.npu_free) + self.todo) / self.n, dram)

    def check(self, stop_above: tuple[float, float] | None, deadline: float | None = None) -> None:
        """Raise :class:`Pruned` once ``latency bound × (once-per-tile bytes + extra bytes so
        far)`` reaches the best metric ``stop_above = (latency bound, best)``; the latency
        bound is the larger of the given one and :meth:`latency_bound`. Raise
        :class:`TimeUp` once ``time.time()`` passes ``deadline``."""
        if deadline is not None and time.time() > deadline:
            raise TimeUp(f"{self.p.name}: time limit reached")
        if stop_above is None:
            return
        lat = max(stop_above[0], self.latency_bound())
        if lat * (self.once + self.extra_bytes) >= stop_above[1]:
            raise Pruned(f"{self.p.name}: cannot beat {stop_above[1]:g}")

    def _run_order(self, ops: Sequence[int]) -> list[int]:
        """Operations by the time their operands are ready; two of one partial-sum chain (the
        static baseline may issue both) keep their chain order."""
        by_ready = sorted(ops, key=lambda o: (max(self.ready[d] for d in self.opd[o]), o))
        chains: dict[int, list[int]] = {}
        for o in sorted(ops):
            chains.setdefault(self.opd[o][2], []).append(o)
        return [chains[self.opd[o][2]].pop(0) for o in by_ready]

    def schedule(self, method: str) -> FlexerSchedule:
        """The :class:`~npusched.problem.flexer.layer.FlexerSchedule` recorded so far, with its
        waits, named ``method``.

        Raises
        ------
        RuntimeError
            Some operation was not issued.
        """
        if (self.npu < 0).any():
            raise RuntimeError("not every operation was issued")
        return FlexerSchedule(
            problem=self.p,
            n_npus=self.n,
            capacity=self.capacity,
            bandwidth=self.bw,
            npu=self.npu,
            start=self.start,
            end=self.end,
            transfers=self.transfers,
            residencies=self.residencies,
            order=self.order,
            method=method,
            waits=Waits(
                np.array(self.waited, np.int64).reshape(-1, 3),
                np.array(self.asked, np.int64).reshape(-1, 3),
            ),
        )
