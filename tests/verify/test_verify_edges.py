"""``verify`` near the edges of the number domain (issue 17): latencies, bytes and delays up to
2^40, starts up to MAX_TIME. Its verdict must equal an exact recomputation in Python integers, and
it never says ok on a value that overflowed."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched import Accelerator, Schedule, SchedulingInstance, UopGraph
from npusched.common.limits import MAX_TIME, MAX_VALUE
from npusched.verify import check

EDGE = st.one_of(st.integers(0, 16), st.integers(MAX_VALUE - 16, MAX_VALUE))
"""Values at both ends of the domain."""


@st.composite
def cases(draw: st.DrawFn) -> tuple[SchedulingInstance, Schedule]:
    n = draw(st.integers(2, 6))
    lat = [draw(EDGE) for _ in range(n)]
    pairs = sorted({(i, j) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())})
    nbytes = [draw(EDGE) for _ in pairs]
    model = draw(st.sampled_from(["bandwidth", "per_hop"]))
    hop = draw(EDGE) if model == "bandwidth" else 0
    bw = draw(st.sampled_from([None, 1, 3, MAX_VALUE])) if model == "bandwidth" else None
    acc = Accelerator.mesh_grid(1, 2, hop_latency=hop, link_bandwidth=bw, delay_model=model)
    graph = UopGraph(np.array(lat, np.int64), np.array([p for p, _ in pairs], np.int64),
                     np.array([q for _, q in pairs], np.int64), np.array(nbytes, np.int64),
                     tuple(range(n)))  # fmt: skip
    inst = SchedulingInstance(graph, acc, None, "edges")
    core = [draw(st.integers(0, 1)) for _ in range(n)]
    top = MAX_TIME - MAX_VALUE
    start = [draw(st.one_of(st.integers(0, 4 * MAX_VALUE), st.integers(top - 8, top)))
             for _ in range(n)]  # fmt: skip
    return inst, Schedule(np.array(start, np.int64), np.array(core, np.int64))


def exact(inst: SchedulingInstance, sched: Schedule) -> tuple[bool, int]:
    """Feasibility and makespan recomputed in Python integers from the instance's numbers."""
    acc, g = inst.accelerator, inst.graph
    lat = [int(v) for v in g.latency]
    start, core = [int(v) for v in sched.start], [int(v) for v in sched.core]
    end = [s + d for s, d in zip(start, lat, strict=True)]
    ok = all(0 <= s <= MAX_TIME for s in start)
    for p, q, b in zip(g.src.tolist(), g.dst.tolist(), g.bytes.tolist(), strict=True):
        if core[p] == core[q]:
            delay = 0
        elif acc.delay_model == "per_hop":
            delay = int(b) * 1  # one hop between the two cores of a 1 x 2 mesh
        else:
            fixed = 0 if acc.link_bandwidth is None else math.ceil(int(b) / int(acc.link_bandwidth))
            delay = int(acc.hop_latency) + fixed
        ok &= start[q] >= end[p] + delay
    for k in (0, 1):
        runs = sorted((start[i], end[i]) for i in range(len(lat)) if core[i] == k and lat[i] > 0)
        ok &= all(a[1] <= b[0] for a, b in itertools.pairwise(runs))
    return ok, max(end)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_verify_agrees_with_exact_integers(case):
    inst, sched = case
    rep = check(inst, sched)
    ok, makespan = exact(inst, sched)
    assert rep.ok == ok, rep.violations
    if rep.ok:
        assert rep.makespan == makespan and makespan <= MAX_TIME + MAX_VALUE


@settings(max_examples=100, deadline=None)
@given(cases())
def test_a_feasible_schedule_at_the_edges_is_ok(case):
    """Shift the drawn schedule to an exactly feasible one (in Python integers): verify says ok."""
    inst, sched = case
    g, acc = inst.graph, inst.accelerator
    lat = [int(v) for v in g.latency]
    core = [int(v) for v in sched.core]
    start = [0] * len(lat)
    free = [0, 0]
    for i in range(len(lat)):  # ids are a topological order here
        t = free[core[i]]
        for p, q, b in zip(g.src.tolist(), g.dst.tolist(), g.bytes.tolist(), strict=True):
            if q == i:
                d = int(acc.comm_delay(np.array([int(core[p] != core[q])]), np.array([b]))[0])
                t = max(t, start[p] + lat[p] + d)
        start[i], free[core[i]] = t, t + lat[i]
    if max(start) > MAX_TIME:
        return
    rep = check(inst, Schedule(np.array(start, np.int64), np.array(core, np.int64)))
    assert rep.ok, rep.violations
    assert rep.makespan == max(s + d for s, d in zip(start, lat, strict=True))
