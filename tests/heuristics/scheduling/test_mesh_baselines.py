"""Klotski's baseline 1 in the paper's reading: each network layer on one core, successive
layers on successive cores of the zig-zag path, layer by layer."""

from __future__ import annotations

import numpy as np

from npusched.arch import load_arch
from npusched.heuristics.scheduling.mesh_baselines import network_layers, zigzag_schedule
from npusched.methods import solve
from npusched.partition.api import partition_network, resolve_network
from npusched.problem.scheduling.noc import Mesh
from npusched.verify import verify


def _lenet(mesh: str):
    return partition_network(resolve_network("lenet"), load_arch(f"klotski-{mesh}"), "klotski",
                             s=(7, 7, 24, 28), machine="compute-only")  # fmt: skip


def test_layers_on_successive_zigzag_cores():
    inst = _lenet("3x3")
    sched = zigzag_schedule(inst)
    rep = verify(inst, sched)
    assert rep.ok
    layer = network_layers(inst)
    assert layer.max() + 1 == len(inst.source["layers"]) and (np.diff(layer) >= 0).all()
    acc = inst.accelerator
    snake = Mesh(*acc.mesh).snake()
    cells = np.asarray(acc.cells())
    end = sched.end(inst)
    for k in range(int(layer.max()) + 1):
        cores = set(sched.core[layer == k].tolist())
        assert len(cores) == 1 and cells[cores.pop()] == snake[k % len(snake)]
        if k:
            assert sched.start[layer == k].min() >= end[layer == k - 1].max()


def test_same_cycles_on_every_mesh_size():
    """LeNet has fewer layers than a 3×3 mesh has cores: the path never wraps, every layer sits
    one hop from the previous, so the makespan is the same on 3×3, 4×4 and 5×5 (the property of
    the paper's baseline-1 columns), while the spread variant changes with the mesh."""
    zig = {m: solve(_lenet(m), "zigzag") for m in ("3x3", "4x4", "5x5")}
    spread = {m: solve(_lenet(m), "zigzag-spread") for m in ("3x3", "4x4", "5x5")}
    assert len({r.objective for r in zig.values()}) == 1
    assert len({r.objective for r in spread.values()}) > 1
    for m in zig:
        assert verify(_lenet(m), zig[m].solution).ok and verify(_lenet(m), spread[m].solution).ok
