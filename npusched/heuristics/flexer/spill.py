"""Spill-victim policies of Flexer's memory manager (§4.1, Algorithm 2, Table 2).

Each policy looks at the memory map as a list of segments in address order — live data blocks,
dead blocks and free gaps — and picks which live blocks to spill so that ``required`` contiguous
bytes become available. A segment is described by its ``size``, the ``uses`` still to come for
its data (0 for free and dead segments) and whether it may be ``movable`` at all (operands of the
operation set being issued are pinned). Free and dead segments are movable at no cost.

- :func:`flexer_victims` — Algorithm 2: over every contiguous run of movable segments that is just
  large enough (from each start, the shortest run reaching ``required``), the least
  fragmentation ``Σ size − required``, then the least disadvantage ``Σ size × remaining uses``,
  then the fewest live blocks.
- :func:`first_fit_victims` — Table 2, MemPolicy1 (first-fit spill): the lowest-addressed run
  that is large enough.
- :func:`small_victims` — Table 2, MemPolicy2 (small spill): spill the smallest live blocks until
  a contiguous hole of ``required`` bytes exists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

#: A policy maps (sizes, uses, movable, live, required) to the segment indices to free, or
#: ``None`` when no choice frees enough contiguous space.
SpillPolicy = Callable[
    [Sequence[int], Sequence[int], Sequence[bool], Sequence[bool], int], list[int] | None
]


def run_key(size: int, disadvantage: int, blocks: int, required: int) -> tuple[int, int, int]:
    """Algorithm 2's lexicographic ranking of a run of segments (lines 15–26), from its sums:
    ``(fragmentation, disadvantage, live blocks)`` with fragmentation ``Σ size − required``
    and disadvantage ``Σ size × remaining uses``. The one statement of the ranking; the
    heuristic (:func:`_runs`), the exact model's check
    (:func:`npusched.formulations.flexer.spill.solve_spill_exact`) and :func:`spill_key` use it.
    """
    return size - required, disadvantage, blocks


def spill_key(
    sizes: Sequence[int],
    uses: Sequence[int],
    live: Sequence[bool],
    run: Sequence[int],
    required: int,
) -> tuple[int, int, int]:
    """Algorithm 2's lexicographic objective (:func:`run_key`) of freeing the segments
    ``run``."""
    return run_key(
        sum(sizes[i] for i in run),
        sum(sizes[i] * uses[i] for i in run),
        sum(1 for i in run if live[i]),
        required,
    )


def _runs(
    sizes: Sequence[int],
    uses: Sequence[int],
    movable: Sequence[bool],
    live: Sequence[bool],
    required: int,
):
    """For each start, the shortest run ``[start, end]`` of movable segments with
    ``Σ size ≥ required`` (Algorithm 2, lines 9–16; the ``break`` at line 34 ends a start's run
    once it is large enough, since a longer run only adds fragmentation), with its
    :func:`run_key` from sums kept along the way. Two pointers: a later start's shortest run
    ends no earlier, so each segment enters and leaves the sums once (linear in segments)."""
    n = len(sizes)
    if required <= 0:  # any one movable segment
        for i in range(n):
            if movable[i]:
                yield i, i, run_key(sizes[i], sizes[i] * uses[i], int(live[i]), required)
        return
    end = total = disadv = blocks = 0  # the sums over [start, end)
    for start in range(n):
        if end < start:
            end, total, disadv, blocks = start, 0, 0, 0
        while total < required and end < n and movable[end]:
            total += sizes[end]
            disadv += sizes[end] * uses[end]
            blocks += live[end]
            end += 1
        if total >= required and end > start:
            yield start, end - 1, run_key(total, disadv, blocks, required)
        if end > start:  # start leaves the window
            total -= sizes[start]
            disadv -= sizes[start] * uses[start]
            blocks -= live[start]
        else:  # start is not movable: the next run begins after it
            end = start + 1


def flexer_victims(
    sizes: Sequence[int],
    uses: Sequence[int],
    movable: Sequence[bool],
    live: Sequence[bool],
    required: int,
) -> list[int] | None:
    """Algorithm 2: the run with the least ``(fragmentation, disadvantage, live blocks)``; ties
    go to the lowest address (a later run must be strictly better, lines 18–26)."""
    best: tuple[int, int] | None = None
    best_key: tuple[int, int, int] | None = None
    for start, end, key in _runs(sizes, uses, movable, live, required):
        if best_key is None or key < best_key:
            best, best_key = (start, end), key
    return None if best is None else list(range(best[0], best[1] + 1))


def first_fit_victims(
    sizes: Sequence[int],
    uses: Sequence[int],
    movable: Sequence[bool],
    live: Sequence[bool],
    required: int,
) -> list[int] | None:
    """Table 2, MemPolicy1: the first (lowest-addressed) run of movable segments that is large
    enough."""
    for start, end, _ in _runs(sizes, uses, movable, live, required):
        return list(range(start, end + 1))
    return None


def small_victims(
    sizes: Sequence[int],
    uses: Sequence[int],
    movable: Sequence[bool],
    live: Sequence[bool],
    required: int,
) -> list[int] | None:
    """Table 2, MemPolicy2: free live movable blocks smallest first (lowest address on ties)
    until some contiguous run of free segments holds ``required`` bytes; only the blocks inside
    that run are returned with it (the others were spilled on the way and are returned too)."""
    free = [not lv and mv for lv, mv in zip(live, movable, strict=True)]
    order = sorted((i for i in range(len(sizes)) if live[i] and movable[i]), key=lambda i: sizes[i])
    spilled: list[int] = []
    for i in [-1, *order]:
        if i >= 0:
            free[i] = True
            spilled.append(i)
        run_start, total = 0, 0
        for j, f in enumerate(free):
            if not f:
                run_start, total = j + 1, 0
                continue
            total += sizes[j]
            if total >= required:
                inside = set(range(run_start, j + 1))
                return sorted(set(spilled) | {k for k in inside if not live[k]})
    return None


POLICIES: dict[str, SpillPolicy] = {
    "flexer": flexer_victims,
    "first-fit": first_fit_victims,
    "small-spill": small_victims,
}
