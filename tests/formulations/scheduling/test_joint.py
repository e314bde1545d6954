"""Joint scheduling + mapping with NoC transfer delays (Klotski eq. 15 in CP-SAT)."""

import itertools

import numpy as np
import pytest
from conftest import make_instance, random_instances, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched import Accelerator, SchedulingInstance, Status, UopGraph, list_schedule, solve, verify


def with_noc(inst, rows, cols, hop_latency, bandwidth, nbytes):
    g = inst.graph
    graph = UopGraph(g.latency, g.src, g.dst, np.full(g.num_edges, nbytes), g.ids)
    return SchedulingInstance(graph, Accelerator.mesh_grid(rows, cols, hop_latency, bandwidth))


def brute_force(inst, beta=None):
    """min T (+ β·C) over topological orders × core assignments, each μop as early as its core
    and its producers' data allow (the semi-active argument holds with delays, too)."""
    g, n, m = inst.graph, inst.n, inst.m
    acc = inst.accelerator
    hops = acc.hops()
    preds = [
        [(int(g.src[e]), int(g.bytes[e])) for e in np.flatnonzero(g.dst == i)] for i in range(n)
    ]
    orders = [
        o
        for o in itertools.permutations(range(n))
        if all(o.index(p) < o.index(i) for i in range(n) for p, _ in preds[i])
    ]
    best = None
    for cores in itertools.product(range(m), repeat=n):
        cost = sum(
            int(hops[cores[int(s)], cores[int(d)]]) for s, d in zip(g.src, g.dst, strict=True)
        )
        for order in orders:
            free, end = [0] * m, [0] * n
            for i in order:
                k = cores[i]
                ready = [end[p] + int(acc.comm_delay(hops[cores[p], k], b)) for p, b in preds[i]]
                end[i] = max([free[k], *ready]) + int(inst.duration[i, k])
                free[k] = end[i]
            t = max(end)
            value = (t, cost) if beta is None else t + beta * cost
            best = value if best is None else min(best, value)
    return best


noc = st.tuples(
    st.sampled_from([(1, 2), (2, 2)]),
    st.integers(0, 2),
    st.sampled_from([None, 4.0]),
    st.integers(0, 12),
)


@settings(max_examples=20, deadline=None)
@given(inst=random_instances(max_n=5, max_m=1), params=noc)
def test_joint_lexicographic_optimum_equals_brute_force(inst, params):
    (rows, cols), lat, bw, nbytes = params
    inst = with_noc(inst, rows, cols, lat, bw, nbytes)
    res = solve(inst, "joint", time_limit=30, threads=2)
    rep = verify(inst, res.solution).raise_if_failed()
    assert res.status is Status.OPTIMAL
    assert (rep.makespan, rep.noc_cost) == brute_force(inst)
    assert rep.makespan <= verify(inst, list_schedule(inst)).raise_if_failed().makespan


@settings(max_examples=12, deadline=None)
@given(inst=random_instances(max_n=4, max_m=1), params=noc, beta=st.sampled_from([0.5, 1.0, 3.0]))
def test_joint_weighted_optimum_equals_brute_force(inst, params, beta):
    (rows, cols), lat, bw, nbytes = params
    inst = with_noc(inst, rows, cols, lat, bw, nbytes)
    res = solve(inst, "joint", beta=beta, time_limit=30, threads=2)
    rep = verify(inst, res.solution).raise_if_failed()
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(rep.makespan + beta * rep.noc_cost)
    assert res.objective == pytest.approx(brute_force(inst, beta))


def test_verify_rejects_a_schedule_that_ignores_transfer_time():
    inst = with_noc(make_instance([2, 2], [(0, 1)], 1), 1, 2, 3, 4.0, 8)  # delay 1·3 + 8/4 = 5
    from npusched import Schedule

    bad = Schedule(np.array([0, 2]), np.array([0, 1]))
    report = verify(inst, bad)
    assert not report.ok and "plus its transfer, i.e. by 7" in report.violations[0]
    assert verify(inst, Schedule(np.array([0, 7]), np.array([0, 1]))).ok
    assert verify(inst, Schedule(np.array([0, 2]), np.array([0, 0]))).ok


def test_list_schedule_respects_delays_and_other_methods_refuse_them():
    rng = np.random.default_rng(3)
    n = 14
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.25]
    inst = with_noc(make_instance(rng.integers(1, 9, n).tolist(), edges, 1), 2, 2, 1, 2.0, 8)
    verify(inst, list_schedule(inst)).raise_if_failed()
    for method in ("cpsat", "timeindexed"):
        with pytest.raises(ValueError, match="no NoC transfer delays"):
            solve(inst, method)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    mesh=st.sampled_from([(2, 2), (3, 3)]),
    lat=st.integers(0, 2),
    bw=st.sampled_from([None, 2.0, 8.0]),
)
def test_layered_baselines_and_retiming_verify(seed, mesh, lat, bw):
    from npusched.bench.generate import layered_dag
    from npusched.heuristics.scheduling.mesh_baselines import (
        levels,
        retime,
        zigzag_schedule,
        zigzag_spread_schedule,
    )

    inst = layered_dag(4, 3, mesh, hop_latency=lat, link_bandwidth=bw, seed=seed)
    assert inst.name == layered_dag(4, 3, mesh, hop_latency=lat, link_bandwidth=bw, seed=seed).name
    lv = levels(inst)
    for zz in (zigzag_schedule(inst), zigzag_spread_schedule(inst)):
        verify(inst, zz).raise_if_failed()
        end = zz.end(inst)
        for level in range(1, int(lv.max()) + 1):  # layer-wise: a level starts after the previous
            assert zz.start[lv == level].min() >= end[lv == level - 1].max()
    paper = zigzag_schedule(inst)  # each level (the layer of a generated DAG) on one core
    assert all(len(set(paper.core[lv == k].tolist())) == 1 for k in range(int(lv.max()) + 1))
    zz = paper
    free = SchedulingInstance(inst.graph, Accelerator.mesh_grid(*mesh))
    plan = solve(free, "cpsat", time_limit=10).solution
    assert (retime(free, plan).start <= plan.start).all()  # no delays: never later
    verify(inst, retime(inst, plan)).raise_if_failed()
    ts = solve(inst, "twostage", "highs", time_limit=10)
    verify(inst, ts.solution).raise_if_failed()
    joint = solve(inst, "joint", time_limit=10, threads=2)
    rep = verify(inst, joint.solution).raise_if_failed()
    if joint.status is Status.OPTIMAL:
        for other in (zz, ts.solution, list_schedule(inst)):
            assert rep.makespan <= verify(inst, other).makespan


def test_generate_and_compare_from_the_command_line(tmp_path):
    import csv

    inst, rows = tmp_path / "l.json", tmp_path / "rows.csv"
    gen = ["generate", "layered", "--layers", 4, "--width", 3, "--mesh", "2x2", "--seed", 5]
    proc = run_cli(*gen, "-o", inst)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(
        "compare", inst, "--methods", "zigzag,list,joint", "--time-limit", 10, "--csv", rows
    )
    assert proc.returncode == 0, proc.stderr
    table = list(csv.DictReader(rows.open()))
    assert [r["method"] for r in table] == ["zigzag", "list", "joint"]
    assert all(r["verified"] == "True" and r["noc_cost"] != "" for r in table)


def test_the_warm_start_is_a_complete_feasible_hint_even_off_the_symmetry_representative():
    """Every variable is hinted (CP-SAT then takes the warm start right after presolve; a hint of
    starts and cores alone left a 200-μop mesh instance without a solution in 5 s), and a
    schedule whose first μop sits on a core the symmetry breaking forbids is mapped by a mesh
    symmetry first: fixed to its hint, the model is feasible with the schedule's makespan."""
    from npusched.bench.generate import layered_dag
    from npusched.formulations.scheduling.joint import JointModel
    from npusched.solvers.cpsat import run_cpsat

    inst = layered_dag(6, 4, (3, 3), seed=4)
    warm = list_schedule(inst)
    first = int(inst.graph.topo[0])
    sym = inst.accelerator.symmetries()
    flip = max(sym, key=lambda g: int(g[warm.core[first]]))
    mirrored = type(warm)(warm.start, flip[warm.core])  # first μop off its orbit's smallest core
    assert mirrored.core[first] > min(int(g[warm.core[first]]) for g in sym)
    assert verify(inst, mirrored).ok and mirrored.makespan(inst) == warm.makespan(inst)
    model = JointModel(inst, warm.makespan(inst))
    model.hint(mirrored)
    proto = model.model.proto
    assert len(set(proto.solution_hint.vars)) == len(proto.variables)
    fixed = {"fix_variables_to_their_hinted_value": True}
    status, solver, _ = run_cpsat(model.model, time_limit=10, threads=1, seed=0, params=fixed)
    assert status is Status.OPTIMAL and solver.objective_value == warm.makespan(inst)
