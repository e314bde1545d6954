"""Open STG cases (only bounds published) that npusched proved optimal: re-checked here."""

import json
from pathlib import Path

import pytest
from conftest import ROOT, SHARED, needs_shared

from npusched import Status, read_stg, solve, verify
from npusched.io import read_solution

pytestmark = needs_shared
FILES = sorted((ROOT / "instances" / "stg_open_solved").glob("*.json"))


def _instance(path: Path):
    stem, m = path.stem.split("_m")
    return read_stg(SHARED / "stg" / "50" / f"{stem}.stg", int(m))


def test_there_are_stored_results():
    assert len(FILES) >= 1


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_stored_schedule_is_feasible_and_inside_the_published_interval(path):
    inst = _instance(path)
    sched, data = read_solution(path, inst)
    rep = verify(inst, sched, claimed_makespan=data["makespan"]).raise_if_failed()
    ref = inst.reference
    assert ref.is_open
    assert ref.lower_bound <= rep.makespan <= ref.upper_bound
    assert data["status"] == "optimal" and data["bound"] == rep.makespan


@pytest.mark.parametrize("path", FILES[:: max(1, len(FILES) // 4)], ids=lambda p: p.stem)
def test_optimality_is_proven_again(path):
    inst = _instance(path)
    claimed = json.loads(path.read_text())["makespan"]
    res = solve(inst, "cpsat", time_limit=30, threads=2)
    verify(inst, res.solution).raise_if_failed()
    if res.status is Status.OPTIMAL:
        assert res.objective == claimed
    else:  # a slower machine may not close the bound in time; the bound must still agree
        assert res.bound <= claimed <= res.objective
