"""The routed CP-SAT model checked by a second, independently written one (the time-indexed
integer program of :mod:`npusched.formulations.scheduling.routed_timeindexed`, solved by HiGHS)
on random routed instances: both prove the same optimum, and both schedules verify. And the
relay relaxation's bound (``joint`` on an instance with memories) against schedules that
evict."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from npusched.bench.generate import layered_dag
from npusched.bench.memory_scaling import with_dram
from npusched.formulations.scheduling.routed_timeindexed import RoutedTimeIndexed
from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.methods import solve
from npusched.problem.scheduling.routed import RoutedInstance
from npusched.solvers.highs import solve_linear
from npusched.solvers.result import Status
from npusched.verify import check


def small(seed: int, mesh: tuple[int, int] = (2, 2), layers: int = 3, width: int = 2
          ) -> RoutedInstance:  # fmt: skip
    """A random layered DAG on a mesh with a DRAM core and weights in DRAM."""
    base = layered_dag(layers, width, mesh, latency=(2, 6), nbytes=(8, 24), seed=seed)
    return with_dram(RoutedInstance.from_mesh(base), np.random.default_rng(seed))


@pytest.mark.parametrize("seed, mesh", [(0, (2, 2)), (3, (1, 3)), (5, (2, 2))])
def test_cpsat_and_the_time_indexed_program_prove_the_same_optimum(seed, mesh):
    inst = small(seed, mesh)
    res = solve(inst, "joint", time_limit=30, threads=2)
    assert res.status is Status.OPTIMAL and check(inst, res.solution).ok
    ti = RoutedTimeIndexed(inst, int(res.objective) + 3)  # room above CP-SAT's optimum
    out = solve_linear(ti.lm, time_limit=120, threads=1, seed=0)
    assert out.status is Status.OPTIMAL
    assert out.objective == pytest.approx(res.objective)
    sched = ti.decode(out.x)
    assert check(inst, sched).ok and sched.makespan(inst) == res.objective


def test_the_time_indexed_program_refuses_what_it_does_not_model():
    inst = small(0)
    with pytest.raises(ValueError, match="memory"):
        RoutedTimeIndexed(dataclasses.replace(inst, capacity=np.full(inst.m, 10**6)), 50)


@pytest.mark.parametrize("seed", [1, 4, 7])
def test_the_relaxation_bound_holds_for_schedules_that_evict(seed):
    inst = small(seed, layers=5, width=3)
    inst = inst.restricted(solve(inst, "list").solution.core)
    need = int(inst.operand_data().max())
    tight = dataclasses.replace(inst, capacity=np.full(inst.m, need))  # memory binds
    evicting = memory_list_schedule(tight)
    assert evicting.evicts and check(tight, evicting).ok
    res = solve(tight, "joint", time_limit=20, threads=2)
    assert check(tight, res.solution).ok
    assert res.bound <= evicting.makespan(tight) and res.bound <= res.objective
    assert res.bound >= tight.lower_bound()
