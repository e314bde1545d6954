"""Klotski's baselines beside the search: partitions, verified schedules and utilisation."""

from __future__ import annotations

import numpy as np
import pytest

from npusched.arch import load_arch
from npusched.methods import solve
from npusched.partition.api import partition_network, resolve_network
from npusched.problem.scheduling.schedule import Schedule
from npusched.search import baselines as bl
from npusched.search.space import DesignSpace


@pytest.fixture(scope="module")
def lenet():
    net, arch = resolve_network("lenet"), load_arch("klotski-3x3")
    return net, arch, DesignSpace.build(net, arch, max_uops=300)


def test_utilisation_is_busy_over_available(lenet):
    net, arch, space = lenet
    inst = partition_network(net, arch, "klotski", s=space.points[0])
    one_core = Schedule(np.cumsum(np.r_[0, inst.duration[inst.graph.topo[:-1], 0]])[
        np.argsort(inst.graph.topo)], np.zeros(inst.n, dtype=np.int64))  # fmt: skip
    # all on core 0 back to back: core 0 is always busy, the other m - 1 never
    assert bl.utilisation(inst, one_core) == pytest.approx(1 / inst.m)


def test_baselines_are_verified_and_on_their_partitions(lenet):
    net, arch, space = lenet
    best_s = space.points[int(np.argmax(space.uops))]
    best = partition_network(net, arch, "klotski", s=best_s)
    out = bl.baselines(net, arch, space, best, best_s, budget=6)
    b1, b2, same = out["baseline1"], out["baseline2"], out["baseline2_same_partition"]
    assert b1.uops == min(space.uops) and b1.s == bl.coarsest(space)
    assert same.uops == best.n and same.s == best_s
    assert same.cycles == solve(best, "atomic").objective
    # baseline 2 on its own partition: a point of the space, annealed, its schedule verified
    assert b2.s in space.points
    mine = partition_network(net, arch, "klotski", s=b2.s)
    assert b2.cycles == solve(mine, "atomic").objective
    assert 0 < b1.utilisation <= 1 and 0 < same.utilisation <= 1
    # baseline 1 runs each layer on one core: never more than one core busy per layer
    assert b1.utilisation < same.utilisation


def test_a_baseline_that_fails_verification_raises(lenet, monkeypatch):
    net, arch, space = lenet
    inst = partition_network(net, arch, "klotski", s=space.points[0])
    bad = solve(inst, "zigzag")
    bad.solution = Schedule(np.zeros(inst.n, dtype=np.int64), np.zeros(inst.n, dtype=np.int64))
    monkeypatch.setattr(bl, "solve", lambda *a, **k: bad)
    with pytest.raises(RuntimeError, match="not verified"):
        bl.run_baseline(inst, "zigzag", space.points[0])
