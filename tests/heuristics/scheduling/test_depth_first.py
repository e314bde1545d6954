"""``dfbb``: the depth-first search for a schedule at a target makespan returns verified
schedules within the target, proves a zero-budget target impossible only when the exact model
agrees, finds every zero-idle optimum the exact model finds, is repeatable, and serves ``lns``."""

import numpy as np
import pytest
from conftest import delay_instances
from hypothesis import HealthCheck, given, settings

from npusched import solve, verify
from npusched.bench.generate import known_optimum
from npusched.heuristics.scheduling.depth_first import DepthFirst, depth_first_schedule
from npusched.solvers.result import Status


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(delay_instances(max_layers=4, max_width=3))
def test_it_agrees_with_the_exact_model(inst):
    """Any schedule found verifies and meets the target (the lower bound); a proof that none
    exists is never contradicted by the joint model's optimum, and when the joint model proves
    the bound optimal with no idle time possible, the search finds a schedule too."""
    target = inst.lower_bound()
    out = depth_first_schedule(inst, time_limit=None, max_nodes=200_000)
    if out.schedule is not None:
        assert verify(inst, out.schedule).ok and out.schedule.makespan(inst) <= target
    exact = solve(inst, "joint", time_limit=20, threads=1)
    if exact.status is Status.OPTIMAL:
        if out.proved:
            assert exact.objective > target
        zero_budget = DepthFirst(inst).budget(target) == 0
        if exact.objective == target and zero_budget and out.nodes < 200_000:
            assert out.schedule is not None


@pytest.mark.parametrize(("n", "procs", "density"), [(60, 2, 50), (100, 4, 50), (200, 4, 80)])
def test_it_finds_the_known_optimum_of_dense_graphs_on_few_processors(n, procs, density):
    """On graphs built around a zero-idle schedule (the optimum is the load bound), dense, with
    few processors, the first runs find a schedule at the optimum."""
    inst, _ = known_optimum(n, density, procs, seed=4)
    out = depth_first_schedule(inst, time_limit=None, max_nodes=500_000, seed=0)
    assert out.schedule is not None and verify(inst, out.schedule).ok
    assert out.schedule.makespan(inst) == inst.reference.optimum == inst.lower_bound()


def test_it_proves_a_target_impossible_and_the_method_raises_the_bound():
    """Two cores, two sources and two sinks that each read both sources over a costly link:
    the load bound 4 needs both sources at 0 on different cores, and then each sink waits for a
    remote datum. The search exhausts the zero budget: the bound becomes 5."""
    from dataclasses import replace

    from conftest import make_instance

    from npusched import Accelerator

    base = make_instance([2, 2, 2, 2], [(0, 2), (1, 2), (0, 3), (1, 3)], 2)
    inst = replace(base, accelerator=Accelerator.mesh_grid(1, 2, hop_latency=50,
                                                           link_bandwidth=None))  # fmt: skip
    assert inst.lower_bound() == 4 and DepthFirst(inst).budget(4) == 0
    out = depth_first_schedule(inst, time_limit=None, max_nodes=10_000)
    assert out.schedule is None and out.proved and out.runs == 1
    res = solve(inst, "dfbb", time_limit=5)
    assert res.bound == 5 and verify(inst, res.solution).ok
    assert res.status is (Status.OPTIMAL if res.objective == 5 else Status.FEASIBLE)
    exact = solve(inst, "joint", time_limit=20, threads=1)
    assert exact.status is Status.OPTIMAL and exact.objective >= 5
    loose = depth_first_schedule(inst, 100, time_limit=None, max_nodes=10_000)
    assert loose.schedule is not None and not loose.proved  # a positive budget: a heuristic
    assert loose.schedule.makespan(inst) <= 100 and verify(inst, loose.schedule).ok


def test_it_is_repeatable_and_checks_its_limits():
    inst, _ = known_optimum(60, 20, 9, seed=1)
    a = depth_first_schedule(inst, 700, time_limit=None, max_nodes=20_000, seed=5)
    b = depth_first_schedule(inst, 700, time_limit=None, max_nodes=20_000, seed=5)
    assert (a.runs, a.nodes) == (b.runs, b.nodes) and a.nodes <= 20_000
    assert (a.schedule is None) == (b.schedule is None)
    if a.schedule is not None and b.schedule is not None:
        assert np.array_equal(a.schedule.start, b.schedule.start)
        assert np.array_equal(a.schedule.core, b.schedule.core)
    with pytest.raises(ValueError, match="time limit or a number of nodes"):
        depth_first_schedule(inst, time_limit=None)
    with pytest.raises(ValueError, match="max_nodes"):
        solve(inst, "dfbb", max_nodes=-1)
    assert depth_first_schedule(inst, 10, time_limit=1.0).proved  # below the load: no search


def test_lns_runs_it_first_and_stops_at_the_optimum():
    """``lns`` spends its ``fill`` share on the search: on a dense graph on four processors
    it returns the known optimum, reported optimal, without a CP-SAT round; its anytime trace
    holds the list schedule, then the search's, timed from the call's start."""
    from npusched.bench.generate import layered_dag
    from npusched.methods.lns import _zero_idle_bound
    from npusched.methods.reassign import best_list_schedule

    inst, _ = known_optimum(150, 60, 4, seed=3)
    assert _zero_idle_bound(inst)  # only there does lns run it: a complete search
    assert not _zero_idle_bound(layered_dag(4, 3, (2, 2), seed=1))  # work 55, m·LB 108
    res = solve(inst, "lns", time_limit=20, threads=1, seed=0)
    assert res.status is Status.OPTIMAL and res.objective == inst.reference.optimum
    assert verify(inst, res.solution).ok and res.stats["neighbourhoods"] == 0
    lists = best_list_schedule(inst).makespan(inst)
    assert [p.incumbent for p in res.trace] == [lists, res.objective]  # the list, then dfbb's
    assert 0 <= res.trace[0].time <= res.trace[1].time <= res.runtime_s
    with pytest.raises(ValueError, match="fill"):
        solve(inst, "lns", fill=1.0)


@pytest.mark.parametrize("procs", [4, 6, 8, 9])
def test_symmetry_breaking_keeps_a_zero_idle_optimum(procs):
    """The μops at 0 are kept in lex-leader order under the network's symmetries. On small
    graphs built around a zero-idle schedule, and on the same graphs with three times the
    delays, the exhaustive search finds a schedule at the bound exactly when it finds one
    without the order (a wrong order constraint would prove a reachable bound unreachable),
    and the μops at 0 are in order."""
    from dataclasses import replace

    from npusched.heuristics.scheduling.depth_first import _first_layer_order
    from npusched.problem import UopGraph

    found = 0
    for seed in range(6):
        hidden_ok, _ = known_optimum(2 * procs, 60, procs, seed=seed)
        g = hidden_ok.graph  # the same graph with delays ×3: the optimum may pass the bound
        slow = replace(hidden_ok, graph=UopGraph(g.latency, g.src, g.dst, 3 * g.bytes, g.ids))
        for inst in (hidden_ok, slow):
            order = _first_layer_order(inst, True)
            assert any(order)
            out = depth_first_schedule(inst, time_limit=None, max_nodes=2_000_000)
            plain = depth_first_schedule(inst, time_limit=None, max_nodes=2_000_000,
                                         symmetry=False)  # fmt: skip
            assert (out.schedule is None) == (plain.schedule is None), (procs, seed)
            assert out.proved == plain.proved == (out.schedule is None)
            if out.schedule is not None:
                found += 1
                assert verify(inst, out.schedule).ok
                s = out.schedule
                first = {int(c): i for i, c in enumerate(s.core) if s.start[i] == 0}
                assert all(first[a] < first[k] for k in range(procs) for a in order[k])
    assert found >= 6  # at least every graph as built
