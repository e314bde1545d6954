"""CP-SAT schedule of a small tiled layer on ``n`` NPUs sharing a global buffer (Flexer, Min,
Kwon, Egger, CGO 2023, seed ``000_4482881724fd7be8.txt``; the exact counterpart of its
``GetSchedule``, §3–§4).

Flexer's scheduler is greedy: it issues the operation set of highest priority and never looks
back. For a layer with few operations the best schedule can be found outright. The model uses
the time model of :mod:`npusched.heuristics.flexer.ooo` (loads on the NPU's time unless
``prefetch``, one DRAM transfer at a time, the final output written back after its chain) and
the contract of :func:`npusched.verify.flexer.verify_flexer`, in the class of schedules that move
every tile once (no reload and no partial-sum spill).

Variables and constraints, one family per line (``o`` an operation, ``k`` an NPU, ``d`` a tile):

- operation ``o`` runs ``[s_o, e_o)``, ``e_o = s_o + lat_o``, on one NPU: ``Σ_k x_ok = 1``;
  its NPU is busy ``[g_o, e_o)`` with ``g_o ≤ s_o`` (it waits for its loads, §3
  ``lat(total) = lat(l) + lat(o)``), and the busy intervals of one NPU do not overlap;
- partial-sum chains: ``s_o' ≥ e_o`` for consecutive operations of one output tile;
- an input or weight tile is loaded once, ``[l_d, l_d + cyc_d)``, before every user starts
  (``s_o ≥ l_d + cyc_d``), and one user ``o`` with ``f_od = 1`` is busy from it
  (``g_o ≤ l_d``); with ``prefetch`` loads need no NPU and ``g_o = s_o``;
- an output tile is written back once, ``[w_d, w_d + cyc_d)``, after its last chain operation;
- the DRAM channel carries one transfer at a time (``NoOverlap`` of loads and write-backs);
- the buffer: tile ``d`` occupies ``[y_d, y_d + b_d)`` from its load (an output tile from its
  first operation) until its last use (its write-back), ``0 ≤ y_d ≤ C − b_d``, and no two
  occupied rectangles in time × address overlap (``NoOverlap2D``);
- objective: the latency ``L ≥ e_o`` and ``L ≥ w_d + cyc_d``; the bytes are every tile once.

When every tile fits in the buffer at once (``Σ b_d ≤ C``), the optimum is optimal among *all*
schedules of this time model, with reloads and spills or not: keeping each tile on chip from its
first load to its last use at an address of its own is then possible, makes every reload and
spill unnecessary and delays nothing. When the tiles do not all fit, the model may be infeasible
and its optimum says nothing about schedules that reload.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from npusched.problem.flexer.layer import (
    OT,
    FlexerSchedule,
    Residency,
    TiledConv,
    Transfer,
    dram_cycles,
)
from npusched.solvers.cpsat import run_cpsat
from npusched.solvers.result import Result, Status

_LOAD_TYPE = ("input", "weight")


# ---- constraint families shared by the once-per-tile model and the re-timing model
# (:mod:`npusched.formulations.flexer.retime`)


def one_npu(m: cp_model.CpModel, x: list[Any], g: Any, s: Any, prefetch: bool) -> None:
    """Operation ``o`` runs on one NPU, which is busy from ``g_o`` (its loads, §3
    ``lat(total) = lat(l) + lat(o)``); with prefetch the loads need no NPU.

    .. math:: \\sum_k x_{ok} = 1, \\qquad g_o \\le s_o \\;(= s_o \\text{ with prefetch})
    """
    m.add_exactly_one(x)
    if prefetch:
        m.add(g == s)
    else:
        m.add(g <= s)


def npu_no_overlap(
    m: cp_model.CpModel, x: list[list[Any]], g: list[Any], e: list[Any], lat: list[int], h: int
) -> None:
    """The busy intervals of one NPU do not overlap.

    .. math:: \\mathrm{NoOverlap}\\{[g_o, e_o) : x_{ok} = 1\\} \\qquad \\forall k
    """
    for k in range(len(x[0]) if x else 0):
        busy = []
        for o in range(len(x)):
            size = m.new_int_var(lat[o], h, f"busy{o}_{k}")
            m.add(size == e[o] - g[o])
            busy.append(m.new_optional_interval_var(g[o], size, e[o], x[o][k], f"npu{o}_{k}"))
        m.add_no_overlap(busy)


def chain_order(m: cp_model.CpModel, s: list[Any], e: list[Any], chains: list[list[int]]) -> None:
    """Partial-sum chains, in order of ``c``.

    .. math:: s_{o'} \\ge e_o \\qquad o \\to o' \\text{ consecutive in a chain}
    """
    for chain in chains:
        for a, b in zip(chain, chain[1:], strict=False):
            m.add(s[b] >= e[a])


def busy_from_load(m: cp_model.CpModel, g: Any, load: Any, enforce: Any = None) -> None:
    """Without prefetch the operation whose NPU time a load runs on is busy from the load on.

    .. math:: g_o \\le l_d
    """
    c = m.add(g <= load)
    if enforce is not None:
        c.only_enforce_if(enforce)


def dram_channel(m: cp_model.CpModel, transfers: list[Any]) -> None:
    """The DRAM channel carries one transfer at a time.

    .. math:: \\mathrm{NoOverlap}\\{[l_d, l_d + cyc_d)\\} \\cup \\{[w_d, w_d + cyc_d)\\}
    """
    m.add_no_overlap(transfers)


def buffer_no_overlap(m: cp_model.CpModel, times: list[Any], addresses: list[Any]) -> None:
    """No two occupied rectangles in time × address overlap.

    .. math:: \\mathrm{NoOverlap2D}\\{[begin_d, end_d) \\times [y_d, y_d + b_d)\\}
    """
    m.add_no_overlap_2d(times, addresses)


class ScheduleModel:
    """The CP-SAT model of the module notes: one private method per constraint family, in the
    order the constructor calls them; :meth:`hint` and :meth:`decode`.

    Parameters
    ----------
    problem
        The tiled layer.
    n_npus, capacity, bandwidth
        NPUs, global buffer bytes and DRAM bytes per cycle.
    prefetch
        Loads need no NPU (``g_o = s_o``).

    Raises
    ------
    ValueError
        For a non-positive NPU count, capacity or bandwidth.
    """

    def __init__(
        self, problem: TiledConv, n_npus: int, capacity: int, bandwidth: float, prefetch: bool
    ) -> None:
        if n_npus < 1 or capacity < 1 or bandwidth <= 0:
            raise ValueError("NPUs, buffer and bandwidth must be positive")
        p = self.problem = problem
        self.n_npus, self.capacity, self.bandwidth = n_npus, capacity, bandwidth
        self.prefetch = prefetch
        self.lat = p.latency.tolist()
        self.size = p.data_bytes.tolist()
        self.cyc = [dram_cycles(b, bandwidth) for b in self.size]
        self.out_cyc = [dram_cycles(int(b), bandwidth) for b in p.out_bytes.tolist()]
        self.kinds = p.data_type.tolist()
        self.users: list[list[int]] = [[] for _ in range(p.n_data)]
        for o, operands in enumerate(
            zip(p.op_in.tolist(), p.op_wt.tolist(), p.op_ot.tolist(), strict=True)
        ):
            for d in operands:
                self.users[d].append(o)
        h = self.horizon = sum(self.lat) + sum(
            self.cyc[d] if self.kinds[d] != OT else self.out_cyc[d] for d in range(p.n_data)
        )
        m = self.model = cp_model.CpModel()
        self.s = [m.new_int_var(0, h, f"s{o}") for o in range(p.n_ops)]
        self.g = [m.new_int_var(0, h, f"g{o}") for o in range(p.n_ops)]
        self.e = [self.s[o] + self.lat[o] for o in range(p.n_ops)]
        self.x = [[m.new_bool_var(f"x{o}_{k}") for k in range(n_npus)] for o in range(p.n_ops)]
        self.dram: list[Any] = []
        self.rects_t: list[Any] = []
        self.rects_y: list[Any] = []
        self.tstart: dict[int, cp_model.IntVar] = {}
        self.addr: dict[int, cp_model.IntVar] = {}
        self._one_npu()
        self._npu_no_overlap()
        self._symmetry()
        self._chains()
        for d in range(p.n_data):
            self._tile(d)
        self._dram_channel()
        self._buffer()
        self._objective()

    def _one_npu(self) -> None:
        """Each operation on one NPU, busy from its loads (:func:`one_npu`)."""
        for o in range(self.problem.n_ops):
            one_npu(self.model, self.x[o], self.g[o], self.s[o], self.prefetch)

    def _npu_no_overlap(self) -> None:
        """The busy intervals of one NPU do not overlap (:func:`npu_no_overlap`)."""
        npu_no_overlap(self.model, self.x, self.g, self.e, self.lat, self.horizon)

    def _symmetry(self) -> None:
        """NPUs are identical: the first operation goes to NPU 0.

        .. math:: x_{00} = 1
        """
        if self.n_npus > 1:
            self.model.add(self.x[0][0] == 1)

    def _chains(self) -> None:
        """Partial-sum chains, in order of ``c`` (:func:`chain_order`)."""
        p = self.problem
        chains = [
            sorted(self.users[d], key=lambda o: int(p.op_c[o]))
            for d in range(p.n_data)
            if self.kinds[d] == OT
        ]
        chain_order(self.model, self.s, self.e, chains)

    def _tile(self, d: int) -> None:
        """Tile ``d``: its address, its one transfer (:meth:`_writeback` or :meth:`_load`) and
        its residency (:meth:`_residency`)."""
        m, h = self.model, self.horizon
        self.addr[d] = m.new_int_var(0, max(0, self.capacity - self.size[d]), f"y{d}")
        if self.size[d] > self.capacity:
            m.add_bool_or([])  # infeasible: the tile alone exceeds the buffer
        self.tstart[d] = m.new_int_var(0, h, f"t{d}")
        if self.kinds[d] == OT:
            begin, finish = self._writeback(d)
        else:
            begin, finish = self._load(d)
        self._residency(d, begin, finish)

    def _writeback(self, d: int) -> tuple[Any, Any]:
        """An output tile is written back once, after its last chain operation.

        .. math:: w_d \\ge e_{last(d)}

        Returns the residency's begin (the chain's first operation) and end (the write-back's).
        """
        p, t = self.problem, self.tstart[d]
        last = max(self.users[d], key=lambda o: int(p.op_c[o]))
        first = min(self.users[d], key=lambda o: int(p.op_c[o]))
        self.model.add(t >= self.e[last])
        self.dram.append(self.model.new_fixed_size_interval_var(t, self.out_cyc[d], f"wb{d}"))
        return self.s[first], t + self.out_cyc[d]

    def _load(self, d: int) -> tuple[Any, Any]:
        """An input or weight tile is loaded once before every user starts; without prefetch
        one user is busy from the load on.

        .. math::

            s_o \\ge l_d + cyc_d \\;\\; \\forall o \\in users(d), \\qquad
            \\sum_{o} f_{od} = 1, \\;\\; f_{od} \\Rightarrow g_o \\le l_d

        Returns the residency's begin (the load) and end (the last user's end).
        """
        m, t, users = self.model, self.tstart[d], self.users[d]
        self.dram.append(m.new_fixed_size_interval_var(t, self.cyc[d], f"ld{d}"))
        for o in users:
            m.add(self.s[o] >= t + self.cyc[d])
        if not self.prefetch:
            f = [m.new_bool_var(f"f{o}_{d}") for o in users]
            m.add_exactly_one(f)
            for o, fo in zip(users, f, strict=True):
                busy_from_load(m, self.g[o], t, fo)
        finish = m.new_int_var(0, self.horizon, f"r{d}")
        m.add_max_equality(finish, [self.e[o] for o in users])
        return t, finish

    def _residency(self, d: int, begin: Any, finish: Any) -> None:
        """Tile ``d`` occupies ``[y_d, y_d + b_d)`` from ``begin`` to ``finish``
        (``0 ≤ y_d ≤ C − b_d`` by the address's domain); the rectangles go to :meth:`_buffer`.
        """
        m = self.model
        length = m.new_int_var(0, self.horizon, f"len{d}")
        m.add(length == finish - begin)
        self.rects_t.append(m.new_interval_var(begin, length, finish, f"stay{d}"))
        self.rects_y.append(m.new_fixed_size_interval_var(self.addr[d], self.size[d], f"addr{d}"))

    def _dram_channel(self) -> None:
        """The DRAM channel carries one transfer at a time (:func:`dram_channel`)."""
        dram_channel(self.model, self.dram)

    def _buffer(self) -> None:
        """No two occupied rectangles in time × address overlap (:func:`buffer_no_overlap`)."""
        buffer_no_overlap(self.model, self.rects_t, self.rects_y)

    def _objective(self) -> None:
        """The latency: the last operation's end and the last write-back's.

        .. math:: \\min L, \\qquad L = \\max(\\max_o e_o,\\; \\max_d w_d + cyc_d)
        """
        m, p = self.model, self.problem
        self.latency = m.new_int_var(0, self.horizon, "L")
        ends = [self.tstart[d] + self.out_cyc[d] for d in range(p.n_data) if self.kinds[d] == OT]
        m.add_max_equality(self.latency, [*self.e, *ends])
        m.minimize(self.latency)

    def hint(self, schedule: FlexerSchedule) -> None:
        """Hint a schedule's operation times, NPUs, transfer times and addresses, when it moves
        every tile once (else nothing)."""
        if len(schedule.transfers) != self.problem.n_data:
            return
        m = self.model
        m.clear_hints()
        for o in range(self.problem.n_ops):
            m.add_hint(self.s[o], int(schedule.start[o]))
            for k in range(self.n_npus):
                m.add_hint(self.x[o][k], int(schedule.npu[o]) == k)
        for tr in schedule.transfers:
            m.add_hint(self.tstart[tr.data], tr.start)
        for r in schedule.residencies:
            m.add_hint(self.addr[r.data], r.addr)

    def decode(self, solver: cp_model.CpSolver) -> FlexerSchedule:
        """The :class:`~npusched.problem.flexer.layer.FlexerSchedule` of a solver answer."""
        p, val = self.problem, solver.value
        start = np.array([val(v) for v in self.s], np.int64)
        npu = np.array(
            [
                next(k for k in range(self.n_npus) if solver.boolean_value(self.x[o][k]))
                for o in range(p.n_ops)
            ],
            np.int64,
        )
        transfers: list[Transfer] = []
        residencies: list[Residency] = []
        for d in range(p.n_data):
            at, y, b = int(val(self.tstart[d])), int(val(self.addr[d])), self.size[d]
            if self.kinds[d] == OT:
                end = at + self.out_cyc[d]
                transfers.append(Transfer("writeback", d, int(p.out_bytes[d]), at, end, "output"))
                first = min(self.users[d], key=lambda o: int(p.op_c[o]))
                residencies.append(Residency(d, y, b, int(start[first]), end))
            else:
                kind = _LOAD_TYPE[self.kinds[d]]
                transfers.append(Transfer("load", d, b, at, at + self.cyc[d], kind))
                end = max(int(start[o]) + self.lat[o] for o in self.users[d])
                residencies.append(Residency(d, y, b, at, end))
        transfers.sort(key=lambda tr: tr.start)
        order: list[tuple[int, ...]] = [(int(o),) for o in np.argsort(start, kind="stable")]
        return FlexerSchedule(
            problem=p, n_npus=self.n_npus, capacity=self.capacity, bandwidth=self.bandwidth,
            npu=npu, start=start, end=start + p.latency, transfers=transfers,
            residencies=residencies, order=order, method="cpsat",
        )  # fmt: skip


def schedule_exact(
    problem: TiledConv,
    n_npus: int,
    capacity: int,
    bandwidth: float,
    *,
    prefetch: bool = False,
    time_limit: float | None = 30.0,
    threads: int = 1,
    seed: int = 0,
    hint: FlexerSchedule | None = None,
) -> Result:
    """The least-latency schedule of ``problem`` that moves every tile once (module notes).

    ``hint`` (e.g. Flexer's OoO schedule) starts the search from its operation times, NPUs,
    transfer times and addresses when it moves every tile once.

    Returns
    -------
    Result
        ``objective``: the latency of the best schedule (``solution``), ``bound``: CP-SAT's
        proven lower bound on the latency of every once-per-tile schedule (``None`` without a
        solution), ``runtime_s``: CP-SAT's wall time; ``stats["all_fit"]``: every tile fits at
        once, so the optimum is optimal among all schedules.

    Raises
    ------
    ValueError
        For a non-positive NPU count, capacity or bandwidth.
    """
    model = ScheduleModel(problem, n_npus, capacity, bandwidth, prefetch)
    if hint is not None:
        model.hint(hint)
    status, solver, _ = run_cpsat(model.model, time_limit=time_limit, threads=threads, seed=seed)
    out = Result(status, "flexer-cpsat", "cpsat", runtime_s=solver.wall_time, threads=threads)
    out.seed, out.time_limit = seed, time_limit
    out.stats["all_fit"] = int(problem.data_bytes.sum()) <= capacity
    if status in (Status.OPTIMAL, Status.FEASIBLE):
        sched = model.decode(solver)
        out.solution, out.objective = sched, sched.latency
        out.bound = float(solver.best_objective_bound)
    return out
