"""The interchangeable-core relaxation (:mod:`npusched.problem.scheduling.routed_relax`) and the
symmetry breaking of its model: every schedule of the instance, evicting or not, is a point of
the relaxation with the same μop times and cores; breaking the symmetry keeps the optimum; the
relaxation's optimum never exceeds the instance's; and ``joint`` proves with it what the model
on the mesh alone does not within its time."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from npusched.bench.generate import layered_dag
from npusched.bench.memory_scaling import with_dram
from npusched.formulations.scheduling.routed import RoutedModel
from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.methods import solve
from npusched.problem.scheduling.routed import RoutedInstance
from npusched.problem.scheduling.routed_bounds import live_peak
from npusched.problem.scheduling.routed_relax import (
    core_classes,
    interchangeable,
    relays_dominated,
)
from npusched.solvers.cpsat import run_cpsat
from npusched.solvers.result import Status
from npusched.verify import check
from npusched.verify.scheduling.routed import memory_peaks


def small(seed: int, mesh: tuple[int, int] = (2, 2), layers: int = 3, width: int = 2
          ) -> RoutedInstance:  # fmt: skip
    """A random layered DAG on a mesh with a DRAM core and weights in DRAM."""
    base = layered_dag(layers, width, mesh, latency=(2, 6), nbytes=(8, 24), seed=seed)
    return with_dram(RoutedInstance.from_mesh(base), np.random.default_rng(seed))


def _solve(model: RoutedModel, limit: float = 30) -> tuple[Status, float]:
    status, solver, _ = run_cpsat(model.model, time_limit=limit, threads=2, seed=0)
    return status, solver.objective_value


def _is_point(relax_model: RoutedModel, inst: RoutedInstance, sched) -> bool:
    """Whether the relaxed model has a solution with ``sched``'s μop starts and cores."""
    m = relax_model.model
    for i in range(inst.n):
        m.add(relax_model.s[i] == int(sched.start[i]))
        lit = relax_model.x[i][int(sched.core[i])]
        if lit is not True:
            m.add(lit == 1)
    status, _ = _solve(relax_model, 20)
    return status in (Status.OPTIMAL, Status.FEASIBLE)


def test_core_classes_group_only_cores_that_nothing_tells_apart():
    inst = small(0, (2, 2))
    assert core_classes(inst) == ((0, 1, 2, 3),)
    d = np.array(inst.base.duration)
    d[:, 3] += 1  # core 3 slower
    slow = dataclasses.replace(inst, base=dataclasses.replace(inst.base, latency_table=d))
    assert core_classes(slow) == ((0, 1, 2),)
    assert interchangeable(inst.restricted(np.zeros(inst.n, dtype=np.int64))) is None


def test_no_transfer_is_longer_in_the_relaxation():
    inst = small(1, (3, 3))
    relax = interchangeable(inst)
    assert relax is not None and relax.lanes == {}  # one off-chip link: one port
    rt, topo = relax.instance.topology, inst.topology
    for a in range(-1, inst.m):
        for c in range(inst.m):
            if a != c:
                for data in (1, 17, 1000):
                    real = topo.cycles(data, inst.route(a, c))
                    assert rt.cycles(data, relax.instance.route(a, c)) <= real


@pytest.mark.parametrize("seed, mesh", [(0, (2, 2)), (2, (3, 3)), (4, (2, 3))])
def test_every_schedule_is_a_point_and_the_optimum_a_bound(seed, mesh):
    inst = small(seed, mesh, layers=4, width=2)
    sched = routed_list_schedule(inst, "blevel")
    assert check(inst, sched).ok
    relax = interchangeable(inst)
    assert relax is not None
    plain = RoutedModel(relax.instance, sched.makespan(inst), lanes=relax.lanes)
    assert _is_point(plain, inst, sched)
    exact = RoutedModel(inst, sched.makespan(inst))
    status, optimum = _solve(exact, 60)
    assert status is Status.OPTIMAL
    broken = RoutedModel(relax.instance, sched.makespan(inst), lanes=relax.lanes,
                         classes=relax.classes, floor=0)  # fmt: skip
    free = RoutedModel(relax.instance, sched.makespan(inst), lanes=relax.lanes, floor=0)
    (s1, v1), (s2, v2) = _solve(broken), _solve(free)
    assert s1 is Status.OPTIMAL and s2 is Status.OPTIMAL
    assert v1 == v2 <= optimum  # the symmetry broken keeps the optimum; it is a bound


@pytest.mark.parametrize("seed", [1, 4])
def test_schedules_that_evict_are_points_of_the_relaxation_without_contention(seed):
    inst = small(seed, (2, 2), layers=5, width=3)
    inst = inst.restricted(solve(inst, "list").solution.core)
    need = int(inst.operand_data().max())
    tight = dataclasses.replace(inst, capacity=np.full(inst.m, need), allowed=None,
                                preferred=inst.preferred)  # fmt: skip
    evicting = memory_list_schedule(tight)
    assert evicting.evicts and check(tight, evicting).ok
    assert relays_dominated(tight)
    relax = interchangeable(tight, contention=False)
    assert relax is not None
    model = RoutedModel(relax.instance, evicting.makespan(tight), room=tight.capacity,
                        lanes=relax.lanes)  # fmt: skip
    assert _is_point(model, tight, evicting)


@pytest.mark.parametrize("seed", [0, 3, 5])
def test_the_live_peak_holds_what_a_schedule_keeps(seed):
    inst = small(seed, (2, 2), layers=5, width=3)
    loose = dataclasses.replace(inst, capacity=np.full(inst.m, 10**9))
    sched = routed_list_schedule(loose, "blevel")
    peak = int(memory_peaks(loose, sched).max())
    assert peak <= live_peak(loose, sched.makespan(loose))
    assert live_peak(loose, sched.makespan(loose)) <= live_peak(loose, 10**6)


def test_joint_proves_a_free_allocation_on_nine_cores():
    inst = small(2, (3, 3), layers=5, width=3)
    res = solve(inst, "joint", time_limit=40, threads=2)
    assert check(inst, res.solution).ok
    assert res.status is Status.OPTIMAL and res.objective == res.bound
    assert "interchangeable_bound" in res.stats


def test_the_relaxation_raises_the_bound_where_the_mesh_model_stalls():
    """The bench's 19-μop DAG on 3×3 (``gen 3x3 L8 W5 s0``): the model on the mesh left its
    bound at the instance's lower bound for a minute; the relaxation with the symmetry broken
    proves a higher one."""
    base = layered_dag(8, 5, (3, 3), latency=(4, 40), nbytes=(16, 256), seed=0)
    inst = with_dram(RoutedInstance.from_mesh(base), np.random.default_rng(0))
    relax = interchangeable(inst)
    assert relax is not None
    horizon = routed_list_schedule(inst, "blevel").makespan(inst)
    model = RoutedModel(relax.instance, horizon, lanes=relax.lanes, classes=relax.classes,
                        floor=inst.lower_bound())  # fmt: skip
    status, value = _solve(model, 60)
    assert status is Status.OPTIMAL and value > inst.lower_bound()


def test_placed_puts_the_heaviest_traffic_on_neighbours():
    """A relaxation's labels carry no position: ``placed`` swaps them so that the cores
    exchanging data sit close on the mesh, lowering Σ data · hops."""
    from npusched.methods.routed import placed

    inst = small(0, (3, 3), layers=4, width=2)
    relax = interchangeable(inst)
    assert relax is not None
    g = inst.graph
    core = np.where(np.arange(inst.n) % 2 == 0, 0, 8)  # labels 0 and 8: opposite corners

    def cost(c: np.ndarray) -> int:
        far = (g.bytes > 0) & (c[g.src] != c[g.dst])
        return sum(int(inst.read_data[e]) * len(inst.route(int(c[g.src[e]]), int(c[g.dst[e]])))
                   for e in np.flatnonzero(far))  # fmt: skip

    moved = placed(inst, core, relax.classes)
    assert cost(core) > 0 and cost(moved) < cost(core)
    assert len(set(moved.tolist())) == 2  # still two cores, relabelled
