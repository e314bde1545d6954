"""List scheduling with pluggable priorities: Graham's without NoC delays (Klotski Theorem 1 uses
it for the horizon); with delays earliest-task-first (Hwang et al. 1989) on small instances and
the priority list of :mod:`.priority_list` (HEFT-like, near-linear) on large ones."""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from npusched.heuristics.scheduling.priority_list import (
    GAPS,
    place_in_order,
    priority_order,
    upward_rank,
)
from npusched.problem.scheduling.dag import IntArray
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule

PriorityFn = Callable[[SchedulingInstance], np.ndarray]
Priority = str | PriorityFn


def blevel(instance: SchedulingInstance) -> np.ndarray:
    """Critical-path priority: longest path from the μop to the end of the DAG (b-level)."""
    return instance.graph.tails(instance.min_duration).astype(float)


def asap_priority(instance: SchedulingInstance) -> np.ndarray:
    """Earliest possible start first (ties by index)."""
    d = instance.min_duration
    return -instance.graph.heads(d).astype(float)


def alap_priority(instance: SchedulingInstance) -> np.ndarray:
    """Smallest latest start first: the same order as b-level, with ties broken
    towards short μops."""
    d = instance.min_duration
    tail = instance.graph.tails(d)
    return (tail - d / (d.max() + 1.0)).astype(float)


PRIORITIES: dict[str, PriorityFn] = {
    "blevel": blevel,
    "asap": asap_priority,
    "alap": alap_priority,
    "rank": upward_rank,
}

ALGORITHMS = ("auto", "etf", "priority")
"""``list_schedule``'s algorithms with NoC delays: ``auto`` = ETF up to :data:`ETF_LIMIT` μops,
the priority list above."""

ETF_LIMIT = 1000
"""``auto`` runs earliest-task-first up to this many μops and the priority list above. ETF's cost
grows with n × (ready μops): on ResNet-50 Klotski partitions (``npusched.bench.list_scaling``)
4 791 μops took 0.60 s, 13 281 took 1.9 s and 41 821 took 7.7 s, against 0.11, 0.27 and 1.0 s
for the priority list in the same run, with makespans within ±0.8 % of each other. Small
instances thus keep the schedules (and warm starts) they had before the priority list existed."""


def resolve_priority(instance: SchedulingInstance, priority: Priority) -> np.ndarray:
    """Priority vector (higher first) from a name in :data:`PRIORITIES` or a user function."""
    if isinstance(priority, str):
        try:
            fn = PRIORITIES[priority]
        except KeyError:
            raise ValueError(
                f"unknown priority {priority!r}; choose from {sorted(PRIORITIES)} "
                "or pass a function instance -> array"
            ) from None
    else:
        fn = priority
    values = np.asarray(fn(instance), dtype=float)
    if values.shape != (instance.n,) or not np.isfinite(values).all():
        raise ValueError(f"a priority must give one finite number per μop ({instance.n})")
    return values


def list_algorithm(instance: SchedulingInstance, algorithm: str = "auto") -> str:
    """The algorithm :func:`list_schedule` runs: ``graham`` (``auto`` without delays), ``etf``
    or ``priority``.

    Raises
    ------
    ValueError
        ``algorithm`` is not one of :data:`ALGORITHMS`.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown list algorithm {algorithm!r}; choose from {ALGORITHMS}")
    if algorithm != "auto":
        return algorithm
    if not instance.accelerator.has_comm_delays:
        return "graham"
    return "etf" if instance.n <= ETF_LIMIT else "priority"


def list_schedule(
    instance: SchedulingInstance, priority: Priority = "blevel", algorithm: str = "auto"
) -> Schedule:
    """List scheduling: Graham's without NoC delays; with delays, by ``algorithm``
    (:data:`ALGORITHMS`): :func:`etf_schedule`, :func:`priority_list_schedule`, or ``auto``
    (ETF up to :data:`ETF_LIMIT` μops, the priority list above). ``etf`` and ``priority`` run
    on instances without delays too (then they are not Graham's and his bound is not claimed).

    Without delays (non-delay list scheduling, Graham 1969), exactly as before the other two
    existed: time advances from event to event. Whenever a core is idle and a μop is ready (all
    producers finished), the ready μop of highest priority starts at once; with per-core
    latencies it goes to the idle core that finishes it first. No core is ever left idle while a
    μop is ready.

    Guarantee (identical cores, Klotski Theorem 1): the makespan is at most
    ``W/m + (1 − 1/m)·CP ≤ (2 − 1/m)·OPT``, where ``W`` is the total work and ``CP`` the
    critical path length: at every instant before the end either all ``m`` cores are busy or a
    μop of a critical chain runs. The tests check the first inequality on random DAGs and the
    second against proven optima. No such bound holds for per-core latencies.
    """
    algorithm = list_algorithm(instance, algorithm)
    if algorithm == "etf":
        return etf_schedule(instance, priority)
    if algorithm == "priority":
        return priority_list_schedule(instance, priority)
    g, m = instance.graph, instance.m
    dur = instance.duration
    prio = resolve_priority(instance, priority)
    indeg = np.diff(g.pred_ptr).copy()
    start = np.full(g.n, -1, dtype=np.int64)
    core = np.full(g.n, -1, dtype=np.int64)
    ready: list[tuple[float, int]] = [(-prio[i], int(i)) for i in np.flatnonzero(indeg == 0)]
    heapq.heapify(ready)
    idle = set(range(m))
    running: list[tuple[int, int, int]] = []  # (finish, μop, core)
    t, done = 0, 0
    while done < g.n:
        while ready and idle:
            _, i = heapq.heappop(ready)
            k = min(idle, key=lambda c: (dur[i, c], c))
            idle.remove(k)
            start[i], core[i] = t, k
            heapq.heappush(running, (t + int(dur[i, k]), i, k))
        if not running:
            raise RuntimeError("list scheduling stalled: the graph is not acyclic")
        t = running[0][0]
        while running and running[0][0] == t:
            _, i, k = heapq.heappop(running)
            idle.add(k)
            done += 1
            for j in g.succs(i):
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(ready, (-prio[j], int(j)))
    return Schedule(start, core)


def etf_schedule(instance: SchedulingInstance, priority: Priority = "blevel") -> Schedule:
    """Earliest-task-first list scheduling with NoC transfer delays (Hwang et al. 1989).

    Repeatedly, among the μops whose producers are all placed, take the (μop, core) pair that can
    start earliest, where a μop may start on core ``k`` once ``k`` is free and every producer's
    data has arrived (its end plus :meth:`Accelerator.comm_delay` from the producer's core); ties go
    to the higher priority, then the lower μop index, then the lower core index. Used by
    :func:`list_schedule` on instances with transfer delays of at most :data:`ETF_LIMIT` μops;
    Graham's bound does not hold with delays.

    A μop's arrival times on the cores are fixed once it is ready (its producers are placed), so
    they are computed once, in O(in-degree · m); each step then takes the earliest start of every
    ready μop from one ``(ready × m)`` array: O(n · ready · m) in all, in array operations.
    """
    g, acc = instance.graph, instance.accelerator
    dur = instance.duration
    prio = np.asarray(resolve_priority(instance, priority), dtype=float)
    hops = acc.hops()
    order_in = np.argsort(g.dst, kind="stable")  # CSR position -> edge index
    indeg = np.diff(g.pred_ptr).copy()
    start = np.full(g.n, -1, dtype=np.int64)
    core = np.full(g.n, -1, dtype=np.int64)
    end = np.zeros(g.n, dtype=np.int64)
    free = np.zeros(instance.m, dtype=np.int64)
    arrive = np.zeros((g.n, instance.m), dtype=np.int64)

    def becomes_ready(i: int) -> None:
        e = order_in[g.pred_ptr[i] : g.pred_ptr[i + 1]]
        if e.size:
            delay = acc.comm_delay(hops[core[g.src[e]]], g.bytes[e][:, None])
            arrive[i] = (end[g.src[e]][:, None] + delay).max(axis=0)

    ready: list[int] = np.flatnonzero(indeg == 0).tolist()
    for i in ready:
        becomes_ready(i)
    for _ in range(g.n):
        r = np.asarray(ready)
        est = np.maximum(free, arrive[r])
        k_r = est.argmin(axis=1)
        t_r = est[np.arange(r.size), k_r]
        first = t_r == t_r.min()
        first &= prio[r] == prio[r][first].max()
        pick = int(np.flatnonzero(first)[np.argmin(r[first])])
        i, k, t = int(r[pick]), int(k_r[pick]), int(t_r[pick])
        start[i], core[i], end[i] = t, k, t + int(dur[i, k])
        free[k] = end[i]
        ready[pick] = ready[-1]
        ready.pop()
        for j in g.succs(i):
            indeg[j] -= 1
            if indeg[j] == 0:
                becomes_ready(int(j))
                ready.append(int(j))
    return Schedule(start, core)


def priority_list_schedule(
    instance: SchedulingInstance, priority: Priority = "blevel", gaps: int = GAPS
) -> Schedule:
    """Priority list scheduling with NoC delays, in the spirit of HEFT (Topcuoglu et al. 2002,
    §4.1–4.2), in time about O(E·m + n·m·(gaps + 1) + n log n).

    The μops are ordered once by decreasing priority, ties in topological order (a producer
    before its consumers, zero latencies included; a priority that is not monotone along the
    edges gives the ready-list order instead, :func:`.priority_order`). ``"blevel"`` here is the
    b-level with transfer costs, HEFT's upward rank (:func:`.upward_rank`: mean latency over the
    cores, and on each edge its mean :meth:`Accelerator.comm_delay` over the ``m(m−1)`` ordered
    pairs of distinct cores); without delays on identical cores it is the plain b-level. Every
    other name or function is used as given.

    In that order each μop goes to the core where it finishes earliest (:func:`.place_in_order`):
    on core ``k`` it may start once its data has arrived, at max over incoming edges of the
    producer's end + ``comm_delay(hops[producer's core, k], bytes)``, and once ``k`` is idle for
    its whole latency, after ``k``'s last μop or in one of the ``gaps`` latest idle gaps ``k``
    has between μops (HEFT's insertion, bounded; ``gaps=0``: append only). Ties go to the lowest
    core index.

    Guarantees: every start respects each producer's end plus the transfer delay between their
    cores, and no two μops overlap on a core (the schedule passes :func:`npusched.verify.verify`);
    the result is deterministic; with unbounded gaps it is HEFT's rule. It is not an
    approximation: with delays no bound relative to the optimum is claimed, and even without
    delays it is not Graham's non-delay rule (a core may wait for a μop high in the list while a
    later one is ready), so Graham's bound is not claimed.
    """
    if isinstance(priority, str) and priority == "blevel":
        prio = upward_rank(instance)
    else:
        prio = resolve_priority(instance, priority)
    return place_in_order(instance, priority_order(instance.graph, prio), gaps)


def graham_bound(instance: SchedulingInstance) -> float:
    """``W/m + (1 − 1/m)·CP``, the makespan no list schedule on identical cores exceeds."""
    d: IntArray = instance.min_duration
    cp = int((instance.graph.heads(d) + d).max())
    return float(d.sum()) / instance.m + (1.0 - 1.0 / instance.m) * cp
