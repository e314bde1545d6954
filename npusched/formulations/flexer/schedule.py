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

from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from npusched.problem.flexer import (
    OT,
    FlexerSchedule,
    Residency,
    TiledConv,
    Transfer,
    dram_cycles,
)
from npusched.solvers.cpsat import run_cpsat
from npusched.solvers.result import Status

_LOAD_TYPE = ("input", "weight")


@dataclass
class OptimalSchedule:
    """What :func:`schedule_exact` found: the solver's status, its best schedule (``None`` if
    none), the latency of that schedule, the proven lower bound on the latency of every
    once-per-tile schedule, and the wall-clock seconds."""

    status: Status
    schedule: FlexerSchedule | None
    latency: int | None
    bound: float | None
    seconds: float
    all_fit: bool  # every tile fits at once: the optimum is optimal among all schedules


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
) -> OptimalSchedule:
    """The least-latency schedule of ``problem`` that moves every tile once (module notes).

    ``hint`` (e.g. Flexer's OoO schedule) starts the search from its operation times, NPUs,
    transfer times and addresses when it moves every tile once.

    Raises
    ------
    ValueError
        For a non-positive NPU count, capacity or bandwidth.
    """
    if n_npus < 1 or capacity < 1 or bandwidth <= 0:
        raise ValueError("NPUs, buffer and bandwidth must be positive")
    p = problem
    lat = p.latency.tolist()
    size = p.data_bytes.tolist()
    cyc = [dram_cycles(b, bandwidth) for b in size]
    out_cyc = [dram_cycles(int(b), bandwidth) for b in p.out_bytes.tolist()]
    kinds = p.data_type.tolist()
    users: list[list[int]] = [[] for _ in range(p.n_data)]
    for o, operands in enumerate(
        zip(p.op_in.tolist(), p.op_wt.tolist(), p.op_ot.tolist(), strict=True)
    ):
        for d in operands:
            users[d].append(o)
    horizon = sum(lat) + sum(cyc[d] if kinds[d] != OT else out_cyc[d] for d in range(p.n_data))

    m = cp_model.CpModel()
    s = [m.new_int_var(0, horizon, f"s{o}") for o in range(p.n_ops)]
    g = [m.new_int_var(0, horizon, f"g{o}") for o in range(p.n_ops)]
    e = [s[o] + lat[o] for o in range(p.n_ops)]
    # each operation on one NPU; the NPU is busy from g_o (its loads) to e_o
    x = [[m.new_bool_var(f"x{o}_{k}") for k in range(n_npus)] for o in range(p.n_ops)]
    for o in range(p.n_ops):
        m.add_exactly_one(x[o])
        m.add(g[o] <= s[o])
        if prefetch:
            m.add(g[o] == s[o])
    for k in range(n_npus):
        busy = []
        for o in range(p.n_ops):
            size_o = m.new_int_var(lat[o], horizon, f"busy{o}_{k}")
            m.add(size_o == e[o] - g[o])
            busy.append(m.new_optional_interval_var(g[o], size_o, e[o], x[o][k], f"npu{o}_{k}"))
        m.add_no_overlap(busy)
    if n_npus > 1:  # NPUs are identical: the first operation goes to NPU 0
        m.add(x[0][0] == 1)
    # partial-sum chains, in order of c
    for d in range(p.n_data):
        if kinds[d] == OT:
            chain = sorted(users[d], key=lambda o: int(p.op_c[o]))
            for a, b in zip(chain, chain[1:], strict=False):
                m.add(s[b] >= e[a])
    # transfers and residencies
    dram, rects_t, rects_y = [], [], []
    tstart: dict[int, cp_model.IntVar] = {}
    addr: dict[int, cp_model.IntVar] = {}
    for d in range(p.n_data):
        addr[d] = m.new_int_var(0, max(0, capacity - size[d]), f"y{d}")
        if size[d] > capacity:
            m.add_bool_or([])  # infeasible: the tile alone exceeds the buffer
        t = m.new_int_var(0, horizon, f"t{d}")
        tstart[d] = t
        if kinds[d] == OT:
            last = max(users[d], key=lambda o: int(p.op_c[o]))
            first = min(users[d], key=lambda o: int(p.op_c[o]))
            m.add(t >= e[last])
            dram.append(m.new_fixed_size_interval_var(t, out_cyc[d], f"wb{d}"))
            begin, finish = s[first], t + out_cyc[d]
        else:
            dram.append(m.new_fixed_size_interval_var(t, cyc[d], f"ld{d}"))
            for o in users[d]:
                m.add(s[o] >= t + cyc[d])
            if not prefetch:
                f = [m.new_bool_var(f"f{o}_{d}") for o in users[d]]
                m.add_exactly_one(f)
                for o, fo in zip(users[d], f, strict=True):
                    m.add(g[o] <= t).only_enforce_if(fo)
            finish = m.new_int_var(0, horizon, f"r{d}")
            m.add_max_equality(finish, [e[o] for o in users[d]])
            begin = t
        length = m.new_int_var(0, horizon, f"len{d}")
        m.add(length == finish - begin)
        rects_t.append(m.new_interval_var(begin, length, finish, f"stay{d}"))
        rects_y.append(m.new_fixed_size_interval_var(addr[d], size[d], f"addr{d}"))
    m.add_no_overlap(dram)
    m.add_no_overlap_2d(rects_t, rects_y)
    latency = m.new_int_var(0, horizon, "L")
    m.add_max_equality(
        latency, [*e, *(tstart[d] + out_cyc[d] for d in range(p.n_data) if kinds[d] == OT)]
    )
    m.minimize(latency)

    if hint is not None and len(hint.transfers) == p.n_data:
        for o in range(p.n_ops):
            m.add_hint(s[o], int(hint.start[o]))
            for k in range(n_npus):
                m.add_hint(x[o][k], int(hint.npu[o]) == k)
        for tr in hint.transfers:
            m.add_hint(tstart[tr.data], tr.start)
        for r in hint.residencies:
            m.add_hint(addr[r.data], r.addr)

    status, solver, _ = run_cpsat(m, time_limit=time_limit, threads=threads, seed=seed)
    all_fit = int(p.data_bytes.sum()) <= capacity
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return OptimalSchedule(status, None, None, None, solver.wall_time, all_fit)

    val = solver.value
    start = np.array([val(v) for v in s], np.int64)
    npu = np.array(
        [next(k for k in range(n_npus) if solver.boolean_value(x[o][k])) for o in range(p.n_ops)],
        np.int64,
    )
    transfers: list[Transfer] = []
    residencies: list[Residency] = []
    for d in range(p.n_data):
        at, y = int(val(tstart[d])), int(val(addr[d]))
        if kinds[d] == OT:
            nbytes = int(p.out_bytes[d])
            transfers.append(Transfer("writeback", d, nbytes, at, at + out_cyc[d], "output"))
            first = min(users[d], key=lambda o: int(p.op_c[o]))
            residencies.append(Residency(d, y, size[d], int(start[first]), at + out_cyc[d]))
        else:
            kind = _LOAD_TYPE[kinds[d]]
            transfers.append(Transfer("load", d, size[d], at, at + cyc[d], kind))
            end = max(int(start[o]) + lat[o] for o in users[d])
            residencies.append(Residency(d, y, size[d], at, end))
    transfers.sort(key=lambda tr: tr.start)
    order: list[tuple[int, ...]] = [(int(o),) for o in np.argsort(start, kind="stable")]
    sched = FlexerSchedule(
        problem=p,
        n_npus=n_npus,
        capacity=capacity,
        bandwidth=bandwidth,
        npu=npu,
        start=start,
        end=start + p.latency,
        transfers=transfers,
        residencies=residencies,
        order=order,
        method="cpsat",
    )
    return OptimalSchedule(
        status, sched, sched.latency, float(solver.best_objective_bound), solver.wall_time, all_fit
    )
