"""Plans run on the routed machine: an allocation and an order, made by a baseline or by a stage
that sees only compute and hop delays (Klotski's two stages, the atomic dataflow), executed by
the memory-aware list (:mod:`~npusched.heuristics.scheduling.memory_list`), which adds what the
plan did not see: link contention, DRAM fetches and the memories (with eviction).

The plan's order is the list's priority: among the μops whose producers are placed, the one
earliest in the plan goes first, each as early as its core, its data and its memory allow.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from npusched.heuristics.scheduling.atomic import atomic_schedule
from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.heuristics.scheduling.mesh_baselines import network_layers, zigzag_plan
from npusched.problem.scheduling.dag import IntArray, UopGraph
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule


def plan_rank(start: IntArray, topo: IntArray) -> IntArray:
    """Each μop's position in a plan ordered by ``start`` (ties: topological order)."""
    pos = np.empty(topo.size, dtype=np.int64)
    pos[topo] = np.arange(topo.size)
    order = np.lexsort((pos, np.asarray(start)))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank


def execute(
    inst: RoutedInstance,
    core: IntArray,
    rank: IntArray,
    after: tuple[IntArray, IntArray] | None = None,
) -> RoutedSchedule:
    """The memory-aware list on ``inst`` with each μop on ``core`` and the priority ``rank``
    (lower first). ``after = (src, dst)`` adds precedences the plan keeps beyond the data's
    (e.g. a layer waiting for the whole previous layer); the schedule is one of ``inst``'s."""
    run = inst.restricted(np.asarray(core, dtype=np.int64))
    if after is not None and after[0].size:
        g = run.graph
        graph = UopGraph(g.latency, np.concatenate([g.src, after[0]]),
                         np.concatenate([g.dst, after[1]]),
                         np.concatenate([g.bytes, np.zeros(after[0].size, np.int64)]),
                         g.ids)  # fmt: skip
        run = dataclasses.replace(run, base=dataclasses.replace(run.base, graph=graph))
    return memory_list_schedule(run, np.asarray(rank, dtype=np.int64))


def layer_barriers(layer: IntArray, producers: dict[int, set[int]], rank: IntArray
                   ) -> tuple[IntArray, IntArray]:  # fmt: skip
    """Precedences that make each layer wait for every layer it reads: from the last μop (by
    ``rank``) of each producer layer to every μop of the consumer layer. With each layer run on
    one core in ``rank`` order this is the layer-wise schedule of an unpartitioned network."""
    layer = np.asarray(layer)
    order = np.argsort(rank, kind="stable")
    last: dict[int, int] = {}
    for i in order.tolist():
        last[int(layer[i])] = i
    src: list[IntArray] = []
    dst: list[IntArray] = []
    for q, ps in producers.items():
        members = np.flatnonzero(layer == q)
        for p in sorted(ps):
            src.append(np.full(members.size, last[p], dtype=np.int64))
            dst.append(members)
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src), np.concatenate(dst)


def zigzag_routed(inst: RoutedInstance) -> RoutedSchedule:
    """Klotski's baseline 1 on the routed machine: the plan of
    :func:`~npusched.heuristics.scheduling.mesh_baselines.zigzag_plan` with its layer waits."""
    core, rank, producers = zigzag_plan(inst.base)
    after = layer_barriers(network_layers(inst.base), producers, rank)
    return execute(inst, core, rank, after)


def atomic_routed(inst: RoutedInstance) -> RoutedSchedule:
    """Klotski's baseline 2 on the routed machine: the atomic dataflow's allocation and order
    (:func:`~npusched.heuristics.scheduling.atomic.atomic_schedule` on the compute-only view),
    executed."""
    plan = atomic_schedule(inst.base)
    return execute(inst, plan.core, plan_rank(plan.start, inst.graph.topo))
