"""Property tests on random DAGs (≤ 12 μops, ≤ 4 cores)."""

from conftest import brute_force_makespan, random_instances
from hypothesis import HealthCheck, given, settings

from npusched import Status, list_schedule, solve, verify
from npusched.solvers.dispatch import LINEAR_BACKENDS

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(inst=random_instances())
def test_every_method_verifies_and_exact_is_no_worse_than_list(inst):
    heuristic = verify(inst, list_schedule(inst)).raise_if_failed().makespan
    runs = [("cpsat", "cpsat")] + [("timeindexed", b) for b in LINEAR_BACKENDS]
    for method, backend in runs:
        res = solve(inst, method, backend, time_limit=20)
        assert res.status is Status.OPTIMAL
        rep = verify(inst, res.solution).raise_if_failed()
        assert rep.makespan == res.objective <= heuristic
        assert res.bound is not None and res.bound <= res.objective + 1e-6


@SETTINGS
@given(inst=random_instances(max_n=6, max_m=3))
def test_proven_optimum_equals_brute_force(inst):
    res = solve(inst, "cpsat", time_limit=20)
    assert res.status is Status.OPTIMAL
    assert verify(inst, res.solution).raise_if_failed().makespan == brute_force_makespan(inst)
    heuristic = list_schedule(inst).makespan(inst)
    assert heuristic <= (2 - 1 / inst.m) * res.objective + 1e-9  # Klotski Theorem 1


@SETTINGS
@given(inst=random_instances(max_n=5, max_m=3, per_core=True))
def test_per_core_optimum_equals_brute_force(inst):
    res = solve(inst, "cpsat", time_limit=20)
    assert res.status is Status.OPTIMAL
    assert verify(inst, res.solution).raise_if_failed().makespan == brute_force_makespan(inst)
