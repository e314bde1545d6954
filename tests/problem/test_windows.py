"""Windows that count the work around each μop, latest starts with deadlines, reachability, and
edges whose delay a two-edge path covers."""

from __future__ import annotations

import numpy as np
from conftest import random_instances
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched import Accelerator, SchedulingInstance, UopGraph
from npusched.bench.generate import known_optimum
from npusched.problem.scheduling.schedule import Schedule
from npusched.problem.scheduling.windows import asap_alap, load_windows
from npusched.verify import check


def test_load_windows_hold_the_hidden_schedule_and_are_narrower():
    """Graphs built around a schedule without idle time: it starts every μop inside the windows
    at its makespan, which are never wider than eq. 1–2's and narrower on sparse graphs."""
    for n, density, procs in ((60, 20, 4), (80, 50, 9), (48, 30, 16)):
        inst, hidden = known_optimum(n, density, procs, seed=n)
        T = hidden.makespan(inst)
        w, a = load_windows(inst, T), asap_alap(inst, T)
        assert ((hidden.start >= w.earliest) & (hidden.start <= w.latest)).all()
        assert (w.earliest >= a.earliest).all() and (w.latest <= a.latest).all()
        if density == 20:
            assert w.width.sum() < a.width.sum()


def test_load_windows_count_ancestors_on_the_cores():
    """Eight independent μops of 3 cycles under one sink, on 2 cores: the sink starts at 12
    (24 cycles of work before it on 2 cores), where its longest path says 3."""
    src, dst = np.arange(8), np.full(8, 8)
    inst = SchedulingInstance(UopGraph(np.full(9, 3), src, dst, np.zeros(8)),
                              Accelerator.identical(2))  # fmt: skip
    w = load_windows(inst, 15)
    assert w.earliest[8] == 12 and w.latest[8] == 12 and (w.latest[:8] == 9).all()
    assert (load_windows(inst, 14).width[8:] <= 0).all()  # 14 is too short: an empty window


@settings(max_examples=30, deadline=None)
@given(inst=random_instances(max_n=10, max_m=1), horizon=st.integers(0, 60))
def test_latest_starts_with_one_due_time_are_the_alap_starts(inst, horizon):
    g, d = inst.graph, inst.min_duration
    assert (g.latest_starts(d, np.full(g.n, horizon)) == horizon - g.tails(d)).all()
    reach = g.reach()
    for i in range(g.n):  # a μop descends from i iff it is a consumer or descends from one
        expect = np.zeros(g.n, dtype=bool)
        for j in g.succs(i).tolist():
            expect[j] = True
            expect |= reach[j]
        assert (reach[i] == expect).all()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 14), net=st.sampled_from(["2x2", "2x3", 4, 8]))
def test_a_schedule_that_meets_the_undominated_edges_meets_them_all(seed, n, net):
    """Random DAGs with random delay terms (a mesh's hop latency and bytes / bandwidth, or a
    hypercube's c · hops) and random cores: each μop placed, in a topological order, as early as
    its core and its *undominated* incoming edges allow (latencies 0–2, so little slack hides a
    missed delay); the dominated edges then hold too (the schedule verifies against every
    edge)."""
    from npusched.io.mspcd import mspcd_accelerator

    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.6]
    if not pairs:
        return
    src, dst = (np.array(x) for x in zip(*pairs, strict=True))
    graph = UopGraph(rng.integers(0, 3, n), src, dst, rng.integers(0, 20, src.size))
    if isinstance(net, str):
        rows, cols = (int(x) for x in net.split("x"))
        acc = Accelerator.mesh_grid(rows, cols, int(rng.integers(0, 4)), link_bandwidth=4.0)
    else:
        acc = mspcd_accelerator(net)
    inst = SchedulingInstance(graph, acc)
    lam, phi = acc.delay_terms(graph.bytes)
    keep = ~graph.dominated_edges(lam, phi)
    core = rng.integers(0, acc.m, n)
    delay = acc.comm_delay(acc.hops()[core[src], core[dst]], graph.bytes)
    start, free = np.zeros(n, dtype=np.int64), np.zeros(acc.m, dtype=np.int64)
    for j in graph.topo.tolist():
        into = np.flatnonzero((dst == j) & keep)
        ready = max((int(start[src[e]] + graph.latency[src[e]] + delay[e]) for e in into),
                    default=0)  # fmt: skip
        start[j] = max(ready, int(free[core[j]]))
        free[core[j]] = start[j] + graph.latency[j]
    assert check(inst, Schedule(start, core)).ok
