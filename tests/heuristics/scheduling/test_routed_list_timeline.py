"""The routed list's link timelines: the earliest free window, found by stepping over the busy
intervals one by one (the definition) or by searching the gaps at once past a long run."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched.heuristics.scheduling.routed_list import SCAN, Timeline


def _stepped(line: Timeline, t: int, d: int) -> int:
    j = 0
    while j < len(line.starts) and line.ends[j] <= t:
        j += 1
    while j < len(line.starts) and line.starts[j] < t + d:
        t = line.ends[j]
        j += 1
    return t


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
            assert got == _stepped(line, t, d) and line.conflict(got, d) is None


@pytest.mark.parametrize("d", [1, 2, 3])
def test_a_long_run_is_searched_at_once(d):
    line = Timeline()
    for k in range(5 * SCAN):  # unit intervals with unit gaps, then a gap of 3
        line.add(2 * k, 1)
    line.add(10 * SCAN + 2, 1)
    want = _stepped(line, 0, d)
    assert line.first_free(0, d) == want == (1 if d == 1 else 10 * SCAN - 1)
