"""The memory manager's steps 1–2 (in place, best fit) over every span of free segments
(:meth:`npusched.heuristics.flexer.memory.Buffer._fit`), against a brute force and on the case
that made OoO lose (issue 25: a run of free segments tried only from its first segment)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npusched.heuristics.flexer.memory import FREE, Buffer
from npusched.heuristics.flexer.spill import _runs, run_key


def buffer_of(segs: list[list[int]], now: int) -> Buffer:
    buf = Buffer(sum(s[0] for s in segs))
    buf.segs, buf.now = [(s[0], s[1], s[2]) for s in segs], now
    return buf


def brute_fit(segs: list[list[int]], size: int, now: int) -> tuple[int, int] | None:
    """Every start, the shortest run of free segments from it with ``size`` bytes; the least
    ``(max(free time, now), not in place, hole bytes, start)``."""
    best = None
    for i in range(len(segs)):
        total, at, j = 0, 0, i
        while j < len(segs) and segs[j][1] == FREE and total < size:
            total, at, j = total + segs[j][0], max(at, segs[j][2]), j + 1
        if total < size or segs[i][1] != FREE:
            continue
        lo, hi = i, j
        while lo > 0 and segs[lo - 1][1] == FREE:
            lo -= 1
        while hi < len(segs) and segs[hi][1] == FREE:
            hi += 1
        hole = sum(s[0] for s in segs[lo:hi])
        key = (max(at, now), j > i + 1 or total != size, hole, i)
        if best is None or key < best[0]:
            best = (key, (i, j))
    return None if best is None else best[1]


seg = st.tuples(st.integers(1, 40), st.booleans(), st.integers(0, 30))


@settings(max_examples=300, deadline=None)
@given(st.lists(seg, min_size=1, max_size=12), st.integers(1, 80), st.integers(0, 30))
def test_fit_is_the_brute_force_best_span(raw, size, now):
    segs = [[s, FREE if free else k, at if free else 0] for k, (s, free, at) in enumerate(raw)]
    assert buffer_of(segs, now)._fit(size) == brute_fit(segs, size, now)


def test_space_free_by_now_beats_dead_blocks_still_in_use():
    # a hole that starts with a dead block freed at 500 and ends in space free since 0: the
    # request goes into the free space (the old search tried the hole only from its start)
    segs = [[10, 0, 0], [30, FREE, 500], [50, FREE, 0], [10, 1, 0]]
    buf = buffer_of(segs, now=100)
    assert buf._fit(30) == (2, 3)
    evict = lambda d: 0  # noqa: E731
    assert buf.place(2, 30, set(), [1] * 3, evict) == 0
    assert buf.address(2) == 40
    assert [s[:2] for s in buf.segs] == [(10, 0), (30, FREE), (30, 2), (20, FREE), (10, 1)]


def test_in_place_then_best_fit_among_spans_free_alike():
    segs = [[40, FREE, 0], [5, 0, 0], [30, FREE, 3], [5, 1, 0], [35, FREE, 0]]
    assert buffer_of(segs, now=10)._fit(30) == (2, 3)  # in place (free by now)
    assert buffer_of(segs, now=10)._fit(31) == (4, 5)  # best fit: the 35-byte hole
    assert buffer_of(segs, now=0)._fit(30) == (4, 5)  # the 30-byte block is not free yet
    # nothing free by now: the span usable earliest
    later = [[40, FREE, 9], [5, 0, 0], [30, FREE, 7]]
    assert buffer_of(later, now=0)._fit(20) == (2, 3)


def _runs_by_definition(sizes, uses, movable, live, required):
    """Algorithm 2's runs as the paper loops over them: from each start, movable segments
    until their sizes reach ``required``."""
    for start in range(len(sizes)):
        total = disadv = blocks = 0
        for end in range(start, len(sizes)):
            if not movable[end]:
                break
            total += sizes[end]
            disadv += sizes[end] * uses[end]
            blocks += live[end]
            if total >= required:
                yield start, end, run_key(total, disadv, blocks, required)
                break


@settings(max_examples=300, deadline=None)
@given(
    segs=st.lists(
        st.tuples(st.sampled_from([0, 1, 2, 3, 5, 8]), st.integers(0, 3), st.booleans(),
                  st.booleans()),
        max_size=12,
    ),
    required=st.integers(-1, 16),
)  # fmt: skip
def test_spill_runs_two_pointers_equal_the_definition(segs, required):
    """The two-pointer scan of spill runs yields exactly the runs of Algorithm 2's nested
    loops, with the same keys, in the same order."""
    sizes, uses, movable, live = (list(c) for c in zip(*segs, strict=True)) if segs else ([],) * 4
    got = list(_runs(sizes, uses, movable, live, required))
    assert got == list(_runs_by_definition(sizes, uses, movable, live, required))
