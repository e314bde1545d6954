"""The priority list with NoC delays (HEFT-like): feasible, equal to a plain simulation of its
rule, topological with ties, and wired into ``list`` (auto), ``etf``, the CLI and the bench."""

import bisect

import numpy as np
import pytest
from conftest import delay_instances, make_instance, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched import Accelerator, SchedulingInstance, UopGraph, solve, verify
from npusched.bench.generate import layered_dag
from npusched.heuristics.scheduling import list_scheduling
from npusched.heuristics.scheduling.list_scheduling import (
    etf_schedule,
    list_algorithm,
    list_schedule,
    priority_list_schedule,
)
from npusched.heuristics.scheduling.priority_list import (
    GAPS,
    mean_edge_delay,
    place_in_order,
    priority_order,
    segments,
    upward_rank,
)


def ref_mean_delay(inst: SchedulingInstance) -> list[float]:
    """Mean over ordered pairs of distinct cores of each edge's delay, pair by pair."""
    acc, g, m = inst.accelerator, inst.graph, inst.m
    if m < 2:
        return [0.0] * g.num_edges
    hops = acc.hops()
    out = []
    for e in range(g.num_edges):
        pairs = [(a, b) for a in range(m) for b in range(m) if a != b]
        delays = [int(acc.comm_delay(np.array(hops[a, b]), np.array(g.bytes[e]))) for a, b in pairs]
        out.append(sum(delays) / len(delays))
    return out


def ref_rank(inst: SchedulingInstance) -> list[float]:
    """HEFT's upward rank by recursion over a reverse topological order."""
    g = inst.graph
    c = ref_mean_delay(inst)
    w = [float(np.mean(inst.duration[i])) for i in range(g.n)]
    rank = [0.0] * g.n
    for i in reversed(g.topo.tolist()):
        out = [c[e] + rank[int(g.dst[e])] for e in np.flatnonzero(g.src == i)]
        rank[i] = w[i] + max(out, default=0.0)
    return rank


def ref_order(inst: SchedulingInstance, prio: np.ndarray) -> list[int]:
    topo = {int(i): p for p, i in enumerate(inst.graph.topo)}
    return sorted(range(inst.n), key=lambda i: (-prio[i], topo[i]))


def ref_place(inst: SchedulingInstance, order, insertion: bool) -> tuple[list[int], list[int]]:
    """The placement rule, one μop and one core at a time: earliest finish, ties to the lowest
    core; a μop starts after its data arrives and inside an idle interval of its core (any idle
    interval with ``insertion``, else after the core's last μop); zero latency occupies
    nothing."""
    g, acc, m, dur = inst.graph, inst.accelerator, inst.m, inst.duration
    hops = acc.hops() if acc.has_comm_delays else None
    busy: list[list[tuple[int, int]]] = [[] for _ in range(m)]
    core, start, end = [0] * g.n, [0] * g.n, [0] * g.n
    for i in order:
        best = None
        for k in range(m):
            arrive = 0
            for e in np.flatnonzero(g.dst == i):
                u = int(g.src[e])
                delay = 0
                if hops is not None:
                    delay = int(acc.comm_delay(np.array(hops[core[u], k]), np.array(g.bytes[e])))
                arrive = max(arrive, end[u] + delay)
            d = int(dur[i, k])
            last, s = 0, None
            for bs, bf in busy[k]:
                if insertion and bs > last and max(arrive, last) + d <= bs:
                    s = max(arrive, last)
                    break
                last = bf
            if s is None:
                s = max(arrive, last)
            if best is None or s + d < best[0]:
                best = (s + d, k, s)
        assert best is not None
        f, k, s = best
        core[i], start[i], end[i] = k, s, f
        if f > s:
            bisect.insort(busy[k], (s, f))
    return start, core


@settings(max_examples=60, deadline=None)
@given(inst=delay_instances(max_layers=10, max_width=8), gaps=st.sampled_from([0, 1, 3, GAPS]))
def test_priority_list_is_feasible(inst, gaps):
    s = priority_list_schedule(inst, gaps=gaps)
    rep = verify(inst, s).raise_if_failed()
    assert rep.makespan >= inst.lower_bound()


@settings(max_examples=40, deadline=None)
@given(inst=delay_instances())
def test_placement_equals_the_reference_simulation(inst):
    order = priority_order(inst.graph, upward_rank(inst))
    for gaps, insertion in ((0, False), (inst.n, True)):
        s = place_in_order(inst, order, gaps)
        start, core = ref_place(inst, order.tolist(), insertion)
        assert s.core.tolist() == core
        assert s.start.tolist() == start
        verify(inst, s).raise_if_failed()


@settings(max_examples=40, deadline=None)
@given(inst=delay_instances())
def test_rank_and_order_follow_their_definitions(inst):
    assert np.allclose(mean_edge_delay(inst), ref_mean_delay(inst))
    rank = upward_rank(inst)
    assert np.allclose(rank, ref_rank(inst))
    g = inst.graph
    assert (rank[g.src] >= rank[g.dst]).all()
    order = priority_order(g, rank)
    assert order.tolist() == ref_order(inst, rank)
    expected = place_in_order(inst, order)
    got = priority_list_schedule(inst)
    assert (got.start == expected.start).all() and (got.core == expected.core).all()


def hidden_order_instance(latency, edges, mesh=(2, 2), hop=1, nbytes=0) -> SchedulingInstance:
    """Edges ``(u, v)`` given on positions of a topological order, stored on reversed ids, so
    that the index order is not topological."""
    n = len(latency)
    rev = [n - 1 - i for i in range(n)]
    g = UopGraph(
        np.array([latency[rev[i]] for i in range(n)]),
        np.array([rev[u] for u, _ in edges]),
        np.array([rev[v] for _, v in edges]),
        np.full(len(edges), nbytes),
    )
    return SchedulingInstance(g, Accelerator.mesh_grid(*mesh, hop, 4.0))


@pytest.mark.parametrize("hop", [0, 1])
def test_zero_latencies_and_ties_keep_a_topological_order(hop):
    edges = [(0, 1), (1, 2), (2, 3), (0, 4), (4, 3), (3, 5), (1, 5)]
    inst = hidden_order_instance([0] * 6, edges, hop=hop)
    rank = upward_rank(inst)
    if hop == 0:
        assert (rank == 0).all()  # every μop ties
    order = priority_order(inst.graph, rank)
    pos = np.empty(inst.n, dtype=np.int64)
    pos[order] = np.arange(inst.n)
    assert (pos[inst.graph.src] < pos[inst.graph.dst]).all()
    verify(inst, priority_list_schedule(inst)).raise_if_failed()


def test_a_priority_against_the_edges_gives_the_ready_list_order():
    # chain 0 -> 1 -> 2 and a lone μop 3; priority = index, so the consumers come first
    inst = make_instance([1, 2, 3, 4], [(0, 1), (1, 2)], 2)
    order = priority_order(inst.graph, np.arange(4.0))
    assert order.tolist() == [3, 0, 1, 2]  # ready: {0, 3} → 3, then 0, 1, 2
    s = priority_list_schedule(inst, lambda i: np.arange(float(i.n)))
    verify(inst, s).raise_if_failed()


def test_a_bad_order_is_refused():
    inst = make_instance([1, 2], [(0, 1)], 2)
    for bad in ([1, 0], [0, 0], [0], [0, 2]):
        with pytest.raises(ValueError, match="producers before consumers"):
            place_in_order(inst, np.array(bad))


def test_segments_cut_at_a_producer_and_at_the_edge_limit():
    # positions 0..4; μop 2 reads μop 1, μop 4 reads μop 0; two edges in all
    last_pred = np.array([-1, -1, 1, -1, 0])
    ptr = np.array([0, 0, 0, 1, 1, 2])
    assert segments(ptr, last_pred) == [0, 2, 5]
    heavy = np.array([0, 3, 6, 9])  # three independent μops with 3 edges each
    assert segments(heavy, np.array([-1, -1, -1]), max_edges=5) == [0, 1, 2, 3]


def test_auto_keeps_etf_on_small_instances_and_grahams_list_without_delays(monkeypatch):
    inst = layered_dag(6, 4, (2, 2), seed=3)
    etf, auto = etf_schedule(inst), list_schedule(inst)
    assert list_algorithm(inst) == "etf"
    assert (auto.start == etf.start).all() and (auto.core == etf.core).all()
    monkeypatch.setattr(list_scheduling, "ETF_LIMIT", inst.n - 1)
    assert list_algorithm(inst) == "priority"
    fast = priority_list_schedule(inst)
    auto = list_schedule(inst)
    assert (auto.start == fast.start).all() and (auto.core == fast.core).all()
    no_delays = layered_dag(6, 4, (2, 2), hop_latency=0, link_bandwidth=None, seed=3)
    assert list_algorithm(no_delays) == "graham"
    for algorithm in ("etf", "priority"):
        verify(no_delays, list_schedule(no_delays, algorithm=algorithm)).raise_if_failed()
    with pytest.raises(ValueError, match="unknown list algorithm"):
        list_schedule(inst, algorithm="heft")


def test_methods_list_and_etf(monkeypatch):
    inst = layered_dag(8, 5, (3, 3), seed=1)
    etf = solve(inst, "etf")
    assert etf.objective == etf_schedule(inst).makespan(inst)
    monkeypatch.setattr(list_scheduling, "ETF_LIMIT", 0)
    fast = solve(inst, "list")
    assert fast.objective == priority_list_schedule(inst).makespan(inst)
    for res in (etf, fast):
        assert verify(inst, res.solution, res.objective).ok
        assert res.bound == inst.lower_bound() <= res.objective


def test_cli_solve_list_on_a_delay_instance_verifies(tmp_path):
    big = tmp_path / "big.json"  # > ETF_LIMIT μops: `list` runs the priority list
    out = run_cli("generate", "layered", "--layers", "1500", "--width", "8", "-o", big)
    assert out.returncode == 0, out.stderr
    n = int(out.stdout.split(": ")[1].split()[0])
    assert n > list_scheduling.ETF_LIMIT
    res = run_cli("solve", big, "--method", "list")
    assert res.returncode == 0, res.stderr
    assert "list/none" in res.stdout and "verify=ok" in res.stdout
    small = tmp_path / "small.json"
    assert run_cli("generate", "layered", "--layers", "6", "-o", small).returncode == 0
    res = run_cli("solve", small, "--method", "etf")
    assert res.returncode == 0 and "etf/none" in res.stdout and "verify=ok" in res.stdout


def test_bench_runs_on_the_smallest_partition(capsys):
    from npusched.bench.list_scaling import CASES, main

    assert main(["--max-uops", str(CASES[0].uops)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3  # header, rule, one row
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    row = dict(zip(head, cells, strict=True))
    assert row["verify"] == "ok" and int(row["n"]) > 0 and int(row["E"]) > 0
    assert int(row["makespan"]) >= int(row["lower bound"])
    assert int(row["ETF makespan"]) >= int(row["lower bound"])
    assert float(row["list / ETF"]) > 0
