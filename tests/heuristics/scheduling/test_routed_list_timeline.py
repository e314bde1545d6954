"""The routed list's link timelines: the earliest free window, found by stepping over the busy
intervals one by one (the definition) or by searching the gaps at once past a long run; bookings
undone; resources of several lanes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched.heuristics.scheduling.routed_list import SCAN, Lanes, Timeline, earliest


def _stepped(line: Timeline, t: int, d: int) -> int:
    j = 0
    while j < len(line.starts) and line.ends[j] <= t:
        j += 1
    while j < len(line.starts) and line.starts[j] < t + d:
        t = line.ends[j]
        j += 1
    return t


def _free(line: Timeline, t: int, d: int) -> bool:
    return all(e <= t or s >= t + d for s, e in zip(line.starts, line.ends, strict=True))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(0, 6 * SCAN))
def test_first_free_is_the_earliest_window(seed, n):
    rng = np.random.default_rng(seed)
    line = Timeline()
    for _ in range(n):  # busy intervals packed with small gaps, as a busy port's are
        d = int(rng.integers(1, 6))
        line.add(line.first_free(int(rng.integers(0, 4 * n + 1)), d), d)
        for _ in range(3):
            t, d = int(rng.integers(0, 4 * n + 2)), int(rng.integers(1, 9))
            got = line.first_free(t, d)
            assert got == _stepped(line, t, d) and _free(line, got, d)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_a_long_run_is_searched_at_once(d):
    line = Timeline()
    for k in range(5 * SCAN):  # unit intervals with unit gaps, then a gap of 3
        line.add(2 * k, 1)
    line.add(10 * SCAN + 2, 1)
    want = _stepped(line, 0, d)
    assert line.first_free(0, d) == want == (1 if d == 1 else 10 * SCAN - 1)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 4 * SCAN))
def test_touching_intervals_merge_into_the_same_busy_time(seed, n):
    rng = np.random.default_rng(seed)
    line, busy = Timeline(), np.zeros(8 * n + 64, dtype=bool)
    for _ in range(n):
        d = int(rng.integers(1, 4))
        t = line.first_free(int(rng.integers(0, 4 * n + 1)), d)
        assert not busy[t:t + d].any()  # the window is free in the cycle-by-cycle record
        line.add(t, d)
        busy[t:t + d] = True
    got = np.zeros_like(busy)
    for s, e in zip(line.starts, line.ends, strict=True):
        got[s:e] = True
    assert (got == busy).all()
    assert all(e < s for e, s in zip(line.ends[:-1], line.starts[1:], strict=True))  # none touch
    for t in range(0, 4 * n + 1, 3):  # the earliest free window, cycle by cycle
        want = next(u for u in range(t, busy.size) if not busy[u:u + 2].any())
        assert line.first_free(t, 2) == want


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 3 * SCAN), lanes=st.integers(1, 3))
def test_earliest_on_a_route_is_the_first_window_with_a_free_lane(seed, n, lanes):
    # three resources (the first of several lanes), bookings kept in a cycle-by-cycle record of
    # each lane; some are undone again, as the list undoes a candidate core's tentative ones
    rng = np.random.default_rng(seed)
    horizon = 40 * n + 64
    lines = [Lanes(lanes) if lanes > 1 else Timeline(), Timeline(), Timeline()]
    busy = np.zeros((3, lanes, horizon), dtype=bool)
    busy[1:, 1:] = True  # (the timelines have one lane)
    for _ in range(2 * n):
        route = tuple(sorted(set(rng.integers(0, 3, size=2).tolist())))
        d = int(rng.integers(1, 5))
        t = earliest(lines, route, int(rng.integers(0, 8 * n)), d)
        got = [lines[x].add(t, d) for x in route]
        for x, k in zip(route, got, strict=True):
            assert not busy[x, k, t:t + d].any()  # the lane was free
            busy[x, k, t:t + d] = True
        if rng.integers(0, 3) == 0:
            for x, k in zip(route, got, strict=True):
                lines[x].remove(t, d, k)
                busy[x, k, t:t + d] = False
    for _ in range(10):
        route = tuple(sorted(set(rng.integers(0, 3, size=2).tolist())))
        r, d = int(rng.integers(0, 8 * n)), int(rng.integers(1, 6))
        want = next(u for u in range(r, horizon)
                    if all((~busy[x, :, u:u + d].any(axis=1)).any() for x in route))
        assert earliest(lines, route, r, d) == want


def test_a_removed_booking_splits_the_interval_it_was_merged_into():
    line = Timeline()
    for t in (0, 3, 6):
        line.add(t, 3)
    assert (line.starts, line.ends) == ([0], [9])
    line.remove(3, 3)
    assert (line.starts, line.ends) == ([0, 6], [3, 9])
    line.remove(0, 3)
    line.remove(6, 3)
    assert (line.starts, line.ends) == ([], [])
