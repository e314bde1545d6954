"""Baselines on a mesh: Klotski's baseline 1 (layer-wise schedule, zig-zag core allocation, after
Tangram) in the paper's reading and a spread variant, and re-timing of a fixed plan on a NoC with
transfer delays."""

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


def network_layers(instance: SchedulingInstance) -> np.ndarray:
    """The network layer of each μop, from a partitioned instance's ``source["layers"]`` (each
    layer's first μop); without that record, the depth levels of the DAG (:func:`levels`)."""
    layers = instance.source.get("layers") if isinstance(instance.source, dict) else None
    if not isinstance(layers, list) or not all(isinstance(ly, dict) for ly in layers):
        return levels(instance)  # e.g. generated DAGs, whose "layers" is a count
    offsets = np.array([ly["offset"] for ly in layers], dtype=np.int64)
    return np.searchsorted(offsets, np.arange(instance.n), side="right") - 1


def _snake_cores(instance: SchedulingInstance) -> np.ndarray:
    """The cores along the mesh's boustrophedon (zig-zag) path."""
    acc = instance.accelerator
    cells = acc.cells()
    if acc.mesh is None or cells is None:
        raise ValueError("zig-zag allocation needs cores on a mesh")
    core_of_cell = {cell: k for k, cell in enumerate(cells)}
    return np.array([core_of_cell[c] for c in Mesh(*acc.mesh).snake() if c in core_of_cell])


def zigzag_schedule(instance: SchedulingInstance) -> Schedule:
    """Klotski's baseline 1 (§IV-B, after Tangram): "we schedule a DNN model layer-wise and
    allocate accelerators following the zig-zag manner".

    Each network layer (:func:`network_layers`) runs whole on one core, the ``k``-th layer on the
    ``k``-th core of the mesh's zig-zag path (cyclically), its μops in index order; a layer starts
    when the previous one has finished, each μop as early as its core and its data (end plus the
    NoC delay) allow. This is the reading under which the paper's baseline-1 cycles are the same
    on 3×3, 4×4 and 5×5 meshes (Tables I–III): a layer never spreads over more cores as the mesh
    grows; only the hop count where the path wraps around differs (Inception's 2.5122E+07 against
    2.5188E+07 on 5×5 is of that size). :func:`zigzag_spread_schedule` is the other reading.
    """
    snake = _snake_cores(instance)
    layer = network_layers(instance)
    order = np.lexsort((np.arange(instance.n), layer))
    return _execute(instance, order, snake[layer % len(snake)], barrier_level=layer)


def zigzag_plan(instance: SchedulingInstance) -> tuple[np.ndarray, np.ndarray, dict[int, set[int]]]:
    """Baseline 1 as a plan for the routed machine (:mod:`~npusched.heuristics.scheduling.plans`):
    each network layer whole on the next core of the zig-zag path, its μops in index order, and
    the layers each layer reads (it waits for all of them, as an unpartitioned layer does).
    Unlike :func:`zigzag_schedule` a layer waits only for the layers it reads, so the branches
    of a network (Inception's) run side by side on their cores."""
    snake = _snake_cores(instance)
    layer = network_layers(instance)
    g = instance.graph
    cross = layer[g.src] != layer[g.dst]
    producers: dict[int, set[int]] = {}
    for p, q in zip(layer[g.src[cross]].tolist(), layer[g.dst[cross]].tolist(), strict=True):
        producers.setdefault(q, set()).add(p)
    rank = np.lexsort((np.arange(instance.n), layer)).argsort()
    return snake[layer % len(snake)], rank, producers


def zigzag_spread_schedule(instance: SchedulingInstance) -> Schedule:
    """Baseline 1 read the other way (the method ``zigzag-spread``): the depth levels of the DAG
    are the layers, and the μops of each level, in index order, take the cores along the zig-zag
    path, continuing where the previous level stopped; a level starts when the previous one has
    finished. Its layers spread over more cores as the mesh grows."""
    snake = _snake_cores(instance)
    level = levels(instance)
    order = np.lexsort((np.arange(instance.n), level))
    core = np.empty(instance.n, dtype=np.int64)
    core[order] = snake[np.arange(instance.n) % len(snake)]
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
