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
another may end lifetimes), up to :data:`LOOKAHEAD` candidates a step: a pool of thousands of
ready μops that do not fit (a GEMM cut into column blocks that all wait for their weights) would
otherwise be scanned whole at every step, quadratic in μops.

**Eviction.** When no ready candidate fits, the best one (by the priority) makes room on its core
by evicting data that still has consumers to come, the least important first: the uses it has
left on the core times its size (Stream's current release; among equals the one booked first,
:meth:`~npusched.heuristics.scheduling.lifetimes.Lifetimes.importance`). A weight (DRAM tensor)
is dropped once its last placed consumer there ends;
an activation is written back to DRAM over the core's off-chip route (a transfer of kind
``evict``, once per tensor; a copy of a tensor already in DRAM is just dropped) and its space is
freed when the write-back ends. A later consumer on that core fetches the data again from DRAM
(kind ``refetch``, after the write-back has ended); so does another core whose first copy is
sent while the producer's own copy is evicted (that re-fetch replaces the required transfer
from the producer's core). Never evicted: the candidate's own inputs. The schedule carries its
memory records and these moves (:class:`~npusched.problem.scheduling.routed_schedule.Moves`). With a
route from every core to DRAM no schedule can then deadlock: what stays is the candidate's own
operands, which fit (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.operand_data`
under the allocation, checked first: an allocation whose copies do not fit raises
:class:`MemoryDeadlock` at once); without one (a mesh without DRAM) only weights can be
evicted, and when even that leaves too little room the scheduler stops with
:class:`MemoryDeadlock` naming the core.

**Partial copies.** A copy carries what its readers read; how one is evicted is the rule of
:mod:`npusched.heuristics.scheduling.lifetimes`.

**Forwarding** (an instance whose
:attr:`~npusched.problem.scheduling.routed.RoutedInstance.forward` is on; Stream's
accelerators). A DRAM tensor's copy for a core comes from wherever it ends soonest: from DRAM,
or from a core whose copy has arrived and is still held, over the NoC (a move of kind
``forward``, which replaces the required transfer; ties go to DRAM). So that there is a copy
to take, the first core a DRAM tensor comes to is its *home*: its copy is kept, one more use
for each other core whose μops keep the tensor, until each has its first copy (it may still
be evicted, as any weight; the cores after that fetch it from DRAM again). A forward's source
copy is held until the forward ends. On ``simba``, whose off-chip port is a quarter of one
NoC link, a weight tile read by 32 row blocks then crosses the port once: the attention
head's list 136 440 → 49 566 cycles, the SwiGLU MLP 64 × 128 × 256's 76 695 → 39 788
(one run each). Copies are booked as their readers are placed, not in time order, so a copy
booked later may arrive sooner than one fetched from DRAM before it: that fetch is then taken
from the new copy (:meth:`~npusched.heuristics.scheduling.lifetimes.Lifetimes.share`).

**Relays through DRAM.** Where the memories bind, an activation's copy for another core goes
by a write-back from its producer's core and a re-fetch (moves of kinds ``evict`` and
``refetch``, the re-fetch replacing the required send) when its route is slower on idle links
than the two trips and that ends sooner
(:meth:`~npusched.heuristics.scheduling.lifetimes.Lifetimes.relay`): on ``tpu_v7_ironwood``,
whose chips meet over one ICI link of 45.5 bytes a cycle beside HBM links of 1 675, the LLaMA
MLP on one core per weight tile went from 502 355 to 73 587 cycles (one run).

**Streamed μops** (Stream's ``too_large_operands``) read their operands as they come and keep
none. Data fetched again from DRAM for one takes no space and passes into it only (the
lifetime stays evicted: the μops there that keep their operands fetch it again themselves);
towards a core where only streamed μops read the data, that re-fetch replaces the required
transfer as above, with no space like the transfer. A streamed candidate keeps none of its
inputs either (evicted, they come again that way). What it still receives into space is the
first copy of data that μops on its core which keep their operands read too (the required
transfer serves them all); when those copies do not fit together, each received one is
evicted as the next needs its room. With a route to DRAM a streamed candidate cannot deadlock
either.

Deviations from Stream, and why:

- **Eviction only when no ready CN fits without it, on any core.** Stream evicts as soon as the
  next CN's weights do not fit; here a CN that does not fit is first set aside for one that
  does (on its core or another), which costs no traffic: on both shared exports no eviction is
  then needed even with every memory cut to a quarter. A core may wait meanwhile.
- **What is evicted first is the least important data, not the oldest weight.** The paper
  evicts weights first in first out (§III-E 2); Stream's current release ranks all it holds by
  uses left times size, and so does this list. A GEMM whose weight tiles pass by its input row
  blocks shows why: first in first out drops the row block that every next tile still reads.
  On the Stream bench's list (one run, the LLaMA MLP's projections in CNs of 22 × 32, before
  one core per weight tile was an allocation) the LLaMA MLP on ``tpu_like_quad_core`` went
  from 294 371 202 to 130 248 785 cycles, ResNet-18 on ``simba`` from 31 742 438 to
  23 661 576; ranking weights before activations, by importance within each, gave
  295 055 818 and 29 893 135.
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

from collections import deque
from typing import NoReturn, Protocol

import numpy as np

from npusched.heuristics.scheduling.candidates import Candidates, Key
from npusched.heuristics.scheduling.lifetimes import Fetch, Lifetimes
from npusched.heuristics.scheduling.memory_profile import Profile
from npusched.heuristics.scheduling.routed_list import all_routes, earliest, route_id, timelines
from npusched.problem.scheduling.dag import UopGraph
from npusched.problem.scheduling.routed import (
    FORWARD,
    REFETCH,
    Moves,
    Residency,
    RoutedInstance,
    RoutedSchedule,
    required_transfers,
)

OPEN = np.iinfo(np.int64).max
"""The end of a lifetime that still has consumers to schedule."""

LOOKAHEAD = 256
"""Candidates a step tries before the best one evicts to make room (module docstring)."""

LOOKBACK = 1024
"""How many μops back on a core a transfer into it may start (see the module docstring)."""


class MemoryDeadlock(RuntimeError):
    """No candidate μop's data fits on its core however late it starts, even after evicting all
    that may be evicted."""


class Abandoned(RuntimeError):
    """The list's schedule would end after the ``stop_above`` it was given: a core's μops still
    to place cannot end before then (a core runs its μops in the order they are placed, each
    after the last, so the core ends no earlier than where it is now plus their work)."""


Needs = list[tuple[int, int, int, bool]]
"""What a μop has yet to receive on its core: (tensor, release, bits, again) by release."""


def _producers(g: UopGraph) -> tuple[list[list[int]], list[list[int]]]:
    """Per μop, its distinct producers and those whose edge carries data, each in the order
    of its in-edges (first occurrence): the scheduler's per-μop loops read these lists instead
    of the edge arrays."""
    order = np.argsort(g.dst, kind="stable")
    src, data = g.src[order].tolist(), (g.bytes[order] > 0).tolist()
    ptr = g.pred_ptr.tolist()
    preds, data_preds = [], []
    for lo, hi in zip(ptr[:-1], ptr[1:], strict=True):
        preds.append(list(dict.fromkeys(src[lo:hi])))
        data_preds.append(list(dict.fromkeys(p for p, d in zip(src[lo:hi], data[lo:hi],
                                                                strict=True) if d)))  # fmt: skip
    return preds, data_preds


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


class Limit(Protocol):
    """A makespan read as it changes (``multiprocessing.Value``: the shortest list so far of
    several that run in parallel)."""

    @property
    def value(self) -> int:
        """The makespan now."""
        ...


def memory_list_schedule(
    inst: RoutedInstance,
    priority: str | np.ndarray = "latency",
    stop_above: int | Limit | None = None,
) -> RoutedSchedule:
    """A :class:`RoutedSchedule` that keeps every core within ``inst.capacity`` (see the module
    docstring); ``priority`` is Stream's ``latency`` or ``memory``, ``critical`` (the longest
    path from a μop to the end at its core's latencies, longest first, then by ready time: the
    upward rank of list scheduling, not Stream's), or a rank per μop (lower first: a plan's
    order, :mod:`~npusched.heuristics.scheduling.plans`). With ``stop_above``
    the list raises :class:`Abandoned` as soon as a core's μops still to place cannot end by
    then: a caller that keeps the shortest of several schedules need not finish one that will
    be longer (a μop's end is final once placed, and the next on its core starts after it).
    A :class:`Limit` is read at every step."""
    if inst.capacity is None:
        raise ValueError("memory-aware scheduling needs an instance with a memory capacity")
    if isinstance(priority, np.ndarray):
        if priority.shape != (inst.n,):
            raise ValueError(f"a rank priority needs one value per μop, got {priority.shape}")
    elif priority not in ("latency", "memory", "critical"):
        raise ValueError(f"unknown memory-aware priority {priority!r}; "
                         "choose latency, memory or critical")  # fmt: skip
    if not inst.fixed_allocation:
        if inst.preferred is None:
            raise ValueError("memory-aware scheduling needs a fixed (or preferred) allocation")
        inst = inst.restricted(inst.preferred)
    return _Scheduler(inst, priority).run(stop_above)


class _Scheduler(Lifetimes):
    """The state of one memory-aware list scheduling run."""

    def __init__(self, inst: RoutedInstance, priority: str | np.ndarray) -> None:
        g, n, m = inst.graph, inst.n, inst.m
        self.inst, self.g = inst, g
        self.core = np.argmax(inst.mask, axis=1).astype(np.int64)
        self.core_of: list[int] = self.core.tolist()  # the same, for scalar reads
        self.dur: list[int] = inst.duration[np.arange(n), self.core].tolist()
        self.output: list[int] = inst.output_data.tolist()
        self.preds, self.data_preds = _producers(g)
        self.routes = [
            tuple(int(inst.topology.resource_of[x]) for x in r) for r in all_routes(inst)
        ]
        self.lines = timelines(inst.topology)
        assert inst.capacity is not None
        self.mem = [Profile(int(c)) for c in inst.capacity]
        self.held: list[dict[tuple[int, int], None]] = [{} for _ in self.mem]  # (evict_for)
        self.holders: dict[int, dict[int, None]] = {}  # DRAM tensor -> cores holding it
        self.home: dict[int, int] = {}  # DRAM tensor -> the first core it came to (forward)
        self.got: set[tuple[int, int]] = set()  # (DRAM tensor, core): its first copy came
        self.spread: dict[int, int] = {}  # DRAM tensor -> cores whose μops keep a copy
        self.dram_of: list[list[int]] = [[] for _ in range(n)]
        for k, tensor in enumerate(inst.dram):
            if tensor.data > 0:
                for i in tensor.consumers.tolist():
                    self.dram_of[i].append(k)
        # consumers still to schedule, per lifetime: (tensor, core) with tensor = producer μop
        # or -1 - k for DRAM tensor k; a producer's own copy is (p, core[p]).
        self.transfers = tr = required_transfers(inst, self.core)
        self.check_fit()
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
                self.pending[(key[0], self.core_of[key[0]])] += 1  # the send itself
        self.last_use = dict.fromkeys(self.pending, 0)
        self.streamed = streamed = inst.is_streamed
        self.buffered = {(p, c) for p, c in self.pending if p >= 0 and c == self.core_of[p]}
        self.buffered = {key for key in self.buffered if not streamed[key[0]]}
        self.buffered |= {tr.key(t) for t in range(tr.size) if not streamed[tr.serves[t]].all()}
        for s, _ in (key for key in self.buffered if key[0] < 0):
            self.spread[s] = self.spread.get(s, 0) + 1
        self.key_id = {key: k for k, key in enumerate(self.pending)}
        self.keys = list(self.pending)
        # the size of each lifetime's copy (the producer's: whole; elsewhere: what is read there)
        ks = np.array(self.keys, dtype=np.int64).reshape(-1, 2)
        sizes = inst.held_data(self.core, ks[:, 0], ks[:, 1]).tolist()
        self.size = dict(zip(self.keys, sizes, strict=True))
        home = self.core
        part = [(s, c) for (s, c), b in self.size.items()
                if s >= 0 and c != home[s] and b < self.output[s]]  # fmt: skip
        self.partial = {key for key in part if key in self.buffered and not streamed[key[0]]}
        self.stuck = {key for key in part if streamed[key[0]]}  # no producer's copy to write
        self.waits: dict[int, set[int]] = {}  # producer -> cores of partial copies it waits for
        self.arrived: dict[tuple[int, int], int] = {}
        self.start = [-1] * n
        self.end = [0] * n
        self.free = [0] * m
        self.left = np.bincount(self.core, weights=self.dur, minlength=m).astype(np.int64).tolist()
        self.recent: list[deque[int]] = [deque(maxlen=LOOKBACK) for _ in range(m)]
        self.layer = _layers(inst)
        self.priority = (-g.tails(np.asarray(self.dur)).astype(np.int64)
                         if isinstance(priority, str) and priority == "critical"
                         else priority)  # fmt: skip
        self.sent: set[tuple[int, int]] = set()
        self.watch: list[dict[int, set[int]]] = [{} for _ in range(m)]  # see fitting()
        self.dirty: set[int] = set()
        self.evictions = 0  # evictions so far (see fitting())
        self.unfit: dict[int, tuple[int, int]] = {}  # see fitting()
        self.first: dict[tuple[int, int], int] = {}  # first arrival (the required transfer)
        self.fetches: dict[int, dict[int, Fetch]] = {}  # see share()
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
        self.cands = Candidates((), m)  # (the run's pool)
        acc = inst.accelerator
        self.hops = acc.hops() if acc.has_comm_delays else None  # (once, not per relay)

    def key(self, i: int, ready: int) -> tuple[int, int, int]:
        if isinstance(self.priority, np.ndarray):
            return (int(self.priority[i]), ready, i)
        if self.priority == "memory":
            return (-int(self.layer[i]), ready, i)
        return (ready, -int(self.layer[i]), i)

    def run(self, stop_above: int | Limit | None = None) -> RoutedSchedule:
        g, n = self.g, self.inst.n
        shared = None if stop_above is None or isinstance(stop_above, int) else stop_above
        limit = shared.value if shared is not None else stop_above
        indeg = np.diff(g.pred_ptr).copy()
        ready_at = np.zeros(n, dtype=np.int64)
        pool = self.cands = Candidates(
            (self.key(i, 0) for i in np.flatnonzero(indeg == 0).tolist()), self.inst.m)
        while pool.pool:
            cand, needs = self._next(pool)
            i = cand[2]
            self.place(i, needs)
            c = self.core_of[i]
            self.left[c] -= self.dur[i]
            if shared is not None:
                limit = shared.value
            if limit is not None and self.free[c] + self.left[c] > limit:
                raise Abandoned(f"core {c}'s μops end at {self.free[c] + self.left[c]} at the "
                                f"earliest, after {limit}")  # fmt: skip
            for j in g.succs(i).tolist():
                indeg[j] -= 1
                ready_at[j] = max(ready_at[j], self.end[i])
                if indeg[j] == 0:
                    pool.add(self.key(j, int(ready_at[j])))
        tr = self.transfers
        tend = np.array([self.first.get(tr.key(t), -1) for t in range(tr.size)], dtype=np.int64)
        tstart = np.where(tend >= 0, tend - tr.cycles, -1)  # -1: replaced by a re-fetch
        rec = np.array(self.rec, dtype=np.int64).reshape(-1, 5).T
        mv = np.array(self.moves, dtype=np.int64).reshape(-1, 6).T
        start = np.array(self.start, dtype=np.int64)
        return RoutedSchedule(start, self.core, tstart, tend, Residency(*rec), Moves(*mv))

    def _next(self, pool: Candidates) -> tuple[Key, Needs]:
        """The μop to place next, taken out of ``pool`` (by the priority), and what it has yet
        to receive: the first of the :data:`LOOKAHEAD` best that fits, else
        :meth:`_make_room`. A candidate known not to fit (:meth:`fitting`) is parked until it
        may (:mod:`~npusched.heuristics.scheduling.candidates`)."""
        pool.wake_fitting(self.mem, self.evictions)
        for cand in pool.window(LOOKAHEAD):
            i = cand[2]
            needs = self.fitting(i)
            if needs is not None:
                pool.take(cand)
                return cand, needs
            stamp, threshold = self.unfit[i]
            pool.park(cand, self.core_of[i], threshold, stamp != -1)
        return self._make_room(pool)

    def _make_room(self, pool: Candidates) -> tuple[Key, Needs]:
        """No candidate looked at fits: the best evicts to make room. Where it cannot, the
        candidates past the look-ahead are tried before the scheduler gives up (as if it had
        looked at all of them)."""
        cand = pool.pool[0]
        if self.evict_for(cand[2]):
            pool.take(cand)
            return cand, self.needs(cand[2])
        for other in pool.pool.islice(LOOKAHEAD):
            needs = self.fitting(other[2])
            if needs is not None:
                pool.take(other)
                return other, needs
        self.deadlock([c[2] for c in pool.pool])

    def needs(self, i: int) -> Needs:
        """Data μop ``i`` has yet to receive on its core: (tensor, release, bits, again), by
        release; ``again``: fetched from DRAM (a re-fetch), else the required transfer."""
        c, core = self.core_of[i], self.core_of
        out: dict[int, tuple[int, int, bool]] = {}
        for p in self.data_preds[i]:
            if (p, c) in self.evicted:
                out[p] = (max(self.in_dram[p], self.evicted[(p, c)]), self.size[(p, c)], True)
            elif (p, c) not in self.arrived and self.from_dram(p, c):
                out[p] = (self.in_dram[p], self.size[(p, c)], True)  # sent from DRAM instead
            elif core[p] != c and (p, c) not in self.arrived:
                # sent from the producer's core: once its output is made (or fetched back)
                home = self.arrived.get((p, core[p]), 0)
                out[p] = (max(self.end[p], home), self.size[(p, c)], False)
        for k in self.dram_of[i]:
            key = (-1 - k, c)
            if key not in self.arrived:
                release = self.evicted.get(key, 0)
                out[-1 - k] = (release, self.inst.dram[k].data, key in self.evicted)
        return sorted(((s, *v) for s, v in out.items()), key=lambda x: x[1])

    def bits(self, key: tuple[int, int], data: int) -> int:
        """Space lifetime ``key`` takes on its core: none for data of streamed μops."""
        return data if key in self.buffered else 0

    def space(self, i: int, key: tuple[int, int], data: int, again: bool) -> int:
        """Space ``data`` of lifetime ``key`` takes on μop ``i``'s core when it comes for
        ``i``: none when fetched again for a streamed μop, which reads it as it passes (the
        lifetime stays evicted for the μops there that keep their operands)."""
        return 0 if again and self.streamed[i] else self.bits(key, data)

    def new_bits(self, i: int, needs: Needs | None = None) -> int:
        """Space μop ``i`` takes on its core when placed now: what it receives (``needs``,
        default :meth:`needs`) and its output."""
        c = self.core_of[i]
        needs = self.needs(i) if needs is None else needs
        into = sum(self.space(i, (s, c), b, again) for s, _, b, again in needs)
        return into + self.bits((i, c), self.output[i])

    def fitting(self, i: int) -> Needs | None:
        """What μop ``i`` has yet to receive (:meth:`needs`) when it fits on its core now, else
        ``None``.

        The look-ahead tries the same candidates at every step, and :meth:`needs` walks all of
        a candidate's producers. The space it takes (:meth:`new_bits`) falls only where data
        it needs comes to its core (a μop placed there takes it: the candidates that
        :attr:`watch` the data on that core become :attr:`dirty`); for a streamed candidate
        also where any data is evicted (a copy then comes from DRAM, which it does not keep).
        An eviction from its core can only add to what a candidate that keeps its operands
        needs. So the space a candidate did not fit with stays a lower bound on its space
        until then, and only the core's open bits are compared with it: a look that costs
        nothing however many producers the candidate reads."""
        c = self.core_of[i]
        mem, seen = self.mem[c], self.unfit.get(i)
        stamp = self.evictions if self.streamed[i] else -1  # -1: no eviction makes it fit
        if (seen is not None and seen[0] == stamp and i not in self.dirty
                and mem.open_bits > seen[1]):  # fmt: skip
            return None
        self.dirty.discard(i)
        needs = self.needs(i)
        space = self.new_bits(i, needs)
        if mem.open_bits + space <= mem.capacity:
            self.unfit.pop(i, None)
            return needs
        self.unfit[i] = (stamp, mem.capacity - space)  # it fits once the open bits are no more
        watch = self.watch[c]
        for x in needs:
            watch.setdefault(x[0], set()).add(i)
        return None

    def place(self, i: int, needs: Needs) -> None:
        """Place μop ``i`` on its core with its data ``needs`` (:meth:`needs`, taken in this
        state): each transfer in the earliest window of its route and its core's memory."""
        c, inst, core, end = self.core_of[i], self.inst, self.core_of, self.end
        mem = self.mem[c]
        watch = self.watch[c]
        for got in needs:  # the candidates waiting for this data on c look again
            woken = watch.pop(got[0], ())
            self.dirty.update(woken)
            self.cands.wake(woken)
        est = max([self.free[c], *(end[p] for p in self.preds[i])])
        for p in self.data_preds[i]:
            if core[p] != c and (p, c) in self.arrived:
                est = max(est, self.arrived[(p, c)])
        for k in self.dram_of[i]:
            est = max(est, self.arrived.get((-1 - k, c), 0))
        received: list[tuple[int, int]] = []
        for src, release, bits, again in needs:
            a = -1 if src < 0 or again else core[src]
            cyc = inst.topology.cycles(bits, inst.route(a, c))
            space = self.space(i, (src, c), bits, again)
            through = again and space == 0 and self.bits((src, c), bits) > 0
            if mem.open_bits + space > mem.capacity:
                self.stage(c, space, received)
            at = mem.earliest_fit(max(release, self.floor(c)), space)
            assert at is not None  # fits() admitted the whole set (or stage() made room)
            route = self.routes[route_id(a, c, inst.m)]
            t = earliest(self.lines, route, at, cyc)
            if src < 0 and space and inst.forward:  # or from a core that holds it, if sooner
                a, t, cyc, route = self.nearest_copy(src, c, release, space, (a, t, cyc, route))
            elif a >= 0 and (via := self.relay(src, c, at, bits, t + cyc,
                                               self.routes[route_id(-1, c, inst.m)])):
                a, (t, cyc), again = -1, via, True  # through DRAM: a re-fetch
                route = self.routes[route_id(-1, c, inst.m)]
            lanes = tuple(self.lines[x].add(t, cyc) for x in route)
            if a >= 0 and src < 0:  # forwarded: the holder's copy is read until it is sent
                self.last_use[(src, a)] = max(self.last_use[(src, a)], t + cyc)
                self.arrived[(src, c)] = t + cyc
                self.evicted.pop((src, c), None)
                self.moves.append((FORWARD, src, a, c, t, t + cyc))
            elif through:  # passes into the streamed μop only: the lifetime stays evicted
                self.moves.append((REFETCH, src, -1, c, t, t + cyc))
            elif again:
                self.arrived[(src, c)] = t + cyc
                self.evicted.pop((src, c), None)
                self.moves.append((REFETCH, src, -1, c, t, t + cyc))
            else:
                self.arrived[(src, c)] = self.first[(src, c)] = t + cyc
                if src < 0 and space:  # a DRAM tensor's first copy here, from DRAM (share())
                    self.fetches.setdefault(src, {})[c] = (t, cyc, route, lanes)
            if src < 0 and space and inst.forward:
                self.serve_home(src, c, t + cyc if a >= 0 else 0, a)
            if space:
                self.hold((src, c), t, space)
                received.append((src, c))
                if src < 0 and inst.forward:  # the later fetches of it, from here
                    self.share(src, c, t + cyc)
            if src >= 0 and (src, c) not in self.sent and core[src] != c:
                self.sent.add((src, c))  # the required send, from the core or from DRAM
                home = (src, core[src])
                if not again and (src, c) in self.partial:  # the producer's copy waits for it
                    self.last_use[home] = max(self.last_use[home], t + cyc)
                    self.waits.setdefault(src, set()).add(c)
                else:
                    self.use(home, 0 if again else t + cyc)
            est = max(est, t + cyc)
        if self.bits((i, c), self.output[i]):
            at = mem.earliest_fit(est, self.output[i])
            assert at is not None
            est = at
            self.hold((i, c), est, self.output[i])
        self.start[i], end[i] = est, est + self.dur[i]
        if (i, c) in self.open_rec and self.pending[(i, c)] == 0:  # an output nobody reads
            self.let_go((i, c), end[i])
        self.free[c] = end[i]
        self.recent[c].append(est)
        for key in self.inputs(i):
            self.use(key, end[i])
        mem.forget_before(self.floor(c))

    def serve_home(self, s: int, c: int, until: int, source: int) -> None:
        """DRAM tensor ``s`` has come to core ``c`` (forwarded from ``source``, done by
        ``until``; or from DRAM). Its first core to receive it is its home, whose copy is kept
        (one more use each) until every other core whose μops keep it has its first copy, so
        that they can take it from there (an eviction may still drop it first)."""
        if (s, c) in self.got:
            return
        self.got.add((s, c))
        home = self.home.setdefault(s, c)
        if home == c:
            self.pending[(s, c)] += self.spread[s] - 1
        else:
            self.use((s, home), until if source == home else 0)

    def nearest_copy(self, s: int, c: int, release: int, space: int,
                     fetch: tuple[int, int, int, tuple[int, ...]]
                     ) -> tuple[int, int, int, tuple[int, ...]]:  # fmt: skip
        """Where DRAM tensor ``s``'s copy for core ``c`` comes from soonest: ``fetch`` (from
        DRAM: source ``-1``, start, cycles, resources) or a core that holds a copy which has
        arrived (a forward, on an instance that allows it), the first of the earliest ends
        among them (DRAM first)."""
        inst, mem, best = self.inst, self.mem[c], fetch
        bits = inst.dram[-1 - s].data
        for h in self.holders.get(s, {}):
            ready = self.arrived.get((s, h))
            if h == c or ready is None:
                continue
            cyc = inst.topology.cycles(bits, inst.route(h, c))
            at = mem.earliest_fit(max(release, ready, self.floor(c)), space)
            if at is None:
                continue
            route = self.routes[route_id(h, c, inst.m)]
            t = earliest(self.lines, route, at, cyc)
            if t + cyc < best[1] + best[2]:
                best = (h, t, cyc, route)
        return best

    def floor(self, c: int) -> int:
        """No transfer into core ``c`` starts before the start of the μop placed
        :data:`LOOKBACK` μops ago on it."""
        recent = self.recent[c]
        return recent[0] if len(recent) == LOOKBACK else 0

    def inputs(self, i: int) -> set[tuple[int, int]]:
        """The lifetimes μop ``i`` reads on its core."""
        c = self.core_of[i]
        keys = {(p, c) for p in self.data_preds[i]}
        return keys | {(-1 - k, c) for k in self.dram_of[i]}

    def evict_for(self, i: int) -> bool:
        """Evict data from μop ``i``'s core (module docstring) until ``i`` fits; whether it
        does (for a streamed μop: whether :meth:`stage` can then bring its data one copy at a
        time)."""
        c = self.core_of[i]
        mem, need = self.mem[c], self.new_bits(i)
        inputs = self.inputs(i)
        keep = set() if self.streamed[i] else inputs | {(i, c)}
        for key in self.victims(c, keep | inputs, lambda: mem.open_bits + need <= mem.capacity):
            self.evict(key)
        if mem.open_bits + need > mem.capacity:  # a streamed μop's inputs go last
            victims = [key for key in inputs if key in self.open_rec and self.evictable(key)]
            victims.sort(key=self.importance)
            for key in victims:
                if mem.open_bits + need <= mem.capacity:
                    break
                self.evict(key)
        if mem.open_bits + need <= mem.capacity:
            return True
        if not self.streamed[i] or self.back is None:
            return False
        largest = max((self.space(i, (s, c), b, again) for s, _, b, again in self.needs(i)),
                      default=0)  # fmt: skip
        return mem.open_bits + largest <= mem.capacity

    def check_fit(self) -> None:
        """Every μop that keeps its operands has room for them under this allocation (the
        copies of its inputs hold what all μops on its core read of them), else no eviction
        can place it."""
        inst = self.inst
        assert inst.capacity is not None
        need = inst.operand_data(self.core)
        room = inst.capacity[self.core]
        bad = np.flatnonzero(need > room)
        if bad.size:
            i = int(bad[0])
            raise MemoryDeadlock(
                f"core {inst.accelerator.cores[self.core[i]].id}: μop {self.g.ids[i]} needs "
                f"{int(need[i])} {inst.data_unit} resident under this allocation (the copies "
                "of its inputs hold what all μops on its core read of them, with its constant "
                f"operands and output), but the core's memory holds {int(room[i])}"
            )

    def deadlock(self, waiting: list[int]) -> NoReturn:
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
