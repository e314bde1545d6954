"""Time limits hold with model building included (issue 17): a model too large to build and
load within the limit gives back the warm start, verified, with the instance's bound."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from npusched import Accelerator, SchedulingInstance, UopGraph
from npusched.methods import solve
from npusched.solvers.result import Status
from npusched.verify import check


def _random_dag(n: int, edges: int, seed: int = 0) -> SchedulingInstance:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n - 1, edges)
    dst = src + rng.integers(1, 100, edges)
    pairs = np.unique(np.stack([src[dst < n], dst[dst < n]], axis=1), axis=0).astype(np.int64)
    graph = UopGraph(rng.integers(1, 20, n), pairs[:, 0], pairs[:, 1],
                     np.zeros(len(pairs), np.int64), tuple(range(n)))  # fmt: skip
    return SchedulingInstance(graph, Accelerator.identical(4), None, f"rand{n}")


def test_cpsat_stops_at_its_limit_with_the_warm_start():
    inst = _random_dag(12_000, 120_000)
    limit = 1.0
    t0 = time.perf_counter()
    res = solve(inst, "cpsat", time_limit=limit, threads=1)
    wall = time.perf_counter() - t0
    assert wall <= limit * 1.1 + 2
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert check(inst, res.solution).ok and res.bound == inst.lower_bound()
    warm = solve(inst, "list").solution
    assert res.objective == warm.makespan(inst)  # the warm start came back
    # stopped from outside while building or solving, or ended by CP-SAT's own limit
    assert "time limit" in res.message


def test_memory_limit_is_a_one_line_error_or_the_warm_start(tmp_path):
    from conftest import run_cli

    from npusched.io import write_instance

    path = tmp_path / "big.json.gz"
    write_instance(_random_dag(20_000, 200_000), path)
    proc = run_cli("--memory-limit", 150, "info", path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        "npusched: error: out of memory at the memory limit of 150 MB (--memory-limit): the "
        "input or its model is too large"
    )
    out = tmp_path / "sol.json"
    proc = run_cli("solve", path, "--method", "cpsat", "--time-limit", 20, "--memory-limit", 400,
                   "--out", out)  # fmt: skip
    assert proc.returncode == 0 and "verify=ok" in proc.stdout
    assert "cpsat ran out of memory or crashed (memory limit 400 MB" in proc.stdout
    assert "no solution within the memory limit: this is the warm start" in proc.stdout
    data = json.loads(out.read_text())
    assert data["verified"] and data["stats"]["fallback"] == "warm_start"


@pytest.mark.parametrize("method,backend", [("qap", "cpsat"), ("qap", "highs"), ("tabu", None)])
def test_placement_methods_hold_their_limit(method, backend):
    """Tabu search (also the QAP's warm start) used to run its full 1000·L iterations whatever
    the limit: 5 s on 30 tasks, so `qap` took 6.9 s for a 3 s limit."""
    from npusched.problem.placement import PlacementInstance
    from npusched.problem.scheduling.noc import Mesh

    rng = np.random.default_rng(1)
    flow = rng.integers(0, 10, (30, 30)) * (rng.random((30, 30)) < 0.4)
    np.fill_diagonal(flow, 0)
    inst = PlacementInstance(flow + flow.T, Mesh(5, 6), np.arange(30))
    limit = 1.5
    t0 = time.perf_counter()
    res = solve(inst, method, backend, time_limit=limit, threads=1)
    assert time.perf_counter() - t0 <= limit * 1.1 + 2
    assert check(inst, res.solution).ok and res.objective == inst.cost(res.solution.loc)


def _slow_tiled_dag() -> SchedulingInstance:
    """1 000 μops on 4 cores: a slot ILP of 1.8 M binaries, seconds to build in Python."""
    return _random_dag(1000, 3000)


def test_timeindexed_stops_at_its_limit_with_model_building_included():
    """The slot ILP was built in this process before the limit was looked at: 8.8 s for 2 s."""
    inst = _slow_tiled_dag()
    limit = 1.5
    t0 = time.perf_counter()
    res = solve(inst, "timeindexed", time_limit=limit, threads=1)
    assert time.perf_counter() - t0 <= limit * 1.1 + 2
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL) and check(inst, res.solution).ok
    assert res.stats["fallback"] == "warm_start" and res.bound >= inst.lower_bound()
    assert res.objective == res.solution.makespan(inst)


def test_routed_joint_stops_at_its_limit_with_model_building_included():
    """The routed model (transfers on links) was built in this process: 35 s on 3 100 μops."""
    from npusched.bench.generate import layered_dag
    from npusched.problem.scheduling.routed import RoutedInstance

    inst = RoutedInstance.from_mesh(layered_dag(100, 20, (3, 3), seed=2))
    limit = 1.5
    t0 = time.perf_counter()
    res = solve(inst, "joint", time_limit=limit, threads=1)
    assert time.perf_counter() - t0 <= limit * 1.1 + 2
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL) and check(inst, res.solution).ok
    assert res.bound is not None and res.bound <= res.objective


def test_tso_exact_highs_lp_holds_its_limit_and_solves():
    """HiGHS's LP presolve of the one-row candidate choice (VGG-16 conv4_2, 74 541 columns)
    ignored a 0.5 s limit for 195 s; without presolve the LP is solved in a tenth of a second."""
    from npusched.arch import load_arch
    from npusched.heuristics.tiling.search import conv_layers
    from npusched.problem.tiling import TsoLayer
    from npusched.workload.zoo import load_network

    ly, shape = next(x for x in conv_layers(load_network("vgg16")) if x[0].name == "conv4_2")
    problem = TsoLayer.from_layer(ly, shape, load_arch("tso-nmp-16"), "burst")
    limit = 3.0
    t0 = time.perf_counter()
    res = solve(problem, "tso-exact", "highs", time_limit=limit)
    assert time.perf_counter() - t0 <= limit * 1.1 + 2
    assert res.status is Status.OPTIMAL and res.stats["form"] == "lp"
    enum = solve(problem, "tso-enum")
    assert res.objective == enum.objective


def test_a_solver_error_keeps_the_warm_start_and_exits_3(monkeypatch, tmp_path, capsys):
    """A solver that ends in error (not stopped by a limit): the result stays ``error`` but
    carries the warm start, written and marked; the CLI says why on stderr and exits 3."""
    import importlib

    from npusched.io import write_instance
    from npusched.methods import scheduling
    from npusched.solvers.result import Result

    broken = Result(Status.ERROR, "cpsat", "cpsat", message="MODEL_INVALID: test")
    monkeypatch.setattr(scheduling, "_cpsat_answer", lambda inst, ctx: broken)
    inst = _random_dag(30, 60)
    res = solve(inst, "cpsat", time_limit=5)
    assert res.status is Status.ERROR and check(inst, res.solution).ok
    assert res.stats["fallback"] == "warm_start" and res.bound == inst.lower_bound()
    assert "MODEL_INVALID: test; the solver ended in error: this is the warm start" in res.message

    cli_main = importlib.import_module("npusched.cli.main")  # the module, not its main()
    monkeypatch.setattr(cli_main, "limit_memory", lambda mb: 2**30)  # not this test process's
    path, out = tmp_path / "i.json", tmp_path / "sol.json"
    write_instance(inst, path)
    code = cli_main.main(["solve", str(path), "--method", "cpsat", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 3 and err.startswith("npusched: cpsat ended in error: MODEL_INVALID: test")
    data = json.loads(out.read_text())
    assert data["status"] == "error" and data["verified"] and data["ops"]
    assert data["stats"]["fallback"] == "warm_start"


def test_a_bad_beta_is_refused_by_the_api_too():
    from npusched.methods.scheduling import JointParams

    for beta in (-5.0, 1e30, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="beta must be between 0 and 1e"):
            JointParams(beta=beta)
    assert JointParams(beta=0.5).beta == 0.5


def test_memory_limit_after_the_verb_and_out_of_range():
    from conftest import ROOT, run_cli

    twelve = ROOT / "instances" / "examples" / "twelve.json"
    proc = run_cli("info", twelve, "--memory-limit", 2000)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("solve", twelve, "--memory-limit", 10**20)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"npusched solve: error: argument --memory-limit: must be at most {2**42} MB, got {10**20}"
    )


def test_huge_latencies_refuse_the_slot_ilp_in_one_line(tmp_path):
    """Latencies at the domain's edge (2^40): the size guard counts in Python ints and refuses
    before building (it overflowed int64 and ran to 18 GB)."""
    from conftest import run_cli

    from npusched.heuristics.scheduling.list_scheduling import list_schedule
    from npusched.io import write_instance
    from npusched.problem.scheduling.windows import asap_alap

    inst = _random_dag(12, 20)
    big = UopGraph(np.full(12, 2**40), inst.graph.src, inst.graph.dst, inst.graph.bytes,
                   inst.graph.ids)  # fmt: skip
    path = tmp_path / "huge.json"
    huge = SchedulingInstance(big, Accelerator.identical(4), None, "huge")
    write_instance(huge, path)
    t0 = time.perf_counter()
    proc = run_cli("solve", path, "--method", "timeindexed", "--time-limit", 3)
    assert time.perf_counter() - t0 <= 3 * 1.1 + 2 + 3  # + the interpreter's start
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    horizon = list_schedule(huge).makespan(huge)
    binaries = int(asap_alap(huge, horizon).width.astype(object).sum())
    assert binaries > 2**44  # 12 windows of about 2^41 slots each
    assert f"would need {binaries:,} binaries" in proc.stderr and "limit is" in proc.stderr
