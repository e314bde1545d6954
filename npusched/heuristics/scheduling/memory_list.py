"""Memory-aware list scheduling on routed instances with a memory capacity per core (Stream §III-E,
Fig. 8, with the lifetime rules of §III-F enforced instead of only traced).

Stream's scheduler keeps a pool of candidate CNs (all producers scheduled) and takes the best by a
user priority:

- ``latency``: the candidate whose producers finished earliest (its data has waited longest);
- ``memory``: the candidate of the deepest layer (highest layer index), so data deeper in the
  fused stack is consumed and freed early.

Data lives on a core by the rules of
:func:`npusched.verify.scheduling.routed.residency` (Stream §III-F): a producer's output from the
producer's start until its last local consumer and its last outgoing transfer end; a received
output or DRAM tensor from the start of its transfer until the last μop it serves ends. While a
tensor still has consumers to schedule its end is unknown and it counts as resident for ever; a
new allocation on core ``c`` at ``t`` is admitted only when the data resident at every instant
from ``t`` on, plus the new data, stays within ``c``'s capacity. Closing a lifetime only lowers
the profile, so every schedule returned keeps every core within its capacity at every instant.

A candidate whose data cannot fit, however late, is set aside and the next one is tried (placing
another may end lifetimes).

**Eviction.** When no ready candidate fits, the best one (by the priority) makes room on its core
by evicting data that still has consumers to come, first in first out (by allocation), weights
before activations: a weight (DRAM tensor) is dropped once its last placed consumer there ends;
an activation is written back to DRAM over the core's off-chip route (a transfer of kind
``evict``, once per tensor; a copy of a tensor already in DRAM is just dropped) and its space is
freed when the write-back ends. A later consumer on that core fetches the data again from DRAM
(kind ``refetch``, after the write-back has ended); so does another core whose first copy is
sent while the producer's own copy is evicted (that re-fetch replaces the required transfer
from the producer's core). Never evicted: the candidate's own inputs. The schedule carries its
memory records and these moves (:class:`~npusched.problem.scheduling.routed.Moves`). With a
route from every core to DRAM no schedule can then deadlock: what stays is the candidate's own
operands, which fit (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.operand_data`);
without one (a mesh without DRAM) only weights can be evicted, and when even that leaves too
little room the scheduler stops with :class:`MemoryDeadlock` naming the core.

Deviations from Stream, and why:

- **Eviction only when no ready CN fits without it, on any core.** Stream evicts as soon as the
  next CN's weights do not fit; here a CN that does not fit is first set aside for one that
  does (on its core or another), which costs no traffic: on both shared exports no eviction is
  then needed even with every memory cut to a quarter. A core may wait meanwhile.
- **Weights are freed after their last consumer on the core** (their consumers are known, the
  allocation being fixed), where Stream keeps them until evicted: it can only lower the profile.
- **The allocation is fixed**: Stream's scheduler takes one layer–core allocation (its GA chooses
  it); on an instance with a free allocation the preferred one (Stream's) is used.
- **Transfers are inserted into earlier gaps of the links**, as in
  :func:`~npusched.heuristics.scheduling.routed_list.routed_list_schedule` (Stream serves them
  first-come-first-served), but none into a core starts before the start of the μop placed
  :data:`LOOKBACK` μops earlier on it, so that lifetimes over by then can be forgotten (the cores
  run their μops in the order they receive them): the work per placement stays bounded.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from npusched.heuristics.scheduling.routed_list import Timeline, all_routes, earliest, route_id
from npusched.problem.scheduling.routed import (
    EVICT,
    REFETCH,
    Moves,
    Residency,
    RoutedInstance,
    RoutedSchedule,
    required_transfers,
)

OPEN = np.iinfo(np.int64).max
"""The end of a lifetime that still has consumers to schedule."""

LOOKBACK = 1024
"""How many μops back on a core a transfer into it may start (see the module docstring)."""


class MemoryDeadlock(RuntimeError):
    """No candidate μop's data fits on its core however late it starts, even after evicting all
    that may be evicted."""


@dataclass
class Profile:
    """Data resident on one core as a step function: ``level[j]`` from ``time[j]`` to
    ``time[j + 1]`` (0 before the first), with lifetimes still open counted for ever.
    Times before ``floor`` are forgotten (no query reaches back there)."""

    capacity: int
    time: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    level: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    held: dict[int, int] = field(default_factory=dict)
    open_bits: int = 0

    def earliest_fit(self, r: int, b: int) -> int | None:
        """The earliest ``t ≥ r`` from which ``b`` more bits fit at every later instant, or
        ``None`` when they never fit (the open lifetimes alone leave too little room).

        The maximum of the step function over ``[t, ∞)`` falls only where a lifetime ends, so
        the answer is ``r`` or one of the later breakpoints."""
        room = self.capacity - b
        if self.open_bits > room:
            return None
        j = max(int(np.searchsorted(self.time, r, side="right")) - 1, 0)
        suffix = np.maximum.accumulate(self.level[j:][::-1])[::-1]
        k = int(np.argmax(suffix <= room))  # exists: the last level is the open bits
        return r if k == 0 else int(self.time[j + k])

    def _shift(self, t: int, b: int) -> None:
        """Add ``b`` to the level from ``t`` on."""
        t = max(t, int(self.time[0]))
        j = int(np.searchsorted(self.time, t))
        if j == self.time.size or self.time[j] != t:
            self.time = np.insert(self.time, j, t)
            self.level = np.insert(self.level, j, self.level[j - 1])
        self.level[j:] += b

    def add(self, key: int, t: int, b: int) -> None:
        self._shift(t, b)
        self.held[key] = b
        self.open_bits += b

    def close(self, key: int, t: int) -> None:
        b = self.held.pop(key)
        self._shift(t, -b)
        self.open_bits -= b

    def forget_before(self, t: int) -> None:
        """Keep the step function from ``t`` on only."""
        j = int(np.searchsorted(self.time, t, side="right")) - 1
        if j > 0:
            self.time, self.level = self.time[j:], self.level[j:]


def _layers(inst: RoutedInstance) -> np.ndarray:
    """Layer index per μop: the instance's own (Stream's ``layer_id``) or the depth over data
    edges."""
    if inst.layer is not None:
        return np.asarray(inst.layer, dtype=np.int64)
    g = inst.graph
    depth = np.zeros(inst.n, dtype=np.int64)
    in_edges = np.argsort(g.dst, kind="stable")
    for q in g.topo.tolist():
        e = in_edges[g.pred_ptr[q] : g.pred_ptr[q + 1]]
        e = e[g.bytes[e] > 0]
        if e.size:
            depth[q] = int(depth[g.src[e]].max()) + 1
    return depth


def memory_list_schedule(inst: RoutedInstance, priority: str = "latency") -> RoutedSchedule:
    """A :class:`RoutedSchedule` that keeps every core within ``inst.capacity`` (see the module
    docstring); ``priority`` is Stream's ``latency`` or ``memory``."""
    if inst.capacity is None:
        raise ValueError("memory-aware scheduling needs an instance with a memory capacity")
    if priority not in ("latency", "memory"):
        raise ValueError(f"unknown memory-aware priority {priority!r}; choose latency or memory")
    if not inst.fixed_allocation:
        if inst.preferred is None:
            raise ValueError("memory-aware scheduling needs a fixed (or preferred) allocation")
        inst = inst.restricted(inst.preferred)
    return _Scheduler(inst, priority).run()


class _Scheduler:
    """The state of one memory-aware list scheduling run."""

    def __init__(self, inst: RoutedInstance, priority: str) -> None:
        g, n, m = inst.graph, inst.n, inst.m
        self.inst, self.g = inst, g
        self.core = np.argmax(inst.mask, axis=1).astype(np.int64)
        self.dur = inst.duration[np.arange(n), self.core]
        self.output = inst.output_data
        self.in_edges = np.argsort(g.dst, kind="stable")
        self.routes = [
            tuple(int(inst.topology.resource_of[x]) for x in r) for r in all_routes(inst)
        ]
        self.lines = [Timeline() for _ in range(inst.topology.num_resources)]
        self.none: list[list[tuple[int, int]]] = [[] for _ in self.lines]  # no tentative bookings
        assert inst.capacity is not None
        self.mem = [Profile(int(c)) for c in inst.capacity]
        self.dram_of: list[list[int]] = [[] for _ in range(n)]
        for k, tensor in enumerate(inst.dram):
            if tensor.data > 0:
                for i in tensor.consumers.tolist():
                    self.dram_of[i].append(k)
        # consumers still to schedule, per lifetime: (tensor, core) with tensor = producer μop
        # or -1 - k for DRAM tensor k; a producer's own copy is (p, core[p]).
        tr = required_transfers(inst, self.core)
        self.pending: dict[tuple[int, int], int] = {}
        for p in range(n):
            if self.output[p] > 0:
                self.pending[(p, int(self.core[p]))] = 0
        src, dst = g.src[g.bytes > 0], g.dst[g.bytes > 0]
        local = self.core[src] == self.core[dst]
        for p in (np.unique(src[local] * n + dst[local]) // n).tolist():
            self.pending[(p, int(self.core[p]))] += 1  # a local consumer
        for t in range(tr.size):
            key = tr.key(t)
            self.pending[key] = int(np.unique(tr.serves[t]).size)
            if key[0] >= 0:
                self.pending[(key[0], int(self.core[key[0]]))] += 1  # the send itself
        self.last_use = dict.fromkeys(self.pending, 0)
        streamed = inst.is_streamed
        self.buffered = {(p, c) for p, c in self.pending if p >= 0 and c == self.core[p]}
        self.buffered = {key for key in self.buffered if not streamed[key[0]]}
        self.buffered |= {tr.key(t) for t in range(tr.size) if not streamed[tr.serves[t]].all()}
        self.key_id = {key: k for k, key in enumerate(self.pending)}
        self.keys = list(self.pending)
        self.arrived: dict[tuple[int, int], int] = {}
        self.start = np.full(n, -1, dtype=np.int64)
        self.end = np.zeros(n, dtype=np.int64)
        self.free = np.zeros(m, dtype=np.int64)
        self.recent: list[deque[int]] = [deque(maxlen=LOOKBACK) for _ in range(m)]
        self.layer = _layers(inst)
        self.priority = priority
        self.sent: set[tuple[int, int]] = set()
        self.first: dict[tuple[int, int], int] = {}  # first arrival (the required transfer)
        self.evicted: dict[tuple[int, int], int] = {}  # evicted lifetime -> when it ended
        self.in_dram: dict[int, int] = {}  # activation -> end of its write-back
        self.rec: list[list[int]] = []  # [core, tensor, bits, alloc, free]
        self.open_rec: dict[tuple[int, int], int] = {}
        self.moves: list[tuple[int, int, int, int, int, int]] = []
        self.back = (
            [tuple(int(inst.topology.resource_of[x]) for x in inst.route(c, -1)) for c in range(m)]
            if inst.can_write_back
            else None
        )

    def key(self, i: int, ready: int) -> tuple[int, int, int]:
        if self.priority == "memory":
            return (-int(self.layer[i]), ready, i)
        return (ready, -int(self.layer[i]), i)

    def run(self) -> RoutedSchedule:
        g, n = self.g, self.inst.n
        indeg = np.diff(g.pred_ptr).copy()
        ready_at = np.zeros(n, dtype=np.int64)
        pool = [self.key(i, 0) for i in np.flatnonzero(indeg == 0).tolist()]
        heapq.heapify(pool)
        while pool:
            aside = []
            while pool:
                cand = heapq.heappop(pool)
                if self.fits(cand[2]):
                    break
                aside.append(cand)
            else:
                cand = aside.pop(0)
                if not self.evict_for(cand[2]):
                    self.deadlock([cand[2]] + [c[2] for c in aside])
            i = cand[2]
            self.place(i)
            for c in aside:
                heapq.heappush(pool, c)
            for j in g.succs(i).tolist():
                indeg[j] -= 1
                ready_at[j] = max(ready_at[j], int(self.end[i]))
                if indeg[j] == 0:
                    heapq.heappush(pool, self.key(j, int(ready_at[j])))
        tr = required_transfers(self.inst, self.core)
        tend = np.array([self.first.get(tr.key(t), -1) for t in range(tr.size)], dtype=np.int64)
        tstart = np.where(tend >= 0, tend - tr.cycles, -1)  # -1: replaced by a re-fetch
        rec = np.array(self.rec, dtype=np.int64).reshape(-1, 5).T
        mv = np.array(self.moves, dtype=np.int64).reshape(-1, 6).T
        return RoutedSchedule(self.start, self.core, tstart, tend, Residency(*rec), Moves(*mv))

    def needs(self, i: int) -> list[tuple[int, int, int]]:
        """Data μop ``i`` has yet to receive on its core: (tensor, release, bits), by release."""
        g, c = self.g, int(self.core[i])
        edges = self.in_edges[g.pred_ptr[i] : g.pred_ptr[i + 1]]
        out: dict[int, tuple[int, int]] = {}
        for e in edges.tolist():
            p = int(g.src[e])
            if g.bytes[e] > 0 and (p, c) in self.evicted:
                out[p] = (max(self.in_dram[p], self.evicted[(p, c)]), int(self.output[p]))
            elif g.bytes[e] > 0 and (p, c) not in self.arrived and self.home_evicted(p, c):
                out[p] = (self.in_dram[p], int(self.output[p]))  # sent from DRAM instead
            elif g.bytes[e] > 0 and self.core[p] != c and (p, c) not in self.arrived:
                # sent from the producer's core: once its output is made (or fetched back)
                home = self.arrived.get((p, int(self.core[p])), 0)
                out[p] = (max(int(self.end[p]), home), int(self.output[p]))
        for k in self.dram_of[i]:
            if (-1 - k, c) not in self.arrived:
                out[-1 - k] = (self.evicted.get((-1 - k, c), 0), self.inst.dram[k].data)
        return sorted(((s, r, b) for s, (r, b) in out.items()), key=lambda x: x[1])

    def bits(self, key: tuple[int, int], data: int) -> int:
        """Space lifetime ``key`` takes on its core: none for data of streamed μops."""
        return data if key in self.buffered else 0

    def new_bits(self, i: int) -> int:
        c = int(self.core[i])
        into = sum(self.bits((s, c), b) for s, _, b in self.needs(i))
        return into + self.bits((i, c), int(self.output[i]))

    def fits(self, i: int) -> bool:
        mem = self.mem[int(self.core[i])]
        return mem.open_bits + self.new_bits(i) <= mem.capacity

    def place(self, i: int) -> None:
        g, c, inst = self.g, int(self.core[i]), self.inst
        mem = self.mem[c]
        est = int(self.free[c])
        for e in self.in_edges[g.pred_ptr[i] : g.pred_ptr[i + 1]].tolist():
            p = int(g.src[e])
            est = max(est, int(self.end[p]))
            if g.bytes[e] > 0 and self.core[p] != c and (p, c) in self.arrived:
                est = max(est, self.arrived[(p, c)])
        for k in self.dram_of[i]:
            est = max(est, self.arrived.get((-1 - k, c), 0))
        for src, release, bits in self.needs(i):
            again = (src, c) in self.evicted or (src >= 0 and self.home_evicted(src, c))
            a = -1 if src < 0 or again else int(self.core[src])
            cyc = inst.topology.cycles(bits, inst.route(a, c))
            space = self.bits((src, c), bits)
            at = mem.earliest_fit(max(release, self.floor(c)), space)
            assert at is not None  # fits() admitted the whole set
            route = self.routes[route_id(a, c, inst.m)]
            t = earliest(self.lines, self.none, route, at, cyc)
            for x in route:
                self.lines[x].add(t, cyc)
            self.arrived[(src, c)] = t + cyc
            if again:
                self.evicted.pop((src, c), None)
                self.moves.append((REFETCH, src, -1, c, t, t + cyc))
            else:
                self.first[(src, c)] = t + cyc
            if space:
                self.hold((src, c), t, space)
            if src >= 0 and (src, c) not in self.sent and self.core[src] != c:
                self.sent.add((src, c))  # the required send, from the core or from DRAM
                self.use((src, int(self.core[src])), 0 if again else t + cyc)
            est = max(est, t + cyc)
        if self.bits((i, c), int(self.output[i])):
            at = mem.earliest_fit(est, int(self.output[i]))
            assert at is not None
            est = at
            self.hold((i, c), est, int(self.output[i]))
        self.start[i], self.end[i] = est, est + int(self.dur[i])
        self.free[c] = self.end[i]
        self.recent[c].append(est)
        for key in self.inputs(i):
            self.use(key, int(self.end[i]))
        mem.forget_before(self.floor(c))

    def floor(self, c: int) -> int:
        """No transfer into core ``c`` starts before the start of the μop placed
        :data:`LOOKBACK` μops ago on it."""
        recent = self.recent[c]
        return recent[0] if len(recent) == LOOKBACK else 0

    def inputs(self, i: int) -> set[tuple[int, int]]:
        """The lifetimes μop ``i`` reads on its core."""
        g, c = self.g, int(self.core[i])
        edges = self.in_edges[g.pred_ptr[i] : g.pred_ptr[i + 1]]
        keys = {(int(g.src[e]), c) for e in edges.tolist() if g.bytes[e] > 0}
        return keys | {(-1 - k, c) for k in self.dram_of[i]}

    def use(self, key: tuple[int, int], until: int) -> None:
        """One consumer (or send) of lifetime ``key`` is placed and done by ``until``; the
        lifetime closes with its last one."""
        self.last_use[key] = max(self.last_use[key], until)
        self.pending[key] -= 1
        if self.pending[key] == 0 and key in self.open_rec:
            self.let_go(key, self.last_use[key])

    def hold(self, key: tuple[int, int], t: int, bits: int) -> None:
        """Lifetime ``key`` takes ``bits`` on its core from ``t`` (a new memory record)."""
        self.mem[key[1]].add(self.key_id[key], t, bits)
        self.open_rec[key] = len(self.rec)
        self.rec.append([key[1], key[0], bits, t, -1])

    def let_go(self, key: tuple[int, int], t: int) -> None:
        """Lifetime ``key`` ends at ``t`` (its record is closed)."""
        self.mem[key[1]].close(self.key_id[key], t)
        self.rec[self.open_rec.pop(key)][4] = t

    def evict_for(self, i: int) -> bool:
        """Evict data from μop ``i``'s core (module docstring) until ``i`` fits; whether it
        does."""
        c = int(self.core[i])
        mem, need = self.mem[c], self.new_bits(i)
        keep = self.inputs(i) | {(i, c)}
        victims = [
            key
            for key in map(self.keys.__getitem__, mem.held)
            if key not in keep and (key[0] < 0 or self.back is not None or key[0] in self.in_dram)
        ]
        victims.sort(key=lambda k: (k[0] >= 0, self.rec[self.open_rec[k]][3]))
        for key in victims:
            if mem.open_bits + need <= mem.capacity:
                break
            self.evict(key)
        return mem.open_bits + need <= mem.capacity

    def home_evicted(self, p: int, c: int) -> bool:
        """Producer ``p``'s own copy is evicted, so a first copy for core ``c`` comes from
        DRAM."""
        return self.core[p] != c and (p, int(self.core[p])) in self.evicted

    def evict(self, key: tuple[int, int]) -> None:
        """Drop ``key`` from its core (writing an activation back to DRAM first, once); its
        later consumers there fetch it again."""
        s, c = key
        since = self.arrived.pop(key, None)
        t0 = max(self.last_use[key], since if since is not None else int(self.end[s]))
        if s >= 0 and s not in self.in_dram:
            assert self.back is not None
            route = self.back[c]
            cyc = self.inst.topology.cycles(int(self.output[s]), self.inst.route(c, -1))
            t = earliest(self.lines, self.none, route, t0, cyc)
            for x in route:
                self.lines[x].add(t, cyc)
            self.moves.append((EVICT, s, c, -1, t, t + cyc))
            self.in_dram[s] = t0 = t + cyc
        self.let_go(key, t0)
        self.evicted[key] = t0

    def deadlock(self, waiting: list[int]) -> None:
        i = waiting[0]
        c = int(self.core[i])
        mem, ids = self.mem[c], self.g.ids
        need = self.new_bits(i)
        raise MemoryDeadlock(
            f"core {self.inst.accelerator.cores[c].id}: μop {ids[i]} needs {need} "
            f"{self.inst.data_unit} but {mem.open_bits} of the {mem.capacity} are held by data "
            "still waiting for consumers that may not be evicted (its own inputs, or "
            f"activations without a route to DRAM), and no other of the {len(waiting)} ready "
            "μops fits"
        )
