"""Priority list scheduling with NoC transfer delays in near-linear time (in the spirit of HEFT,
Topcuoglu, Hariri and Wu 2002: §4.1 upward rank, §4.2 earliest-finish-time core selection).

The μops are taken once each, in a fixed priority order that is a topological order; each goes
to the core where it finishes earliest, given the arrival of its producers' data and the idle
time of the cores: after a core's last μop, or in one of the last :data:`GAPS` idle gaps it has
between μops (HEFT's insertion, bounded). Work is vectorized over the cores with numpy, and over
runs ("segments") of consecutive μops in the order of which none reads another's output: for a
segment the data arrival on every core is one array operation over the segment's incoming
edges, and only the choice of core (which depends on the cores' idle times) remains a Python
loop, a few numpy calls on ``(m, gaps + 1)`` arrays per μop.

Cost: O(E·m) arithmetic for the arrivals, O(n·m·(gaps + 1)) for the choices, O(n log n + E)
for the order and the upward rank (one pass per DAG level), plus a constant Python overhead per
μop and per segment. Measured (``python -m npusched.bench.list_scaling``): about 5 μs per μop
on partitioned networks (ResNet-50, 834 272 μops, 4.45 M edges, 25 cores: 293 segments, 4 s;
2 s with ``gaps=0``).
"""

from __future__ import annotations

import numpy as np

from npusched.problem.scheduling.dag import IntArray, UopGraph
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule

SEGMENT_EDGES = 1 << 17
"""At most this many incoming edges per segment: bounds the (edges × m) arrays in memory."""

GAPS = 8
"""Idle gaps remembered per core for insertion (:class:`CoreState`). On random layered DAGs
with delays (``npusched.bench.generate.layered_dag``, 500–1100 μops, 6–16 cores) the makespan
relative to earliest-task-first was on average 1.079 with no gap (append only), 1.008 with 4,
0.996 with 8 and 0.993 with 32; the cost per μop hardly depends on it."""

NO_GAP = np.iinfo(np.int64).max // 4
"""Start of an empty gap slot (its end is −1, so nothing fits) and end of the open slot."""

TABLE_ENTRIES = 1 << 22
"""Delay rows are tabulated per (producer core, distinct edge size) when the table has at most
this many entries; otherwise they are computed per segment."""


def mean_edge_delay(instance: SchedulingInstance) -> np.ndarray:
    """Mean transfer delay of every edge over the ``m(m−1)`` ordered pairs of distinct cores.

    This is HEFT's mean communication cost c̄ (§3: averaged over the links between distinct
    processors; the co-located case, which costs nothing, is not counted). The delay of one pair is
    :meth:`Accelerator.comm_delay` of its hops and the edge's bytes, whatever the delay model
    or topology; it is evaluated once per (distinct hop count, distinct edge size) and averaged
    with the number of core pairs at that hop count. Zero without delays or with one core.
    """
    acc, g = instance.accelerator, instance.graph
    m = acc.m
    if not acc.has_comm_delays or m < 2 or g.num_edges == 0:
        return np.zeros(g.num_edges)
    hops = np.asarray(acc.hops())
    values, counts = np.unique(hops[~np.eye(m, dtype=bool)], return_counts=True)
    sizes, inverse = np.unique(g.bytes, return_inverse=True)
    table = np.asarray(acc.comm_delay(values[None, :], sizes[:, None]), dtype=float)
    return (table @ counts / counts.sum())[inverse.reshape(-1)]


def upward_rank(instance: SchedulingInstance) -> np.ndarray:
    """HEFT's upward rank (§4.1): ``rank(i) = w̄_i + max over consumers j of
    (c̄_ij + rank(j))``, with ``w̄_i`` the mean latency of ``i`` over the cores and ``c̄`` from
    :func:`mean_edge_delay`: the b-level of the DAG with mean transfer costs on its edges.

    Without delays on identical cores it equals the plain b-level. A producer's rank is never
    below its consumer's (every term is non-negative and float addition is monotone), so
    ordering by decreasing rank with ties in topological order is a topological order.
    """
    g = instance.graph
    w = instance.duration.mean(axis=1)
    c = mean_edge_delay(instance)
    below = np.zeros(g.n)
    key = g.level[g.src]
    edges = np.argsort(-key, kind="stable")
    cuts = np.flatnonzero(np.diff(key[edges])) + 1
    for e in np.split(edges, cuts) if edges.size else []:
        np.maximum.at(below, g.src[e], c[e] + w[g.dst[e]] + below[g.dst[e]])
    return w + below


def priority_order(graph: UopGraph, priority: np.ndarray) -> IntArray:
    """The μops by decreasing ``priority``, ties in the graph's topological order (Kahn's, by
    level), so that a producer precedes its consumers whenever its priority is not lower.

    When the priority is not monotone along the edges (a user's function), the result is the
    standard ready-list order instead: repeatedly the highest-priority μop whose producers are
    all taken (ties again by topological position).
    """
    rank = np.empty(graph.n, dtype=np.int64)
    rank[graph.topo] = np.arange(graph.n)
    order = np.lexsort((rank, -np.asarray(priority, dtype=float)))
    pos = np.empty(graph.n, dtype=np.int64)
    pos[order] = np.arange(graph.n)
    if (pos[graph.src] < pos[graph.dst]).all():
        return order.astype(np.int64)
    return _ready_list_order(graph, priority, rank)


def _ready_list_order(graph: UopGraph, priority: np.ndarray, rank: IntArray) -> IntArray:
    import heapq

    indeg = np.diff(graph.pred_ptr).tolist()
    prio, rk = (-np.asarray(priority, dtype=float)).tolist(), rank.tolist()
    heap = [(prio[i], rk[i], i) for i in range(graph.n) if indeg[i] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    ptr, succ = graph.succ_ptr.tolist(), graph.succ_idx.tolist()
    while heap:
        _, _, i = heapq.heappop(heap)
        out.append(i)
        for j in succ[ptr[i] : ptr[i + 1]]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(heap, (prio[j], rk[j], j))
    return np.asarray(out, dtype=np.int64)


def segments(ptr: IntArray, last_pred: IntArray, max_edges: int = SEGMENT_EDGES) -> list[int]:
    """Cut positions ``0 = c_0 < c_1 < … < c_s = n`` of the order such that no μop in
    ``[c_t, c_{t+1})`` has a producer in the same range (``last_pred[p]`` is the position of
    the last producer of the ``p``-th μop, −1 for none) and each range has at most
    ``max_edges`` incoming edges (``ptr``: their prefix sums), unless one μop alone has more."""
    cuts = [0]
    start, limit = 0, int(ptr[0]) + max_edges
    ends = ptr[1:].tolist()
    for p, q in enumerate(last_pred.tolist()):
        if q >= start or (ends[p] > limit and p > start):
            cuts.append(p)
            start, limit = p, int(ptr[p]) + max_edges
    cuts.append(last_pred.size)
    return cuts


class Delays:
    """Delay rows ``comm_delay(hops[c, :], bytes)`` of edges whose producer sits on core ``c``:
    looked up in a table per (core, distinct size) when it is small, else computed."""

    def __init__(self, instance: SchedulingInstance, nbytes: IntArray) -> None:
        acc, m = instance.accelerator, instance.m
        self.acc, self.nbytes = acc, nbytes
        self.on = acc.has_comm_delays and m > 1
        self.hops = np.asarray(acc.hops()) if self.on else np.zeros((m, m), dtype=np.int64)
        sizes, inverse = np.unique(nbytes, return_inverse=True)
        self.table: np.ndarray | None = None
        if self.on and sizes.size * m * m <= TABLE_ENTRIES:
            rows = acc.comm_delay(self.hops[:, None, :], sizes[None, :, None])
            self.table = np.asarray(rows, dtype=np.int64)  # (core, size, core)
            self.size_of = inverse.reshape(-1)

    def rows(self, cores: IntArray, edges: slice) -> np.ndarray:
        """``(len(cores), m)`` delays of the edges ``edges`` from producers on ``cores``."""
        if not self.on:
            return np.zeros((cores.size, self.hops.shape[0]), dtype=np.int64)
        if self.table is not None:
            return self.table[cores, self.size_of[edges]]
        hops = self.hops[cores]
        return np.asarray(self.acc.comm_delay(hops, self.nbytes[edges][:, None]), dtype=np.int64)


def place_in_order(instance: SchedulingInstance, order: IntArray, gaps: int = GAPS) -> Schedule:
    """Place the μops one by one in ``order`` (a topological order), each where it finishes
    earliest (ties: the lowest core index).

    On core ``k`` a μop may start once its data has arrived there, at max over incoming edges
    of the producer's end + ``comm_delay(hops[producer's core, k], bytes)``, and the core is
    idle for its whole latency: after the core's last μop, or inside one of the ``gaps`` latest
    idle intervals the core has between μops (HEFT's insertion policy, §4.2, with at most
    ``gaps`` gaps remembered per core; ``gaps=0`` only appends). A μop of zero latency occupies
    no core time.

    Raises
    ------
    ValueError
        ``order`` is not a permutation of the μops in topological order.
    """
    g, n, m = instance.graph, instance.n, instance.m
    order = np.asarray(order, dtype=np.int64).reshape(-1)
    pos = np.full(n, -1, dtype=np.int64)
    if order.size == n and order.min() >= 0 and order.max() < n:
        pos[order] = np.arange(n)
    if (pos < 0).any() or (pos[g.src] >= pos[g.dst]).any():
        raise ValueError("the order must list every μop once, producers before consumers")
    ptr, edge = _incoming(g, order)
    src = g.src[edge]
    has = ptr[1:] > ptr[:-1]
    last_pred = np.full(n, -1, dtype=np.int64)
    if has.any():
        last_pred[has] = np.maximum.reduceat(pos[src], ptr[:-1][has])
    delays = Delays(instance, g.bytes[edge])
    dur = instance.duration
    core = np.zeros(n, dtype=np.int64)
    end = np.zeros(n, dtype=np.int64)
    state = CoreState(m, gaps)
    bounds = ptr.tolist()
    cuts = segments(ptr, last_pred)
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        ids = order[a:b]
        lo, hi = bounds[a], bounds[b]
        if hi == lo:
            arrive = np.zeros((b - a, m), dtype=np.int64)
        else:
            s = src[lo:hi]
            rows = delays.rows(core[s], slice(lo, hi))
            rows += end[s][:, None]
            if b - a == 1:
                arrive = rows.max(axis=0, keepdims=True)
            else:
                arrive = np.zeros((b - a, m), dtype=np.int64)
                local = has[a:b]
                arrive[local] = np.maximum.reduceat(rows, ptr[a:b][local] - lo, axis=0)
        core[ids], end[ids] = state.place(arrive, dur[ids])
    return Schedule(end - dur[np.arange(n), core], core)


def _incoming(graph: UopGraph, order: IntArray) -> tuple[IntArray, IntArray]:
    """The incoming edges of the μops in ``order``: prefix sums ``ptr`` (``n + 1``) and edge
    ids, grouped by consumer in that order."""
    indeg = np.diff(graph.pred_ptr)[order]
    ptr = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(indeg, out=ptr[1:])
    by_dst = np.argsort(graph.dst, kind="stable")
    first = graph.pred_ptr[order]
    return ptr, by_dst[np.repeat(first - ptr[:-1], indeg) + np.arange(int(ptr[-1]))]


class CoreState:
    """What the cores offer the next μop: on each core, up to ``gaps`` idle intervals
    ``[lo, hi)`` between its μops (the latest ones; an older gap is dropped when a later one
    needs its slot) and, in the last column, the open interval ``[end of its last μop, ∞)``.

    A μop fits slot ``j`` of core ``k`` when max(arrival on ``k``, lo) + latency ≤ hi: the
    finish candidates of all cores and slots are one ``(m, gaps + 1)`` array, so each choice is
    a few numpy calls whatever ``m`` and ``gaps`` are.
    """

    def __init__(self, m: int, gaps: int) -> None:
        self.gaps = gaps
        self.lo = np.full((m, gaps + 1), NO_GAP, dtype=np.int64)
        self.hi = np.full((m, gaps + 1), -1, dtype=np.int64)
        self.lo[:, gaps], self.hi[:, gaps] = 0, NO_GAP
        self.cand = np.empty((m, gaps + 1), dtype=np.int64)
        self.over = np.empty((m, gaps + 1), dtype=bool)

    def place(self, arrive: np.ndarray, dur: np.ndarray) -> tuple[list[int], list[int]]:
        """Place the μops of one segment (rows of ``arrive`` and ``dur``, ``(rows, m)``) in
        order, each where it finishes first (ties: lowest core, then earliest slot); returns
        their cores and finish times. A μop of zero latency occupies nothing."""
        lo, hi, cand, over = self.lo, self.hi, self.cand, self.over
        width = self.gaps + 1
        arrive3, dur3 = arrive[:, :, None], dur[:, :, None]
        ks: list[int] = []
        fs: list[int] = []
        for r in range(arrive.shape[0]):
            np.maximum(arrive3[r], lo, out=cand)
            cand += dur3[r]
            np.greater(cand, hi, out=over)
            np.copyto(cand, NO_GAP, where=over)
            k, j = divmod(int(cand.argmin()), width)
            f = int(cand[k, j])
            d = int(dur[r, k])
            ks.append(k)
            fs.append(f)
            if d > 0:
                self._occupy(k, j, f - d, f)
        return ks, fs

    def _occupy(self, k: int, j: int, s: int, f: int) -> None:
        """Core ``k`` busy in ``[s, f)``, taken from slot ``j``; the idle time left before
        ``s`` becomes a gap when it is later than the earliest gap kept."""
        lo, hi, gaps = self.lo, self.hi, self.gaps
        before = int(lo[k, j])
        if f < hi[k, j]:
            lo[k, j] = f
        else:
            lo[k, j], hi[k, j] = NO_GAP, -1
        if s > before and gaps:
            slot = int(hi[k, :gaps].argmin())
            if s > hi[k, slot]:
                lo[k, slot], hi[k, slot] = before, s
