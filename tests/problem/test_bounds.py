"""The two layered bounds of :mod:`npusched.problem.scheduling.bounds`: each μop's ancestor-load
head against its true ancestors (brute force), the prefetch bound by hand and between its
thresholds' and all subsets' values, and both inside a routed instance's lower bound, which no
verified schedule beats (by hand here; the memory-pressure tests check it on every list
schedule they make)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.problem.scheduling.bounds import (
    ancestor_load_heads,
    distinct_pairs,
    distinct_rows,
    prefetch_bound,
)
from npusched.problem.scheduling.dag import UopGraph
from npusched.verify import check

sys.path.insert(0, str(Path(__file__).parents[1] / "heuristics" / "scheduling"))
sys.path.insert(0, str(Path(__file__).parents[1] / "formulations" / "scheduling"))
from test_memory_list import instance  # noqa: E402


def ancestors(n: int, src: np.ndarray, dst: np.ndarray) -> list[set[int]]:
    """Every μop's ancestors, by a walk over the edges in topological (index) order."""
    anc: list[set[int]] = [set() for _ in range(n)]
    for j in range(n):
        for i in src[dst == j].tolist():
            anc[j] |= anc[i] | {i}
    return anc


@st.composite
def layered(draw):
    """Up to five layers of one to four μops, numbered layer by layer; inside a layer some
    μops chain (partial sums); each μop reads a random set of the previous layers' μops, the
    whole of one of them with chance 1/2."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    layer = np.repeat(np.arange(len(sizes)), sizes)
    first = np.r_[0, np.cumsum(sizes)[:-1]]
    edges = set()
    for q, (lo, k) in enumerate(zip(first.tolist(), sizes, strict=True)):
        for a in range(lo, lo + k - 1):
            if draw(st.booleans()):
                edges.add((a, a + 1))
        if q == 0:
            continue
        for j in range(lo, lo + k):
            if draw(st.booleans()):
                p = draw(st.integers(0, q - 1))
                edges |= {(i, j) for i in np.flatnonzero(layer == p).tolist()}
            edges |= {(i, j) for i in range(lo) if draw(st.integers(0, 3)) == 0}
    src, dst = (np.array(x, np.int64) for x in zip(*sorted(edges), strict=True)) if edges else (
        np.zeros(0, np.int64), np.zeros(0, np.int64))  # fmt: skip
    d = np.array(draw(st.lists(st.integers(0, 9), min_size=layer.size, max_size=layer.size)))
    return UopGraph(d, src, dst, np.zeros(src.size, np.int64)), layer, draw(st.integers(1, 3))


@settings(max_examples=300, deadline=None)
@given(layered())
def test_ancestor_load_heads_never_exceed_the_ancestors_load(case):
    g, layer, m = case
    head = ancestor_load_heads(g, g.latency, layer, m)
    for j, anc in enumerate(ancestors(g.n, g.src, g.dst)):
        assert head[j] <= -(-int(g.latency[sorted(anc)].sum()) // m)


def test_ancestor_load_heads_by_hand():
    """conv (two partial-sum chains 0→1, 2→3) → pool (4 reads 1, 5 reads 3) → fc (6 reads 4
    and 5), all 10 cycles, 2 cores: fc waits for all six (⌈60 / 2⌉ = 30) though its critical
    path is 30 too; a second fc (7) reading only 4 gets nothing from the layers (0)."""
    src = np.array([0, 2, 1, 3, 4, 5, 4])
    dst = np.array([1, 3, 4, 5, 6, 6, 7])
    g = UopGraph(np.full(8, 10), src, dst, np.zeros(7, np.int64))
    layer = np.array([0, 0, 0, 0, 1, 1, 2, 2])
    head = ancestor_load_heads(g, g.latency, layer, 2)
    assert head.tolist() == [0, 0, 0, 0, 0, 0, 30, 0]
    head1 = ancestor_load_heads(g, g.latency, layer, 1)  # one core: all sixty cycles first
    assert head1[6] == 60 and g.heads()[6] == 30


def test_prefetch_bound_by_hand_and_against_every_threshold():
    # two operands of 8 released at 10, room for 6, 2 per cycle: 10 units after 10, 5 cycles
    assert prefetch_bound(np.array([10, 10]), np.array([1, 2]), np.array([8, 8]), 6, 2.0) == 16
    assert prefetch_bound(np.array([10, 10]), np.array([1, 2]), np.array([8, 8]), 16, 2.0) == 0
    rng = np.random.default_rng(0)
    for _ in range(200):
        r, t, d = rng.integers(0, 12, 6), rng.integers(1, 9, 6), rng.integers(0, 12, 6)
        cap, rate = int(rng.integers(0, 40)), float(rng.integers(1, 4))
        # each threshold's whole set, and every subset (each a valid bound by the same argument)
        sets = [r >= x for x in r]
        subsets = [np.array([(b >> k) & 1 for k in range(6)], bool) for b in range(1, 64)]
        lo, hi = (max([one(s, r, t, d, cap, rate) for s in group], default=0)
                  for group in (sets, subsets))  # fmt: skip
        assert lo <= prefetch_bound(r, t, d, cap, rate) <= hi


def one(s: np.ndarray, r, t, d, cap: int, rate: float) -> int:
    """The bound of one set of operands: its earliest release, the units over ``cap`` at
    ``rate``, its shortest tail (0 when it fits)."""
    over = int(d[s].sum()) - cap
    return int(r[s].min() + np.ceil(over / rate) + t[s].min()) if over > 0 else 0


def test_prefetch_bound_in_a_routed_instance_by_hand():
    """A (10 cycles) then B and C on core 0 (1 cycle each), each reading a weight of 8 units
    over the off-chip link at 2 per cycle; core 0 holds one weight, core 1 one unit. Only 9 of
    the 16 units can be on chip when B and C may start (10), so 7 cross after it: at least 4
    cycles, then a 1-cycle reader: bound 15 (core 0's load: 12). The list prefetches B's
    weight during A and fetches C's after B frees its room: 16, the optimum."""
    inst = instance([10, 1, 1], [(0, 1, 0), (0, 2, 0)], [0, 0, 0], dram=[(8, [1]), (8, [2])],
                    capacity=[8, 1])  # fmt: skip
    assert inst.lower_bound() == 15
    sched = memory_list_schedule(inst)
    assert check(inst, sched).ok and sched.makespan(inst) == 16
    assert replace(inst, capacity=np.array([16, 1])).lower_bound() == 12


def test_port_bound_by_hand():
    """Three operands of 4 cycles each through 2 ports, read by μops with 10, 5 and 0 cycles of
    tail: the first must be in by C − 10 (C ≥ 12), the first two by C − 5 (C ≥ 9)."""
    from npusched.problem.scheduling.bounds import port_bound

    assert port_bound(np.array([10, 5, 0]), np.array([4, 4, 4]), 2) == 12
    assert port_bound(np.array([0, 0, 0]), np.array([4, 4, 4]), 1) == 12
    assert port_bound(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 2) == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 30), min_size=n, max_size=n),
    st.lists(st.integers(0, 30), min_size=n, max_size=n),
    st.lists(st.integers(1, 9), min_size=n, max_size=n),
    st.integers(1, 4))))  # fmt: skip
def test_window_load_bound_is_the_best_window_with_every_threshold(case):
    """With a threshold per μop the bound is the best of all windows (brute force); with fewer
    it is no larger, and never below either one-sided bound's q = 0 or r = 0 window."""
    from npusched.problem.scheduling.bounds import window_load_bound

    h, a, w = (np.array(v) for v in case[:3])
    m = case[3]
    brute = max(int(r + -(-w[(h >= r) & (a >= q)].sum() // m) + q)
                for r in h.tolist() for q in a.tolist()
                if ((h >= r) & (a >= q)).any())  # a window holding some μop  # fmt: skip
    assert window_load_bound(h, a, w, m, thresholds=h.size + 1) == brute
    assert window_load_bound(h, a, w, m, thresholds=2) <= brute


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10**6))
def test_the_routed_lower_bound_never_exceeds_a_proven_optimum(seed):
    """On random routed instances with DRAM weights (no capacities: the model is exact there),
    the instance's lower bound, ports and windows included, is at most CP-SAT's proven
    optimum."""
    from test_routed_two_models import small

    from npusched.methods import solve
    from npusched.solvers.result import Status

    inst = small(seed)
    res = solve(inst, "joint", time_limit=20, threads=2)
    assert res.status is Status.OPTIMAL and check(inst, res.solution).ok
    assert inst.lower_bound() <= res.objective


@given(st.integers(0, 40), st.sampled_from([1, 3, 16, 36, 64, 65, 130]), st.data())
def test_distinct_rows_and_pairs_are_numpys_unique(n, m, data):
    """The packed and keyed forms give what ``np.unique`` gives on rows and on stacked pairs:
    the same distinct rows (pairs) in the same order, the same inverse and counts."""
    mask = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=m, max_size=m),
                                       min_size=n, max_size=n)), dtype=bool).reshape(n, m)
    kinds, of = distinct_rows(mask)
    want, inv = np.unique(mask, axis=0, return_inverse=True)
    assert kinds.shape == want.shape and (kinds == want).all()
    assert of.tolist() == inv.ravel().tolist()
    a = np.array(data.draw(st.lists(st.integers(0, 9), min_size=n, max_size=n)), dtype=np.int64)
    b = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.int64)
    pairs, at, hits = distinct_pairs(a, b, 5)
    want, inv, counts = np.unique(np.stack([a, b]), axis=1, return_inverse=True,
                                  return_counts=True)  # fmt: skip
    assert pairs.tolist() == want.tolist() and at.tolist() == inv.ravel().tolist()
    assert hits.tolist() == counts.tolist()
