"""Orchestration end to end: the CLI's files, the exit codes, and evaluation on Dask."""

from __future__ import annotations

import functools
import json

import pytest
from conftest import run_cli

from npusched.arch import load_arch
from npusched.partition.api import resolve_network
from npusched.search.bo import bayes_search
from npusched.search.executor import open_executor
from npusched.search.objective import evaluate
from npusched.search.space import DesignSpace


def test_cli_writes_verified_files(tmp_path):
    out = tmp_path / "run"
    proc = run_cli("orchestrate", "--network", "lenet", "--arch", "klotski-3x3", "--budget", 6,
                   "--final-time-limit", 2, "--seed", 3, "--out-dir", out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr
    for name in ("instance.json", "solution.json", "report.json", "convergence.png", "gantt.png",
                 "heatmap.png"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    rep = json.loads((out / "report.json").read_text())
    assert rep["budget"] == 6 and len(rep["evaluations"]) == 6 and rep["complete"]
    assert rep["best_s"] == max(rep["evaluations"], key=lambda e: e["E"])["s"]
    assert rep["bound"] <= rep["cycles"]
    assert set(rep["stages"]) == {"twostage", "joint"}
    verified = run_cli("verify", out / "instance.json", out / "solution.json")
    assert verified.returncode == 0 and f"makespan {rep['cycles']}" in verified.stdout
    assert json.loads((out / "solution.json").read_text())["makespan"] == rep["cycles"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--network", "lenet", "--arch", "klotski-3x3", "--budget", "0"], "at least 1"),
        (["--network", "nonet", "--arch", "klotski-3x3", "--budget", "2"], "nonet"),
        (["--network", "lenet", "--arch", "nope", "--budget", "2"], "nope"),
    ],
)
def test_bad_input_exits_2(tmp_path, args, message):
    proc = run_cli("orchestrate", *args, "--out-dir", tmp_path / "x")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and message in proc.stderr


def test_dask_cluster_gives_the_local_results():
    """q = 2 points per step evaluated on a Dask LocalCluster equal the in-process run."""
    from distributed import LocalCluster

    net, arch = resolve_network("lenet"), load_arch("klotski-3x3")
    space = DesignSpace.build(net, arch)
    run = functools.partial(evaluate, net, arch)
    local = bayes_search(space, run, budget=6, n_init=2, seed=1, q=2, progress=False)
    cluster = LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with cluster, open_executor(f"dask://{cluster.scheduler_address}") as executor:
        remote = bayes_search(space, run, budget=6, n_init=2, seed=1, q=2, executor=executor,
                              progress=False)  # fmt: skip
    assert [e.s for e in remote.evaluations] == [e.s for e in local.evaluations]
    assert [e.makespan for e in remote.evaluations] == [e.makespan for e in local.evaluations]
    with pytest.raises(ValueError, match="unknown executor"), open_executor("spark://x"):
        pass
