"""``compare`` on a Dask distributed cluster (``--executor dask://HOST:PORT``): the rows of the
local process pool, a bad instance still one error row, and the CLI's exit codes and CSV."""

from __future__ import annotations

import csv
import importlib
import pickle

import pytest
from conftest import ROOT, run_cli

from npusched.bench.compare import Job, compare
from npusched.common.executor import open_executor

GOOD = [
    ROOT / "instances" / "examples" / "twelve.json",
    ROOT / "instances" / "stg" / "rand0001_m4.json",
]
# the module itself: ``npusched.bench`` exports the function ``compare`` under its name
bench = importlib.import_module("npusched.bench.compare")
KEYS = ("instance", "cores", "method", "backend", "status", "objective", "verified")


@pytest.fixture(scope="module")
def dask_address():
    """A small cluster of two worker processes; ``HOST:PORT`` of its scheduler (no ``tcp://``)."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address.removeprefix("tcp://")


@pytest.fixture
def bad(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"name": "x"}')
    return path


def jobs_for(paths):
    return [Job(str(p), m, time_limit=20) for p in paths for m in ("list", "cpsat")]


def test_dask_rows_equal_the_process_pool_rows(dask_address, bad):
    jobs = jobs_for([*GOOD, bad])
    local = compare(jobs, workers=2, progress=False)
    with open_executor(f"dask://{dask_address}") as executor:
        remote = compare(jobs, executor, progress=False)
    assert [[r.get(k) for k in KEYS] for r in remote] == [[r.get(k) for k in KEYS] for r in local]
    assert [r["status"] for r in remote] == ["feasible", "optimal"] * 2 + ["error"] * 2
    assert [r["objective"] for r in remote[:4]] == [16, 15, 96, 94]
    assert all(r["verified"] is True for r in remote[:4])
    for r, here in zip(remote[4:], local[4:], strict=True):  # the bad file: a row per method
        assert r["message"].startswith("InputError: ") and str(bad) in r["message"]
        assert r["message"] == here["message"]


class Unpicklable(Exception):
    """An error that plain pickle cannot rebuild (its ``__init__`` needs two arguments; once
    ``distributed`` is imported, tblib's pickling support rebuilds it anyway)."""

    def __init__(self, a, b):
        super().__init__(f"{a} and {b}")


def test_an_error_comes_back_as_a_plain_row(monkeypatch):
    """The worker turns any exception into the job's error row, so that nothing but plain
    values cross back (an exception that cannot be unpickled breaks a process pool)."""

    def boom(job):
        raise Unpicklable(1, 2)

    monkeypatch.setattr(bench, "run_job", boom)
    row = bench.run_row(Job("x.json", "cpsat"))
    assert pickle.loads(pickle.dumps(row)) == row
    assert row["status"] == "error" and row["message"] == "Unpicklable: 1 and 2"
    assert row["backend"] == "cpsat"


def test_cli_on_dask_writes_the_csv_and_exits_1_on_a_bad_file(dask_address, bad, tmp_path):
    csv_path = tmp_path / "rows.csv"
    args = ["--methods", "list,cpsat", "--executor", f"dask://{dask_address}", "--quiet"]
    proc = run_cli("compare", *GOOD, *args, "--csv", csv_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(csv_path.open()))
    assert [(r["instance"], r["method"], float(r["objective"])) for r in rows] == [
        ("twelve", "list", 16), ("twelve", "cpsat", 15),
        ("rand0001_m4", "list", 96), ("rand0001_m4", "cpsat", 94),
    ]  # fmt: skip
    assert all(r["verified"] == "True" for r in rows)
    # a path relative to our folder (not the workers'): they are sent the absolute path
    proc = run_cli("compare", GOOD[0], bad.name, *args, "--csv", csv_path, cwd=bad.parent)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    rows = list(csv.DictReader(csv_path.open()))
    assert [(r["status"] != "error", r["method"]) for r in rows] == [
        (True, "list"), (True, "cpsat"), (False, "list"), (False, "cpsat"),
    ]  # fmt: skip
    assert all(r["message"] == f"InputError: {bad}: (top level): 'format' is a required property"
               for r in rows[2:])  # fmt: skip
    assert f"npusched: error: {bad} (list): InputError" in proc.stderr


@pytest.mark.parametrize("spec", ["foo", "dask://", "spark://x:1"])
def test_cli_refuses_an_unknown_executor(spec):
    proc = run_cli("compare", GOOD[0], "--executor", spec)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == [
        f"npusched compare: error: argument --executor: expected local or dask://HOST:PORT, "
        f"got {spec!r}"
    ]
