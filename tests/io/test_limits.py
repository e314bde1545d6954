"""Numbers outside npusched's domain (common/limits.py) are refused where they enter."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from npusched.bench.generate import layered_dag
from npusched.io import write_instance
from npusched.io.instance_json import instance_to_dict


def _doc(compact: bool = False):
    doc = instance_to_dict(layered_dag(3, 2, (2, 2), seed=1), compact=compact)
    return json.loads(json.dumps(doc, default=lambda a: a.tolist()))


def _error(tmp_path, text: str, *args: str) -> str:
    path = tmp_path / "i.json"
    path.write_text(text)
    proc = run_cli(*(args or ("info",)), path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"npusched: error: {path}")
    return proc.stderr


def test_huge_latency_row_and_columnar(tmp_path):
    doc = _doc()
    doc["uops"][0]["latency"] = 2**61
    assert "1099511627776" in _error(tmp_path, json.dumps(doc))
    doc = _doc(compact=True)
    doc["uops"]["latency"][2] = 2**41
    assert "uops.latency[2]: must be at most 2^40" in _error(tmp_path, json.dumps(doc))
    doc["uops"]["latency"][2] = 2**70
    assert "uops.latency" in _error(tmp_path, json.dumps(doc))


def test_nan_and_infinity_tokens(tmp_path):
    doc = json.dumps(_doc()).replace('"hop_latency": 1', '"hop_latency": NaN')
    assert "NaN is not a JSON number" in _error(tmp_path, doc)
    doc = json.dumps(_doc()).replace('"link_bandwidth": 8.0', '"link_bandwidth": Infinity')
    assert "Infinity is not a JSON number" in _error(tmp_path, doc)


def test_deep_nesting(tmp_path):
    assert "nested too deeply" in _error(tmp_path, "[" * 200_000 + "]" * 200_000)


def test_stg_time_out_of_domain(tmp_path):
    path = tmp_path / "x.stg"
    path.write_text(f"1\n0 0 0\n1 {2**70} 1 0\n2 0 1 1\n")
    proc = run_cli("solve", path, "--cores", 2)
    assert proc.returncode == 2 and "outside 0..2^40" in proc.stderr


def test_solution_time_out_of_domain(tmp_path):
    inst = tmp_path / "i.json"
    write_instance(layered_dag(3, 2, (2, 2), seed=1), inst)
    sol = tmp_path / "s.json"
    assert run_cli("solve", inst, "--method", "list", "--out", sol).returncode == 0
    data = json.loads(sol.read_text())
    data["ops"][0]["start"] = 2**62
    sol.write_text(json.dumps(data))
    proc = run_cli("verify", inst, sol)
    assert proc.returncode == 2 and "ops/0/start" in proc.stderr and "outside" in proc.stderr


@pytest.mark.parametrize("text", ["inf", "nan", "-inf"])
def test_cli_numbers(tmp_path, text):
    proc = run_cli("generate", "layered", "--link-bandwidth", text, "-o", tmp_path / "g.json")
    assert proc.returncode == 2 and not (tmp_path / "g.json").exists()
