"""Proving placement optima: Gilmore–Lawler branch and bound."""

import itertools
import time

import numpy as np
import pytest
from conftest import SHARED, needs_shared
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched import Status
from npusched.formulations.placement.bnb import glb_root, solve_qap_bnb
from npusched.io import read_qaplib
from npusched.problem.placement import Placement, PlacementInstance
from npusched.problem.scheduling.noc import Mesh
from npusched.verify import verify_placement


def brute_force(inst: PlacementInstance) -> int:
    """Least cost over every injective task → cell map (vectorised over the maps)."""
    perms = np.array(list(itertools.permutations(range(inst.cell_array.size), inst.n)))
    d = inst.distance()
    cost = np.zeros(len(perms), dtype=np.int64)
    for t, u in zip(*np.nonzero(inst.flow), strict=True):
        cost += inst.flow[t, u] * d[perms[:, t], perms[:, u]]
    return int(cost.min())


@st.composite
def qap_instances(draw):
    """Small QAP-form instances: asymmetric flows with zeros, full meshes (with their flips and,
    on 3×3, transposes) or a subset of the cells (fewer symmetries, more cells than tasks)."""
    rows, cols = draw(st.sampled_from([(2, 3), (3, 3), (2, 4)]))
    size = rows * cols
    n = draw(st.integers(2, 6))
    cells = None
    if draw(st.booleans()):
        cells = np.array(draw(st.permutations(range(size)))[: draw(st.integers(n, size))])
    flow = np.array(
        draw(st.lists(st.lists(st.integers(0, 6), min_size=n, max_size=n), min_size=n, max_size=n))
    )
    np.fill_diagonal(flow, 0)
    return PlacementInstance(flow, Mesh(rows, cols), cells, name=f"q{n}")


@settings(max_examples=40, deadline=None)
@given(inst=qap_instances(), warm=st.booleans())
def test_branch_and_bound_proves_the_brute_force_optimum(inst, warm):
    opt = brute_force(inst)
    start = Placement(np.arange(inst.n)[::-1]) if warm else None
    res = solve_qap_bnb(inst, time_limit=30, warm_start=start)
    assert res.status is Status.OPTIMAL
    assert res.objective == res.bound == opt
    assert verify_placement(inst, res.solution, res.objective) == []
    assert glb_root(inst) <= opt
    assert all(p.bound <= opt for p in res.trace if p.bound is not None)


def test_branch_and_bound_out_of_time_keeps_a_valid_bound():
    rng = np.random.default_rng(3)
    flow = rng.integers(0, 8, (8, 8)) * (rng.random((8, 8)) < 0.6)
    np.fill_diagonal(flow, 0)
    inst = PlacementInstance(flow, Mesh(3, 3))
    res = solve_qap_bnb(inst, time_limit=0.0)
    assert res.status is Status.FEASIBLE
    assert res.bound == glb_root(inst) <= brute_force(inst) <= res.objective
    assert verify_placement(inst, res.solution, res.objective) == []


def test_branch_and_bound_needs_the_qap_form_and_a_feasible_warm_start():
    flow = np.array([[0, 1], [1, 0]])
    inst = PlacementInstance(flow, Mesh(1, 2), groups=(np.array([0, 1]),))
    with pytest.raises(ValueError, match="QAP form"):
        solve_qap_bnb(inst)
    inst = PlacementInstance(flow, Mesh(1, 3))
    for bad in ([1, 1], [0, 3], [0]):
        with pytest.raises(ValueError, match="warm start"):
            solve_qap_bnb(inst, warm_start=Placement(np.array(bad)))


@needs_shared
def test_branch_and_bound_proves_nug12_within_a_minute():
    inst = read_qaplib(SHARED / "qaplib" / "dat" / "nug12.dat")
    t0 = time.perf_counter()
    res = solve_qap_bnb(inst, time_limit=60)  # no warm start: the search finds 578 itself
    assert time.perf_counter() - t0 < 60
    assert res.status is Status.OPTIMAL
    assert res.objective == res.bound == inst.reference.optimum == 578
    assert verify_placement(inst, res.solution, 578) == []
    assert res.stats["root_bound"] == 493  # the Gilmore–Lawler bound of nug12


def test_solve_runs_branch_and_bound_and_refuses_stage2_instances():
    from npusched.methods import solve

    rng = np.random.default_rng(5)
    flow = rng.integers(0, 5, (6, 6)) * (rng.random((6, 6)) < 0.5)
    np.fill_diagonal(flow, 0)
    inst = PlacementInstance(flow, Mesh(2, 3))
    res = solve(inst, "qap-bnb", time_limit=20)
    assert res.status is Status.OPTIMAL and res.objective == brute_force(inst)
    assert verify_placement(inst, res.solution, res.objective) == []
    grouped = PlacementInstance(flow, Mesh(2, 3), groups=(np.array([0, 1]),))
    with pytest.raises(ValueError, match="QAP form"):
        solve(grouped, "qap-bnb")
