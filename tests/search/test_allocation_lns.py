"""The exact allocation model (one allocation literal per unit, memory as optional lifetimes) and
its LNS: the free model's optimum equals the best fixed allocation's, the LNS's schedules verify
with memory, and ``allocate --method cpsat`` writes a verified front."""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, run_cli

from npusched.common.jsonio import read_json
from npusched.formulations.scheduling.routed import RoutedModel
from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.io.stream import allocation_groups, stream_from_dict
from npusched.search.allocation import Units
from npusched.search.allocation_lns import allocation_lns
from npusched.solvers.cpsat import run_cpsat
from npusched.solvers.result import Status
from npusched.verify import check

sys.path.insert(0, str(Path(__file__).parents[1] / "heuristics" / "scheduling"))
from test_memory_list import instance  # noqa: E402

MINI = ROOT / "tests" / "data" / "good" / "stream_mini.json"


def _optimum(inst, units=None):
    model = RoutedModel(inst, int(inst.duration.sum() + 10_000), units=units)
    status, solver, _ = run_cpsat(model.model, time_limit=20, threads=2, seed=0)
    assert status is Status.OPTIMAL
    sched = model.decode(solver)
    assert check(inst, sched).ok
    return sched.makespan(inst), sched


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_free_model_equals_the_best_fixed_allocation(seed):
    """Random layered instances on two cores with a weight per μop and tight memories: the
    model with one allocation literal per layer reaches exactly the best of the fixed
    allocations (each solved to optimality)."""
    rng = np.random.default_rng(seed)
    n, layers = 6, np.array([0, 0, 1, 1, 2, 2])
    latency = rng.integers(1, 6, size=n).tolist()
    edges = [(i, j, int(rng.choice([4, 8]))) for i in range(n) for j in range(n)
             if layers[j] == layers[i] + 1 and rng.random() < 0.7]  # fmt: skip
    dram = [(int(rng.integers(2, 9)), [i]) for i in range(n)]
    inst = instance(latency, edges, [0] * n, dram=dram)
    need = int(inst.operand_data().max())
    free = replace(inst, allowed=np.ones((n, 2), dtype=bool), capacity=np.array([need + 4] * 2),
                   layer=layers)  # fmt: skip
    units = Units.of(free, np.zeros(n, dtype=np.int64))
    best = min(
        _optimum(free.restricted(units.core_of(np.array(x))))[0]
        for x in itertools.product(range(2), repeat=units.genes.size)
    )
    value, sched = _optimum(free, units.unit)
    assert value == best
    assert all(len(set(sched.core[units.unit == u].tolist())) == 1 for u in range(3))


def test_lns_on_a_stream_export_verifies_and_never_worsens():
    data = read_json(MINI)
    inst = stream_from_dict(data, str(MINI), free_allocation=True, memory=True)
    units = Units.of(inst, allocation_groups(data))
    start = units.core_of(np.zeros(units.genes.size, dtype=np.int64))
    out = allocation_lns(inst, units, start, free_units=1, step=5.0, threads=2)
    fixed = inst.restricted(out.core)
    assert check(fixed, out.schedule).ok
    warm = memory_list_schedule(inst.restricted(start), "latency")
    assert out.start_makespan == warm.makespan(inst) >= out.makespan >= out.bound
    assert out.rounds == 1  # without a limit: one pass over the one gene
    with pytest.raises(ValueError, match="splits unit"):
        allocation_lns(inst, units, np.array([0, 1, 1]))


def test_allocate_cpsat_writes_a_verified_front(tmp_path):
    out = tmp_path / "out"
    r = run_cli("allocate", MINI, "--method", "cpsat", "--generations", 2, "--population", 4,
                "--lns-step", 2, "--out-dir", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    front = json.loads((out / "front.json").read_text())
    assert front["method"] == "cpsat" and front["lns"]["rounds"] >= 1
    assert front["lns"]["makespan"] <= front["lns"]["start_makespan"]
    assert min(p["makespan"] for p in front["front"]) <= front["lns"]["makespan"]
    sol = json.loads((out / "solution.json").read_text())
    assert sol["method"] == "allocate-cpsat" and sol["objective"] == front["lns"]["makespan"]
    v = run_cli("verify", out / "instance.json", out / "solution.json")
    assert v.returncode == 0, v.stdout + v.stderr
