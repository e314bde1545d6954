"""Routed transfers: links and buses one transfer at a time, DRAM tensors, tensors sent once per
core (the Stream hardware model), on hand-built instances and against brute force."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched import Accelerator, SchedulingInstance, UopGraph
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.io.instance_json import instance_from_dict, instance_to_dict
from npusched.methods import solve
from npusched.problem.scheduling.routed import (
    DramTensor,
    Link,
    RoutedInstance,
    RoutedSchedule,
    Topology,
    required_transfers,
)
from npusched.verify import check


def topology(bus: bool = False, bw: float = 4.0) -> Topology:
    """Cores 0, 1 and DRAM core 9: links 0→1, 1→0 (one bus when ``bus``) and a shared off-chip
    link of bandwidth 2."""
    links = (
        Link(0, 0, 1, bw, 7 if bus else -1),
        Link(1, 1, 0, bw, 7 if bus else -1),
        Link(2, 9, None, 2.0, offchip=True),
    )
    routes = {(0, 1): (0,), (1, 0): (1,), (9, 0): (2,), (9, 1): (2,), (0, 9): (2,), (1, 9): (2,)}
    return Topology(links, routes, 9)


def routed(latency, edges, allowed=None, dram=(), bus=False, table=None, bw=4.0
           ) -> RoutedInstance:  # fmt: skip
    n = len(latency)
    g = UopGraph(
        np.array(latency),
        np.array([e[0] for e in edges], np.int64),
        np.array([e[1] for e in edges], np.int64),
        np.array([e[2] for e in edges], np.int64),
    )
    base = SchedulingInstance(g, Accelerator.identical(2), table)
    mask = None if allowed is None else np.array([[k in a for k in range(2)] for a in allowed])
    tensors = tuple(DramTensor(f"T{k}", d, np.array(c)) for k, (d, c) in enumerate(dram))
    assert len(mask if mask is not None else range(n)) == n
    return RoutedInstance(base, topology(bus, bw), mask, tensors)


def test_transfer_on_a_link_by_hand():
    """0 on core 0 (3 cycles) sends 8 units to 1 on core 1 at 4 per cycle: 3 + 2 + 1 = 6."""
    inst = routed([3, 1], [(0, 1, 8)], allowed=[{0}, {1}])
    res = solve(inst, "joint", time_limit=10)
    assert check(inst, res.solution).ok
    assert res.objective == res.bound == 6
    tr = required_transfers(inst, res.solution.core)
    assert tr.size == 1 and tr.cycles[0] == 2 and tr.route[0] == (0,)


def test_one_transfer_per_core_serves_all_consumers_there():
    """Producer 0 on core 0, three consumers on core 1: one transfer of the largest edge."""
    inst = routed([2, 1, 1, 1], [(0, 1, 8), (0, 2, 8), (0, 3, 4)], allowed=[{0}, {1}, {1}, {1}])
    tr = required_transfers(inst, np.array([0, 1, 1, 1]))
    assert tr.size == 1 and tr.data[0] == 8 and tr.serves[0].tolist() == [1, 2, 3]
    res = solve(inst, "joint", time_limit=10)
    assert check(inst, res.solution).ok and res.objective == 2 + 2 + 3


def test_contention_on_a_shared_link():
    """Two DRAM tensors of 8 units each over the off-chip link (2 per cycle) to consumers on two
    cores: the fetches take 4 cycles each, one at a time, so the second consumer starts at 8."""
    inst = routed([1, 1], [], allowed=[{0}, {1}], dram=[(8, [0]), (8, [1])])
    res = solve(inst, "joint", time_limit=10)
    rep = check(inst, res.solution)
    assert rep.ok and res.objective == 9 and res.bound == 9
    assert inst.lower_bound() == 9  # DRAM traffic 8 + shortest consumer 1


def test_bus_serialises_both_directions():
    """Cores 0 and 1 exchange 8 units each way. Separate links carry both at once (2 + 2 + 2 = 6);
    on one bus the second transfer waits (8)."""
    edges = [(0, 3, 8), (1, 2, 8)]
    allowed = [{0}, {1}, {0}, {1}]
    for bus, expected in ((False, 6), (True, 8)):
        inst = routed([2, 2, 2, 2], edges, allowed=allowed, bus=bus)
        res = solve(inst, "joint", time_limit=10)
        assert check(inst, res.solution).ok and res.objective == expected


def test_verify_flags_each_violation():
    inst = routed([3, 1], [(0, 1, 8)], allowed=[{0}, {1}], dram=[(8, [1])])
    good = routed_list_schedule(inst)
    assert check(inst, good).ok
    tr = required_transfers(inst, good.core)
    out = tr.src >= 0  # the producer's transfer

    def mutated(**kw) -> list[str]:
        fields = {k: getattr(good, k).copy() for k in ("start", "core", "tstart", "tend")}
        for k, f in kw.items():
            f(fields[k])
        return check(inst, RoutedSchedule(**fields)).violations

    def shift(v):
        v[out] -= 1

    assert any("before" in v for v in mutated(tstart=shift, tend=shift))

    def shorten(v):
        v[out] -= 1

    assert any("takes 1 cycles" in v for v in mutated(tend=shorten))

    def late(v):
        v[out] += 1

    def late_start(v):
        v[out] += 1

    assert any("after μop 1 starts" in v for v in mutated(tstart=late_start, tend=late))

    def wrong_core(v):
        v[0] = 1

    assert any("may not use" in v for v in mutated(core=wrong_core))


def test_verify_flags_link_overlap():
    inst = routed([1, 1], [], allowed=[{0}, {1}], dram=[(8, [0]), (8, [1])])
    sched = routed_list_schedule(inst)
    both = RoutedSchedule(sched.start + 8, sched.core, np.array([0, 0]), np.array([4, 4]))
    assert any("overlap" in v for v in check(inst, both).violations)


def _brute_force(inst: RoutedInstance) -> int:
    """Best makespan over every allocation and every order of all activities (μops and the
    transfers that allocation needs), each placed as early as its predecessors and its resources
    (appended after their last activity) allow. Ordering an optimal schedule by start times
    reproduces it or something earlier, so this is the optimum."""
    g, m = inst.graph, inst.m
    best = None
    choices = [np.flatnonzero(inst.mask[i]).tolist() for i in range(inst.n)]
    for core in itertools.product(*choices):
        core_a = np.array(core)
        tr = required_transfers(inst, core_a)
        acts = [("op", i) for i in range(inst.n)] + [("tr", t) for t in range(tr.size)]
        before: dict[tuple[str, int], set[tuple[str, int]]] = {a: set() for a in acts}
        for e in range(g.num_edges):
            before[("op", int(g.dst[e]))].add(("op", int(g.src[e])))
        for t in range(tr.size):
            if tr.src[t] >= 0:
                before[("tr", t)].add(("op", int(tr.src[t])))
            for j in tr.serves[t].tolist():
                before[("op", j)].add(("tr", t))
        for order in itertools.permutations(acts):
            pos = {a: k for k, a in enumerate(order)}
            if any(pos[b] > pos[a] for a in acts for b in before[a]):
                continue
            finish: dict[tuple[str, int], int] = {}
            free: dict[tuple[str, int], int] = {}
            for a in order:
                kind, x = a
                if kind == "op":
                    res = [("core", core[x])]
                    d = int(inst.duration[x, core[x]])
                else:
                    res = [("link", int(inst.topology.resource_of[r])) for r in tr.route[x]]
                    d = int(tr.cycles[x])
                s = max([finish[b] for b in before[a]] + [free.get(r, 0) for r in res] + [0])
                finish[a] = s + d
                for r in res:
                    free[r] = s + d
            ms = max(finish[("op", i)] for i in range(inst.n))
            best = ms if best is None else min(best, ms)
    assert best is not None and m == 2
    return best


@st.composite
def small_routed(draw):
    n = draw(st.integers(1, 3))
    latency = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=2)) if pairs else []
    edges = [(i, j, draw(st.sampled_from([0, 4, 8, 12]))) for i, j in chosen]
    allowed = [draw(st.sampled_from([{0}, {1}, {0, 1}])) for _ in range(n)]
    dram = []
    if draw(st.booleans()):
        dram.append((draw(st.sampled_from([2, 6])), [draw(st.integers(0, n - 1))]))
    table = [[lat, lat + draw(st.integers(0, 2))] for lat in latency]
    return routed(latency, edges, allowed, dram, draw(st.booleans()), np.array(table))


@settings(max_examples=25, deadline=None)
@given(small_routed())
def test_joint_equals_brute_force_and_list_is_feasible(inst):
    _joint_is_the_brute_force(inst)


def _joint_is_the_brute_force(inst):
    """The list's schedule verifies; joint proves the brute force's optimum, verified; the bound
    and the list bracket it."""
    heur = solve(inst, "list")
    assert check(inst, heur.solution).ok
    res = solve(inst, "joint", time_limit=20)
    rep = check(inst, res.solution)
    assert rep.ok and rep.makespan == res.objective
    assert res.status.value == "optimal"
    assert res.objective == _brute_force(inst)
    assert inst.lower_bound() <= res.objective <= heur.objective


@st.composite
def small_partial(draw):
    """Up to four μops, μop 0 read by one to three others (what each reads: 4, 8 or 12 units of
    an output up to 12 more than its largest edge), consumers mostly free to run on either
    core, maybe an edge between two of them, maybe a DRAM tensor: a copy on another core holds
    what the consumers the allocation puts there read (a variable of the model)."""
    n = draw(st.integers(2, 4))
    latency = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    edges = [(0, j, draw(st.sampled_from([4, 8, 12]))) for j in range(1, n)]
    if n > 2 and draw(st.booleans()):
        edges.append((1, 2, draw(st.sampled_from([0, 4]))))
    allowed = [draw(st.sampled_from([{0}, {1}, {0, 1}]))]
    allowed += [draw(st.sampled_from([{0}, {1}, {0, 1}, {0, 1}])) for _ in range(n - 1)]
    dram = [(draw(st.sampled_from([2, 6])), [draw(st.integers(0, n - 1))])] * draw(st.booleans())
    table = [[lat, lat + draw(st.integers(0, 2))] for lat in latency]
    inst = routed(latency, edges, allowed, dram, draw(st.booleans()), np.array(table))
    extra = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    return replace(inst, output=inst.output_data + np.array(extra))


@settings(max_examples=60, deadline=None)
@given(small_partial())
def test_joint_with_partial_copies_equals_brute_force(inst):
    """The copy length a free allocation decides (a variable in the model) is exact: the joint
    optimum is the brute force's (which times each allocation's copies), and the list and the
    bound bracket it."""
    _joint_is_the_brute_force(inst)


def test_joint_with_a_latency_per_core_by_hand():
    """P (1 cycle on core 0, 3 on core 1) feeds Q1 on core 0 and Q2, Q3 on core 1 (4 units, one
    cycle on a link). P on core 0: Q1 [1, 2), the copy to core 1 over [1, 2), Q2 [2, 3), Q3
    [3, 4): 4. CP-SAT 9.15 called this infeasible (and found 5 with a larger horizon) while
    P's two optional core intervals shared one end variable."""
    table = np.array([[1, 3], [1, 1], [1, 1], [1, 1]])
    edges = [(0, 1, 4), (0, 2, 4), (0, 3, 4)]
    inst = routed([1, 1, 1, 1], edges, allowed=[{0, 1}, {0}, {1}, {1}], table=table)
    res = solve(inst, "joint", time_limit=20)
    assert res.status.value == "optimal" and res.objective == 4 == _brute_force(inst)
    assert check(inst, res.solution).ok


def test_joint_chooses_where_the_halo_goes_by_hand():
    """P (core 0 only, 2 cycles, output 32) is read by Q1 (4 units) and Q2 (28), each free on
    both cores, 8 cycles on core 0 and 1 on core 1 (links: 4 units per cycle). Both on core 0:
    18. Q1 alone on core 1: its copy is 4 units (1 cycle), Q1 [3, 4), Q2 [2, 10): 10. Q2 alone
    on core 1: 28 units (7 cycles), Q2 [9, 10): 10. Both on core 1: the copy is 32 (capped by
    the output, 8 cycles): 12. The optimum 10 sends 4 or 28 units, never the whole output."""
    inst = routed([2, 1, 1], [(0, 1, 4), (0, 2, 28)], allowed=[{0}, {0, 1}, {0, 1}],
                  table=np.array([[2, 2], [8, 1], [8, 1]]))  # fmt: skip
    inst = replace(inst, output=np.array([32, 0, 0]))
    res = solve(inst, "joint", time_limit=20)
    assert check(inst, res.solution).ok and res.objective == 10 == _brute_force(inst)
    tr = required_transfers(inst, res.solution.core)
    assert tr.data.tolist() in ([4], [28])


def test_a_copy_at_its_largest_over_a_rounded_bandwidth():
    """Links of 512/3 units per cycle (a float whose exact fraction is too large for CP-SAT, so
    the model rounds it down): P's whole output, 1 536 units, takes 9 cycles at 512/3. Q1 and
    Q2 read 1 024 each, 100 cycles on core 0 and 1 on core 1: both on core 1, the copy is the
    whole output, and the optimum is 2 + 9 + 1 + 1 = 13. The copy's length had the domain of
    the exact bandwidth, one cycle short at the rounded one, and CP-SAT proved the instance
    infeasible."""
    inst = routed([2, 1, 1], [(0, 1, 1024), (0, 2, 1024)], allowed=[{0}, {0, 1}, {0, 1}],
                  table=np.array([[2, 2], [100, 1], [100, 1]]), bw=512 / 3)  # fmt: skip
    inst = replace(inst, output=np.array([1536, 0, 0]))
    res = solve(inst, "joint", time_limit=20)
    assert res.status.value == "optimal" and check(inst, res.solution).ok
    assert res.objective == 13 == _brute_force(inst)


@settings(max_examples=10, deadline=None)
@given(small_routed())
def test_routed_instance_json_round_trip(inst):
    back = instance_from_dict(instance_to_dict(inst))
    assert isinstance(back, RoutedInstance)
    assert (back.mask == inst.mask).all() and (back.duration == inst.duration).all()
    core = np.argmax(inst.mask, axis=1)
    a, b = required_transfers(inst, core), required_transfers(back, core)
    assert (a.cycles == b.cycles).all() and a.route == b.route


def test_methods_without_links_refuse_routed_instances():
    inst = routed([1, 1], [(0, 1, 4)])
    with pytest.raises(ValueError, match="does not model transfers on shared links"):
        solve(inst, "cpsat")


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([(2, 2), (2, 3)]))
def test_mesh_contention_is_never_faster_than_delays_only(seed, mesh):
    """On a mesh, holding the links of the XY route one transfer at a time adds constraints to
    the delay model (and a producer sends its largest edge once), so its optimum is never
    earlier. Both schedules pass verify; the routed one survives a JSON round trip."""
    from npusched.bench.generate import layered_dag

    plain = layered_dag(3, 2, mesh, hop_latency=1, link_bandwidth=8.0, seed=seed)
    routed_inst = RoutedInstance.from_mesh(plain)
    a = solve(plain, "joint", time_limit=20)
    b = solve(routed_inst, "joint", time_limit=20)
    assert check(plain, a.solution).ok and check(routed_inst, b.solution).ok
    assert a.status.value == b.status.value == "optimal"
    assert b.objective >= a.objective
    back = instance_from_dict(instance_to_dict(routed_inst))
    assert check(back, b.solution).ok


def test_memory_peaks_by_hand():
    """Core 0 keeps 0's output (8) until its transfer ends at 5; core 1 holds the received
    output (8, from 3) and the DRAM tensor (8, from 0) until μop 1 ends at 6: peak 16."""
    from npusched.verify.scheduling.routed import memory_peaks

    inst = routed([3, 1], [(0, 1, 8)], allowed=[{0}, {1}], dram=[(8, [1])])
    tr = required_transfers(inst, np.array([0, 1]))
    assert tr.src.tolist() == [0, -1]  # output first, then the DRAM tensor
    sched = RoutedSchedule(np.array([0, 5]), np.array([0, 1]), np.array([3, 0]), np.array([5, 4]))
    assert check(inst, sched).ok
    assert memory_peaks(inst, sched).tolist() == [8, 16]
