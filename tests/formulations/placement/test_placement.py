"""Mesh NoC, placement (QAP form of Klotski Problem 3): readers, heuristics, exact model."""

import itertools
import json

import numpy as np
import pytest
from conftest import ROOT, SHARED, needs_shared, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched import Status, solve
from npusched.io import load_instance, read_qaplib, read_solution, write_placement
from npusched.io.placement_json import placement_schema
from npusched.methods import METHODS
from npusched.problem.placement import Placement, PlacementInstance
from npusched.problem.scheduling.noc import Mesh
from npusched.verify import check, verify_placement


@pytest.mark.parametrize(("rows", "cols"), [(1, 1), (2, 3), (3, 3), (4, 2)])
def test_xy_routes_have_manhattan_length_and_chain(rows, cols):
    mesh = Mesh(rows, cols)
    d = mesh.distance()
    for a, b in itertools.product(range(mesh.size), repeat=2):
        route = mesh.route(a, b)
        assert len(route) == d[a, b]
        here = a
        for link in route:
            src, dst = mesh.links[link]
            assert src == here
            here = dst
        assert here == b
    assert sorted(mesh.snake()) == list(range(mesh.size))


def brute_force_cost(inst: PlacementInstance) -> int:
    L = inst.cell_array.size
    return min(inst.cost(np.array(p)) for p in itertools.permutations(range(L), inst.n))


@st.composite
def placements(draw):
    rows, cols = draw(st.sampled_from([(2, 2), (2, 3)]))
    n = draw(st.integers(2, min(6, rows * cols)))
    flow = np.array(
        draw(st.lists(st.lists(st.integers(0, 5), min_size=n, max_size=n), min_size=n, max_size=n))
    )
    np.fill_diagonal(flow, 0)
    return PlacementInstance(flow, Mesh(rows, cols), name=f"p{n}")


@settings(max_examples=20, deadline=None)
@given(inst=placements())
def test_exact_placement_equals_brute_force_and_heuristics_verify(inst):
    opt = brute_force_cost(inst)
    for name in ("snake", "greedy", "anneal", "tabu"):
        res = solve(inst, name)
        assert check(inst, res.solution, res.objective).ok
        assert res.objective >= opt
    res = solve(inst, "qap", "cpsat", time_limit=20)
    assert res.status is Status.OPTIMAL
    assert check(inst, res.solution, res.objective).ok
    assert res.objective == opt


@pytest.mark.parametrize("backend", METHODS["qap"].backends)
def test_qap_model_on_every_backend(backend):
    flow = np.array([[0, 5, 0, 1], [5, 0, 3, 0], [0, 3, 0, 4], [1, 0, 4, 0]])
    inst = PlacementInstance(flow, Mesh(2, 2))
    res = solve(inst, "qap", backend, time_limit=30)
    assert res.status is Status.OPTIMAL
    assert verify_placement(inst, res.solution, res.objective) == []
    assert res.objective == brute_force_cost(inst) == res.bound


def test_placement_verification_catches_shared_cells_and_wrong_cost():
    inst = PlacementInstance(np.array([[0, 1], [1, 0]]), Mesh(1, 3))
    assert verify_placement(inst, Placement(np.array([0, 2])), 4) == []
    assert any("holds 2 tasks" in v for v in verify_placement(inst, Placement(np.array([1, 1]))))
    assert any("claimed cost" in v for v in verify_placement(inst, Placement(np.array([0, 1])), 4))


def test_placement_json_round_trip_and_published_schema(tmp_path):
    inst = PlacementInstance(
        np.array([[0, 2, 1], [0, 0, 3], [1, 0, 0]]), Mesh(2, 2), np.array([0, 1, 3]), name="three"
    )
    path = tmp_path / "p.json"
    write_placement(inst, path)
    back = load_instance(path)
    assert isinstance(back, PlacementInstance)
    assert (back.flow == inst.flow).all() and back.cell_array.tolist() == [0, 1, 3]
    published = json.loads((ROOT / "instances" / "schema" / "placement.schema.json").read_text())
    assert published == placement_schema()


@needs_shared
@pytest.mark.parametrize("name", ["nug12", "nug16a", "nug27"])
def test_qaplib_reader_and_published_solution(name):
    inst = read_qaplib(SHARED / "qaplib" / "dat" / f"{name}.dat")
    tokens = (SHARED / "qaplib" / "sln" / f"{name}.sln").read_text().split()
    n, value = int(tokens[0]), int(tokens[1])
    perm = np.array([int(t) - 1 for t in tokens[2 : 2 + n]])
    assert inst.n == n and inst.reference.optimum == value
    costs = {inst.cost(perm), inst.cost(np.argsort(perm))}  # either convention of the .sln
    assert value in costs


@needs_shared
def test_tabu_finds_nug12_optimum_and_cli_round_trip(tmp_path):
    dat = SHARED / "qaplib" / "dat" / "nug12.dat"
    inst = read_qaplib(dat)
    res = solve(inst, "tabu", seed=1)
    assert res.objective == inst.reference.optimum
    out, sol = tmp_path / "nug12.json", tmp_path / "sol.json"
    assert run_cli("convert", "qaplib", dat, "-o", out).returncode == 0
    proc = run_cli("solve", out, "--method", "tabu", "--out", sol)
    assert proc.returncode == 0 and "verify=ok" in proc.stdout
    placement, data = read_solution(sol, load_instance(out))
    assert data["kind"] == "placement" and data["noc_cost"] == inst.cost(placement.loc)
    proc = run_cli("verify", out, sol)
    assert proc.returncode == 0, proc.stdout


@settings(max_examples=10, deadline=None)
@given(inst=placements())
def test_link_traffic_adds_up_to_the_noc_cost(inst):
    from npusched.plot import link_traffic

    loc = solve(inst, "tabu").solution.loc
    cells = inst.cell_array[loc]
    t, u = np.nonzero(inst.flow)
    load = link_traffic(inst.mesh, cells[t], cells[u], inst.flow[t, u])
    assert load.sum() == inst.cost(loc)
    assert (load >= 0).all()


def test_heatmap_png_from_the_command_line(tmp_path):
    inst = PlacementInstance(np.array([[0, 3, 1], [0, 0, 2], [4, 0, 0]]), Mesh(2, 2), name="h")
    path, png = tmp_path / "h.json", tmp_path / "h.png"
    write_placement(inst, path)
    proc = run_cli("solve", path, "--method", "greedy", "--heatmap", png)
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    ("rows", "cols", "cells", "count"),
    [(3, 3, range(9), 8), (2, 3, range(6), 4), (1, 3, [1, 2], 1), (3, 5, range(14), 1)],
)
def test_mesh_symmetries_keep_the_cell_set_and_the_hops(rows, cols, cells, count):
    mesh = Mesh(rows, cols)
    cells = np.array(list(cells))
    sym = mesh.symmetries(cells)
    assert len(sym) == count and (sym[0] == np.arange(cells.size)).all()
    d = mesh.distance()[np.ix_(cells, cells)]
    for g in sym:
        assert sorted(g.tolist()) == list(range(cells.size))
        assert (d[np.ix_(g, g)] == d).all()
