"""The spill model (:mod:`npusched.formulations.scheduling.routed_spill`): every solution is a
schedule that ``verify`` accepts with its records and moves; the memory-aware list's evicting
schedules are points of it (so it warm-starts from them); eviction as a decision beats the
model that cannot evict; and the relaxations' bound, which holds for evicting schedules, stays
under its optima."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from npusched.bench.generate import layered_dag
from npusched.bench.memory_scaling import with_dram
from npusched.formulations.scheduling.routed import RoutedModel
from npusched.formulations.scheduling.routed_spill import SpillModel, segments_for
from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.methods import solve
from npusched.problem.scheduling.routed import RoutedInstance
from npusched.solvers.cpsat import run_cpsat
from npusched.solvers.result import Status
from npusched.verify import check

SOLVED = (Status.OPTIMAL, Status.FEASIBLE)


def tight(seed: int, layers: int = 5) -> RoutedInstance:
    """A random DAG on 2×2 with DRAM, on the list's allocation, each memory the largest operand
    set a μop needs (the memory-aware list evicts on most seeds)."""
    base = layered_dag(layers, 3, (2, 2), latency=(2, 6), nbytes=(8, 24), seed=seed)
    inst = with_dram(RoutedInstance.from_mesh(base), np.random.default_rng(seed))
    inst = inst.restricted(solve(inst, "list").solution.core)
    return dataclasses.replace(inst, capacity=np.full(inst.m, int(inst.operand_data().max())))


def _run(model, limit: float = 20):
    status, solver, _ = run_cpsat(model.model, time_limit=limit, threads=2, seed=0)
    return status, solver


@pytest.mark.parametrize("seed", [4, 5, 16, 19, 22])
def test_the_lists_evicting_schedule_is_a_point_and_the_optimum_verifies(seed):
    inst = tight(seed, 5 + seed % 3)
    listed = memory_list_schedule(inst)
    assert listed.evicts and check(inst, listed).ok
    k = segments_for(listed)
    point = SpillModel(inst, listed.makespan(inst), k)
    for i in range(inst.n):
        point.model.add(point.s[i] == int(listed.start[i]))
    assert _run(point)[0] in SOLVED  # the list's times (its copies through DRAM included)
    hinted = SpillModel(inst, listed.makespan(inst), k)
    hinted.hint(listed)  # the hint alone is the list's schedule: every variable, feasible
    status, solver, _ = run_cpsat(hinted.model, time_limit=20, threads=1, seed=0,
                                  params={"fix_variables_to_their_hinted_value": True})
    assert status in SOLVED and solver.objective_value == listed.makespan(inst)
    model = SpillModel(inst, listed.makespan(inst), k)
    model.hint(listed)
    status, solver = _run(model)
    assert status in SOLVED
    sched = model.decode(solver)
    report = check(inst, sched)
    assert report.ok, report.violations[:3]
    assert sched.makespan(inst) <= listed.makespan(inst)


def test_eviction_as_a_decision_beats_the_model_that_cannot_evict():
    shorter = 0
    for seed in (1, 4, 5):
        inst = tight(seed)
        horizon = memory_list_schedule(inst).makespan(inst) + 50
        s1, spill = _run(SpillModel(inst, horizon, 3))
        s2, keep = _run(RoutedModel(inst, horizon))
        assert s1 is Status.OPTIMAL and s2 is Status.OPTIMAL
        assert spill.objective_value <= keep.objective_value  # no eviction is one of its points
        shorter += spill.objective_value < keep.objective_value
    assert shorter >= 1


@pytest.mark.parametrize("seed", [1, 4])
def test_the_relaxations_bound_stays_under_the_optimum_with_eviction(seed):
    inst = tight(seed)
    horizon = memory_list_schedule(inst).makespan(inst) + 50
    status, solver = _run(SpillModel(inst, horizon, 3))
    assert status is Status.OPTIMAL
    res = solve(inst, "joint", time_limit=20, threads=2)
    assert check(inst, res.solution).ok
    assert res.bound <= solver.objective_value <= res.objective


def test_three_segments_and_the_refusals():
    inst = tight(4)
    model = SpillModel(inst, memory_list_schedule(inst).makespan(inst), 3)
    status, solver = _run(model)
    assert status in SOLVED and check(inst, model.decode(solver)).ok
    free = dataclasses.replace(inst, allowed=None, preferred=None)
    with pytest.raises(ValueError, match="fixed allocation"):
        SpillModel(free, 100)
    with pytest.raises(ValueError, match="segments"):
        SpillModel(inst, 100, 0)
    assert segments_for(None) == 2
