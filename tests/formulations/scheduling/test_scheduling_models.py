import numpy as np
import pytest
from conftest import brute_force_makespan, make_instance

from npusched import Status, list_schedule, solve, verify
from npusched.formulations import TimeIndexedModel
from npusched.solvers.dispatch import LINEAR_BACKENDS

FIXTURES = {
    # name: (latencies, edges, m)
    "chain": ([3, 1, 2], [(0, 1), (1, 2)], 2),
    "independent": ([2, 2, 2, 2, 3], [], 2),
    "fork_join": ([1, 4, 3, 3, 2, 1], [(0, 1), (0, 2), (0, 3), (0, 4), (1, 5), (2, 5), (3, 5)], 3),
    "two_chains": ([2, 2, 2, 5, 1], [(0, 1), (1, 2), (3, 4)], 2),
}


@pytest.fixture(params=sorted(FIXTURES))
def fixture_instance(request):
    lat, edges, m = FIXTURES[request.param]
    return make_instance(lat, edges, m, name=request.param)


@pytest.mark.parametrize("backend", LINEAR_BACKENDS)
def test_time_indexed_on_every_backend_proves_the_optimum(fixture_instance, backend):
    res = solve(fixture_instance, "timeindexed", backend, time_limit=30)
    assert res.status is Status.OPTIMAL
    rep = verify(fixture_instance, res.solution).raise_if_failed()
    opt = brute_force_makespan(fixture_instance)
    assert rep.makespan == res.objective == opt
    assert res.bound == pytest.approx(opt)
    assert res.gap == pytest.approx(0)


def test_cpsat_interval_model_proves_the_optimum(fixture_instance):
    res = solve(fixture_instance, "cpsat", time_limit=30, threads=2)
    assert res.status is Status.OPTIMAL
    rep = verify(fixture_instance, res.solution).raise_if_failed()
    assert rep.makespan == res.objective == res.bound == brute_force_makespan(fixture_instance)
    assert res.trace and res.trace[-1].incumbent == res.objective


def test_cpsat_with_per_core_latencies():
    inst = make_instance([1, 1, 1, 1], [(0, 2), (1, 3)], 2, table=[[1, 4], [4, 1], [2, 6], [6, 2]])
    res = solve(inst, "cpsat", time_limit=30)
    rep = verify(inst, res.solution).raise_if_failed()
    assert res.status is Status.OPTIMAL
    assert rep.makespan == res.objective == brute_force_makespan(inst) == 3


def test_time_indexed_refuses_per_core_latencies():
    inst = make_instance([1, 1], [], 2, table=[[1, 2], [2, 1]])
    with pytest.raises(ValueError, match="identical cores"):
        solve(inst, "timeindexed")


def test_eq19_admits_an_overloaded_schedule_and_verify_flags_it():
    # Three independent μops of length 2 on one core: eq. 19 counts issues only, so starts 0, 1, 2
    # satisfy it with T = 4; the true optimum is 6.
    inst = make_instance([2, 2, 2], [], 1)
    relaxed = solve(inst, "timeindexed", "highs", relaxed=True, time_limit=30)
    assert relaxed.status is Status.OPTIMAL and relaxed.objective == 4
    report = verify(inst, relaxed.solution)
    assert not report.ok
    assert any("overlap" in v for v in report.violations)
    exact = solve(inst, "timeindexed", "highs", time_limit=30)
    assert exact.objective == 6 and verify(inst, exact.solution).ok


def test_constraint_families_are_counted(diamond):
    model = TimeIndexedModel(diamond, 10)
    counts = model.model.row_counts()
    assert counts["assignment"] == diamond.n
    assert counts["precedence"] == diamond.graph.num_edges
    assert counts["makespan"] == diamond.n
    assert counts["resource"] > 0
    relaxed = TimeIndexedModel(diamond, 10, relaxed=True).model.row_counts()
    assert "resource (eq. 19, relaxed)" in relaxed and "resource" not in relaxed


def test_warm_start_is_a_feasible_point_of_the_model(diamond):
    warm = list_schedule(diamond)
    model = TimeIndexedModel(diamond, warm.makespan(diamond))
    x0 = model.hint(warm)
    assert x0 is not None and model.model.violations(x0) == []
    assert model.decode(x0).start.tolist() == warm.start.tolist()


def test_infeasible_warm_start_is_refused(diamond):
    from npusched import Schedule, VerificationError

    bad = Schedule(np.zeros(diamond.n, dtype=np.int64), np.zeros(diamond.n, dtype=np.int64))
    with pytest.raises(VerificationError):
        solve(diamond, "cpsat", warm_start=bad)


def test_unknown_names_raise_value_error(diamond):
    with pytest.raises(ValueError, match="unknown method"):
        solve(diamond, "magic")
    with pytest.raises(ValueError, match="runs on"):
        solve(diamond, "cpsat", "highs")
    with pytest.raises(ValueError, match="relaxed"):
        solve(diamond, "cpsat", relaxed=True)


def test_time_limit_is_honoured():
    rng = np.random.default_rng(7)
    n = 40
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.08]
    inst = make_instance(rng.integers(1, 20, n).tolist(), edges, 3)
    res = solve(inst, "timeindexed", "pulp-highs", time_limit=1.0)
    assert res.runtime_s < 5.0
    if res.solution is not None:
        verify(inst, res.solution).raise_if_failed()


@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_disaggregated_precedence_has_the_same_optimum(fixture_instance, backend):
    base = solve(fixture_instance, "timeindexed", backend, time_limit=30)
    strong = solve(
        fixture_instance, "timeindexed", backend, precedence="disaggregated", time_limit=30
    )
    assert strong.status is Status.OPTIMAL
    rep = verify(fixture_instance, strong.solution).raise_if_failed()
    assert rep.makespan == strong.objective == base.objective
    assert "precedence (disaggregated)" in strong.stats["rows"]


def test_disaggregated_lp_bound_is_at_least_eq18s(diamond):
    # LP relaxations (all variables continuous) solved by HiGHS: the disaggregated rows imply
    # the aggregated ones, so their LP bound can only be higher.
    from npusched.solvers import highs

    bounds = []
    for prec in TimeIndexedModel.PRECEDENCE:
        model = TimeIndexedModel(diamond, 12, precedence=prec)
        lm = model.model
        lm.integral = [False] * lm.num_vars
        lm.lb[model.T] = 0.0  # drop the redundant bound on T to compare the rows themselves
        out = highs.solve_linear(lm, time_limit=10, threads=1, seed=0)
        bounds.append(out.objective)
    assert bounds[1] >= bounds[0] - 1e-9


def test_time_indexed_refuses_a_model_too_large_to_build(monkeypatch, diamond):
    monkeypatch.setattr(TimeIndexedModel, "MAX_BINARIES", 10)
    with pytest.raises(ValueError, match="use the cpsat method"):
        solve(diamond, "timeindexed")
