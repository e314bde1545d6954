"""Time limits hold with model building included (issue 17): a model too large to build and
load within the limit gives back the warm start, verified, with the instance's bound."""

from __future__ import annotations

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
    assert "stopped at the time limit" in res.message


def test_memory_limit_is_a_one_line_error_or_the_warm_start(tmp_path):
    from conftest import run_cli

    from npusched.io import write_instance

    path = tmp_path / "big.json.gz"
    write_instance(_random_dag(20_000, 200_000), path)
    proc = run_cli("--memory-limit", 150, "info", path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        "npusched: error: out of memory (the input or its model is too large for this machine)"
    )
    proc = run_cli("--memory-limit", 400, "solve", path, "--method", "cpsat", "--time-limit", 20)
    assert proc.returncode == 0 and "verify=ok" in proc.stdout
    assert "cpsat ran out of memory" in proc.stdout


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
