"""The Kasahara STG reader and a sample of the published optima (full sweep: README)."""

import json

import pytest
from conftest import SHARED, needs_shared

from npusched import Status, list_schedule, read_stg, solve, verify
from npusched.io import InputError

pytestmark = needs_shared


def _parse_comment(path, key):
    for line in path.read_text().splitlines():
        if line.startswith("#") and key in line:
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"{key} not in {path}")


@pytest.mark.parametrize("name", ["rand0000", "rand0077", "rand0179"])
def test_reader_drops_dummies_and_keeps_ids(name):
    path = SHARED / "stg" / "50" / f"{name}.stg"
    inst = read_stg(path, 4)
    assert inst.n == 50 and inst.graph.ids == tuple(range(1, 51))
    d = inst.duration[:, 0]
    cp = int((inst.graph.heads(d) + d).max())
    assert cp == int(_parse_comment(path, "CP Length"))
    real_edges = _parse_comment(path, "Edges").split("/")[0].strip()
    assert inst.graph.num_edges == int(real_edges)


def test_reader_rejects_a_broken_file(tmp_path):
    bad = tmp_path / "bad.stg"
    bad.write_text("3\n0 0 0\n1 2 1 0\n")
    with pytest.raises(InputError, match="expected 5 task lines"):
        read_stg(bad, 2)


SAMPLE = [("rand0001", 4), ("rand0009", 2), ("rand0042", 8), ("rand0100", 16), ("rand0150", 4)]


@pytest.mark.parametrize(("name", "m"), SAMPLE)
def test_cpsat_matches_the_published_optimum(name, m):
    inst = read_stg(SHARED / "stg" / "50" / f"{name}.stg", m)
    res = solve(inst, "cpsat", time_limit=20, threads=2)
    rep = verify(inst, res.solution).raise_if_failed()
    heuristic = list_schedule(inst).makespan(inst)
    assert rep.makespan == res.objective <= heuristic
    ref = inst.reference
    if res.status is Status.OPTIMAL and ref.optimum is not None:
        assert res.objective == ref.optimum
    if ref.optimum is not None:
        assert res.bound <= ref.optimum <= res.objective


def test_optima_table_is_read_for_every_core_count():
    optima = json.loads((SHARED / "stg" / "optima.json").read_text())
    for m in (2, 4, 8, 16):
        ref = read_stg(SHARED / "stg" / "50" / "rand0009.stg", m).reference
        entry = optima["50/rand0009"][f"m{m}"]
        if entry["status"] == "optimal":
            assert ref.optimum == entry["value"]
        else:
            assert ref.lower_bound == entry["lower_bound"]
            assert ref.upper_bound == entry["upper_bound"]
            assert ref.optimum is None
