"""The lifetimes of the data a memory-aware list holds on its cores, and their eviction
(:mod:`npusched.heuristics.scheduling.memory_list`, Stream §III-E and §III-F).

A lifetime is a copy of a tensor on a core: ``(tensor, core)`` with ``tensor`` a producer's μop
index or ``-1 - k`` for DRAM tensor ``k``. It opens with a memory record (:meth:`Lifetimes.hold`)
and closes after its last consumer or send (:meth:`Lifetimes.use`), or when it is evicted
(:meth:`Lifetimes.evict`): a weight is dropped, an activation not yet in DRAM is written back
first, over the core's route to DRAM (a move of kind ``evict``).

**Partial copies.** A copy carries what its readers read
(:meth:`~npusched.problem.scheduling.routed.RoutedInstance.copy_data`): on a core other than
the producer's it may hold only part of the output (a halo), and every transfer, re-fetch and
record there has that size; the producer's own copy, and a re-fetch into the producer's core,
hold the whole output. A write-back always writes the whole output, so a partial copy cannot be
written back from its core. Rule: **a partial copy of an activation not yet in DRAM is evicted
by writing the whole output back from the producer's core** (its copy there is read over the
write-back, and the partial copy is dropped once its own last use is over; later readers fetch
their part from DRAM). The producer's copy is then still resident: it *waits for* each partial
copy it has sent (the copy counts as one more use of it, from the send until the partial copy
is dropped or the output reaches DRAM), and it is otherwise dropped only by its own eviction,
whose write-back puts the output in DRAM. This can keep a producer's copy longer than its
last send; Stream's exports have no partial copies (every edge carries the whole output), so
nothing changes there. A streamed producer keeps no copy to write back from: its partial
copies elsewhere are not evicted before its output is in DRAM (with such copies the list can
deadlock even with a route to DRAM).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from npusched.heuristics.scheduling.memory_profile import Profile
from npusched.heuristics.scheduling.routed_list import Line, earliest, route_id
from npusched.problem.scheduling.routed import EVICT, FORWARD, RoutedInstance

Fetch = tuple[int, int, tuple[int, ...], tuple[int, ...]]
"""A DRAM tensor's first copy for a core, booked from DRAM: start, cycles, resources, lanes."""


class Lifetimes:
    """The lifetimes part of a memory-aware list's state and what it does with them (the
    list's scheduler sets the state; see :mod:`npusched.heuristics.scheduling.memory_list`)."""

    if TYPE_CHECKING:  # set by the list's scheduler
        inst: RoutedInstance
        core_of: list[int]
        output: list[int]
        end: list[int]
        mem: list[Profile]
        held: list[dict[tuple[int, int], None]]  # per core: its open lifetimes, as booked
        holders: dict[int, dict[int, None]]  # DRAM tensor -> cores of its open lifetimes
        keys: list[tuple[int, int]]
        key_id: dict[tuple[int, int], int]
        pending: dict[tuple[int, int], int]  # consumers and sends still to place
        last_use: dict[tuple[int, int], int]
        open_rec: dict[tuple[int, int], int]  # open lifetime -> its record
        rec: list[list[int]]  # [core, tensor, bits, alloc, free]
        waits: dict[int, set[int]]  # producer -> cores of partial copies it waits for
        routes: list[tuple[int, ...]]  # resources of each route (route_id)
        fetches: dict[int, dict[int, Fetch]]  # DRAM tensor -> core -> its first fetch
        first: dict[tuple[int, int], int]  # first arrival (the required transfer)
        in_dram: dict[int, int]  # activation -> end of its write-back
        arrived: dict[tuple[int, int], int]
        evicted: dict[tuple[int, int], int]  # evicted lifetime -> when it ended
        evictions: int
        sent: set[tuple[int, int]]
        partial: set[tuple[int, int]]
        stuck: set[tuple[int, int]]
        back: list[tuple[int, ...]] | None  # each core's resources to DRAM (None: no route)
        lines: list[Line]
        hops: np.ndarray | None  # the base accelerator's hops, where it has delays
        moves: list[tuple[int, int, int, int, int, int]]
        streamed: np.ndarray

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
        self.held[key[1]][key] = None
        if key[0] < 0:
            self.holders.setdefault(key[0], {})[key[1]] = None
        self.open_rec[key] = len(self.rec)
        self.rec.append([key[1], key[0], bits, t, -1])

    def let_go(self, key: tuple[int, int], t: int) -> None:
        """Lifetime ``key`` ends at ``t`` (its record is closed); a producer's copy that waits
        for it (a partial copy) is used until ``t``."""
        self.mem[key[1]].close(self.key_id[key], t)
        del self.held[key[1]][key]
        if key[0] < 0:
            del self.holders[key[0]][key[1]]
        self.rec[self.open_rec.pop(key)][4] = t
        waiting = self.waits.get(key[0])
        if waiting is not None and key[1] in waiting:
            waiting.discard(key[1])
            self.use((key[0], self.core_of[key[0]]), t)

    def in_dram_from(self, s: int, t: int) -> None:
        """Producer ``s``'s output is in DRAM from ``t``: its copy waits for no partial copy
        any more."""
        self.in_dram[s] = t
        for _ in self.waits.pop(s, set()):
            self.use((s, self.core_of[s]), t)

    def victims(self, c: int, spare: set[tuple[int, int]],
                enough: Callable[[], bool]) -> Iterator[tuple[int, int]]:  # fmt: skip
        """The evictable lifetimes held on core ``c`` outside ``spare``, the least important
        first (:meth:`importance`; among equals the one booked first), until ``enough()``. A
        call costs what the core holds."""
        if enough():
            return
        held = [key for key in self.held[c] if key not in spare and self.evictable(key)]
        for key in sorted(held, key=self.importance):
            if enough():
                return
            if key in self.open_rec:  # (a producer's copy closes once it waits no more)
                yield key

    def importance(self, key: tuple[int, int]) -> int:
        """What evicting lifetime ``key`` costs later, as Stream's current release ranks it:
        the consumers and sends it still has to serve on its core times the size of the copy
        held there (a weight tile the row blocks have passed matters less than the input row
        block the next columns still read)."""
        return self.pending[key] * self.rec[self.open_rec[key]][2]

    def stage(self, c: int, space: int, received: list[tuple[int, int]]) -> None:
        """Room for ``space`` more on core ``c`` while a streamed μop receives its data: the
        copies it has just received (which it need not keep) are evicted, first come first."""
        mem = self.mem[c]
        for key in received:
            if mem.open_bits + space <= mem.capacity:
                break
            if key in self.open_rec and self.evictable(key):
                self.evict(key)

    def evictable(self, key: tuple[int, int]) -> bool:
        """A weight, an activation already in DRAM, or any with a route to DRAM but a partial
        copy of a streamed producer's output (module docstring)."""
        if key[0] < 0 or key[0] in self.in_dram:
            return True
        return self.back is not None and key not in self.stuck

    def relay(self, s: int, c: int, at: int, bits: int, direct: int,
              fetch: tuple[int, ...]) -> tuple[int, int] | None:  # fmt: skip
        """The copy of producer ``s``'s output for core ``c`` (``bits``, into ``c``'s memory
        from ``at``) through DRAM, where its route there is slower on idle links than the trip
        through DRAM and that ends before ``direct`` (the end of the send over the NoC): the
        output written back from the producer's core (once; its copy there is read over the
        write-back), then fetched over ``fetch`` (the resources from DRAM to ``c``). A
        chip-to-chip link slower than two trips to DRAM (TPU v7's ICI against its HBM) then
        carries nothing; a link merely busy at the moment keeps its send. Only where the
        memories bind: on an instance whose cores hold all its data nothing is written back
        (verify's rule, which the exact models' optimality rests on); and never sooner after
        the producer's end than the base instance's delay (:meth:`delay`). Returns the fetch's
        start and cycles, its write-back booked, or ``None`` (not sooner: nothing is
        booked)."""
        a, inst = self.core_of[s], self.inst
        home = (s, a)
        if self.back is None or home not in self.open_rec or not inst.memory_binds:
            return None
        topo = inst.topology
        cyc = topo.cycles(bits, inst.route(-1, c))
        ready, booked = self.in_dram.get(s), None
        w = 0 if ready is not None else topo.cycles(self.output[s], inst.route(a, -1))
        if topo.cycles(bits, inst.route(a, c)) <= w + cyc:  # the NoC is as fast when idle
            return None
        if ready is None:
            if max(at, self.end[s] + w) + cyc >= direct:  # (cannot be sooner)
                return None
            t_w = earliest(self.lines, self.back[a], self.end[s], w)
            booked = [(x, self.lines[x].add(t_w, w)) for x in self.back[a]]
            ready = t_w + w
        elif max(at, ready) + cyc >= direct:
            return None
        t = earliest(self.lines, fetch, max(at, ready, self.end[s] + self.delay(a, c, bits) - cyc),
                     cyc)  # fmt: skip
        if t + cyc >= direct:
            for x, lane in booked or ():
                self.lines[x].remove(t_w, w, lane)
            return None
        if booked is not None:
            self.moves.append((EVICT, s, a, -1, t_w, ready))
            self.last_use[home] = max(self.last_use[home], ready)
            self.in_dram_from(s, ready)
        return t, cyc

    def share(self, s: int, c: int, arrival: int) -> None:
        """DRAM tensor ``s``'s copy on core ``c`` arrives at ``arrival`` (held there, open):
        each other core's first copy of it fetched from DRAM that starts no sooner is taken
        from ``c`` over the NoC instead, where that forward starts no sooner than the fetch
        did and ends no later (a move of kind ``forward``: its destination's space from the
        same start, its consumers there as they were). The list books a copy as its reader
        is placed, not in time order: a reader placed later may get an earlier window of the
        off-chip port, and the fetch booked before it then carries again what is on chip
        (SwiGLU 64 × 128 × 256 on ``simba``: a 32 KB weight tile over the port's 8 bytes a
        cycle twice, 64 cycles apart). The port's window is freed for the fetches to come."""
        inst, mine = self.inst, self.fetches.get(s, {})
        for c2, (t2, cyc2, fetch, lanes) in list(mine.items()):
            if c2 == c or t2 < arrival:  # (an evicted copy's first fetch is not here)
                continue
            for x, lane in zip(fetch, lanes, strict=True):
                self.lines[x].remove(t2, cyc2, lane)
            route = self.routes[route_id(c, c2, inst.m)]
            cyc = inst.topology.cycles(inst.dram[-1 - s].data, inst.route(c, c2))
            t = earliest(self.lines, route, t2, cyc)
            if t + cyc > t2 + cyc2:  # not sooner: the fetch stays
                mine[c2] = (t2, cyc2, fetch, tuple(self.lines[x].add(t2, cyc2) for x in fetch))
                continue
            for x in route:
                self.lines[x].add(t, cyc)
            del mine[c2], self.first[(s, c2)]
            self.arrived[(s, c2)] = t + cyc
            self.last_use[(s, c)] = max(self.last_use[(s, c)], t + cyc)
            self.moves.append((FORWARD, s, c, c2, t, t + cyc))

    def delay(self, a: int, c: int, bits: int) -> int:
        """The base instance's delay for ``bits`` from core ``a`` to ``c`` (Klotski's hops on a
        mesh; 0 without one): no copy arrives sooner after its producer ends, however it
        comes (verify's precedence rule)."""
        if self.hops is None:
            return 0
        return int(self.inst.accelerator.comm_delay(self.hops[a, c], np.array([bits]))[0])

    def from_dram(self, p: int, c: int) -> bool:
        """A first copy of producer ``p``'s output for core ``c`` comes from DRAM: the
        producer's own copy is evicted, or the required send was replaced by a re-fetch that
        only passed into a streamed μop there."""
        if self.core_of[p] == c:
            return False
        return (p, self.core_of[p]) in self.evicted or (p, c) in self.sent

    def evict(self, key: tuple[int, int]) -> None:
        """Drop ``key`` from its core, writing an activation not yet in DRAM back first (once):
        from this core when its copy is whole (its space is freed when the write-back ends),
        else (a partial copy) from the producer's core, whose copy waits for it (module
        docstring). Its later consumers there fetch it again."""
        s, c = key
        self.evictions += 1
        if s < 0:  # its first fetch is no longer the copy there (share())
            self.fetches.get(s, {}).pop(c, None)
        since = self.arrived.pop(key, None)
        t0 = max(self.last_use[key], since if since is not None else self.end[s])
        if s >= 0 and s not in self.in_dram:
            assert self.back is not None
            home = (s, self.core_of[s])
            a = home[1] if key in self.partial else c
            ready = self.end[s] if a != c else t0
            assert a == c or home in self.open_rec  # it waits for this partial copy
            cyc = self.inst.topology.cycles(self.output[s], self.inst.route(a, -1))
            t = earliest(self.lines, self.back[a], ready, cyc)
            for x in self.back[a]:
                self.lines[x].add(t, cyc)
            self.moves.append((EVICT, s, a, -1, t, t + cyc))
            if a != c:  # the producer's copy is read over the write-back
                self.last_use[home] = max(self.last_use[home], t + cyc)
            else:
                t0 = t + cyc
            self.in_dram_from(s, t + cyc)
        if key in self.open_rec:  # (the producer's own copy may close as it waits no more)
            self.let_go(key, t0)
        self.evicted[key] = t0

