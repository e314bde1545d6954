"""``flexer-lns``: large-neighbourhood search that re-times a Flexer layer schedule with CP-SAT
(issue 25, item 3; not in the paper).

Flexer's scheduler (Algorithm 1, :mod:`npusched.heuristics.flexer.ooo`) and its beam
(:mod:`npusched.heuristics.flexer.beam`) decide *what* moves — which tiles are loaded, spilled,
reloaded and written back, and where each sits in the global buffer — and place every event as
early as the sets issued before it allow, never revisiting one. This module keeps those
decisions and re-decides *when* and *on which NPU*: a CP-SAT model of the schedule's operations,
transfers and residencies (:class:`RetimeModel`), of which each round of the search frees a
window of consecutive operation sets (their NPUs, their order on the NPUs, the DRAM channel and
the buffer, their tiles' addresses) and keeps the rest in its order. The transfers, so the bytes,
stay those of the start schedule: a shorter latency is a better ``latency × bytes``.

The model, one constraint family per line (``o`` an operation, ``t`` a transfer of
``D_t`` cycles, ``r`` a residency of one tile at an address; the families shared with the
once-per-tile model of :mod:`npusched.formulations.flexer.schedule` are its functions):

- one NPU per operation, busy ``[g_o, e_o)``, ``e_o = s_o + lat_o`` (:func:`one_npu`), no two
  busy intervals of one NPU overlap (:func:`npu_no_overlap`), partial-sum chains in order
  (:func:`chain_order`);
- the DRAM channel carries one transfer at a time (:func:`dram_channel`);
- a load ``t`` fills its residency: every operation reading the tile there starts after it,
  ``s_o ≥ τ_t + D_t``; without prefetch the operation on whose NPU time it runs is busy from it,
  ``g_o ≤ τ_t`` (:func:`busy_from_load`);
- a write-back ``w`` of an output tile starts after the chain's operation before it,
  ``τ_w ≥ e_o``, and (a partial sum) ends before the next one starts,
  ``s_{o'} ≥ τ_w + D_w``; a partial sum's reload starts after its write-back,
  ``τ_t ≥ τ_w + D_w``;
- residency ``r`` holds its tile from its first load (or, for a new output tile, from the
  operation that produces it) until its last reader or transfer ends,
  ``[b_r, f_r)``, ``f_r = max(e_o, τ_t + D_t)``, at address ``y_r ∈ [0, C − size_r]``, and no
  two residencies overlap in time × address (:func:`buffer_no_overlap`);
- the objective: the latency ``L = max(max_o e_o, max_t τ_t + D_t)``.

Which operation a load runs on the NPU time of is read off the start schedule: a reader of the
tile in that residency whose NPU is free (its previous operation there has ended) when the load
starts; the earliest such reader. Every schedule the model admits satisfies the contract of
:func:`~npusched.verify.flexer.verify_flexer` (tests re-check every answer), and the start
schedule is one of them, so a round never returns a longer schedule.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from npusched.formulations.flexer.schedule import (
    buffer_no_overlap,
    busy_from_load,
    chain_order,
    dram_channel,
    npu_no_overlap,
    one_npu,
)
from npusched.heuristics.flexer.retiming import compact, structure
from npusched.problem.flexer.layer import FlexerSchedule, Transfer
from npusched.solvers.cpsat import run_cpsat
from npusched.solvers.result import Status, TracePoint


class RetimeModel:
    """The re-timing model of the module notes for schedule ``s``; with ``window`` (operation
    ids) a neighbourhood of it: only the window's operations choose their NPU; every event
    outside it that starts before the window's first one keeps its time, the later ones keep
    their order on their NPU and on the DRAM channel; residencies no window event touches keep
    their address. Hinted with ``s`` in full, which is feasible.

    Parameters
    ----------
    s
        The schedule; its transfers and residencies are kept.
    prefetch
        Loads need no NPU (``g_o = s_o``).
    window
        Operation ids that are free (default: all).

    Raises
    ------
    ValueError
        From :func:`structure`.
    """

    def __init__(
        self, s: FlexerSchedule, prefetch: bool, window: Sequence[int] | None = None
    ) -> None:
        self.sched, self.prefetch = s, prefetch
        p = self.problem = s.problem
        self.st = structure(s, prefetch)
        self.lat = p.latency.tolist()
        self.dur = [t.end - t.start for t in s.transfers]
        h = self.horizon = int(s.latency) + sum(self.dur)
        m = self.model = cp_model.CpModel()
        self.s = [m.new_int_var(0, h, f"s{o}") for o in range(p.n_ops)]
        self.g = [m.new_int_var(0, h, f"g{o}") for o in range(p.n_ops)]
        self.e = [self.s[o] + self.lat[o] for o in range(p.n_ops)]
        self.x = [[m.new_bool_var(f"x{o}_{k}") for k in range(s.n_npus)] for o in range(p.n_ops)]
        self.tau = [m.new_int_var(0, h, f"t{i}") for i in range(len(s.transfers))]
        self.busy = self._busy(s)
        self.free = np.ones(p.n_ops, bool) if window is None else np.zeros(p.n_ops, bool)
        if window is not None:
            self.free[list(window)] = True
        self._operations()
        self._transfers()
        self._loads()
        self._writebacks()
        self._residencies()
        self._window()
        self._objective()
        self.hint(s)

    def _operations(self) -> None:
        """One NPU per operation, busy from its loads; one operation at a time per NPU; the
        partial-sum chains in order."""
        m = self.model
        for o in range(self.problem.n_ops):
            one_npu(m, self.x[o], self.g[o], self.s[o], self.prefetch)
        npu_no_overlap(m, self.x, self.g, self.e, self.lat, self.horizon)
        chain_order(m, self.s, self.e, self.st.chains)

    def _transfers(self) -> None:
        """The DRAM channel, one transfer at a time."""
        self.dram = [
            self.model.new_fixed_size_interval_var(t, d, f"tr{i}")
            for i, (t, d) in enumerate(zip(self.tau, self.dur, strict=True))
        ]
        dram_channel(self.model, self.dram)

    def _loads(self) -> None:
        """A load fills its residency before any reader starts; its owner is busy from it; a
        partial sum's reload follows its write-back.

        .. math:: s_o \\ge \\tau_t + D_t, \\qquad g_{owner(t)} \\le \\tau_t, \\qquad
                  \\tau_t \\ge \\tau_w + D_w
        """
        m, st = self.model, self.st
        for i, t in enumerate(self.sched.transfers):
            if t.kind != "load":
                continue
            for o in st.readers[st.tr_res[i]]:
                m.add(self.s[o] >= self.tau[i] + self.dur[i])
            if st.owner[i] >= 0:
                busy_from_load(m, self.g[st.owner[i]], self.tau[i])
            if (w := st.reload_of[i]) >= 0:
                m.add(self.tau[i] >= self.tau[w] + self.dur[w])

    def _writebacks(self) -> None:
        """A write-back follows the chain's operation before it; a partial sum's ends before
        the next one starts.

        .. math:: \\tau_w \\ge e_o, \\qquad s_{o'} \\ge \\tau_w + D_w
        """
        m, st = self.model, self.st
        for i, t in enumerate(self.sched.transfers):
            if t.kind != "writeback":
                continue
            m.add(self.tau[i] >= self.e[st.wb_after[i]])
            if st.wb_before[i] >= 0:
                m.add(self.s[st.wb_before[i]] >= self.tau[i] + self.dur[i])

    def _residencies(self) -> None:
        """Residency ``r`` from its first load (a new output tile: its first reader) to its
        last reader's or transfer's end, at a free address; no two overlap in time × address.

        .. math:: b_r = \\min_t \\tau_t \\text{ or } \\min_o s_o, \\qquad
                  f_r = \\max(e_o, \\tau_t + D_t), \\qquad 0 \\le y_r \\le C - size_r
        """
        m, st, h = self.model, self.st, self.horizon
        fills: list[list[int]] = [[] for _ in st.residencies]
        for i, r in enumerate(st.tr_res):
            fills[r].append(i)
        self.begin: list[Any] = []
        self.addr: list[Any] = []
        times, places = [], []
        for r, res in enumerate(st.residencies):
            loads = [i for i in fills[r] if self.sched.transfers[i].kind == "load"]
            if loads:
                first = min(loads, key=lambda i: self.sched.transfers[i].start)
                begin, after = self.tau[first], [self.tau[i] for i in loads]
            else:
                first = min(st.readers[r], key=lambda o: int(self.sched.start[o]))
                begin, after = self.s[first], [self.s[o] for o in st.readers[r]]
            for v in after:
                m.add(v >= begin)
            finish = m.new_int_var(0, h, f"f{r}")
            ends = [self.e[o] for o in st.readers[r]]
            m.add_max_equality(finish, ends + [self.tau[i] + self.dur[i] for i in fills[r]])
            length = m.new_int_var(0, h, f"len{r}")
            m.add(length == finish - begin)
            times.append(m.new_interval_var(begin, length, finish, f"stay{r}"))
            y = m.new_int_var(0, self.sched.capacity - res.size, f"y{r}")
            places.append(m.new_fixed_size_interval_var(y, res.size, f"at{r}"))
            self.begin.append(begin)
            self.addr.append(y)
        buffer_no_overlap(m, times, places)

    def _window(self) -> None:
        """Outside the window: operations keep their NPU; events before the window's first one
        keep their time, later ones their order on their NPU and on the DRAM channel;
        residencies of no window event keep their address.

        .. math:: x_{o \\bar k_o} = 1, \\quad s_o = \\bar s_o \\;(\\bar s_o < a), \\quad
                  g_b \\ge e_a \\;(a, b \\text{ consecutive on an NPU}), \\quad
                  \\tau_b \\ge \\tau_a + D_a \\;(\\text{consecutive on the channel})
        """
        if self.free.all():
            return
        m, s, st = self.model, self.sched, self.st
        free_tr = np.array(
            [
                self.free[st.wb_after[i]]
                if t.kind == "writeback"
                else any(self.free[o] for o in st.readers[st.tr_res[i]])
                for i, t in enumerate(s.transfers)
            ],
            bool,
        )
        starts = [int(v) for v in s.start[self.free]] + [
            t.start for t, f in zip(s.transfers, free_tr, strict=True) if f
        ]
        a = min(starts, default=int(s.latency))
        later: list[list[int]] = [[] for _ in range(s.n_npus)]
        for o in np.flatnonzero(~self.free).tolist():
            m.add(self.x[o][int(s.npu[o])] == 1)
            if s.start[o] < a:
                m.add(self.s[o] == int(s.start[o]))
                m.add(self.g[o] == self.busy[o])
            else:
                later[int(s.npu[o])].append(o)
        for ops in later:
            ops.sort(key=lambda o: int(s.start[o]))
            for o, o2 in zip(ops, ops[1:], strict=False):
                m.add(self.g[o2] >= self.e[o])
        kept = [i for i in range(len(s.transfers)) if not free_tr[i]]
        for i in kept:
            if s.transfers[i].start < a:
                m.add(self.tau[i] == s.transfers[i].start)
        tail = sorted((i for i in kept if s.transfers[i].start >= a), key=self._tr_start)
        for i, j in zip(tail, tail[1:], strict=False):
            m.add(self.tau[j] >= self.tau[i] + self.dur[i])
        touched = {st.tr_res[i] for i in np.flatnonzero(free_tr).tolist()}
        touched |= {r for o in np.flatnonzero(self.free).tolist() for r in st.op_res[o]}
        for r, res in enumerate(st.residencies):
            if r not in touched:
                m.add(self.addr[r] == res.addr)

    def _tr_start(self, i: int) -> int:
        return self.sched.transfers[i].start

    def _objective(self) -> None:
        """The latency.

        .. math:: \\min L, \\qquad L = \\max(\\max_o e_o,\\; \\max_t \\tau_t + D_t)
        """
        m = self.model
        self.latency = m.new_int_var(0, self.horizon, "L")
        ends = [t + d for t, d in zip(self.tau, self.dur, strict=True)]
        m.add_max_equality(self.latency, [*self.e, *ends])
        m.minimize(self.latency)

    def _busy(self, s: FlexerSchedule) -> list[int]:
        """``g_o`` in ``s``: each operation's start, or the start of the first load it owns."""
        busy = s.start.tolist()
        for i, o in enumerate(self.st.owner):
            if o >= 0:
                busy[o] = min(busy[o], s.transfers[i].start)
        return busy

    def hint(self, s: FlexerSchedule) -> None:
        """Hint every decision variable from ``s`` (a schedule with this model's structure);
        CP-SAT completes the auxiliary ones."""
        m = self.model
        m.clear_hints()
        busy = self._busy(s)
        for o in range(self.problem.n_ops):
            m.add_hint(self.s[o], int(s.start[o]))
            m.add_hint(self.g[o], busy[o])
            for k in range(s.n_npus):
                m.add_hint(self.x[o][k], int(s.npu[o]) == k)
        for i, t in enumerate(s.transfers):
            m.add_hint(self.tau[i], t.start)
        for r, res in enumerate(self.st.residencies):
            m.add_hint(self.addr[r], res.addr)
        m.add_hint(self.latency, int(s.latency))

    def decode(self, solver: cp_model.CpSolver) -> FlexerSchedule:
        """The re-timed :class:`~npusched.problem.flexer.layer.FlexerSchedule`: the same
        transfers and residencies at their new addresses, in the orders CP-SAT chose, every
        event at its earliest time given those orders, with its waits
        (:func:`~npusched.heuristics.flexer.retiming.compact`)."""
        s, st, p = self.sched, self.st, self.problem
        start = np.array([solver.value(v) for v in self.s], np.int64)
        end = start + p.latency
        npu = np.array(
            [next(k for k, v in enumerate(xs) if solver.boolean_value(v)) for xs in self.x],
            np.int64,
        )
        tau = [solver.value(v) for v in self.tau]
        transfers = [
            Transfer(t.kind, t.data, t.nbytes, a, a + d, t.dtype)
            for t, a, d in zip(s.transfers, tau, self.dur, strict=True)
        ]
        raw = FlexerSchedule(
            problem=p, n_npus=s.n_npus, capacity=s.capacity, bandwidth=s.bandwidth, npu=npu,
            start=start, end=end, transfers=transfers, residencies=[], order=s.order,
            method=s.method if s.method.endswith("+lns") else f"{s.method}+lns",
        )  # fmt: skip
        return compact(raw, st, [solver.value(y) for y in self.addr])


def latency_floor(s: FlexerSchedule, prefetch: bool) -> int:
    """A lower bound on the latency of every re-timing of ``s``: the DRAM channel's busy
    cycles (its transfers are fixed), the NPUs' work (with the loads on their time without
    prefetch) over the NPUs, and the longest partial-sum chain."""
    p = s.problem
    dram = sum(t.end - t.start for t in s.transfers)
    loads = 0 if prefetch else sum(t.end - t.start for t in s.transfers if t.kind == "load")
    work = -(-(int(p.latency.sum()) + loads) // s.n_npus)
    chain = np.bincount(p.op_ot, weights=p.latency, minlength=p.n_data).max(initial=0)
    return int(max(dram, work, int(chain)))


@dataclass
class LnsOutcome:
    """What :func:`retime_lns` did: the best schedule, whether it is proven the shortest
    re-timing (the whole model solved to optimality, or the latency at
    :func:`latency_floor`), the rounds and improving rounds, and the anytime trace
    (seconds since the start, latency)."""

    schedule: FlexerSchedule
    proved: bool
    rounds: int
    improved: int
    floor: int
    trace: list[TracePoint]


def retime_lns(
    start: FlexerSchedule,
    prefetch: bool = False,
    *,
    time_limit: float | None = 10.0,
    rounds: int = 40,
    window: int = 8,
    round_limit: float = 0.5,
    threads: int = 1,
    seed: int = 0,
) -> LnsOutcome:
    """Large-neighbourhood search over re-timings of ``start`` (module notes).

    Each round frees ``w`` consecutive operation sets of the issue order, from a random first
    set (``seed``), and solves :class:`RetimeModel` on them with at most ``round_limit``
    deterministic seconds of CP-SAT (repeatable for a given seed on one thread). A round
    that ends optimal without an improvement grows ``w`` by half, one that runs out of time
    halves it; once ``w`` covers every set, the round is the whole model and its optimum ends
    the search. The search also ends at :func:`latency_floor`, after ``rounds`` rounds, or
    at ``time_limit`` wall seconds.

    Raises
    ------
    ValueError
        ``rounds``, ``window`` or ``round_limit`` not positive, or ``start`` not a schedule of
        this time model (:func:`structure`).
    """
    if rounds < 1 or window < 1 or not round_limit > 0:
        raise ValueError(
            f"rounds, window and round_limit must be positive, got {rounds}, {window}, "
            f"{round_limit}"
        )
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    rng = np.random.default_rng(seed)
    best, floor = start, latency_floor(start, prefetch)
    trace = [TracePoint(0.0, float(best.latency), float(floor))]
    sets = len(start.order)
    w, done, improved, proved = min(window, sets), 0, 0, best.latency <= floor
    while not proved and done < rounds:
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0.05:
            break
        first = int(rng.integers(0, sets - w + 1))
        order = sorted(best.order, key=lambda ops: min(int(best.start[o]) for o in ops))
        ops = None if w >= sets else [o for s in order[first : first + w] for o in s]
        model = RetimeModel(best, prefetch, ops)
        status, solver, _ = run_cpsat(
            model.model, time_limit=round_limit if left is None else min(left, round_limit),
            threads=threads, seed=seed + done,
        )  # fmt: skip
        done += 1
        if status in (Status.OPTIMAL, Status.FEASIBLE) and solver.objective_value < best.latency:
            best, improved = model.decode(solver), improved + 1
            trace.append(TracePoint(time.perf_counter() - t0, float(best.latency), float(floor)))
        if status == Status.OPTIMAL and ops is None:
            proved = True
        elif status == Status.OPTIMAL:
            w = min(sets, w + max(1, w // 2))
        else:
            w = max(1, w // 2)
        proved = proved or best.latency <= floor
    return LnsOutcome(best, proved, done, improved, floor, trace)
