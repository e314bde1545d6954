"""Greedy residency plans for a fixed order of Flexer's operation sets (seed
``000_4482881724fd7be8.txt``, §4.1): upper bounds on, and warm starts of, the offline models of
:mod:`npusched.formulations.flexer.offline`.

:func:`belady_plan` simulates Belady's rule (evict the tile whose next use is farthest) without
contiguity: a feasible keep vector whose bytes upper-bound the optimum; ``improve=True`` then
keeps every evicted gap that still fits (the warm start). :func:`contiguous_plan` is the same
rule with best-fit addresses (a feasible solution of the contiguous model).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npusched.problem.flexer.layer import TiledConv
from npusched.problem.flexer.residency import (
    BoolArray,
    ResidencyPlan,
    UseGaps,
    check_fits,
    use_gaps,
)


def _evict_key(gaps: UseGaps, u: int) -> tuple[int, float]:
    """Belady's victim order for a tile whose last use so far is ``u``: farthest next use first,
    ties to the lower eviction cost per byte (IN/WT before partial sums)."""
    g = int(gaps.gap_after[u])
    return int(gaps.last[g]), -float(gaps.cost[g]) / float(gaps.size[g])


def _improve(gaps: UseGaps, kept: BoolArray, capacity: int) -> BoolArray:
    """Keep every evicted gap that still fits, most bytes saved per byte-step first."""
    kept = kept.copy()
    room = capacity - gaps.demand - gaps.occupancy(kept)
    span = gaps.span
    cand = np.flatnonzero(~kept)
    ratio = gaps.cost[cand] / (gaps.size[cand] * np.maximum(span[cand], 1))
    for g in cand[np.argsort(-ratio, kind="stable")]:
        a, b = int(gaps.first[g]) + 1, int(gaps.last[g])
        if a >= b or room[a:b].min() >= gaps.size[g]:
            kept[g] = True
            room[a:b] -= gaps.size[g]
    return kept


def belady_gaps(gaps: UseGaps, capacity: int, improve: bool = False) -> ResidencyPlan:
    """:func:`belady_plan` of uses and gaps already computed."""
    check_fits(gaps, capacity)
    kept = np.zeros(gaps.n_gaps, bool)
    resident: dict[int, int] = {}  # tile -> its latest use
    used = 0
    for t in range(gaps.n_steps):
        us = gaps.uses_at(t)
        pinned = {int(gaps.use_data[u]) for u in us}
        need = 0
        for u in us:
            d = int(gaps.use_data[u])
            if d in resident:
                kept[gaps.gap_after[resident[d]]] = True
            else:
                need += int(gaps.use_size[u])
        if used + need > capacity:
            victims = sorted(
                (d for d in resident if d not in pinned),
                key=lambda d: _evict_key(gaps, resident[d]),
                reverse=True,
            )
            for d in victims:
                if used + need <= capacity:
                    break
                used -= int(gaps.size[gaps.gap_after[resident.pop(d)]])
        used += need
        for u in us:
            d = int(gaps.use_data[u])
            if gaps.gap_after[u] >= 0:
                resident[d] = int(u)
            else:  # last use: the tile leaves (an output is written, mandatory bytes)
                resident.pop(d, None)
                used -= int(gaps.use_size[u])
    if improve:
        kept = _improve(gaps, kept, capacity)
    return ResidencyPlan(gaps, kept, gaps.transfer_bytes(kept))


def belady_plan(
    problem: TiledConv, order: Sequence[Sequence[int]], capacity: int, *, improve: bool = False
) -> ResidencyPlan:
    """Belady's rule without contiguity: before each set, load its missing tiles, evicting the
    tiles not used by the set whose next use is farthest (ties: IN/WT before partial sums).

    Its bytes are an upper bound on the offline optimum. ``improve=True`` afterwards keeps every
    evicted gap that still fits at all of its steps (still feasible, never more bytes).

    Raises
    ------
    ValueError
        A set's own tiles exceed ``capacity``, or ``order`` is invalid (:func:`use_gaps`).
    """
    return belady_gaps(use_gaps(problem, order), capacity, improve)


def belady_bytes(problem: TiledConv, order: Sequence[Sequence[int]], capacity: int) -> int:
    """DRAM bytes of :func:`belady_plan` (an upper bound on :func:`offline_bound`)."""
    return belady_plan(problem, order, capacity).bytes


def _best_fit(spans: list[tuple[int, int]], size: int, capacity: int) -> int | None:
    """Lowest address of the smallest free hole of at least ``size`` bytes."""
    best: tuple[int, int] | None = None
    prev = 0
    for lo, hi in [*sorted(spans), (capacity, capacity)]:
        hole = lo - prev
        if hole >= size and (best is None or hole < best[0]):
            best = (hole, prev)
        prev = max(prev, hi)
    return None if best is None else best[1]


def contiguous_gaps(gaps: UseGaps, capacity: int) -> ResidencyPlan:
    """:func:`contiguous_plan` of uses and gaps already computed."""
    check_fits(gaps, capacity)
    kept = np.zeros(gaps.n_gaps, bool)
    address = np.zeros(gaps.n_uses, np.int64)
    resident: dict[int, tuple[int, int]] = {}  # tile -> (address, latest use)
    for t in range(gaps.n_steps):
        us = gaps.uses_at(t)
        pinned = {int(gaps.use_data[u]) for u in us}
        carried = {d for d in pinned if d in resident}
        missing = sorted(
            (int(u) for u in us if int(gaps.use_data[u]) not in resident),
            key=lambda u: -int(gaps.use_size[u]),
        )
        repack = False
        for u in missing:
            d, s = int(gaps.use_data[u]), int(gaps.use_size[u])
            while True:
                boxes = [(x, x + int(gaps.use_size[v])) for x, v in resident.values()]
                a = _best_fit(boxes, s, capacity)
                victims = [e for e in resident if e not in pinned]
                if a is not None or not victims:
                    break
                del resident[max(victims, key=lambda e: _evict_key(gaps, resident[e][1]))]
            if a is None:
                repack = True
                break
            resident[d] = (a, u)
        if repack:  # the set's own tiles are fragmented: reload them packed from address 0
            resident, carried = {}, set()
            offsets = np.cumsum(gaps.use_size[us]) - gaps.use_size[us]
            for u, a in zip(us, offsets, strict=True):
                resident[int(gaps.use_data[u])] = (int(a), int(u))
        for u in us:
            d = int(gaps.use_data[u])
            if d in carried:
                kept[gaps.gap_after[resident[d][1]]] = True
            address[u] = resident[d][0]
            if gaps.gap_after[u] >= 0:
                resident[d] = (resident[d][0], int(u))
            else:
                del resident[d]
    return ResidencyPlan(gaps, kept, gaps.transfer_bytes(kept), address)


def contiguous_plan(
    problem: TiledConv, order: Sequence[Sequence[int]], capacity: int
) -> ResidencyPlan:
    """Belady's rule with best-fit addresses and no moves on chip: a feasible solution of the
    contiguous model (:meth:`UseGaps.overlaps` is empty). When the set's own resident tiles leave
    no hole large enough, all of them are reloaded packed from address 0.

    Raises
    ------
    ValueError
        A set's own tiles exceed ``capacity``, or ``order`` is invalid (:func:`use_gaps`).
    """
    return contiguous_gaps(use_gaps(problem, order), capacity)
