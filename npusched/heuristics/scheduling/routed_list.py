"""List scheduling with transfers reserved on shared links (the role Stream's list scheduler plays,
Stream paper §III-E, on the routed model of :mod:`npusched.problem.scheduling.routed`).

μops are taken in priority order once all their producers are placed. For each allowed core the
μop's inputs are booked tentatively: every missing producer output and DRAM tensor is put into the
earliest window where all links of its route are free (insertion into gaps, so DRAM fetches move
as early as the off-chip link allows). The μop goes to the core where it finishes first; its
transfers are then committed. Cores run their μops in the order they receive them.

A copy carries what the consumers on its core read
(:meth:`~npusched.problem.scheduling.routed.RoutedInstance.copy_data`), which is known only once
all of them are placed. The first consumer on a core books the copy of the most they could
read: what the consumers that may run there read (exact when the allocation is fixed; the whole
output in Stream's exports). The schedule then times the actual, no larger, copy at the end of
the booked window, which holds it.
"""

from __future__ import annotations

import heapq
import time
from bisect import bisect_right

import numpy as np

from npusched.heuristics.scheduling.list_scheduling import Priority, resolve_priority
from npusched.problem.scheduling.routed import (
    RoutedInstance,
    RoutedSchedule,
    Topology,
    required_transfers,
)

OPEN = np.iinfo(np.int64).max
"""No finish to beat yet."""

SCAN = 16
"""Busy intervals :meth:`Timeline.first_free` steps over one by one before it searches the gaps
at once."""


class Timeline:
    """Busy intervals of one link (or bus), sorted and disjoint."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def first_free(self, t: int, d: int) -> int:
        """The earliest ``t' ≥ t`` with ``[t', t' + d)`` free (intervals are disjoint and
        sorted, so each one in the way moves ``t'`` to its end and the next is the only one
        left to check)."""
        starts, ends = self.starts, self.ends
        j = bisect_right(ends, t)
        for _ in range(SCAN):
            if j >= len(starts) or starts[j] >= t + d:
                return t
            t = ends[j]
            j += 1
        # a long run in the way (a busy off-chip port): the first gap of d after interval
        # j - 1, searched in blocks that double (so the cost is what lies in the way)
        i, size = j - 1, SCAN
        while i < len(starts) - 1:
            top = min(i + size, len(starts) - 1)
            fit = np.flatnonzero(np.subtract(starts[i + 1 : top + 1], ends[i:top]) >= d)
            if fit.size:
                return ends[i + int(fit[0])]
            i, size = top, 2 * size
        return ends[-1]

    def after(self, t: int) -> list[tuple[int, int]]:
        """Busy intervals that end after ``t``."""
        j = bisect_right(self.ends, t)
        return list(zip(self.starts[j:], self.ends[j:], strict=True))

    def last_end(self, t: int) -> int:
        """The end of the last busy interval that ends by ``t`` (``-1``: none)."""
        j = bisect_right(self.ends, t)
        return self.ends[j - 1] if j else -1

    def add(self, t: int, d: int) -> int:
        """Mark ``[t, t + d)`` busy, in start order, merged with the intervals it touches (the
        same busy time in fewer intervals: a port busy back to back is one interval, which
        :meth:`first_free` steps over at once), and return its lane (0: a timeline is one). The
        caller makes sure it is free (:meth:`first_free`); an overlap is not detected and
        breaks the lists' invariant."""
        if d <= 0:
            return 0
        starts, ends = self.starts, self.ends
        j = bisect_right(starts, t)
        before = j > 0 and ends[j - 1] == t
        after = j < len(starts) and starts[j] == t + d
        if before and after:
            ends[j - 1] = ends.pop(j)
            del starts[j]
        elif before:
            ends[j - 1] = t + d
        elif after:
            starts[j] = t
        else:
            starts.insert(j, t)
            ends.insert(j, t + d)
        return 0

    def remove(self, t: int, d: int, lane: int = 0) -> None:
        """Free ``[t, t + d)``, booked by :meth:`add` (so one busy interval holds it): a
        tentative booking undone."""
        if d <= 0:
            return
        starts, ends = self.starts, self.ends
        j = bisect_right(starts, t) - 1
        assert j >= 0 and ends[j] >= t + d, "remove: the window was not booked"
        s, e = starts[j], ends[j]
        del starts[j], ends[j]
        for a, b in ((t + d, e), (s, t)):  # the parts either side, in order
            if b > a:
                starts.insert(j, a)
                ends.insert(j, b)


class Lanes:
    """A resource that carries ``P`` transfers at once (:attr:`Link.lanes
    <npusched.problem.scheduling.routed.Link.lanes>`), as ``P`` :class:`Timeline` s: a transfer
    takes one lane for its whole window, the free one whose last booking ends latest before it
    (the best fit). Lanes are a restriction of the resource's rule, at most ``P`` at once, which
    the verifier and the exact models state; a lane costs what a timeline costs."""

    def __init__(self, lanes: int) -> None:
        self.lanes = [Timeline() for _ in range(lanes)]

    def first_free(self, t: int, d: int) -> int:
        """The earliest ``t' ≥ t`` with ``[t', t' + d)`` free on some lane."""
        return min(line.first_free(t, d) for line in self.lanes)

    def add(self, t: int, d: int) -> int:
        """Book ``[t, t + d)`` on the best-fitting lane free over it, and return the lane."""
        free = [k for k, line in enumerate(self.lanes) if line.first_free(t, d) == t]
        assert free, "Lanes.add: no lane is free over the window"
        k = max(free, key=lambda k: self.lanes[k].last_end(t))
        self.lanes[k].add(t, d)
        return k

    def remove(self, t: int, d: int, lane: int = 0) -> None:
        """Free ``[t, t + d)`` on ``lane`` (:meth:`Timeline.remove`)."""
        self.lanes[lane].remove(t, d)


Line = Timeline | Lanes
"""A resource's bookings."""

Booking = tuple[tuple[int, int], tuple[int, ...], int, int, tuple[int, ...]]
"""A transfer booked for a candidate core: (source, core), resources, start, cycles, lanes."""


CHECK_EVERY = 64
"""How many μops :func:`routed_list_schedule` places between two reads of the clock."""

def timelines(topo: Topology) -> list[Line]:
    """One :class:`Timeline` per resource of ``topo``, :class:`Lanes` where it carries more
    than one transfer at once."""
    return [Lanes(int(k)) if k > 1 else Timeline() for k in topo.lanes.tolist()]


def earliest(lines: list[Line], route: tuple[int, ...], r: int, d: int) -> int:
    """Earliest ``t ≥ r`` with ``[t, t + d)`` free on every resource of ``route``: each resource
    in turn moves ``t`` to its first window free from ``t`` (each search skips only times where
    ``[t, t + d)`` is busy, so it stops at the earliest), until a full pass over the route moves
    it no more."""
    t = r
    moved = True
    while moved:
        moved = False
        for x in route:
            u = lines[x].first_free(t, d)
            if u != t:
                t, moved = u, True
    return t


def routed_list_schedule(inst: RoutedInstance, priority: Priority = "blevel",
                         until: float | None = None) -> RoutedSchedule:  # fmt: skip
    """A feasible :class:`RoutedSchedule` built greedily (see the module docstring). With
    ``until`` (a ``time.perf_counter()`` value) it raises ``TimeoutError`` once that time has
    passed (read every :data:`CHECK_EVERY` μops)."""
    g, topo, n, m = inst.graph, inst.topology, inst.n, inst.m
    dur = inst.duration.tolist()
    allowed = [np.flatnonzero(row).tolist() for row in inst.mask]
    prio = _priority(inst, priority)
    res = [tuple(int(topo.resource_of[x]) for x in r) for r in all_routes(inst)]
    lines = timelines(topo)
    dram_needs: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
    for k, tensor in enumerate(inst.dram):
        if tensor.data > 0:
            for i in tensor.consumers.tolist():
                dram_needs[i].append((-1 - k, 0, tensor.data))
    in_edges = np.argsort(g.dst, kind="stable").tolist()
    ptr, src_of, bytes_of = g.pred_ptr.tolist(), g.src.tolist(), g.bytes.tolist()
    most = _largest_copies(inst)
    arrived: dict[tuple[int, int], int] = {}  # (source, core) -> arrival cycle
    start = np.full(n, -1, dtype=np.int64)
    core, end, free = [-1] * n, [0] * n, [0] * m
    indeg = np.diff(g.pred_ptr).copy()
    ready = [(-prio[i], int(i)) for i in np.flatnonzero(indeg == 0)]
    heapq.heapify(ready)
    placed = 0
    while ready:
        _, i = heapq.heappop(ready)
        placed += 1
        if until is not None and placed % CHECK_EVERY == 0 and time.perf_counter() > until:
            raise TimeoutError(f"the routed list ran out of time after {placed} of {n} μops")
        ins = [(src_of[e], bytes_of[e]) for e in in_edges[ptr[i] : ptr[i + 1]]]
        best: tuple[int, int, list[Booking]] | None = None
        for c in allowed[i]:
            # a core that cannot finish before the best so far is dropped as soon as it shows
            late = OPEN if best is None else best[0] - dur[i][c]
            est = free[c]
            booked = []
            needs: list[tuple[int, int, int]] = []  # (source key, release, data)
            for p, bits in ins:
                if bits == 0 or core[p] == c:
                    est = max(est, end[p])
                else:
                    needs.append((p, end[p], most[p * m + c]))
            needs += dram_needs[i]
            seen: set[int] = set()
            for src, release, data in sorted(needs, key=lambda x: x[1]):
                if est >= late:
                    break
                if src in seen:
                    continue
                seen.add(src)
                if (src, c) in arrived:
                    est = max(est, arrived[(src, c)])
                    continue
                a = -1 if src < 0 else core[src]
                route = res[route_id(a, c, m)]
                cyc = topo.cycles(data, inst.route(a, c))
                t = earliest(lines, route, release, cyc)
                held = tuple(lines[x].add(t, cyc) for x in route)  # tentatively
                booked.append(((src, c), route, t, cyc, held))
                est = max(est, t + cyc)
            for _, route, t, cyc, held in booked:  # undone: the next core books afresh
                for x, lane in zip(route, held, strict=True):
                    lines[x].remove(t, cyc, lane)
            if est < late:  # finishes before the best (ties go to the lower core, tried first)
                best = (est + dur[i][c], c, booked)
        assert best is not None
        fin, c, booked = best
        for key, route, t, cyc, _ in booked:
            for x in route:
                lines[x].add(t, cyc)
            arrived[key] = t + cyc
        start[i], core[i], end[i] = fin - dur[i][c], c, fin
        free[c] = fin
        for j in g.succs(i).tolist():
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, (-prio[j], j))
    if (start < 0).any():
        raise RuntimeError("routed list scheduling stalled: the graph is not acyclic")
    return _with_transfers(inst, start, np.array(core, dtype=np.int64), arrived)


def _largest_copies(inst: RoutedInstance) -> dict[int, int]:
    """``p · m + c`` → the largest copy of producer ``p``'s output core index ``c`` can need:
    :meth:`~npusched.problem.scheduling.routed.RoutedInstance.copy_data` of what the consumers
    that may run on ``c`` read."""
    g, m = inst.graph, inst.m
    data = np.flatnonzero(g.bytes > 0)
    e, c = np.nonzero(inst.mask[g.dst[data]])
    key = g.src[data][e] * m + c
    keys, inv = np.unique(key, return_inverse=True)
    read = np.zeros(keys.size, dtype=np.int64)
    np.add.at(read, inv, inst.read_data[data][e])
    copy = inst.copy_data(keys // m, read)
    return dict(zip(keys.tolist(), copy.tolist(), strict=True))


def _priority(inst: RoutedInstance, priority: Priority) -> np.ndarray:
    """``blevel``/``alap`` (longest path to the end) or ``asap`` at the fastest allowed latencies,
    or a user function of the base instance."""
    if not isinstance(priority, str):
        return resolve_priority(inst.base, priority)
    d, g = inst.min_duration, inst.graph
    if priority in ("blevel", "alap"):
        return g.tails(d).astype(float)
    if priority == "asap":
        return -g.heads(d).astype(float)
    raise ValueError(f"unknown priority {priority!r}; choose blevel, alap or asap")


def route_id(a: int, c: int, m: int) -> int:
    """Index of the route from core index ``a`` (``-1``: DRAM) to ``c`` in :func:`all_routes`."""
    return (a + 1) * m + c


def all_routes(inst: RoutedInstance) -> list[tuple[int, ...]]:
    """Routes indexed by :func:`route_id` (source ``-1`` is the DRAM core)."""
    m = inst.m
    dram = inst.topology.dram is not None
    return [
        inst.route(a, c) if (a != c and (a >= 0 or dram)) else ()
        for a in range(-1, m)
        for c in range(m)
    ]


def _with_transfers(
    inst: RoutedInstance,
    start: np.ndarray,
    core: np.ndarray,
    arrived: dict[tuple[int, int], int],
) -> RoutedSchedule:
    """Attach the booked transfer windows in the canonical order of the assignment (each copy
    at the end of its window, which is no shorter)."""
    tr = required_transfers(inst, core)
    tend = np.array([arrived[tr.key(t)] for t in range(tr.size)], dtype=np.int64)
    return RoutedSchedule(start, core, tend - tr.cycles, tend)
