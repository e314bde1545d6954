"""Dynamic level scheduling with NoC transfer delays (Sih and Lee 1993), exact in near-linear
time with heaps per core, with insertion and optional restarts.

The algorithm
-------------
G. C. Sih and E. A. Lee, "A compile-time scheduling heuristic for interconnection-constrained
heterogeneous processor architectures", IEEE Trans. Parallel and Distributed Systems 4(2),
pp. 175–187, 1993. At every step, among all pairs (ready μop ``i``, core ``k``) — ``i`` is
ready when all its producers are placed — place the pair of largest *dynamic level*

.. math::

    DL(i, k) = SL^*(i) - \\max\\bigl(DA(i, k),\\; TF(k)\\bigr) + \\Delta(i, k),

where ``SL*`` is the static level (the longest path from ``i`` to the end of the DAG, counting
each μop's *median* latency over the cores and no transfers), ``DA(i, k)`` the time the last of
``i``'s data arrives on ``k`` (over incoming edges: the producer's end plus
:meth:`~npusched.problem.Accelerator.comm_delay` of the hops between the two cores and the
edge's bytes; 0 on the producer's own core), ``TF(k)`` the time ``k`` finishes the last μop
placed on it, and ``Δ(i, k) = E*(i) − E(i, k)`` the paper's heterogeneity term (median latency
minus the latency on ``k``; zero on identical cores). The μop starts at ``max(DA, TF)``. These
are the paper's dynamic level and its adjustment for heterogeneous cores; the further terms the
paper adds to the level (for a μop's most important descendant and for scarce resources) are
not used. Section and equation numbers of the paper are not cited: no copy of its full text was
available here to check them against.

Deviations, each measured by ``python -m npusched.bench.delays``
----------------------------------------------------------------
1. *Insertion* (``insertion=True``, the default): the pair is chosen with the paper's
   ``TF(k)``, then the μop goes into the earliest idle gap of core ``k`` (one of the
   :data:`GAPS` latest gaps, as the priority list keeps them) that starts at or after
   ``DA(i, k)`` and holds it, when one starts earlier than ``max(DA, TF)``: HEFT's insertion
   (Topcuoglu et al. 2002, §4.2). The start only moves earlier, so the chosen pair's level
   only grows; ``TF(k)`` stays the end of the latest μop on ``k``.
2. *Restarts* (``restarts=R``): ``R`` more runs with each static level multiplied by
   ``1 + σ·N(0, 1)`` (``sigma``; a fixed ``seed``), keeping the schedule of least makespan
   (the first run on ties). Sih and Lee run once.
3. Ties of the dynamic level go to the higher static level, then the lower core index, then the
   lower μop index (the paper leaves them open).

Cost
----
Not the paper's O(steps · ready · cores) scan, which is quadratic in ``n`` like
earliest-task-first's: the scan is replaced by three heaps per core, exactly. For a core ``k``
and its current ``TF(k)``, the best ready μop is either one whose data has arrived
(``DA ≤ TF``; its level is ``SL* + Δ − TF``: a max-heap on ``SL* + Δ``) or one still waiting
(``DA > TF``; a max-heap on ``SL* + Δ − DA``); a min-heap on ``DA`` moves μops from the second
kind to the first as ``TF(k)`` grows (it never shrinks). Placed μops leave lazily. Each μop
enters each core's heaps once when it becomes ready (``DA`` on every core from its incoming
edges: one numpy expression over the edges × cores) and each step reads the top of ``m`` heaps,
so one run costs O(E·m + n·m·log n) — near-linear in the graph — and ``R`` restarts multiply it
by ``R + 1``. ``python -m npusched.bench.delays scaling --sizes
1000,3000,10000,30000,100000,300000`` (random layered DAGs, 16 cores, one run, a loaded 2-core
machine): 1 050 → 298 901 μops took 0.05 → 33 CPU s, each step ×2.8–5.4 in time for ×2.9–3.3
in n (44 → 111 μs per μop: the log factor and the memory of heaps that hold every ready μop on
every core; low-level μops wait long). The heap operations themselves grow linearly (about 34
pushes per μop on 16 cores at 10 000 and at 30 000 μops). On DAGs 400 μops wide (``--width
400``), earliest-task-first took 4.2 and 29.6 CPU s for 1 079 and 3 046 μops, DLS 0.05 and
0.18 s (0.84 s for 9 494).

No approximation bound is claimed with delays. Every start respects each producer's end plus
the transfer delay between their cores, and no two μops overlap on a core (the schedule passes
:func:`npusched.verify.verify`); the result is deterministic for a given ``seed``.
"""

from __future__ import annotations

import heapq

import numpy as np

from npusched.heuristics.scheduling.priority_list import GAPS, Delays
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule

SIGMA = 0.05
"""Default relative noise of the static levels on restarts (deviation 2). On the 75 graphs of
``python -m npusched.bench.delays gaps --sizes 50,100,200,300,500 --procs 2,4,8,9,16``
(:func:`npusched.bench.generate.known_optimum`, 8 restarts) the mean gap to the optimum was
52.5 % with σ = 0.02, 52.7 % with 0.05, 53.4 % with 0.1, 52.7 % with 0.15: differences at the
noise level."""

RESTARTS = 8
"""Restarts when none are asked for, on instances of at most :data:`RESTART_LIMIT` μops. On the
same 75 graphs the mean gap to the optimum was 56.9 % in one run, 52.7 % with 8 restarts and
49.2 % with 32 (on the 45 of n ≤ 200: 40.6 %, 36.4 %, 33.3 %); on the six shared MSPCD files
43.8 % and 39.5 % (``python -m npusched.bench.delays shared``)."""

RESTART_LIMIT = 10_000
"""Above this many μops no restarts are made unless asked for: one run takes about 0.5 s at
10 000 μops on 16 cores and grows near-linearly (``python -m npusched.bench.delays
scaling``)."""


def static_level(instance: SchedulingInstance) -> np.ndarray:
    """Sih and Lee's static level ``SL*``: the longest path from each μop to the end of the DAG,
    its own latency included, with every μop's median latency over the cores and no transfer
    delays (the b-level of the DAG with median latencies)."""
    twice = np.rint(2 * np.median(instance.duration, axis=1)).astype(np.int64)  # exact: x or x.5
    return instance.graph.tails(twice) / 2.0


def restarts_for(n: int, restarts: int | None) -> int:
    """The restarts :func:`dls_schedule` makes on ``n`` μops when asked for ``restarts``
    (``None``: :data:`RESTARTS` up to :data:`RESTART_LIMIT` μops, none above)."""
    if restarts is None:
        return RESTARTS if n <= RESTART_LIMIT else 0
    return restarts


def dls_schedule(
    instance: SchedulingInstance,
    *,
    insertion: bool = True,
    restarts: int | None = None,
    sigma: float = SIGMA,
    seed: int = 0,
    levels: np.ndarray | None = None,
) -> Schedule:
    """Dynamic level scheduling (module docstring): the pair (ready μop, core) of largest
    ``SL* − max(DA, TF) + Δ`` at each step, with insertion into idle gaps (``insertion``) and
    ``restarts`` more runs on perturbed static levels, keeping the shortest schedule
    (``None``: :data:`RESTARTS` up to :data:`RESTART_LIMIT` μops, none above).

    ``levels`` replaces the static level (one finite number per μop; higher first).

    Raises
    ------
    ValueError
        ``restarts`` is negative, ``sigma`` negative or not finite, or ``levels`` has the wrong
        shape or a non-finite entry.
    """
    restarts = restarts_for(instance.n, restarts)
    if restarts < 0:
        raise ValueError(f"restarts must be >= 0, got {restarts}")
    if not (np.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be a finite number >= 0, got {sigma}")
    base = static_level(instance) if levels is None else np.asarray(levels, dtype=float)
    if base.shape != (instance.n,) or not np.isfinite(base).all():
        raise ValueError(f"levels must give one finite number per μop ({instance.n})")
    run = _Run(instance, insertion)
    best = run.schedule(base)
    best_ms = best.makespan(instance)
    rng = np.random.default_rng(seed)
    for _ in range(restarts):
        noisy = base * (1.0 + sigma * rng.standard_normal(instance.n))
        sched = run.schedule(noisy)
        ms = sched.makespan(instance)
        if ms < best_ms:
            best, best_ms = sched, ms
    return best


class _Run:
    """What every run on one instance shares: incoming edges by consumer, delay rows, the
    median latencies and the heterogeneity term."""

    def __init__(self, instance: SchedulingInstance, insertion: bool) -> None:
        g = instance.graph
        self.instance, self.insertion = instance, insertion
        self.n, self.m = g.n, instance.m
        self.dur = instance.duration
        by_dst = np.argsort(g.dst, kind="stable")  # grouped as g.pred_ptr
        self.ptr = g.pred_ptr.tolist()
        self.src_in = g.src[by_dst]
        self.delays = Delays(instance, g.bytes[by_dst])
        med = np.median(self.dur, axis=1)
        self.delta = med[:, None] - self.dur  # Δ(i, k) = E*(i) − E(i, k)
        self.indeg = np.diff(g.pred_ptr)
        self.succ_ptr = g.succ_ptr.tolist()
        self.succ_idx = g.succ_idx.tolist()

    def schedule(self, levels: np.ndarray) -> Schedule:  # noqa: C901 - one loop, kept whole
        """One run with static levels ``levels``."""
        n, m = self.n, self.m
        ptr, src_in, delays, delta = self.ptr, self.src_in, self.delays, self.delta
        sl = levels.tolist()
        dur = self.dur
        core = np.zeros(n, dtype=np.int64)
        end = np.zeros(n, dtype=np.int64)
        start = [0] * n
        done = [False] * n
        none: list[int] = []
        da: list[list[int]] = [none] * n  # data arrival per core, while ready
        key: list[list[float]] = [[]] * n  # SL* + Δ per core, while ready
        indeg = self.indeg.tolist()
        tf = [0] * m
        waiting: list[list[tuple[int, int]]] = [[] for _ in range(m)]  # (DA, μop)
        early: list[list[tuple[float, float, int]]] = [[] for _ in range(m)]  # −(SL*+Δ−DA)
        arrived: list[list[tuple[float, float, int]]] = [[] for _ in range(m)]  # −(SL*+Δ)
        gaps = _Gaps(m, GAPS if self.insertion else 0)
        push, pop = heapq.heappush, heapq.heappop
        live = 0  # ready μops not placed yet

        def ready(i: int) -> None:
            lo, hi = ptr[i], ptr[i + 1]
            if hi > lo:
                s = src_in[lo:hi]
                rows = delays.rows(core[s], slice(lo, hi))
                rows += end[s][:, None]
                arrive = rows.max(axis=0).tolist()
            else:
                arrive = [0] * m
            da[i] = arrive
            ki = key[i] = (sl[i] + delta[i]).tolist()
            si = -sl[i]
            for k in range(m):
                if arrive[k] <= tf[k]:
                    push(arrived[k], (-ki[k], si, i))
                else:
                    push(waiting[k], (arrive[k], i))
                    push(early[k], (arrive[k] - ki[k], si, i))

        for i in range(n):
            if indeg[i] == 0:
                ready(i)
                live += 1
        for _ in range(n):
            best: tuple[float, float, int, int] | None = None  # (−DL, −SL, core, μop)
            most = 2 * live + 32  # a heap past this holds mostly placed μops: compacted
            for k in range(m):
                t = tf[k]
                w, a, e = waiting[k], arrived[k], early[k]
                while w and w[0][0] <= t:
                    _, i = pop(w)
                    if not done[i]:
                        push(a, (-key[i][k], -sl[i], i))
                if len(a) > most:
                    a[:] = [x for x in a if not done[x[2]]]
                    heapq.heapify(a)
                if len(e) > most:
                    e[:] = [x for x in e if not done[x[2]] and da[x[2]][k] > t]
                    heapq.heapify(e)
                if len(w) > most:
                    w[:] = [x for x in w if not done[x[1]]]
                    heapq.heapify(w)
                while a and done[a[0][2]]:
                    pop(a)
                while e and (done[e[0][2]] or da[e[0][2]][k] <= t):
                    pop(e)
                if a:
                    neg, si, i = a[0]
                    cand = (neg + t, si, k, i)
                    if best is None or cand < best:
                        best = cand
                if e:
                    neg, si, i = e[0]
                    cand = (neg, si, k, i)
                    if best is None or cand < best:
                        best = cand
            if best is None:
                raise RuntimeError("dynamic level scheduling stalled: the graph is not acyclic")
            _, _, k, i = best
            d = int(dur[i, k])
            s = gaps.place(k, da[i][k], tf[k], d)
            start[i], core[i], end[i] = s, k, s + d
            if d and s + d > tf[k]:
                tf[k] = s + d
            done[i] = True
            da[i], key[i] = none, []
            live -= 1
            for j in self.succ_idx[self.succ_ptr[i] : self.succ_ptr[i + 1]]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    ready(j)
                    live += 1
        return Schedule(np.asarray(start, dtype=np.int64), core)


class _Gaps:
    """Idle gaps ``[lo, hi)`` between the μops of each core, the ``limit`` latest kept (an older
    one is forgotten when a later one needs room); ``limit=0`` only appends."""

    def __init__(self, m: int, limit: int) -> None:
        self.limit = limit
        self.gaps: list[list[tuple[int, int]]] = [[] for _ in range(m)]

    def place(self, k: int, arrive: int, tf: int, d: int) -> int:
        """The start of a μop of latency ``d`` on core ``k`` (last μop ending at ``tf``) whose
        data arrives at ``arrive``: the earliest gap that holds it, else ``max(arrive, tf)``;
        the core's gaps are updated. Zero latency occupies nothing."""
        gaps = self.gaps[k]
        best_j, best_s = -1, max(arrive, tf)
        for j, (lo, hi) in enumerate(gaps):
            s = max(lo, arrive)
            if s + d <= hi and s < best_s:
                best_j, best_s = j, s
        if d == 0 or not self.limit:
            return best_s
        if best_j >= 0:
            lo, hi = gaps.pop(best_j)
            if best_s > lo:
                gaps.append((lo, best_s))
            if best_s + d < hi:
                gaps.append((best_s + d, hi))
        elif best_s > tf:
            gaps.append((tf, best_s))
        if len(gaps) > self.limit:
            gaps.sort(key=lambda g: g[1])
            del gaps[: len(gaps) - self.limit]
        return best_s
