"""The ``npusched`` command, run as a user would (a subprocess), on files it writes itself."""

import csv
import json

import pytest
from conftest import ROOT, SHARED, needs_shared, run_cli

from npusched.io import write_instance

run = run_cli


@pytest.fixture
def diamond_json(tmp_path, diamond):
    path = tmp_path / "diamond.json"
    write_instance(diamond, path)
    return path


CONTRACT = {
    "kind",
    "instance",
    "method",
    "backend",
    "status",
    "objective",
    "bound",
    "runtime_s",
    "makespan",
    "noc_cost",
    "ops",
    "transfers",
}


@pytest.mark.parametrize(
    ("method", "backend"),
    [("list", None), ("cpsat", None), ("timeindexed", "highs"), ("timeindexed", "cbc")],
)
def test_solve_writes_the_solution_contract(tmp_path, diamond_json, diamond, method, backend):
    out = tmp_path / "sol.json"
    args = ["solve", diamond_json, "--method", method, "--out", out, "--time-limit", 20]
    if backend:
        args += ["--backend", backend]
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    assert "verify=ok" in proc.stdout
    sol = json.loads(out.read_text())
    assert set(sol) >= CONTRACT
    assert sol["kind"] == "dag_schedule" and sol["verified"] is True
    assert sorted(op["id"] for op in sol["ops"]) == sorted(diamond.graph.ids)
    assert sol["makespan"] == max(op["end"] for op in sol["ops"])
    if method != "list":
        assert sol["status"] == "optimal" and sol["objective"] == sol["makespan"] == 8


def test_relaxed_solution_reports_failed_verification(tmp_path):
    inst = tmp_path / "three.json"
    from conftest import make_instance

    write_instance(make_instance([2, 2, 2], [], 1), inst)
    out = tmp_path / "sol.json"
    proc = run("solve", inst, "--method", "timeindexed", "--relaxed", "--out", out)
    assert proc.returncode == 1  # as verify: a solution with violations
    assert "verify=FAILED" in proc.stdout
    assert json.loads(out.read_text())["verified"] is False


def test_gantt_and_anytime_pngs(tmp_path, diamond_json):
    g, a = tmp_path / "g.png", tmp_path / "a.png"
    proc = run("solve", diamond_json, "--method", "cpsat", "--gantt", g, "--anytime", a)
    assert proc.returncode == 0, proc.stderr
    for p in (g, a):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("{not json", "line 1"),
        (
            '{"format": "npusched/instance/v1", "name": "x", "cores": [{"id": 0}], '
            '"uops": [{"id": 1, "latency": "five"}], "edges": []}',
            "uops/0/latency",
        ),
        (
            '{"format": "npusched/instance/v1", "name": "x", "cores": [{"id": 0}], '
            '"uops": [{"id": 1, "latency": 1}], "edges": [{"src": 1, "dst": 2}]}',
            "edges/0/dst",
        ),
    ],
)
def test_bad_instance_exits_2_without_traceback_or_output(tmp_path, content, field):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    out = tmp_path / "sol.json"
    proc = run("solve", bad, "--out", out)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr and field in proc.stderr
    assert not out.exists()


def test_missing_file_and_bad_method(tmp_path, diamond_json):
    proc = run("solve", tmp_path / "nope.json")
    assert proc.returncode == 2 and "nope.json" in proc.stderr and "Traceback" not in proc.stderr
    proc = run("compare", diamond_json, "--methods", "list,magic")
    assert proc.returncode == 2 and "unknown method 'magic'" in proc.stderr
    proc = run("solve", diamond_json, "--method", "cpsat", "--backend", "highs")
    assert proc.returncode == 2 and "runs on cpsat" in proc.stderr


def test_compare_table_and_csv(tmp_path, diamond_json):
    csv_path = tmp_path / "rows.csv"
    proc = run(
        "compare",
        diamond_json,
        diamond_json.parent / "diamond.json",
        "--methods",
        "list,cpsat,timeindexed:cbc",
        "--csv",
        csv_path,
        "--time-limit",
        20,
        "--workers",
        2,
    )
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(csv_path.open()))
    assert [(r["method"], r["backend"]) for r in rows] == [
        ("list", "none"),
        ("cpsat", "cpsat"),
        ("timeindexed", "cbc"),
    ]
    assert all(r["verified"] == "True" for r in rows)
    assert "proven optimal" in proc.stdout


@pytest.mark.parametrize("workers", [1, 2])
def test_compare_keeps_the_good_rows_when_one_file_is_bad(tmp_path, diamond_json, workers):
    """A bad file fails its own rows (with the reason, across the process pool too); the good
    rows are computed, tabulated and written, and the exit code says something failed."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x"}')
    csv_path = tmp_path / "rows.csv"
    proc = run("compare", diamond_json, bad, "--methods", "list,cpsat", "--csv", csv_path,
               "--workers", workers, "--quiet")  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    rows = list(csv.DictReader(csv_path.open()))
    assert [(r["status"] != "error", r["method"]) for r in rows] == [
        (True, "list"), (True, "cpsat"), (False, "list"), (False, "cpsat"),
    ]  # fmt: skip
    assert all("InputError" in r["message"] and str(bad) in r["message"] for r in rows[2:])
    assert f"npusched: error: {bad} (list): InputError" in proc.stderr
    assert "list/none" in proc.stdout and "cpsat/cpsat" in proc.stdout


@needs_shared
def test_convert_stg_keeps_ids_and_reference(tmp_path):
    src = SHARED / "stg" / "50" / "rand0000.stg"
    out = tmp_path / "rand0000_m4.json"
    proc = run("convert", "stg", src, "--cores", 4, "-o", out)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert [u["id"] for u in data["uops"]] == list(range(1, 51))
    optima = json.loads((SHARED / "stg" / "optima.json").read_text())
    assert data["reference"]["optimum"] == optima["50/rand0000"]["m4"]["value"]
    assert len(data["cores"]) == 4


def test_verify_command_accepts_and_rejects(tmp_path, diamond_json):
    out = tmp_path / "sol.json"
    assert run("solve", diamond_json, "--out", out).returncode == 0
    proc = run("verify", diamond_json, out)
    assert proc.returncode == 0 and "feasible" in proc.stdout
    data = json.loads(out.read_text())
    data["ops"][-1]["start"] = 0  # the sink now starts before its producers end
    out.write_text(json.dumps(data))
    proc = run("verify", diamond_json, out)
    assert proc.returncode == 1 and "precedence" in proc.stdout
    del data["ops"][0]
    out.write_text(json.dumps(data))
    proc = run("verify", diamond_json, out)
    assert proc.returncode == 2 and "no entry for μops" in proc.stderr


@needs_shared
def test_twostage_on_a_mesh_from_the_command_line(tmp_path):
    inst, sol = tmp_path / "r1.json", tmp_path / "sol.json"
    src = SHARED / "stg" / "50" / "rand0001.stg"
    assert run("convert", "stg", src, "--mesh", "2x2", "-o", inst).returncode == 0
    proc = run("solve", inst, "--method", "twostage", "--time-limit", 4, "--out", sol)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(sol.read_text())
    assert data["verified"] and data["noc_cost"] is not None
    assert data["noc_cost"] <= data["stats"]["stage2"]["noc_cost"] + 1e-6
    proc = run("verify", inst, sol)
    assert proc.returncode == 0 and "NoC cost" in proc.stdout
    proc = run("convert", "stg", src, "--mesh", "2y2", "-o", inst)
    assert proc.returncode == 2 and "ROWSxCOLS" in proc.stderr


def test_time_limit_must_be_positive(diamond_json):
    proc = run("solve", diamond_json, "--time-limit", "0")
    assert proc.returncode == 2 and "must be positive" in proc.stderr


def test_verify_names_a_broken_solution_file(tmp_path, diamond_json):
    sol = tmp_path / "sol.json"
    sol.write_text('{"ops": [')
    proc = run("verify", diamond_json, sol)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert str(sol) in proc.stderr and "not valid JSON" in proc.stderr


@pytest.mark.parametrize("value", ["-5", "1e30", "nan", "inf", "x"])
def test_bad_beta_is_one_line(tmp_path, diamond_json, value):
    out = tmp_path / "sol.json"
    proc = run("solve", diamond_json, "--method", "joint", f"--beta={value}", "--out", out)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--beta" in proc.stderr and not out.exists()


def test_no_solution_exits_3_with_the_reason(capsys):
    from npusched.cli.solve import NO_SOLUTION, exit_code
    from npusched.solvers.result import Result, Status

    res = Result(Status.ERROR, "joint", "cpsat", None, message="MODEL_INVALID")
    assert exit_code(res, None) == NO_SOLUTION == 3
    err = capsys.readouterr().err
    assert "joint ended in error: MODEL_INVALID" in err
    res.solution = object()  # an error with the warm start in hand still exits 3
    assert exit_code(res, True) == NO_SOLUTION
    assert "joint ended in error: MODEL_INVALID" in capsys.readouterr().err
    res = Result(Status.TIME_LIMIT_NO_SOLUTION, "qap", "cbc", None)
    assert exit_code(res, None) == NO_SOLUTION
    assert "qap returned no solution (time_limit_no_solution)" in capsys.readouterr().err
    ok = Result(Status.FEASIBLE, "list", "none", 5.0, solution=object())
    assert exit_code(ok, True) == 0 and exit_code(ok, False) == 1


def test_big_files_announce_their_reading(monkeypatch, capsys):
    from npusched.cli import args
    from npusched.cli.main import main

    good = str(ROOT / "instances" / "examples" / "twelve.json")
    assert main(["info", good]) == 0 and "reading" not in capsys.readouterr().err
    monkeypatch.setattr(args, "BIG_FILE", 10)
    assert main(["info", good]) == 0
    assert f"npusched: reading {good} (0 MB) ..." in capsys.readouterr().err
