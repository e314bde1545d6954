"""Flexer's out-of-order scheduler (Algorithm 1, ``GetSchedule``; §3–§4), on the engine
(:class:`~npusched.heuristics.flexer.engine.Engine`) it shares with the static loop-order
baseline it is compared with (§5, :mod:`~npusched.heuristics.flexer.static`).

The OoO scheduler chooses each set from the ready operations (``MakeCombination`` and
``Get1stPrioritySet``): all sets of ``min(n, ready)`` operations from the first ``window`` ready
operations in dataflow order, pruned to one set per *dataflow map* (§4.2: per data type, how
many tiles are reused or new and how many operations of the set share each), then ranked by the
priority of §4.3 — memory benefit ``Σ reused − Σ spilled / max ref count``, then memory
utilisation, then the DRAM time of the set's memory operations — or by Table 2's Priority1
(least data moved) or Priority2 (least data spilled). Ties go to dataflow order.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from npusched.heuristics.flexer.engine import Engine, Pruned, TimeUp
from npusched.heuristics.flexer.memory import Buffer, NoFit
from npusched.partition.schemes import loop_order_rank
from npusched.problem.flexer.layer import (
    IN,
    OT,
    WT,
    FlexerSchedule,
    IntArray,
    TiledConv,
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
    """The ready queue once ``chosen`` (operations of ``ready``) is issued: without them, with
    each one's partial-sum successor, by dataflow ``rank``. The chosen lie in the queue's
    window at its head, so only the head up to the last of them is filtered in Python; the
    rest is copied as a slice."""
    done = set(chosen)
    out, i, left = [], 0, len(done)
    while left:
        o = ready[i]
        i += 1
        if o in done:
            left -= 1
        else:
            out.append(o)
    out += ready[i:]
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
