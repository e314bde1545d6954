"""verify reads what the file says: integer starts and ends, and an end that matches."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from npusched.io import write_instance


@pytest.fixture()
def solved(tmp_path, diamond):
    diamond_json = tmp_path / "diamond.json"
    write_instance(diamond, diamond_json)
    sol = tmp_path / "s.json"
    assert run_cli("solve", diamond_json, "--method", "list", "--out", sol).returncode == 0
    return diamond_json, sol, json.loads(sol.read_text())


@pytest.mark.parametrize("field,value", [("start", 3.9), ("start", "30"), ("end", None)])
def test_non_integer_times_are_refused(solved, field, value):
    inst, sol, data = solved
    data["ops"][1][field] = value
    sol.write_text(json.dumps(data))
    proc = run_cli("verify", inst, sol)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{sol}: ops/1/{field}: must be an integer" in proc.stderr


def test_a_wrong_end_is_a_violation(solved):
    inst, sol, data = solved
    data["ops"][0]["end"] += 1
    sol.write_text(json.dumps(data))
    proc = run_cli("verify", inst, sol)
    assert proc.returncode == 1 and "ends at" in proc.stdout
