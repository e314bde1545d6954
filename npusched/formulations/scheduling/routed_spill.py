"""Spill and re-fetch in the routed CP-SAT model, on a fixed allocation: a copy's residency on a
core may be split, the copy evicted and fetched again from DRAM before its next readers (Stream
§III-E's eviction, as decisions).

Notation on top of :mod:`~npusched.formulations.scheduling.routed`'s: a *copy* ``κ = (s, a, c)``
is tensor ``s`` (a producer's output, or DRAM tensor ``-1 - k``) held on core ``c`` (``a``: where
it comes from; ``a = c`` for a producer's own output). Its residency is up to ``K`` segments
``[α_κj, ω_κj)``, segment 0 made by the production or the required transfer, segment ``j ≥ 1``
present iff ``z_κj`` and made by a re-fetch ``ρ_κj`` over the route DRAM → ``c`` starting at
``α_κj``. Each *use* ``u`` of the copy (a reader's run ``[s_q, e_q)``, a send, a write-back)
lies in one segment, ``y_uj``. An activation re-fetched anywhere is first written back once,
``W_p``: the whole output from its own core to DRAM, read from the first segment there.

.. math::

    \\textstyle\\sum_j y_{uj} = 1, \\quad y_{uj} \\Rightarrow z_{κj}, \\quad
    y_{u0} \\Rightarrow \\mathrm{end}_u \\le ω_{κ0}, \\quad
    y_{uj} \\Rightarrow \\mathrm{start}_u \\ge α_{κj} + \\ell(ρ_{κj}) \\wedge
    \\mathrm{end}_u \\le ω_{κj} \\ (j \\ge 1)

    z_{κj} \\Rightarrow z_{κ,j-1} \\wedge α_{κj} \\ge ω_{κ,j-1} \\wedge
    α_{κj} \\ge b_p + \\ell(W_p) \\ (s = p \\ge 0), \\qquad
    z_{κ1} \\Rightarrow w_p, \\quad w_p \\Rightarrow b_p \\ge e_p \\wedge
    b_p + \\ell(W_p) \\le ω_{(p, a, a) 0}

    \\text{Cumulative}(\\{[α_{κj}, ω_{κj}) : z_{κj}\\}, \\text{size}_κ, M_c) \\ \\forall c,
    \\qquad ρ, W \\text{ in the NoOverlap of every link on their routes}

Every solution is a schedule that :func:`~npusched.verify.scheduling.routed.verify_routed`
accepts (records and moves included). A memory-aware list schedule is a point of the model where
it evicts each copy at most ``K − 1`` times and keeps every required transfer (its records,
moves and uses are hinted, :meth:`SpillModel.hint`); copies that streamed μops read are not
split (they keep one segment, as in the model without eviction).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npusched.formulations.scheduling.routed import RoutedModel
from npusched.problem.scheduling.routed import (
    EVICT,
    REFETCH,
    Moves,
    Residency,
    RoutedInstance,
    RoutedSchedule,
    required_transfers,
)


@dataclass
class _Copy:
    """One copy's segments: their starts ``alpha``, ends ``omega``, presences ``z`` (segment 0
    always), re-fetch length ``refetch``, and its uses ``(start, end, choices, when)`` (``when``:
    ``True``, or the literal of a send that may not happen)."""

    key: tuple[int, int, int]
    size: int
    alpha: list[Any] = field(default_factory=list)
    omega: list[Any] = field(default_factory=list)
    z: list[Any] = field(default_factory=list)
    refetch: int = 0
    uses: list[tuple[Any, Any, list[Any], Any]] = field(default_factory=list)


class SpillModel(RoutedModel):
    """:class:`RoutedModel` on a fixed allocation with memories, whose copies may be evicted and
    fetched again (the module docstring); ``segments`` = ``K``, the most residency segments per
    copy (1: no eviction)."""

    def __init__(self, inst: RoutedInstance, horizon: int, segments: int = 2,
                 floor: int | None = None) -> None:  # fmt: skip
        if not inst.fixed_allocation or inst.capacity is None:
            raise ValueError("the spill model needs a fixed allocation and memory capacities")
        if segments < 1:
            raise ValueError(f"segments must be at least 1, got {segments}")
        self.K = int(segments) if inst.memory_binds and inst.can_write_back else 1
        self.copies: dict[tuple[int, int, int], _Copy] = {}
        self.wb: dict[int, tuple[Any, Any, int]] = {}  # producer -> (literal, start, length)
        self.direct: dict[tuple[int, int, int], Any] = {}  # copy -> its transfer happens
        self._fetched: dict[tuple[int, int, int], int] = {}  # copy -> re-fetch length instead
        super().__init__(inst, horizon, floor=floor)

    def _transfer(self, key: tuple[int, int, int], data: Any, route: tuple[int, ...], lit: Any,
                  users: Any) -> tuple[Any, Any]:  # fmt: skip
        """:meth:`RoutedModel._transfer`; where an activation's copy may come through DRAM
        instead (``δ_κ`` false: a re-fetch after the write-back, starting where the transfer
        would, as the memory-aware list does once the output has left its core), optional."""
        inst = self.inst
        streamed = inst.is_streamed
        if (self.K > 1 and key[0] >= 0 and lit is True and not streamed[key[0]]
                and not streamed[np.asarray(users, dtype=np.int64)].any()):  # fmt: skip
            lit = self.direct[key] = self.model.new_bool_var(f"d{key}")
        return super()._transfer(key, data, route, lit, users)

    def _memory(self) -> None:
        """The segments, uses, re-fetches and write-backs of the module docstring, and each
        core's memory as a cumulative over the segments."""
        inst, m = self.inst, self.model
        g, streamed, core = inst.graph, inst.is_streamed, np.argmax(inst.mask, axis=1)
        output = inst.output_data
        data = (g.bytes > 0) & (core[g.src] == core[g.dst])
        local: dict[int, set[int]] = defaultdict(set)  # producer -> its readers on its core
        for p, q in zip(g.src[data].tolist(), g.dst[data].tolist(), strict=True):
            local[p].add(q)
        sends: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for key in self.tstart:
            sends[key[0]].append(key)
        for p in np.flatnonzero((output > 0) & ~streamed).tolist():
            a = int(core[p])
            cp = self._resident((p, a, a), int(output[p]), self.s[p], self.e[p])
            for q in sorted(local[p]):
                cp.uses.append((self.s[q], self.e[q], [], True))
            for key in sends[p]:
                t = self.tstart[key]
                cp.uses.append((t, t + self._cycles[key], [], self.direct.get(key, True)))
            if streamed[sorted(local[p])].any():
                cp.refetch = -1  # (read by a streamed μop: one segment)
        for key, t in self.tstart.items():
            users = self._users[key]
            if streamed[users].all():
                continue
            cp = self._resident(key, int(self._data[key]), t, t + self._cycles[key])
            for q in users.tolist():
                cp.uses.append((self.s[q], self.e[q], [], True))
            if key in self.direct:
                self._through_dram(key, t, [self.s[q] for q in users.tolist()], cp)
            if streamed[users].any() or (key[0] >= 0 and (key[0], key[1], key[1]) not in
                                         self.copies):  # fmt: skip
                cp.refetch = -1
        for cp in self.copies.values():
            self._segments(cp)
        for p, (lit, b, length) in self.wb.items():
            own = self.copies[(p, int(core[p]), int(core[p]))]
            m.add(b >= self.e[p]).only_enforce_if(lit)
            m.add(b + length <= own.omega[0]).only_enforce_if(lit)
        per_core: dict[int, tuple[list[Any], list[int]]] = defaultdict(lambda: ([], []))
        for cp in self.copies.values():
            for j in range(len(cp.alpha)):
                size = m.new_int_var(0, self.H, "")
                iv = (m.new_interval_var(cp.alpha[j], size, cp.omega[j], "") if j == 0 else
                      m.new_optional_interval_var(cp.alpha[j], size, cp.omega[j], cp.z[j], ""))
                per_core[cp.key[2]][0].append(iv)
                per_core[cp.key[2]][1].append(cp.size)
        for c, (ivs, sizes) in per_core.items():
            m.add_cumulative(ivs, sizes, int(inst.capacity[c]))  # type: ignore[index]

    def _through_dram(self, key: tuple[int, int, int], t: Any, starts: list[Any],
                      cp: _Copy) -> None:  # fmt: skip
        """Copy ``key`` delivered by a re-fetch instead of its transfer (``¬δ_κ``): over the
        route DRAM → ``c`` from ``t``, after ``W_p``; its readers start after it ends.

        .. math:: \\neg δ_κ \\Rightarrow w_p \\wedge t_κ \\ge b_p + \\ell(W_p) \\wedge
                  s_q, ω_{κ0} \\ge t_κ + \\ell(ρ_{κ0})
        """
        inst, m = self.inst, self.model
        via = self.direct[key].Not()
        route = inst.route(-1, key[2])
        length = inst.topology.cycles(cp.size, route)
        iv = m.new_optional_fixed_size_interval_var(t, length, via, "")
        for x in route:
            self.res_intervals[int(inst.topology.resource_of[x])].append(iv)
        lit, b, wl = self._write_back_of(key[0])
        m.add_implication(via, lit)
        m.add(t >= b + wl).only_enforce_if(via)
        for v in [*starts, cp.omega[0]]:
            m.add(v >= t + length).only_enforce_if(via)
        self._fetched[key] = length

    def _resident(self, key: tuple[int, int, int], size: int, start: Any, ready: Any) -> _Copy:
        """Copy ``key`` with its first segment from ``start``, its data arrived by ``ready``."""
        omega = self.model.new_int_var(0, self.H, f"w{key},0")
        self.model.add(omega >= ready)
        cp = _Copy(key, size, [start], [omega], [True])
        self.copies[key] = cp  # (not in ``life``: :meth:`hint` sets the ends itself)
        return cp

    def _segments(self, cp: _Copy) -> None:
        """The later segments of ``cp`` (where it may be split) and the choice of a segment
        for each of its uses."""
        inst, m = self.inst, self.model
        src, _, c = cp.key
        if self.K > 1 and cp.refetch == 0:
            route = inst.route(-1, c)
            cp.refetch = inst.topology.cycles(cp.size, route)
            for j in range(1, self.K):
                r = m.new_int_var(0, self.H, f"r{cp.key},{j}")
                w = m.new_int_var(0, self.H, f"w{cp.key},{j}")
                z = m.new_bool_var(f"z{cp.key},{j}")
                if j > 1:
                    m.add_implication(z, cp.z[j - 1])
                m.add(r >= cp.omega[j - 1]).only_enforce_if(z)
                m.add(w >= r + cp.refetch).only_enforce_if(z)
                iv = m.new_optional_fixed_size_interval_var(r, cp.refetch, z, "")
                for x in route:
                    self.res_intervals[int(inst.topology.resource_of[x])].append(iv)
                if src >= 0:
                    lit, b, length = self._write_back_of(src)
                    m.add_implication(z, lit)
                    m.add(r >= b + length).only_enforce_if(z)
                cp.alpha.append(r)
                cp.omega.append(w)
                cp.z.append(z)
        for start, end, choice, when in cp.uses:
            cond = [] if when is True else [when]
            if len(cp.alpha) == 1:
                m.add(end <= cp.omega[0]).only_enforce_if(cond)
                continue
            choice.extend(m.new_bool_var("") for _ in cp.alpha)
            m.add(sum(choice) == (1 if when is True else when))
            m.add(end <= cp.omega[0]).only_enforce_if(choice[0])
            for j in range(1, len(cp.alpha)):
                m.add_implication(choice[j], cp.z[j])
                m.add(start >= cp.alpha[j] + cp.refetch).only_enforce_if(choice[j])
                m.add(end <= cp.omega[j]).only_enforce_if(choice[j])

    def _write_back_of(self, p: int) -> tuple[Any, Any, int]:
        """``W_p``: the write-back of ``p``'s whole output from its core to DRAM (created once;
        a use of its own copy's first segment)."""
        if p not in self.wb:
            m, inst = self.model, self.inst
            a = int(np.argmax(inst.mask[p]))
            route = inst.route(a, -1)
            length = inst.topology.cycles(int(inst.output_data[p]), route)
            lit, b = m.new_bool_var(f"wb{p}"), m.new_int_var(0, self.H, f"b{p}")
            iv = m.new_optional_fixed_size_interval_var(b, length, lit, "")
            for x in route:
                self.res_intervals[int(inst.topology.resource_of[x])].append(iv)
            self.wb[p] = (lit, b, length)
        return self.wb[p]

    def _links(self) -> None:
        """As :meth:`RoutedModel._links`, after the re-fetches and write-backs joined the links
        (:meth:`_memory` runs first)."""

    def _objective(self) -> None:
        """The links' NoOverlaps (with the moves), then :meth:`RoutedModel._objective`."""
        RoutedModel._links(self)
        super()._objective()

    def decode(self, solver: Any) -> RoutedSchedule:
        """The schedule in ``solver``, with its memory records and moves where it evicts (a copy
        that came through DRAM: its transfer untimed, ``-1``, and a re-fetch instead)."""
        sched = super().decode(solver)
        inst = self.inst
        via = [key for key, d in self.direct.items() if not solver.boolean_value(d)]
        on = [(cp, j) for cp in self.copies.values() for j in range(1, len(cp.alpha))
              if solver.boolean_value(cp.z[j])]  # fmt: skip
        if not on and not via:
            return sched
        tstart, tend = sched.tstart.copy(), sched.tend.copy()
        tr = required_transfers(inst, sched.core)
        index = {tr.key(t): t for t in range(tr.size)}
        moves = []
        for key in via:
            t0 = solver.value(self.tstart[key])
            tstart[index[(key[0], key[2])]] = tend[index[(key[0], key[2])]] = -1
            moves.append((REFETCH, key[0], -1, key[2], t0, t0 + self._fetched[key]))
        recs = [(cp.key[2], cp.key[0], cp.size, solver.value(cp.alpha[j]),
                 solver.value(cp.omega[j]))
                for cp in self.copies.values() for j in range(len(cp.alpha))
                if j == 0 or solver.boolean_value(cp.z[j])]  # fmt: skip
        moves += [(EVICT, p, int(np.argmax(inst.mask[p])), -1, solver.value(b),
                   solver.value(b) + length)
                  for p, (lit, b, length) in self.wb.items() if solver.boolean_value(lit)]
        moves += [(REFETCH, cp.key[0], -1, cp.key[2], solver.value(cp.alpha[j]),
                   solver.value(cp.alpha[j]) + cp.refetch) for cp, j in on]  # fmt: skip
        memory = Residency(*map(np.array, zip(*recs, strict=True)))
        mv = Moves(*map(np.array, zip(*moves, strict=True)))
        return RoutedSchedule(sched.start, sched.core, tstart, tend, memory, mv)

    def hint(self, sched: RoutedSchedule) -> None:
        """:meth:`RoutedModel.hint`, and the schedule's records, moves and the segment of each
        use where it evicts each copy at most ``K − 1`` times (else the segments it fits)."""
        super().hint(sched)
        m = self.model
        from npusched.verify.scheduling.routed import residency

        res = residency(self.inst, sched)
        at = {id(v): int(sched.start[i]) for i, v in enumerate(self.s)}
        tr = required_transfers(self.inst, sched.core)
        first = _first_moves(sched.moves)  # (kind, tensor, core) -> the earliest such move
        sent: dict[int, bool] = {}  # a send's literal -> whether the schedule sends
        for t in range(tr.size):
            src, c = tr.key(t)
            key = (src, -1 if src < 0 else int(sched.core[src]), c)
            v = int(sched.tstart[t])
            if v < 0:  # came through DRAM: its first re-fetch there
                v = first.get((REFETCH, src, c), 0)
                m.add_hint(self.tstart[key], v)
            if key in self.direct:
                m.add_hint(self.direct[key], int(sched.tstart[t]) >= 0)
                sent[id(self.direct[key])] = int(sched.tstart[t]) >= 0
            at[id(self.tstart[key])] = v
        by: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        for c, s, a, f in zip(res.core.tolist(), res.tensor.tolist(), res.alloc.tolist(),
                              res.free.tolist(), strict=True):  # fmt: skip
            by[(c, s)].append((a, f))
        for cp in self.copies.values():
            segs = sorted(by.get((cp.key[2], cp.key[0]), []))[: len(cp.alpha)]
            for j in range(1, len(cp.alpha)):
                m.add_hint(cp.z[j], j < len(segs))
                if j < len(segs):
                    m.add_hint(cp.alpha[j], segs[j][0])
            for j, (_, f) in enumerate(segs):
                m.add_hint(cp.omega[j], f)
            for start, _, choice, when in cp.uses:
                if choice:  # (a send the schedule replaced by a re-fetch: in no segment)
                    j = _segment_of(segs, at.get(id(start), 0))
                    on = when is True or sent.get(id(when), True)
                    for k, v in enumerate(choice):
                        m.add_hint(v, on and k == j)
        for p, (lit, b, _) in self.wb.items():
            core = int(np.argmax(self.inst.mask[p]))
            m.add_hint(lit, (EVICT, p, core) in first)
            if (EVICT, p, core) in first:
                m.add_hint(b, first[(EVICT, p, core)])


def _first_moves(mv: Moves | None) -> dict[tuple[int, int, int], int]:
    """The earliest start of each kind of move per tensor and core (a write-back's source
    core, a re-fetch's destination), in one pass over the moves."""
    first: dict[tuple[int, int, int], int] = {}
    if mv is None:
        return first
    core = np.where(mv.kind == EVICT, mv.src_core, mv.dst_core)
    for key, t in zip(zip(mv.kind.tolist(), mv.tensor.tolist(), core.tolist(), strict=True),
                      mv.tstart.tolist(), strict=True):  # fmt: skip
        first[key] = min(t, first.get(key, t))
    return first


def segments_for(sched: RoutedSchedule | None, least: int = 2) -> int:
    """The segments per copy that make ``sched`` a point of :class:`SpillModel`: the most
    memory records it keeps of one tensor on one core, at least ``least``."""
    if sched is None or sched.memory is None or sched.memory.core.size == 0:
        return least
    pairs = np.stack([sched.memory.core, sched.memory.tensor])
    return max(least, int(np.unique(pairs, axis=1, return_counts=True)[1].max()))


def _segment_of(segs: list[tuple[int, int]], t: int) -> int:
    """The last of the copy's segments (``(alloc, free)``, by alloc) that begins no later than
    ``t`` (0 if none)."""
    return max([k for k, (a, _) in enumerate(segs) if a <= t], default=0)
