"""Orchestration end to end: the CLI's files, the exit codes, and evaluation on Dask."""

from __future__ import annotations

import functools
import json

import pytest
from conftest import run_cli

from npusched.arch import load_arch
from npusched.common.executor import open_executor
from npusched.partition.api import resolve_network
from npusched.search.bo import bayes_search
from npusched.search.evaluate import evaluate
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
    assert rep["budget"] == 6 and len(rep["evaluations"]) == 6
    cut = [k for k, st in rep["stages"].items() if st.get("why") == "no time left"
           or st.get("status") in ("time_limit_no_solution", "stopped")]  # fmt: skip
    assert rep["complete"] == (not cut)  # a loaded machine may cut a 2 s stage short
    assert all(e["feasible"] for e in rep["evaluations"])
    assert rep["best_s"] == max(rep["evaluations"], key=lambda e: e["E"])["s"]
    assert rep["bound"] <= rep["cycles"] <= min(e["makespan"] for e in rep["evaluations"] if
                                                  e["s"] == rep["best_s"])  # fmt: skip
    assert rep["machine"] == "routed" and rep["cost"] == "analytic"
    # the reported bound is the best that holds for the instance, and it names its stage;
    # lns's holds only for its allocation and twostage's for its slots
    assert rep["bound_by"] in ("lower_bound", "joint")
    for k, st in rep["stages"].items():
        if st.get("bound") is not None:
            want = {"lns": "allocation", "twostage": "slots"}.get(k, "instance")
            assert st["bound_scope"] == want
            if want == "instance":
                assert st["bound"] <= rep["bound"] + 1e-9
    # the routed machine's stages
    assert set(rep["stages"]) == {"atomic", "list", "twostage", "joint", "lns"}
    assert rep["cycles"] <= rep["baseline2_same_partition_cycles"]  # atomic is a warm start
    if "twostage" not in cut:  # a stage stopped from outside hands back no summary
        assert rep["stages"]["twostage"]["quantum_cycles"] >= 1
    assert rep["design_space"]["feasible"] > 6
    b1, b2 = rep["baselines"]["baseline1"], rep["baselines"]["baseline2"]
    same = rep["baselines"]["baseline2_same_partition"]
    assert (rep["baseline1_cycles"], rep["baseline2_cycles"]) == (b1["cycles"], b2["cycles"])
    assert same["uops"] == rep["uops"] and same["cycles"] == rep["baseline2_same_partition_cycles"]
    assert b1["uops"] <= min(e["uops"] for e in rep["evaluations"])
    inst = json.loads((out / "instance.json").read_text())
    busy = sum(u["latency"] for u in inst["uops"])  # identical cores: one latency per μop
    assert rep["hur"] == pytest.approx(busy / (9 * rep["cycles"]) / b1["utilisation"])
    verified = run_cli("verify", out / "instance.json", out / "solution.json")
    assert verified.returncode == 0 and f"makespan {rep['cycles']}" in verified.stdout
    assert json.loads((out / "solution.json").read_text())["makespan"] == rep["cycles"]


def test_time_limit_writes_the_best_so_far(tmp_path):
    """A run stopped by its time limit still writes verified files, marked incomplete."""
    out = tmp_path / "cut"
    proc = run_cli("orchestrate", "--network", "lenet", "--arch", "klotski-3x3", "--budget", 50,
                   "--time-limit", 0.01, "--out-dir", out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rep = json.loads((out / "report.json").read_text())
    assert not rep["complete"] and 1 <= len(rep["evaluations"]) < 50
    assert {st["why"] for st in rep["stages"].values()} == {"no time left"}
    assert "incomplete" in proc.stdout
    verified = run_cli("verify", out / "instance.json", out / "solution.json")
    assert verified.returncode == 0, verified.stdout


def test_the_time_limit_holds_for_the_whole_command_baselines_included(tmp_path):
    """--time-limit covers Klotski's run, its baselines (--baseline-share of it) and the files;
    it took 165 s for a 102 s limit when the baselines ran after it unlimited."""
    import time

    out = tmp_path / "timed"
    t0 = time.perf_counter()
    proc = run_cli("orchestrate", "--network", "lenet", "--arch", "klotski-3x3", "--budget", 50,
                   "--time-limit", 20, "--baseline-share", 0.3, "--out-dir", out)  # fmt: skip
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    assert wall <= 20 + 1.0  # (the interpreter's start and exit)
    rep = json.loads((out / "report.json").read_text())
    assert rep["runtime_s"] <= 0.7 * 20
    for k in ("baseline1", "baseline2", "baseline2_same_partition"):  # done, or null
        assert (rep[f"{k}_cycles"] is None) == (k not in rep["baselines"])
    assert run_cli("orchestrate", *LENET, "--baseline-share", 1, "--out-dir",
                   out).returncode == 2  # fmt: skip


LENET = ["--network", "lenet", "--arch", "klotski-3x3"]


@pytest.mark.parametrize(
    "args,message",
    [
        ([*LENET, "--budget", "0"], "at least 1"),
        (["--network", "nonet", "--arch", "klotski-3x3", "--budget", "2"], "nonet"),
        (["--network", "lenet", "--arch", "nope", "--budget", "2"], "nope"),
        ([*LENET, "--s", "4,4,13,14"], "remainder-free"),
        ([*LENET, "--s", "4,4,12"], "H,W,IC,OC"),
        ([*LENET, "--s", "1,1,12,14", "--max-uops", "10"], "over the cap 10"),
        ([*LENET, "--executor", "spark://x"], "dask://HOST:PORT"),
    ],
)
def test_bad_input_exits_2(tmp_path, args, message):
    proc = run_cli("orchestrate", *args, "--out-dir", tmp_path / "x")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and message in proc.stderr
    assert not (tmp_path / "x").exists()  # nothing half-written


def test_dask_cluster_gives_the_local_results():
    """q = 2 points per step (qUCB) evaluated on a Dask LocalCluster or a process pool equal
    the in-process run."""
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
    with open_executor("local", workers=2) as pool:
        pooled = bayes_search(space, run, budget=6, n_init=2, seed=1, q=2, executor=pool,
                              progress=False)  # fmt: skip
    for other in (remote, pooled):
        assert [e.s for e in other.evaluations] == [e.s for e in local.evaluations]
        assert [e.makespan for e in other.evaluations] == [e.makespan for e in local.evaluations]
        assert [e.entropy for e in other.evaluations] == [e.entropy for e in local.evaluations]
    assert all(p is not None for p in local.predicted[2:])  # q = 2 points per GP step
    with pytest.raises(ValueError, match="unknown executor"), open_executor("spark://x"):
        pass


def test_final_stages_share_what_is_left():
    """Each final stage gets an equal share of the time left among the stages still to run (so
    ``lns``, the last, is not starved), at most the stage limit and nothing below the minimum."""
    import time

    from npusched.search.orchestrate import MIN_STAGE, stage_share

    now = time.perf_counter()
    assert stage_share(now + 40.0, 4, 60.0) == pytest.approx(10.0, abs=0.1)
    assert stage_share(now + 40.0, 1, 60.0) == pytest.approx(40.0, abs=0.1)
    assert stage_share(now + 40.0, 1, 15.0) == 15.0
    assert stage_share(now + 4 * MIN_STAGE, 8, 60.0) == MIN_STAGE
    assert stage_share(now + MIN_STAGE / 2, 1, 60.0) == 0.0
