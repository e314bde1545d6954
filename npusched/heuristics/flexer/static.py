"""Flexer's static loop-order baseline (§5: "exhaustive search among all schedules with different
data stationary models and viable tiling sizes"; §2.2, Fig. 3b–c, Fig. 5b): the operations in a
loop order, ``n`` at a time (one per NPU), with a fixed region per data type, run on the OoO
scheduler's engine (:class:`~npusched.heuristics.flexer.engine.Engine`).

Its bytes, without its times (:func:`static_bytes`)
---------------------------------------------------
A static schedule (:func:`static_schedule`) moves the same data
whatever its times are. Its memory, :class:`~npusched.heuristics.flexer.memory.Regions`, picks a
free slot by the time it became free, which moves a tile's *address*, but it replaces a tile only
when its region has no free slot (a count that times do not change) and then the least recently
*used* unpinned one (an order of issue, not of time). So the sequence of loads, partial-sum
spills and write-backs is fixed by the loop order, the stationarity and the buffer; the engine's
times decide only when each transfer runs.

:func:`static_bytes` replays that sequence with the engine's memory steps (§4.1's pin, place and
spill; Algorithm 1, lines 21–28, steps 1 and 4 of :mod:`~npusched.heuristics.flexer.engine`) and
no clock. The static search (:func:`~npusched.heuristics.flexer.search.search_layer`) uses it as
a bound: every schedule is at least :func:`~npusched.heuristics.flexer.search.lat_bound` long,
so ``lat_bound × bytes`` bounds its ``latency × bytes``, and a loop order whose bound reaches the
best metric is set aside before it is timed. The test suite checks that the bytes equal the
timed schedule's ``transfer_bytes`` on random tilings, orders, stationarities and buffers.
"""

from __future__ import annotations

import numpy as np

from npusched.heuristics.flexer.engine import Engine, Pruned, problem_tables, set_operands
from npusched.heuristics.flexer.memory import NoFit, Regions
from npusched.partition.schemes import loop_order_rank
from npusched.problem.flexer.layer import IN, OT, WT, FlexerSchedule, TiledConv
from npusched.problem.flexer.settings import STATIONARITY

__all__ = ["static_bytes", "static_regions", "static_schedule", "static_sets"]


def static_sets(p: TiledConv, n_npus: int, loop_order: str) -> list[list[int]]:
    """The static baseline's operation sets: the operations in ``loop_order``, ``n`` consecutive
    ones per set (Fig. 3b unrolls the innermost loop over the NPUs)."""
    order = np.argsort(loop_order_rank(p.counts, loop_order)).tolist()
    return [order[i : i + n_npus] for i in range(0, p.n_ops, n_npus)]


def static_regions(p: TiledConv, n_npus: int, capacity: int, stationary: str) -> Regions:
    """The static baseline's memory (Fig. 5b): one region per data type of ``n`` slots (one
    tile per NPU, each slot as large as the type's largest tile), and the ``stationary`` type's
    region grown by the space the other two leave.

    Raises
    ------
    ValueError
        Unknown ``stationary``.
    NoFit
        When ``n`` tiles of each type do not fit in ``capacity``.
    """
    if stationary not in STATIONARITY:
        raise ValueError(f"unknown stationarity {stationary!r}; choose from {STATIONARITY}")
    slot = [int(p.data_bytes[p.data_type == t].max()) for t in (IN, WT, OT)]
    count = [int((p.data_type == t).sum()) for t in (IN, WT, OT)]
    keep = STATIONARITY.index(stationary)
    slots = [min(n_npus, c) for c in count]
    rest = capacity - sum(n * b for n, b in zip(slots, slot, strict=True))
    if rest < 0:
        raise NoFit(f"{p.name}: {n_npus} tiles of each type do not fit in {capacity} bytes")
    slots[keep] = min(count[keep], slots[keep] + rest // slot[keep])
    return Regions(slots, slot, p.data_type.tolist())


def static_schedule(
    problem: TiledConv,
    n_npus: int,
    capacity: int,
    bandwidth: float,
    *,
    loop_order: str = "K,OY,OX,C",
    stationary: str = "OS",
    stop_above: tuple[float, float] | None = None,
    prefetch: bool = False,
    deadline: float | None = None,
) -> FlexerSchedule:
    """A loop-order schedule (§2.2, Fig. 3b–c, Fig. 5b): operations in ``loop_order``, ``n`` at
    a time, with fixed regions; the ``stationary`` type (``IS``, ``WS``, ``OS``) keeps the space
    the other types leave after ``n`` slots each. ``stop_above``, ``prefetch`` and ``deadline``
    as in :func:`~npusched.heuristics.flexer.ooo.ooo_schedule`.

    Raises
    ------
    NoFit
        When the regions do not fit in ``capacity``.
    """
    p = problem
    mem = static_regions(p, n_npus, capacity, stationary)
    e = Engine(p, n_npus, capacity, bandwidth, mem, prefetch)
    for ops in static_sets(p, n_npus, loop_order):
        e.issue(ops)
        e.check(stop_above, deadline)
    return e.schedule(f"static/{loop_order}/{stationary}")


def static_bytes(
    p: TiledConv,
    n_npus: int,
    capacity: int,
    bandwidth: float,
    *,
    loop_order: str = "K,OY,OX,C",
    stationary: str = "OS",
    stop_above: tuple[float, float] | None = None,
) -> int:
    """The bytes :func:`static_schedule` moves with these arguments (its
    ``transfer_bytes``), from the memory steps alone (module notes).

    ``stop_above = (latency bound, best metric)``: raise
    :class:`~npusched.heuristics.flexer.engine.Pruned` once ``latency bound × (once-per-tile
    bytes + the bytes moved beyond them so far)`` reaches the best metric, as the timed
    schedule would with a latency bound that never rises.

    Raises
    ------
    NoFit
        When the regions do not fit in ``capacity``.
    Pruned
        See ``stop_above``.
    """
    mem = static_regions(p, n_npus, capacity, stationary)
    t = problem_tables(p, bandwidth)
    size, dtype, opd, first, rem, once = t.size, t.dtype, t.opd, t.first, t.uses[:], t.once
    out_bytes = p.out_bytes.tolist()
    dirty = [False] * p.n_data
    seen = [False] * p.n_data  # loaded (inputs, weights) or written (outputs) once
    res: set[int] = set()
    moved = extra = 0  # every transfer's bytes; those beyond each tile once

    def evict(v: int) -> int:  # a dirty partial sum is written back, the rest dropped
        nonlocal moved, extra
        res.discard(v)
        if dirty[v]:
            moved, extra, dirty[v], seen[v] = moved + size[v], extra + size[v], False, True
        return 0

    for ops in static_sets(p, n_npus, loop_order):
        data = set_operands(opd, size, ops)
        pinned = set(data)
        new_out = {opd[o][2] for o in ops if first[o]}
        for d in data:
            if d in res:
                mem.touch(d)
                continue
            mem.place(d, size[d], pinned, rem, evict)
            res.add(d)
            if d not in new_out:  # a load: a reload, or a partial sum back, is extra
                moved += size[d]
                extra += size[d] if dtype[d] == OT or seen[d] else 0
                seen[d] = True
        for o in ops:
            for d in opd[o]:
                rem[d] -= 1
            dirty[opd[o][2]] = True
        for d in data:
            if rem[d] == 0:
                if dtype[d] == OT:  # the output's write-back
                    moved, dirty[d], seen[d] = moved + out_bytes[d], False, True
                res.discard(d)
                mem.free(d, 0)
        if stop_above is not None and stop_above[0] * (once + extra) >= stop_above[1]:
            raise Pruned(f"{p.name}: cannot beat {stop_above[1]:g}")
    return moved
