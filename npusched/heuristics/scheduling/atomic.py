"""Klotski's baseline 2: the atomic dataflow of Zheng et al. (HPCA 2022) without its rounds.

What the original does
----------------------
Zheng, Zhang, Liu, Wei and Yin, "Atomic Dataflow based Graph-Level Workload Orchestration for
Scalable DNN Accelerators", HPCA 2022, pp. 475–489 (Klotski's [23]). Its abstract: it cuts the
layers into *atoms* with simulated annealing to minimise load imbalance, orders the atomic DAG
with dynamic programming ("to systematically explore massive ordering potentials", "flexible
atom ordering to exploit parallelism"), and "orchestrates atom-engine mapping to optimize data
reuse between spatially connected tensor engines", with buffering strategies against off-chip
traffic. It targets *synchronised* scalable accelerators: one round of atoms runs on the
engines, all engines synchronise, the next round starts (Klotski §II-A, Fig. 2: "μops are
scheduled per round … The time interval of a round is decided by the μop whose computing
latency is the highest"). Klotski (§I) sums it up as scheduling "in finer granularity based on
dynamic programming with pre-determined heuristics"; Flexer (§6) as scheduling tiles "in
accordance to a pre-defined priority rule to maximize data reuse while minimizing latency".

Only the abstract and the first page of the introduction of the original could be read here
(stored copies of studylib.net/doc/26089522 and of its abstract page); its sections on the DP,
its pruning heuristics and its mapping and buffering rules were not available. The rules below
marked *guess* are therefore this module's reading of the abstract and of the two summaries
above, not the paper's exact rules.

What Klotski changed (§IV-B)
----------------------------
"We remove the synchronization and consider the heuristics proposed by the atomic dataflow for
all ready μops rather than a candidate set in each round." The partition is not part of the
baseline here: Klotski's ablation (§IV-D) runs baseline 2 on Klotski's own partition, and so
does this module (the instance comes partitioned; the SA atom generation is not rerun).

What this module does
---------------------
An event-driven list scheduler, Graham's in its dispatch rule, with the atomic dataflow's two
choices inside it:

1. *Which ready μops (atom selection).* A μop is ready once every producer has finished. At
   every event time ``t`` (``t = 0``, then each time μops finish) the ``f`` idle cores take the
   ``f`` best ready μops (all ready μops compete, Klotski's change), best meaning the longest
   critical path to the end: HEFT's upward rank with mean latencies and mean transfer delays
   (:func:`~npusched.heuristics.scheduling.priority_list.upward_rank`), ties to the earlier
   network layer, then the lower μop index (a layer's atoms in their order). *Guess*: a greedy
   stand-in for the original's latency-minimising DP over orderings; no DP is run.
2. *Which idle core (atom-engine mapping, data reuse).* The selected μops, best first, each take
   the idle core that (a) minimises the NoC traffic of its inputs, Σ bytes × hops from the cores
   of its producers (the data-reuse objective of the abstract; *guess* on its exact form), then
   (b) last ran a μop reading the same weights (same layer, output-channel and input-channel
   tile; :func:`weight_groups`), weight reuse on one engine (*guess*, read into "buffering
   strategies"), then (c) finishes it first, then (d) has the lowest index.

The μop starts on its core when its data has arrived (producer's end + ``comm_delay`` of the
hops and bytes); the core is reserved for it from ``t`` on, as an engine given an atom is.
Without synchronisation nothing else waits: a core that frees takes the next ready μop at once.

Further deviations: there are no rounds, no synchronisation latency and no DP; buffering and
off-chip traffic are not modelled (instances carry no buffer capacities); a core waits for data
only of the μop it was given (no look-ahead). With no coordinates (no network), one hop is
counted between any two distinct cores.

Cost: two heaps (ready μops, finishing μops), O(n log n); per μop a few numpy calls on its
incoming edges × ``m`` cores, O((n + E)·m) in all; the upward rank O(n log n + E·m). Measured
(``python -m npusched.bench.list_scaling``, one run on a shared machine): about 25 μs per μop,
21 s on ResNet-50 cut into 834 272 μops (4.45 M edges, 25 cores), 0.2 s on 13 281 μops.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from npusched.heuristics.scheduling.mesh_baselines import network_layers
from npusched.heuristics.scheduling.priority_list import Delays, upward_rank
from npusched.problem.scheduling.dag import IntArray
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule


def _tiles(source: Any, n: int) -> list[tuple[int, tuple[int, int, int, int]]] | None:
    """Each layer's (offset, tile counts ``(k, y, x, c)``) from a partition record numbered in
    :meth:`Tiling.index` order, or ``None`` (no record, a count only, or Flexer's loop-order
    renumbering)."""
    layers = source.get("layers") if isinstance(source, dict) else None
    if not isinstance(layers, list) or not layers or "loop_order" in source:
        return None
    out: list[tuple[int, tuple[int, int, int, int]]] = []
    for ly in layers:
        tiles = ly.get("tiles") if isinstance(ly, dict) else None
        if not isinstance(tiles, (list, tuple)) or len(tiles) != 4:
            return None
        nk, ny, nx, nc = (int(v) for v in tiles)
        out.append((int(ly["offset"]), (nk, ny, nx, nc)))
    ends = [o for o, _ in out[1:]] + [n]
    if any(e - o != int(np.prod(t)) for (o, t), e in zip(out, ends, strict=True)):
        return None
    return out


def weight_groups(instance: SchedulingInstance) -> IntArray:
    """An id per μop, equal for μops that read the same weights: on a partitioned network the
    layer and the output- and input-channel tile ``(k, c)`` of the μop (its ``h, w`` tiles share
    them); otherwise the network layer (:func:`network_layers`)."""
    n = instance.n
    layout = _tiles(instance.source, n)
    if layout is None:
        return network_layers(instance)
    group = np.empty(n, dtype=np.int64)
    base = 0
    for offset, (nk, ny, nx, nc) in layout:
        j = np.arange(nk * ny * nx * nc)
        group[offset : offset + j.size] = base + (j // (ny * nx * nc)) * nc + j % nc
        base += nk * nc
    return group


def atomic_order(instance: SchedulingInstance) -> IntArray:
    """The μops from best to worst for selection among ready ones: decreasing upward rank, then
    earlier network layer, then lower index."""
    rank = upward_rank(instance)
    layer = network_layers(instance)
    return np.lexsort((np.arange(instance.n), layer, -rank)).astype(np.int64)


def _hop_matrix(instance: SchedulingInstance) -> np.ndarray:
    """Hops between cores, or 1 between any two distinct cores without coordinates."""
    acc = instance.accelerator
    if all(c.coord is not None for c in acc.cores):
        return np.asarray(acc.hops(), dtype=np.int64)
    return 1 - np.eye(acc.m, dtype=np.int64)


class _Arrivals(Delays):
    """The priority list's delay rows, plus the delays towards one core only."""

    def column(self, cores: IntArray, lo: int, hi: int, k: int) -> np.ndarray:
        """Delays of the incoming edges ``lo:hi`` from producers on ``cores`` to core ``k``."""
        if not self.on:
            return np.zeros(hi - lo, dtype=np.int64)
        if self.table is not None:
            return self.table[cores, self.size_of[lo:hi], k]
        delay = self.acc.comm_delay(self.hops[cores, k], self.nbytes[lo:hi])
        return np.asarray(delay, dtype=np.int64)


class _Mapper:
    """Atom-engine mapping: where and when each selected μop runs (rule 2 of the module)."""

    def __init__(self, instance: SchedulingInstance) -> None:
        g, n = instance.graph, instance.n
        by_dst = np.argsort(g.dst, kind="stable")  # incoming edges grouped by consumer
        self.ptr = g.pred_ptr.tolist()
        self.src = g.src[by_dst]
        self.nbytes = g.bytes[by_dst]
        self.delays = _Arrivals(instance, self.nbytes)
        self.hops = _hop_matrix(instance)
        self.dur = instance.duration
        self.group = weight_groups(instance).tolist()
        self.last_group = np.full(instance.m, -1, dtype=np.int64)
        self.core = np.zeros(n, dtype=np.int64)
        self.start = np.zeros(n, dtype=np.int64)
        self.end = np.zeros(n, dtype=np.int64)

    def place(self, i: int, t: int, idle: list[int]) -> tuple[int, int]:
        """Run μop ``i``, selected at time ``t``, on one of the ``idle`` cores; returns the core
        and the finish time."""
        lo, hi = self.ptr[i], self.ptr[i + 1]
        if lo == hi:
            k = idle[0] if len(idle) == 1 else self._choose(i, t, idle, None, None)
            begin = t
        elif len(idle) == 1:
            k = idle[0]
            s = self.src[lo:hi]
            begin = max(t, int((self.delays.column(self.core[s], lo, hi, k) + self.end[s]).max()))
        else:
            s = self.src[lo:hi]
            pc = self.core[s]
            traffic = self.nbytes[lo:hi] @ self.hops[pc]
            arrive = (self.delays.rows(pc, slice(lo, hi)) + self.end[s][:, None]).max(axis=0)
            k = self._choose(i, t, idle, traffic, arrive)
            begin = max(t, int(arrive[k]))
        finish = begin + int(self.dur[i, k])
        self.core[i], self.start[i], self.end[i] = k, begin, finish
        self.last_group[k] = self.group[i]
        return k, finish

    def _choose(
        self,
        i: int,
        t: int,
        idle: list[int],
        traffic: np.ndarray | None,
        arrive: np.ndarray | None,
    ) -> int:
        """Among the idle cores: least input traffic (bytes × hops), then one that last ran the
        same weights, then earliest finish, then lowest index."""
        cand = np.array(idle, dtype=np.int64)
        if traffic is not None:
            tr = traffic[cand]
            cand = cand[tr == tr.min()]
            if cand.size == 1:
                return int(cand[0])
        begin = np.full(cand.size, t, dtype=np.int64)
        if arrive is not None:
            np.maximum(begin, arrive[cand], out=begin)
        other = self.last_group[cand] != self.group[i]
        return int(cand[np.lexsort((cand, begin + self.dur[i, cand], other))[0]])


def atomic_schedule(instance: SchedulingInstance) -> Schedule:
    """Klotski's baseline 2 (§IV-B): the atomic dataflow's selection and mapping heuristics,
    without rounds, over all ready μops (see the module docstring for the rules, what is taken
    from Zheng et al. 2022 and what is guessed).

    At each event time the idle cores take the best ready μops (:func:`atomic_order`), each on
    the idle core with the least input traffic (then same weights, earliest finish, lowest
    index), starting when its data has arrived there.
    """
    g, n = instance.graph, instance.n
    order = atomic_order(instance)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    mapper = _Mapper(instance)
    order_l, pos_l = order.tolist(), pos.tolist()
    indeg = np.diff(g.pred_ptr).tolist()
    succ_ptr, succ_idx = g.succ_ptr.tolist(), g.succ_idx.tolist()
    ready = [pos_l[i] for i in range(n) if indeg[i] == 0]
    heapq.heapify(ready)
    events: list[tuple[int, int]] = []  # (finish time, μop)
    idle = list(range(instance.m))
    core = mapper.core
    t = placed = 0
    while True:
        if ready and idle:
            take = [order_l[heapq.heappop(ready)] for _ in range(min(len(ready), len(idle)))]
            for i in take:
                k, finish = mapper.place(i, t, idle)
                idle.remove(k)
                heapq.heappush(events, (finish, i))
            placed += len(take)
        if not events:
            break
        t = events[0][0]
        while events and events[0][0] == t:
            _, i = heapq.heappop(events)
            idle.append(int(core[i]))
            for j in succ_idx[succ_ptr[i] : succ_ptr[i + 1]]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(ready, pos_l[j])
    if placed != n:  # pragma: no cover - the graph is acyclic by construction
        raise RuntimeError(f"only {placed} of {n} μops were scheduled")
    return Schedule(mapper.start, core)
