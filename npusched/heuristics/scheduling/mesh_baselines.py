"""Baselines on a mesh: Klotski's baseline 1 (layer-wise schedule, zig-zag core allocation, after
Tangram) and re-timing of a fixed plan on a NoC with transfer delays."""

from __future__ import annotations

import numpy as np

from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.noc import Mesh
from npusched.problem.scheduling.schedule import Schedule


def _execute(
    instance: SchedulingInstance,
    order: np.ndarray,
    core: np.ndarray,
    barrier_level: np.ndarray | None = None,
) -> Schedule:
    """Start each μop in ``order`` on its ``core`` as early as the core, its producers' data
    (end + NoC delay) and, with ``barrier_level``, the end of every μop of the previous level
    allow."""
    g, acc = instance.graph, instance.accelerator
    hops = acc.hops() if acc.has_comm_delays else None
    dur = instance.duration
    start = np.zeros(g.n, dtype=np.int64)
    end = np.zeros(g.n, dtype=np.int64)
    free = np.zeros(instance.m, dtype=np.int64)
    level_end: dict[int, int] = {}
    order_in = np.argsort(g.dst, kind="stable")
    for i in order.tolist():
        k = int(core[i])
        e = order_in[g.pred_ptr[i] : g.pred_ptr[i + 1]]
        p = g.src[e]
        t = int(free[k])
        if p.size:
            delay = 0 if hops is None else acc.comm_delay(hops[core[p], k], g.bytes[e])
            t = max(t, int((end[p] + delay).max()))
        if barrier_level is not None and barrier_level[i] > 0:
            t = max(t, level_end.get(int(barrier_level[i]) - 1, 0))
        start[i], end[i] = t, t + int(dur[i, k])
        free[k] = end[i]
        if barrier_level is not None:
            lv = int(barrier_level[i])
            level_end[lv] = max(level_end.get(lv, 0), int(end[i]))
    return Schedule(start, core.astype(np.int64))


def levels(instance: SchedulingInstance) -> np.ndarray:
    """Depth of each μop: the number of edges on the longest path from a source."""
    g = instance.graph
    level = np.zeros(g.n, dtype=np.int64)
    for i in g.topo.tolist():
        p = g.preds(i)
        if p.size:
            level[i] = int(level[p].max()) + 1
    return level


def zigzag_schedule(instance: SchedulingInstance) -> Schedule:
    """Klotski's baseline 1 (§V): schedule layer by layer and allocate cores in zig-zag order.

    Layers are the depth levels of the DAG; the μops of each level, in index order, take the cores
    along the mesh's boustrophedon path, continuing where the previous level stopped; a level
    starts when the previous one has finished (the layer-wise schedule), each μop as early as its
    core and its data allow.
    """
    acc = instance.accelerator
    cells = acc.cells()
    if acc.mesh is None or cells is None:
        raise ValueError("zig-zag allocation needs cores on a mesh")
    core_of_cell = {cell: k for k, cell in enumerate(cells)}
    snake = [core_of_cell[c] for c in Mesh(*acc.mesh).snake() if c in core_of_cell]
    level = levels(instance)
    order = np.lexsort((np.arange(instance.n), level))
    core = np.empty(instance.n, dtype=np.int64)
    core[order] = np.array(snake)[np.arange(instance.n) % len(snake)]
    return _execute(instance, order, core, barrier_level=level)


def retime(instance: SchedulingInstance, schedule: Schedule) -> Schedule:
    """Execute ``schedule``'s plan (its cores and its order on each core) on the real NoC: every
    μop starts as early as its core and its producers' data (end + transfer delay) allow.

    A plan made without transfer delays (the time-indexed model, Klotski's two stages) becomes a
    feasible schedule this way; starts only move later when transfers demand it.
    """
    rank = np.empty(instance.n, dtype=np.int64)
    rank[instance.graph.topo] = np.arange(instance.n)
    order = np.lexsort((rank, schedule.start))
    return _execute(instance, order, schedule.core)
