"""Shared fixtures: tiny hand-checkable instances, random DAG strategies, the shared benchmarks."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from npusched import Accelerator, Schedule, SchedulingInstance, UopGraph
from npusched.bench.generate import layered_dag

# CI draws the same examples every run (repeatable); local runs keep exploring new ones
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "benchmarks"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"shared benchmarks not found at {SHARED}"
)


def run_cli(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    """Run ``npusched ARGS`` as a user would, in a subprocess, capturing its output; ``env``
    adds environment variables."""
    return subprocess.run(
        [sys.executable, "-m", "npusched", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env=None if env is None else {**os.environ, **env},
    )


def make_instance(latency, edges, m, table=None, name="t") -> SchedulingInstance:
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    g = UopGraph(np.array(latency), src, dst, np.full(len(edges), 8, dtype=np.int64))
    return SchedulingInstance(
        g, Accelerator.identical(m), None if table is None else np.array(table), name
    )


@pytest.fixture
def diamond() -> SchedulingInstance:
    """0 → {1, 2, 3} → 4 on 2 cores; latencies 2, 3, 3, 2, 1: the optimum is 2 + 5 + 1 = 8."""
    return make_instance([2, 3, 3, 2, 1], [(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4)], 2)


@st.composite
def random_instances(draw, max_n: int = 12, max_m: int = 4, per_core: bool = False):
    n = draw(st.integers(1, max_n))
    m = draw(st.integers(1, max_m))
    latency = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = [p for p in pairs if draw(st.booleans()) and draw(st.booleans())]
    perm = draw(st.permutations(range(n)))  # hide the topological order
    edges = [(perm[i], perm[j]) for i, j in edges]
    lat = [latency[perm.index(k)] for k in range(n)]
    table = None
    if per_core:
        table = [[draw(st.integers(1, 9)) for _ in range(m)] for _ in range(n)]
    return make_instance(lat, edges, m, table, name=f"rand_n{n}_m{m}")


def brute_force_makespan(inst: SchedulingInstance) -> int:
    """Optimal makespan by enumeration (independent of every solver in the package).

    Some optimal schedule, read in start order, is a topological order; given that order and the
    optimal cores, placing each μop at max(its core's last end, its producers' ends) starts no μop
    later than the optimum does. So the minimum over all (topological order, core assignment) pairs
    is optimal. Identical cores: assignments up to renaming (restricted growth strings).
    """
    g, n, m = inst.graph, inst.n, inst.m
    dur = inst.duration
    preds = [set(g.preds(i).tolist()) for i in range(n)]

    def topo_orders(prefix, placed):
        if len(prefix) == n:
            yield list(prefix)
            return
        for i in range(n):
            if i not in placed and preds[i] <= placed:
                prefix.append(i)
                placed.add(i)
                yield from topo_orders(prefix, placed)
                placed.remove(i)
                prefix.pop()

    def assignments():
        if not inst.identical_cores:
            yield from itertools.product(range(m), repeat=n)
            return

        def rgs(prefix, used):
            if len(prefix) == n:
                yield tuple(prefix)
                return
            for k in range(min(used + 1, m)):
                yield from rgs([*prefix, k], max(used, k + 1))

        yield from rgs([], 0)

    best = None
    cores = list(assignments())
    for order in topo_orders([], set()):
        for assign in cores:
            free = [0] * m
            end = [0] * n
            for i in order:
                k = assign[i]
                s = max([free[k]] + [end[p] for p in preds[i]])
                end[i] = s + int(dur[i, k])
                free[k] = end[i]
            ms = max(end)
            best = ms if best is None else min(best, ms)
    assert best is not None
    return best


def schedule_of(starts, cores) -> Schedule:
    return Schedule(np.array(starts), np.array(cores))


@st.composite
def delay_instances(draw, max_layers: int = 7, max_width: int = 5):
    """Random layered DAGs on meshes of 1x1 to 3x4 cores with transfer delays, sometimes with
    zero latencies and zero-byte edges, sometimes with a per-core latency table."""
    rows, cols = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    hop = draw(st.integers(0, 3))
    bandwidth = draw(st.sampled_from([None, 2.0, 8.0]))
    if hop == 0 and bandwidth is None:
        bandwidth = 4.0
    inst = layered_dag(
        draw(st.integers(1, max_layers)),
        draw(st.integers(1, max_width)),
        (rows, cols),
        hop_latency=hop,
        link_bandwidth=bandwidth,
        latency=draw(st.sampled_from([(0, 3), (1, 9), (2, 12)])),
        nbytes=draw(st.sampled_from([(0, 0), (8, 64), (1, 200)])),
        seed=draw(st.integers(0, 10**6)),
    )
    if draw(st.booleans()):
        rng = np.random.default_rng(draw(st.integers(0, 10**6)))
        table = rng.integers(0, 9, size=(inst.n, inst.m))
        inst = SchedulingInstance(inst.graph, inst.accelerator, table, inst.name)
    return inst
