"""Stream's allocation search (NSGA-II on pymoo): the front, repeatability, parallel evaluation,
every front allocation's schedule verified with memory, and the ``allocate`` verb."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT, SHARED, needs_shared, run_cli

from npusched.common.executor import open_executor
from npusched.common.jsonio import read_json
from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.io import load_instance
from npusched.io.stream import allocation_groups, cn_energy, stream_from_dict
from npusched.search.allocation import Units, evaluate, non_dominated, peak_total, run_ga
from npusched.verify import check

MINI = ROOT / "tests" / "data" / "good" / "stream_mini.json"
TINY = SHARED / "stream" / "tiny_res16_tpu_quad_core_fused.json"


def _load(path):
    data = read_json(path)
    inst = stream_from_dict(data, str(path), free_allocation=True, memory=True)
    return inst, Units.of(inst, allocation_groups(data))


def test_non_dominated_by_brute_force():
    rng = np.random.default_rng(3)
    f = rng.integers(0, 6, size=(40, 2)).astype(float)
    keep = set(non_dominated(f).tolist())
    for i in range(len(f)):
        beaten = any((f[j] <= f[i]).all() and (f[j] < f[i]).any() for j in range(len(f)))
        assert (not beaten) == any((f[k] == f[i]).all() for k in keep)


@needs_shared
def test_front_is_verified_repeatable_and_beats_nothing_it_contains():
    inst, units = _load(TINY)
    stream = evaluate(inst, units, units.genome(inst.preferred))
    a = run_ga(inst, units, generations=4, population=8, seed=1)
    b = run_ga(inst, units, generations=4, population=8, seed=1)
    assert (a.genomes == b.genomes).all() and (a.front == b.front).all()
    assert a.makespan[a.best()] <= stream[0]  # Stream's allocation is the first individual
    ok = np.flatnonzero(a.feasible)
    f = np.stack([a.makespan, a.peak], axis=1)
    for k in a.front.tolist():
        assert not ((f[ok] <= f[k]).all(axis=1) & (f[ok] < f[k]).any(axis=1)).any()
        fixed = inst.restricted(units.core_of(a.genomes[k]))
        sched = memory_list_schedule(fixed, "latency")
        assert check(fixed, sched).ok
        assert (sched.makespan(fixed), peak_total(fixed, sched)) == (a.makespan[k], a.peak[k])
    with open_executor("local", 2) as pool:
        c = run_ga(inst, units, generations=4, population=8, seed=1, executor=pool)
    assert (c.genomes == a.genomes).all() and np.array_equal(c.makespan, a.makespan)


@needs_shared
def test_time_limit_stops_between_generations():
    inst, units = _load(TINY)
    full = run_ga(inst, units, generations=3, population=4, seed=0)
    cut = run_ga(inst, units, generations=3, population=4, seed=0, time_limit=1e-6)
    assert len(full.history) == 3 and len(cut.history) == 1  # the first is always evaluated
    assert cut.front.size >= 1


def test_units_and_genomes_round_trip():
    inst, units = _load(MINI)
    x = np.zeros(units.genes.size, dtype=np.int64)
    assert (units.genome(units.core_of(x)) == x).all()
    split = np.flatnonzero(units.unit == units.unit[0])
    assert split.size > 1 and len(set(inst.preferred[split].tolist())) > 1
    with pytest.raises(ValueError, match="splits unit"):  # Stream's own allocation here
        units.genome(inst.preferred)


def test_allocate_verb_writes_a_verified_front(tmp_path):
    out = tmp_path / "out"
    r = run_cli("allocate", MINI, "--generations", 3, "--population", 4, "--out-dir", out)
    assert r.returncode == 0, r.stderr
    front = json.loads((out / "front.json").read_text())
    assert front["front"] and front["evaluated"] >= 1
    assert (out / "front.png").stat().st_size > 0
    inst = load_instance(out / "instance.json")
    assert inst.capacity is not None and inst.fixed_allocation
    v = run_cli("verify", out / "instance.json", out / "solution.json")
    assert v.returncode == 0, v.stdout + v.stderr
    bad = run_cli("allocate", ROOT / "instances" / "examples" / "twelve.json", "--out-dir", out)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_energy_is_an_objective_where_the_export_gives_it():
    assert cn_energy(read_json(MINI)) is None  # no energy_total in the small export
    if not TINY.is_file():
        pytest.skip(f"{TINY} not found")
    data = read_json(TINY)
    table = cn_energy(data)
    inst, units = _load(TINY)
    assert table is not None and (np.isfinite(table) == inst.mask).all()
    front = run_ga(inst, units, generations=2, population=6, seed=0, energy=table)
    assert front.energy is not None
    for k in front.front.tolist():
        core = units.core_of(front.genomes[k])
        assert front.energy[k] == pytest.approx(table[np.arange(inst.n), core].sum())
    f = np.stack([front.makespan, front.peak, front.energy], axis=1)[front.feasible]
    assert len(non_dominated(f)) == front.front.size
