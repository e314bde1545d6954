"""Flexer's out-of-order scheduler (Algorithm 1, ``GetSchedule``; §3–§4) and the engine it
shares with the static loop-order baseline it is compared with (§5,
:mod:`~npusched.heuristics.flexer.static`).

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

The OoO scheduler chooses each set from the ready operations (``MakeCombination`` and
``Get1stPrioritySet``): all sets of ``min(n, ready)`` operations from the first ``window`` ready
operations in dataflow order, pruned to one set per *dataflow map* (§4.2: per data type, how
many tiles are reused or new and how many operations of the set share each), then ranked by the
priority of §4.3 — memory benefit ``Σ reused − Σ spilled / max ref count``, then memory
utilisation, then the DRAM time of the set's memory operations — or by Table 2's Priority1
(least data moved) or Priority2 (least data spilled). Ties go to dataflow order.

The static baseline runs the operations in a loop order, ``n`` consecutive operations per set
(Fig. 3b unrolls the innermost loop over the NPUs), with fixed regions per data type: the
stationary type (IS, WS or OS) gets all the space the other two leave after ``n`` tiles each.
"""

from __future__ import annotations

import bisect
import copy
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from npusched.heuristics.flexer.memory import Buffer, NoFit, Regions
from npusched.heuristics.scheduling.routed_list import Timeline
from npusched.partition.schemes import loop_order_rank
from npusched.problem.flexer.layer import (
    IN,
    OT,
    WT,
    FlexerSchedule,
    IntArray,
    Residency,
    TiledConv,
    Transfer,
    Waits,
    dram_cycles,
)
from npusched.problem.flexer.settings import MEM_POLICIES, PRIORITIES

#: OoO dataflows: the loop order that numbers the DFG (and breaks ties), one per stationarity.
DATAFLOWS = {"OS": "K,OY,OX,C", "WS": "K,C,OY,OX", "IS": "C,OY,OX,K"}

__all__ = [
    "DATAFLOWS",
    "MEM_POLICIES",
    "PRIORITIES",
    "NoFit",
    "Pruned",
    "TimeUp",
    "ooo_schedule",
]


class Pruned(Exception):
    """A schedule stopped because it cannot beat the best metric of the search."""


class TimeUp(Exception):
    """A schedule stopped because the search's deadline passed."""


@lru_cache(maxsize=4)
def _tables(p: TiledConv, bandwidth: float) -> tuple:
    """What every engine of ``p`` reads and none changes: each tile's size, its load's DRAM
    cycles, its type; each operation's latency, operands and whether it starts its chain; the
    tiles' use counts (copied by each engine); the once-per-tile DRAM cycles, the total
    latency and the once-per-tile bytes. Kept for the last few problems: a search schedules
    each tiling in every dataflow."""
    size = p.data_bytes.tolist()
    cycles = np.maximum(1, np.ceil(p.data_bytes / bandwidth)).astype(np.int64).tolist()
    opd = list(zip(p.op_in.tolist(), p.op_wt.tolist(), p.op_ot.tolist(), strict=True))
    return (size, cycles, p.data_type.tolist(), p.latency.tolist(), opd, (p.op_c == 0).tolist(),
            p.uses.tolist(), p.once_cycles(bandwidth), int(p.latency.sum()),
            sum(p.onchip_bytes().values()))  # fmt: skip


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
        t = _tables(p, bandwidth)  # read only, shared by every engine of the problem
        self.size, self.cycles, self.dtype, self.lat, self.opd, self.first = t[:6]
        self.rem = t[6][:]
        nd = p.n_data
        self.ready = [0] * nd  # data valid on chip from
        self.last = [0] * nd  # end of the last issued operation that uses it
        self.in_dram = [0] * nd  # partial sum in DRAM from
        self.dirty = [False] * nd
        self.seen = [False] * nd  # loaded (inputs, weights) or written (outputs) once
        self.extra_bytes = 0  # bytes moved beyond each tile once (reloads, partial sums)
        self.once = t[9]
        # cycles still to come for certain: on the NPUs every operation and (loads on the NPU's
        # time) the first load of every input and weight tile; on the DRAM channel those loads
        # and every output's write-back
        loads, writes = t[7]
        self.todo = t[8] + (0 if prefetch else loads)
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


# ---- the OoO scheduler ---------------------------------------------------------------------


@lru_cache(maxsize=64)
def _combinations(w: int, k: int) -> IntArray:
    return np.array(list(itertools.combinations(range(w), k)), np.int64).reshape(-1, k)


@dataclass(frozen=True)
class SetScore:
    """What §4.3 and Table 2 rank a candidate set by."""

    reused: int
    spilled: float  # Σ size / max ref count
    spilled_bytes: int
    moved_bytes: int
    utilisation: float
    mem_cycles: int

    def key(self, priority: str) -> tuple[float, ...]:
        """The sort key of the set under ``priority`` (one of
        :data:`~npusched.problem.flexer.settings.PRIORITIES`; the least key goes first).

        ``default`` (§4.3): ``(spilled − reused, −utilisation, mem_cycles)`` — the largest
        memory benefit, then the fullest buffer, then the least DRAM time of the set's loads;
        ``min-transfer`` (Table 2's Priority1) puts the bytes moved first, any other priority
        (``min-spill``, Priority2) the bytes spilled.
        """
        default = (self.spilled - self.reused, -self.utilisation, self.mem_cycles)
        if priority == "default":
            return default
        if priority == "min-transfer":
            return (self.moved_bytes, *default)
        return (self.spilled_bytes, *default)


def unspilled_score(engine: Engine, ops: Sequence[int], used: int) -> SetScore:
    """The score of ``ops`` if nothing had to be spilled (``used``: bytes live now): a lower
    bound on its :meth:`SetScore.key` under every priority, equal to it when placing the set
    spills nothing (spilling only adds to the spilled and moved terms, which come first or
    after an equal first term, and every victim has uses left, so its spilled term is
    positive)."""
    e = engine
    new_out = {e.opd[o][2] for o in ops if e.first[o]}
    new = {d for o in ops for d in e.opd[o] if d not in e.res}
    loads = new - new_out
    return SetScore(
        reused=sum(e.size[d] for o in ops for d in e.opd[o] if d in e.res),
        spilled=0.0,
        spilled_bytes=0,
        moved_bytes=sum(e.size[d] for d in loads),
        utilisation=(used + sum(e.size[d] for d in new)) / e.capacity,
        mem_cycles=sum(e.cycles[d] for d in loads),
    )


def score_set(engine: Engine, ops: Sequence[int], used: int | None = None) -> SetScore | None:
    """Dry run of issuing ``ops`` on a copy of the buffer (``None`` if it does not fit)."""
    e = engine
    assert isinstance(e.mem, Buffer)
    base = unspilled_score(e, ops, e.mem.used() if used is None else used)
    buf = e.mem.copy()
    data = e.operands(ops)
    pinned = set(data)
    victims: list[int] = []

    def evict(d: int) -> int:
        victims.append(d)
        return 0

    try:
        for d in data:
            if d not in e.res:
                buf.place(d, e.size[d], pinned, e.rem, evict)
    except NoFit:
        return None
    if not victims:
        return base
    dirty = [v for v in victims if e.dirty[v]]
    return replace(
        base,
        spilled=sum(e.size[v] / min(e.n, e.rem[v]) for v in victims),
        spilled_bytes=sum(e.size[v] for v in victims),
        moved_bytes=base.moved_bytes + sum(e.size[v] for v in dirty),
        utilisation=buf.used() / e.capacity,
        mem_cycles=base.mem_cycles + sum(e.cycles[v] for v in dirty),
    )


WindowState = tuple[list[list[int]], tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]
"""Per data type: the window's tiles, their states and their sharing pattern."""


def _window_state(e: Engine, window: Sequence[int]) -> WindowState:
    """Per data type (IN, WT, OT), the tile of each operation of ``window``, its state (0 on
    chip, 1 to be loaded, 2 a new output: the operation starts its chain) and the window's
    sharing pattern (:func:`_pattern`)."""
    ids = [[e.opd[o][t] for o in window] for t in (IN, WT, OT)]
    state = tuple(
        tuple(0 if d in e.res else (2 if t == OT and e.first[o] else 1)
              for o, d in zip(window, row, strict=True))
        for t, row in zip((IN, WT, OT), ids, strict=True)
    )  # fmt: skip
    return ids, state, _pattern(ids)


def _pattern(ids: list[list[int]]) -> tuple[tuple[int, ...], ...]:
    """Per data type, each window position's tile labelled by the last position that holds
    it: which operations of the window share a tile, whatever the tiles' numbers."""
    return tuple(tuple(map({d: i for i, d in enumerate(row)}.__getitem__, row)) for row in ids)


_MAPS: dict[tuple[object, ...], IntArray] = {}
""":func:`dataflow_maps` by its window's pattern (the tiles' sharing and states): a window's
maps depend only on which of its operations share a tile and on the tiles' states."""


def dataflow_maps(
    engine: Engine, window: Sequence[int], combos: IntArray, state: WindowState | None = None
) -> IntArray:
    """Indices of ``combos`` (rows of positions in ``window``) with distinct dataflow maps
    (§4.2, Fig. 7c), the first of each in order.

    Per data type, the map lists for reused and for new tiles how many operations of the set
    share each tile; a row key is, per type, the sorted ``share count + 16 · state`` of the
    set's operations (``state``: 0 on chip, 1 loaded, 2 a new output). The answer depends on
    the window only through which positions share a tile and their states, so it is kept by
    that pattern (in ``_MAPS``): windows of a regular tiling repeat a few patterns. ``state``:
    the window's :func:`_window_state`, when the caller has it.
    """
    ids, st, pattern = state or _window_state(engine, window)
    key = (combos.shape, pattern, st)
    hit = _MAPS.get(key)
    if hit is not None:
        return hit
    cols = []
    for row, row_state in zip(ids, st, strict=True):
        sel = np.array(row, np.int64)[combos]
        share = (sel[:, :, None] == sel[:, None, :]).sum(2)
        cols.append(np.sort(share + 16 * np.array(row_state, np.int64)[combos], axis=1))
    keys = np.concatenate(cols, axis=1)
    order = np.lexsort(keys.T[::-1])  # stable: equal rows keep their order
    ranked = keys[order]
    first = np.r_[True, (ranked[1:] != ranked[:-1]).any(axis=1)]
    if len(_MAPS) > 100_000:
        _MAPS.clear()
    _MAPS[key] = out = np.sort(order[first])
    return out


_MASKS: dict[tuple[object, ...], tuple[IntArray, IntArray, IntArray]] = {}
""":func:`_set_masks` by its sets and its window's pattern."""


def _set_masks(sets: IntArray, state: WindowState) -> tuple[IntArray, IntArray, IntArray]:
    """Which operands of the window count, in each set of ``sets`` (rows of positions), as
    reused (on chip: once per operation that reads it), as new (not on chip: once per set, at
    its first position in the row) and as loaded (new, not a new output): three 0/1 matrices,
    set × (data type, window position). They depend only on which positions share a tile and
    on the tiles' states, so they are kept by that pattern (windows of a regular tiling repeat
    a few)."""
    ids, states, pattern = state
    key = (sets.shape, sets.tobytes(), pattern, states)
    hit = _MASKS.get(key)
    if hit is not None:
        return hit
    d = np.array(pattern, np.int64)[:, sets]  # (type, set, position)
    st = np.array(states, np.int64)[:, sets]
    n_sets, k = sets.shape
    earlier = np.tri(k, k, -1, dtype=bool).T  # [i, j]: i before j
    repeat = ((d[..., :, None] == d[..., None, :]) & earlier).any(-2)
    fresh = ~repeat & (st > 0)
    w = len(ids[0])
    rows = np.arange(n_sets)[:, None]
    out = []
    for mask in (st == 0, fresh, fresh & (st == 1)):
        m = np.zeros((n_sets, 3 * w), np.int64)
        for t in range(3):
            m[rows, t * w + sets] = mask[t]
        out.append(m)
    if len(_MASKS) > 100_000:
        _MASKS.clear()
    _MASKS[key] = reused, new, load = out[0], out[1], out[2]
    return reused, new, load


def unspilled_keys(
    e: Engine,
    window: Sequence[int],
    sets: IntArray,
    priority: str,
    used: int,
    state: WindowState | None = None,
) -> list[list[float]]:
    """:func:`unspilled_score`'s :meth:`SetScore.key` of every set of ``sets`` (rows of
    positions in ``window``), as columns (the key's first term first), computed for all rows
    at once (:func:`_set_masks`): the same numbers as ``unspilled_score(e, ops,
    used).key(priority)`` row by row. ``state`` as in :func:`dataflow_maps`.
    """
    state = state or _window_state(e, window)
    ids = state[0]
    reused, new, load = _set_masks(sets, state)
    size = np.array([e.size[x] for row in ids for x in row], np.int64)
    cyc = np.array([e.cycles[x] for row in ids for x in row], np.int64)
    default = [
        (0.0 - reused @ size).tolist(),
        (-((used + new @ size) / e.capacity)).tolist(),
        (load @ cyc).tolist(),
    ]
    if priority == "default":
        return default
    if priority == "min-transfer":
        return [(load @ size).tolist(), *default]
    return [[0] * len(sets), *default]


def ranked_sets(e: Engine, cand: list[int], k: int, priority: str, top: int = 1) -> list[list[int]]:
    """The ``top`` first-priority sets of ``k`` operations from ``cand``, best first (Algorithm
    1, lines 20–21; ``top > 1`` for :mod:`~npusched.heuristics.flexer.beam`); when no set of
    ``k`` fits next to each other in the buffer, sets of ``k − 1``, and so on.

    Sets rank by ``(key, dataflow order)``, so the first is the greedy's choice. They are
    dry-run in order of :func:`unspilled_score` (a lower bound on their key; for all sets at
    once by :func:`unspilled_keys`) and the loop stops once that bound exceeds the ``top``-th
    best key found, so sets that spill nothing usually end the search."""
    assert isinstance(e.mem, Buffer)
    used = e.mem.used()
    state = _window_state(e, cand)
    for size in range(k, 0, -1):
        combos = _combinations(len(cand), size)
        rows = dataflow_maps(e, cand, combos, state) if len(cand) > size else np.zeros(1, np.int64)
        cols = unspilled_keys(e, cand, combos[rows], priority, used, state)
        order = np.lexsort(np.array([np.arange(len(rows)), *cols[::-1]])).tolist()
        found: list[tuple[tuple[float, ...], int]] = []
        for i in order:
            bound = (tuple(c[i] for c in cols), i)
            if len(found) >= top and bound > found[top - 1]:
                break
            sc = score_set(e, [cand[j] for j in combos[rows[i]]], used)
            if sc is not None:
                found.append((sc.key(priority), i))
                found.sort()
        if found:
            return [[cand[j] for j in combos[rows[i]]] for _, i in found[:top]]
    raise NoFit(f"{e.p.name}: one operation does not fit in {e.capacity} bytes")


def _select(e: Engine, cand: list[int], k: int, priority: str) -> list[int]:
    """The first-priority set (:func:`ranked_sets` with ``top = 1``)."""
    return ranked_sets(e, cand, k, priority)[0]


def ready_after(
    problem: TiledConv, ready: list[int], chosen: Sequence[int], rank: IntArray
) -> list[int]:
    """The ready queue once ``chosen`` is issued: without them, with each one's partial-sum
    successor, by dataflow ``rank``."""
    done = set(chosen)
    out = [o for o in ready if o not in done]
    nc = problem.counts[3]
    for o in chosen:  # ranks are distinct: each successor has one place in the order
        if problem.op_c[o] < nc - 1:
            bisect.insort(out, o + 1, key=rank.__getitem__)
    return out


def new_engine(
    problem: TiledConv,
    n_npus: int,
    capacity: int,
    bandwidth: float,
    *,
    dataflow: str,
    priority: str,
    mem_policy: str,
    prefetch: bool,
) -> tuple[Engine, list[int], IntArray]:
    """An OoO engine with an empty buffer, its first ready queue (the first operation of every
    chain) and the dataflow's rank; checks the option names."""
    if priority not in PRIORITIES:
        raise ValueError(f"unknown priority {priority!r}; choose from {PRIORITIES}")
    if mem_policy not in MEM_POLICIES:
        raise ValueError(f"unknown memory policy {mem_policy!r}; choose from {MEM_POLICIES}")
    rank = loop_order_rank(problem.counts, DATAFLOWS.get(dataflow, dataflow))
    e = Engine(problem, n_npus, capacity, bandwidth, Buffer(capacity, mem_policy), prefetch)
    ready = sorted((int(o) for o in np.flatnonzero(problem.op_c == 0)), key=rank.__getitem__)
    return e, ready, rank


def ooo_schedule(
    problem: TiledConv,
    n_npus: int,
    capacity: int,
    bandwidth: float,
    *,
    dataflow: str = "OS",
    priority: str = "default",
    mem_policy: str = "flexer",
    window: int | None = None,
    stop_above: tuple[float, float] | None = None,
    prefetch: bool = False,
    deadline: float | None = None,
) -> FlexerSchedule:
    """Flexer's ``GetSchedule`` (Algorithm 1, lines 12–32) for one tiling and dataflow.

    Parameters
    ----------
    dataflow
        ``OS``, ``WS``, ``IS`` (:data:`DATAFLOWS`) or a loop order such as ``"K,OY,OX,C"``:
        numbers the DFG, orders the ready queue and breaks ties.
    priority
        ``default`` (§4.3), ``min-transfer`` (Table 2, Priority1) or ``min-spill``
        (Priority2).
    mem_policy
        ``flexer`` (Algorithm 2), ``first-fit`` or ``small-spill`` (Table 2, MemPolicy1/2).
    window
        Ready operations considered per step, in dataflow order (default ``3 n``, at least 8).
    stop_above
        ``(latency bound, best metric)``: give up (:class:`Pruned`) once ``latency bound ×
        (once-per-tile bytes + the bytes moved beyond them so far)`` reaches the best metric —
        a bound on this schedule's ``latency × bytes`` (the search's branch and bound).
    prefetch
        Load a set's tiles as soon as their space is free, overlapping compute; by default an
        operation's loads run on its NPU's time just before it, as §3's
        ``lat(total) = lat(o) + lat(p) + lat(l)``.
    deadline
        A ``time.time()`` after which the schedule stops with :class:`TimeUp`.

    Raises
    ------
    NoFit
        When the operands of one operation set cannot be on chip together.
    """
    e, ready, rank = new_engine(
        problem, n_npus, capacity, bandwidth, dataflow=dataflow, priority=priority,
        mem_policy=mem_policy, prefetch=prefetch,
    )  # fmt: skip
    w = window or max(8, 3 * n_npus)
    while ready:
        chosen = _select(e, ready[:w], min(n_npus, len(ready)), priority)
        e.issue(chosen)
        e.check(stop_above, deadline)
        ready = ready_after(problem, ready, chosen, rank)
    return e.schedule(f"ooo/{dataflow}/{priority}/{mem_policy}")
