"""Klotski's two-stage pipeline: slot ILP, then the mapping MIP with the slots fixed."""

import itertools

import numpy as np
import pytest
from conftest import random_instances
from hypothesis import given, settings

from npusched import Accelerator, SchedulingInstance, Status, solve, verify
from npusched.formulations.placement.qap import PlacementModel
from npusched.problem.placement import overlap_groups, stage2_instance
from npusched.solvers.dispatch import solve_linear
from npusched.verify import verify_placement


def on_mesh(inst: SchedulingInstance, rows: int, cols: int) -> SchedulingInstance:
    return SchedulingInstance(inst.graph, Accelerator.mesh_grid(rows, cols), name=inst.name)


def test_overlap_groups_are_the_maximal_cliques():
    start = np.array([0, 0, 2, 5, 5, 9])
    end = np.array([3, 6, 4, 7, 8, 9])  # the last μop has zero length
    groups = {tuple(g.tolist()) for g in overlap_groups(start, end)}
    assert groups == {(0, 1, 2), (1, 3, 4)}


def brute_force_mapping(inst, start):
    """Cheapest eq. 14 cost over all core assignments keeping overlapping μops apart (eq. 12),
    every assignment at once as one array (6^7 rows at most here)."""
    mapping = stage2_instance(inst, start)
    loc = np.array(list(itertools.product(range(inst.m), repeat=inst.n)), dtype=np.int64)
    apart = np.ones(len(loc), dtype=bool)
    for group in mapping.groups:
        for a, b in itertools.combinations(group.tolist(), 2):
            apart &= loc[:, a] != loc[:, b]
    dist = mapping.distance()
    cost = np.zeros(len(loc), dtype=np.int64)
    for t, u in zip(*np.nonzero(mapping.flow), strict=True):
        cost += mapping.flow[t, u] * dist[loc[:, t], loc[:, u]]
    return int(cost[apart].min())


@settings(max_examples=15, deadline=None)
@given(inst=random_instances(max_n=7, max_m=1))
def test_stage2_optimum_equals_brute_force_on_small_meshes(inst):
    for rows, cols in ((2, 2), (2, 3)):
        mesh_inst = on_mesh(inst, rows, cols)
        res = solve(mesh_inst, "cpsat", time_limit=20)
        mapping = stage2_instance(mesh_inst, res.solution.start)
        model = PlacementModel(mapping)
        raw = solve_linear(model.model, "cpsat", time_limit=20, threads=1, seed=0)
        assert raw.status is Status.OPTIMAL
        placement = model.decode(raw.x)
        assert verify_placement(mapping, placement, raw.objective) == []
        assert raw.objective == brute_force_mapping(mesh_inst, res.solution.start)


@pytest.mark.parametrize("backend", ["highs", "cbc", "cpsat"])
@settings(max_examples=8, deadline=None)
@given(inst=random_instances(max_n=10, max_m=1))
def test_twostage_schedules_verify_and_cost_recomputes(backend, inst):
    mesh_inst = on_mesh(inst, 2, 2)
    res = solve(mesh_inst, "twostage", backend, time_limit=30)
    rep = verify(mesh_inst, res.solution).raise_if_failed()
    # feasible, or optimal when the makespan meets the bound (solve() says so for every method)
    assert res.status is (Status.OPTIMAL if res.objective <= res.bound else Status.FEASIBLE)
    assert rep.makespan == res.objective
    assert res.stats["stage1"]["status"] == "optimal"
    if res.stats["stage2"]["status"] == "optimal":
        assert rep.noc_cost == res.stats["stage2"]["noc_cost"]


def test_weighted_cost_counts_bytes():
    from conftest import make_instance

    inst = on_mesh(make_instance([2, 2, 2], [(0, 2), (1, 2)], 1), 1, 3)
    res = solve(inst, "twostage", "highs", weighted=True, time_limit=20)
    rep = verify(inst, res.solution).raise_if_failed()
    assert rep.noc_bytes_hops == 8 * rep.noc_cost  # every edge carries 8 bytes in make_instance


def test_twostage_needs_a_mesh(diamond):
    with pytest.raises(ValueError, match="cores on a mesh"):
        solve(diamond, "twostage")
