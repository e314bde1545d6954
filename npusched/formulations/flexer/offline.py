"""Offline residency bound for Flexer (Min, Kwon, Egger, CGO 2023, seed
``000_4482881724fd7be8.txt``, §4.1): for a *fixed* issue order of operation sets, which data tiles
stay in the global buffer between their uses so that the bytes moved to and from DRAM are least.

Flexer's memory manager decides on line (Algorithm 2, spill victims by fragmentation and reuse);
with the whole order known, the best keep/evict choice is an integer program whose optimum is a
lower bound on the bytes of *every* schedule that issues the sets in that order, and so on
Flexer's own heuristic for that order.

Steps and gaps
--------------
Step :math:`t` is the index of a set in ``order``; :math:`U_t` the distinct data tiles its
operations read or write (IN, WT and OT; all must be on chip when the set is issued) and
:math:`D_t = \\sum_{d \\in U_t} b_d` its demand, :math:`b_d` = ``data_bytes[d]``. A tile used at
the sorted distinct steps :math:`s_0 < s_1 < \\dots < s_m` has the *gaps*
:math:`g = (s_j, s_{j+1})`. Each gap is *kept* (the tile occupies :math:`b_d` at every step
strictly inside it) or *evicted*, which costs a reload of :math:`b_d` bytes and, for an output
tile (a partial sum), a write-back of :math:`b_d` before it: :math:`c_g = b_d` for IN and WT,
:math:`c_g = 2 b_d` for OT. Independent of the choice (*mandatory* bytes) every IN and WT tile is
loaded once and every OT tile written once at the output precision (``out_bytes``) after its last
use; an OT's first use is its ``c = 0`` operation, which produces it (no load). Then

.. math::

    \\min\\; M + \\sum_g c_g (1 - k_g) \\quad\\text{s.t.}\\quad
    D_t + \\sum_{g \\ni t} b_g k_g \\le C \\;\\; \\forall t, \\qquad k_g \\in \\{0, 1\\},

where :math:`g \\ni t` means :math:`s_j < t < s_{j+1}`. :class:`ResidencyModel` writes it with
eviction binaries :math:`e_g = 1 - k_g` as a covering program for any linear backend (HiGHS, CBC,
CP-SAT). It is an unsplittable-flow problem on a path (a knapsack per step over intervals),
strongly NP-hard in general; with equal sizes its matrix has consecutive ones in every column
(totally unimodular) and the LP is integral. Measured (HiGHS 1.14, one thread, index orders of
VGG-16 / ResNet-50 layers): up to ~400 steps and ~1 500 gaps it proves the optimum in seconds; at
512 steps and 2 240 gaps it stops at the 60 s limit 0.1–0.2 % above its bound (the LP relaxation
is 0.3 % below the best solution; cardinality and dominance cuts did not help).

Why it is a lower bound
-----------------------
Take any schedule that issues the sets in this order and never holds more than :math:`C` bytes on
chip. Let :math:`R_t` be the tiles on chip when set :math:`t` is issued: :math:`U_t \\subseteq
R_t` and :math:`\\sum_{d \\in R_t} b_d \\le C`. (If sets overlap in time the buffer must hold even
more at once; the model only asks for the state at each issue.) For a gap :math:`g = (t_1, t_2)`
of tile :math:`d` let :math:`k_g = 1` iff the schedule does not load :math:`d` after the issue
of :math:`t_1` and up to the issue of :math:`t_2`. A tile comes on chip only by a load, or, for
an output tile, by its ``c = 0`` operation, which is its first use (:func:`use_gaps` checks that
no operation is issued before its partial-sum predecessor). So :math:`k_g = 1` means
:math:`d \\in R_t` for every :math:`t_1 < t < t_2`, and the capacity rows hold for this
:math:`k`. If :math:`k_g = 0` the schedule performs at least one load of :math:`d` inside the
gap (:math:`b_d` bytes); for an output tile the value loaded is the partial sum updated at
:math:`t_1`, which is in DRAM only after a write-back made after :math:`t_1`: another
:math:`b_d`. These transfers lie in disjoint time windows for the gaps of one tile, and apart
from the first load of an IN/WT tile (before its first use) and the final write of an output
(after its last use). The schedule's bytes are therefore at
least the model's objective at a feasible :math:`k`, hence at least its optimum.

Evicting in the middle of a gap never helps: an evicted gap costs :math:`c_g` whenever the tile
leaves, and the model already charges it no space anywhere inside the gap. Partial residency (on
chip for some of the gap's steps but reloaded) pays the same reload while occupying more, so it is
dominated by eviction; only full residency avoids the cost.

Contiguity
----------
With ``contiguous=True`` (CP-SAT, :class:`ContiguousModel`) every residency is also a rectangle
in (step × address): each use :math:`u` of a tile gets an integer address
:math:`a_u \\in [0, C - b_d]` and the box :math:`[s_u, s_u + 1 + L_g k_g) \\times [a_u, a_u +
b_d)`, where :math:`g` is the gap after the use and :math:`L_g` its number of inner steps; a kept
gap keeps the address (:math:`k_g \\Rightarrow a_u = a_{u+1}`), an evicted one may reload
elsewhere, and all boxes are pairwise disjoint (NoOverlap2D). Its optimum is at least the
non-contiguous one. It bounds the schedules whose memory manager never moves a resident tile
(Flexer's does not: it places, spills and reloads); a schedule that compacts the buffer on chip
is bounded only by the non-contiguous model.

Warm starts and upper bounds
----------------------------
:func:`~npusched.heuristics.flexer.residency.belady_plan` (``improve=True``) warm-starts the
linear model, :func:`~npusched.heuristics.flexer.residency.contiguous_plan` the contiguous one.
The uses and gaps (:func:`~npusched.problem.flexer.residency.use_gaps`) and the plan type
(:class:`~npusched.problem.flexer.residency.ResidencyPlan`, the solution of the
:class:`~npusched.solvers.result.Result`) live in :mod:`npusched.problem.flexer.residency`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from ortools.sat.python import cp_model

from npusched.heuristics.flexer.residency import belady_gaps, contiguous_gaps
from npusched.problem.flexer.layer import TiledConv
from npusched.problem.flexer.residency import (
    BoolArray,
    IntArray,
    ResidencyPlan,
    UseGaps,
    check_fits,
    use_gaps,
)
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Result, Status, TracePoint

#: Backends of :func:`offline_bound` (``contiguous=True`` needs ``"cpsat"``).
BACKENDS = ("highs", "cpsat", "cbc")

#: Where the bound of :func:`offline_bound` comes from (``stats["bound_source"]``).
BOUND_SOURCES = ("solver", "lp", "presolve")


class ResidencyModel:
    """Keep/evict per gap as an integer linear program (any linear backend).

    Variables :math:`e_g \\in \\{0, 1\\}` (gap evicted) for the gaps the presolve leaves open;
    objective :math:`\\sum_g c_g e_g` (bytes above ``fixed_bytes``, no constant offset, so
    every backend reports the same objective and bound). One capacity row per step that is
    neither slack nor implied by a neighbouring kept row.

    Parameters
    ----------
    gaps
        Uses and gaps of the order (:func:`use_gaps`).
    capacity
        Global buffer bytes :math:`C`.

    Attributes
    ----------
    fixed
        Per gap: ``1`` kept, ``0`` evicted by the presolve, ``-1`` a variable.
    var
        Per gap, its column in ``model``, the
        :class:`~npusched.solvers.linear.LinearModel` (``-1`` when fixed).
    fixed_bytes
        Mandatory bytes plus the cost of the gaps the presolve evicts.
    rows
        ``(gaps, residual)`` of every capacity row: :math:`\\sum_{g} b_g k_g \\le C - D_t`.
    """

    def __init__(self, gaps: UseGaps, capacity: int) -> None:
        self.gaps, self.capacity = gaps, int(capacity)
        self.residual = self.capacity - gaps.demand
        self.model = LinearModel(f"flexer_offline_{gaps.n_steps}x{gaps.n_gaps}")
        self.rows: list[tuple[IntArray, int]] = []
        self._presolve()
        self.var = np.full(gaps.n_gaps, -1, np.int64)
        for g in np.flatnonzero(self.fixed < 0):
            self.var[g] = self.model.add_var(f"e[{g}]", 0, 1)
        for add in (self._capacity,):
            add()
        free = np.flatnonzero(self.fixed < 0)
        self.model.cost = {int(self.var[g]): float(gaps.cost[g]) for g in free}

    def _presolve(self) -> None:
        """Gaps decided by their own span: one with no inner step costs no space and is kept; one
        larger than the room at some inner step can never be kept.

        .. math::

            t_2 = t_1 + 1 \\Rightarrow e_g = 0, \\qquad
            b_g > \\min_{t_1 < t < t_2} (C - D_t) \\Rightarrow e_g = 1
        """
        g = self.gaps
        self.fixed = np.full(g.n_gaps, -1, np.int64)
        self.fixed[g.span == 0] = 1
        for k in np.flatnonzero(g.span > 0):
            if g.size[k] > self.residual[g.first[k] + 1 : g.last[k]].min():
                self.fixed[k] = 0
        self.fixed_bytes = g.mandatory + int(g.cost[self.fixed == 0].sum())

    def _capacity(self) -> None:
        """Capacity at every step: the set's tiles plus the kept gaps spanning it, in covering
        form over the open gaps :math:`S(t)`.

        .. math::

            \\sum_{g \\in S(t)} b_g e_g \\;\\ge\\; \\sum_{g \\in S(t)} b_g - (C - D_t)
            \\qquad \\forall t

        A row whose right-hand side is :math:`\\le 0` is dropped, and so is a row at :math:`t`
        implied by a kept row at :math:`t'` with :math:`S(t) \\subseteq S(t')` and
        :math:`C - D_{t'} \\le C - D_t` (one stack pass over the steps).
        """
        self.model.family("capacity")
        g = self.gaps
        opens = np.flatnonzero(self.fixed < 0)
        start: list[list[int]] = [[] for _ in range(g.n_steps + 1)]
        stop: list[list[int]] = [[] for _ in range(g.n_steps + 1)]
        for j in opens.tolist():
            start[g.first[j] + 1].append(j)
            stop[g.last[j]].append(j)
        active: set[int] = set()
        load = 0
        stack: list[tuple[frozenset[int], int]] = []
        for t in range(g.n_steps):
            for k in stop[t]:
                active.discard(k)
                load -= int(g.size[k])
            for k in start[t]:
                active.add(k)
                load += int(g.size[k])
            r = int(self.residual[t])
            if load <= r:
                continue
            row = frozenset(active)
            while stack and stack[-1][0] <= row and r <= stack[-1][1]:
                stack.pop()
            if stack and row <= stack[-1][0] and stack[-1][1] <= r:
                continue
            stack.append((row, r))
        for row, r in stack:
            idx = np.array(sorted(row), np.int64)
            self.rows.append((idx, r))
            sizes = g.size[idx]
            self.model.add_row(self.var[idx], sizes.astype(float), lb=float(sizes.sum() - r))

    def hint(self, plan: ResidencyPlan) -> NDArray[np.float64]:
        """Column vector of a plan's keep vector (the warm start handed to
        :func:`~npusched.solvers.dispatch.solve_linear`)."""
        x = np.zeros(self.model.num_vars)
        free = np.flatnonzero(self.fixed < 0)
        x[self.var[free]] = (~np.asarray(plan.kept, bool)[free]).astype(float)
        return x

    def decode(self, x: NDArray[np.float64]) -> BoolArray:
        """Keep vector of a solver answer (fixed gaps as the presolve set them)."""
        kept = self.fixed == 1
        free = np.flatnonzero(self.fixed < 0)
        kept[free] = np.asarray(x)[self.var[free]] < 0.5
        return kept


class ContiguousModel:
    """Keep/evict per gap with an address per use, as a CP-SAT model with NoOverlap2D.

    Variables: :math:`k_g \\in \\{0, 1\\}` for every gap the presolve of
    :class:`ResidencyModel` does not evict (gaps without inner steps included: keeping them
    fixes the address, evicting lets the tile reload elsewhere), and an address :math:`a_u` per
    use. Objective :math:`\\sum_g c_g (1 - k_g)` (bytes above the ``fixed_bytes`` of
    :class:`ResidencyModel`).

    Parameters
    ----------
    base
        The linear model of the same order and capacity (its presolve and capacity rows, added
        here as redundant linear constraints).

    Attributes
    ----------
    model
        The ``CpModel``.
    """

    #: Stronger propagation of NoOverlap2D (energy of the boxes per step window).
    PARAMETERS: dict[str, Any] = {"use_energetic_reasoning_in_no_overlap_2d": True}

    def __init__(self, base: ResidencyModel) -> None:
        self.base, self.gaps, self.capacity = base, base.gaps, base.capacity
        self.fixed_bytes = base.fixed_bytes
        self.model = cp_model.CpModel()
        g = self.gaps
        self.k: list[cp_model.IntVar | int] = [
            0 if base.fixed[j] == 0 else self.model.new_bool_var(f"k[{j}]") for j in range(g.n_gaps)
        ]
        self.a = [
            self.model.new_int_var(0, self.capacity - int(g.use_size[u]), f"a[{u}]")
            for u in range(g.n_uses)
        ]
        for add in (self._same_address, self._no_overlap, self._capacity):
            add()
        self.model.minimize(
            sum(int(g.cost[j]) * (1 - k) for j, k in enumerate(self.k) if not isinstance(k, int))
        )

    def _same_address(self) -> None:
        """A kept gap keeps the tile where it is.

        .. math:: k_g \\Rightarrow a_u = a_{u+1} \\qquad g = (s_u, s_{u+1})
        """
        g = self.gaps
        for u in np.flatnonzero(g.gap_after >= 0):
            k = self.k[g.gap_after[u]]
            if not isinstance(k, int):
                self.model.add(self.a[u] == self.a[u + 1]).only_enforce_if(k)

    def _no_overlap(self) -> None:
        """Residencies are disjoint rectangles in (step × address); use :math:`u` of a tile of
        :math:`b` bytes with the gap :math:`g` after it (:math:`L_g` inner steps) is

        .. math::

            [s_u,\\; s_u + 1 + L_g k_g) \\times [a_u,\\; a_u + b), \\qquad
            \\text{NoOverlap2D over all uses}
        """
        g, md = self.gaps, self.model
        xs, ys = [], []
        for u in range(g.n_uses):
            s, j = int(g.use_step[u]), int(g.gap_after[u])
            k = None if j < 0 or g.span[j] == 0 else self.k[j]
            if k is None or isinstance(k, int):
                xs.append(md.new_fixed_size_interval_var(s, 1, f"x[{u}]"))
            else:
                length = 1 + int(g.span[j]) * k
                xs.append(md.new_interval_var(s, length, s + length, f"x[{u}]"))
            ys.append(md.new_fixed_size_interval_var(self.a[u], int(g.use_size[u]), f"y[{u}]"))
        self.n_boxes = len(xs)
        md.add_no_overlap_2d(xs, ys)

    def _capacity(self) -> None:
        """The capacity rows of :class:`ResidencyModel` (implied by NoOverlap2D, added for the
        bound).

        .. math:: \\sum_{g \\in S(t)} b_g k_g \\le C - D_t
        """
        size = self.gaps.size
        for idx, r in self.base.rows:
            self.model.add(sum(int(size[j]) * self.k[j] for j in idx) <= r)

    def hint(self, plan: ResidencyPlan) -> None:
        """Hint a contiguous plan (keep vector and addresses; old hints cleared)."""
        self.model.clear_hints()
        for j, k in enumerate(self.k):
            if not isinstance(k, int):
                self.model.add_hint(k, bool(plan.kept[j]))
        if plan.address is not None:
            for u, a in enumerate(self.a):
                self.model.add_hint(a, int(plan.address[u]))

    def decode(self, solver: Any) -> tuple[BoolArray, IntArray]:
        """Keep vector and addresses of a solver answer."""
        kept = np.array(
            [False if isinstance(k, int) else solver.boolean_value(k) for k in self.k], bool
        )
        address = np.array([solver.value(a) for a in self.a], np.int64)
        return kept, address


# ---- running it ---------------------------------------------------------------------------------


def _shift(trace: list[TracePoint], by: float) -> list[TracePoint]:
    return [
        TracePoint(
            p.time,
            None if p.incumbent is None else p.incumbent + by,
            None if p.bound is None else p.bound + by,
        )
        for p in trace
    ]


def _lp_bound(model: ResidencyModel, time_limit: float | None) -> float | None:
    """Optimum of the LP relaxation (HiGHS), in model units, or ``None``."""
    from npusched.solvers.dispatch import solve_linear

    lp = dataclasses.replace(model.model, integral=[False] * model.model.num_vars)
    try:
        raw = solve_linear(lp, "highs", time_limit=time_limit, threads=1, seed=0)
    except (ImportError, OSError):  # highspy missing or not loadable next to ortools
        return None
    return raw.objective if raw.status is Status.OPTIMAL else None


def _found(out: Result, gaps: UseGaps, kept: BoolArray, address: IntArray | None = None) -> None:
    """Store a decoded keep vector as the solution, its bytes recomputed as the objective."""
    nbytes = gaps.transfer_bytes(kept)
    out.solution = ResidencyPlan(gaps, kept, nbytes, address)
    out.objective = nbytes


def _stats(gaps: UseGaps, contiguous: bool) -> dict[str, Any]:
    """The figures :func:`offline_bound` reports before solving."""
    return {
        "mandatory": gaps.mandatory,
        "contiguous": contiguous,
        "bound_source": "",
        "hint_bytes": None,
        "steps": gaps.n_steps,
        "tiles": int(np.unique(gaps.use_data).size),
        "uses": gaps.n_uses,
        "gaps": gaps.n_gaps,
    }


def offline_bound(
    problem: TiledConv,
    order: Sequence[Sequence[int]],
    capacity: int,
    *,
    contiguous: bool = False,
    backend: str = "highs",
    time_limit: float | None = 60.0,
    threads: int = 1,
    seed: int = 0,
    warm: bool = True,
    log: bool = False,
) -> Result:
    """Least DRAM bytes of any schedule issuing the sets ``order`` with a global buffer of
    ``capacity`` bytes (the module docstring gives the model and why it is a lower bound).

    Parameters
    ----------
    problem, order, capacity
        The tiled layer, its operation sets in issue order (every operation once, never before
        its partial-sum predecessor) and the global buffer's bytes.
    contiguous
        Also place every residency at a fixed address range (CP-SAT only).
    backend
        ``"highs"``, ``"cpsat"`` or ``"cbc"`` (:data:`BACKENDS`).
    time_limit, threads, seed, log
        Solver settings.
    warm
        Start from :func:`~npusched.heuristics.flexer.residency.belady_plan` (``improve=True``)
        or, contiguous, :func:`~npusched.heuristics.flexer.residency.contiguous_plan`.

    Returns
    -------
    Result
        ``solution``: the :class:`~npusched.problem.flexer.residency.ResidencyPlan`, its bytes
        recomputed as ``objective``; ``bound``: the solver's (plus the fixed bytes), else the
        LP relaxation's, else the presolve's (``stats["bound_source"]``). ``infeasible`` when a
        set alone exceeds the capacity, ``error`` when the answer fails the checks. ``stats``:
        ``mandatory`` (bytes of every schedule), ``hint_bytes``, model sizes and timings.

    Raises
    ------
    ValueError
        Unknown backend, ``contiguous`` without CP-SAT, or an invalid ``order``.
    """
    t0 = time.perf_counter()
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    if contiguous and backend != "cpsat":
        raise ValueError("the contiguous model (NoOverlap2D) needs backend='cpsat'")
    gaps = use_gaps(problem, order)
    out = Result(Status.INFEASIBLE, "flexer-offline", backend, threads=threads, seed=seed)
    out.time_limit, out.stats = time_limit, _stats(gaps, contiguous)
    try:
        check_fits(gaps, capacity)
    except ValueError as err:
        out.message, out.runtime_s = str(err), time.perf_counter() - t0
        return out
    model = ResidencyModel(gaps, capacity)
    out.stats |= {
        "kept_free": int((model.fixed == 1).sum()),
        "evicted_presolve": int((model.fixed == 0).sum()),
        "variables": model.model.num_vars,
        "rows": model.model.num_rows,
    }

    left = _time_left(time_limit, t0)  # the limit counts building and every solve
    if contiguous:
        _solve_contiguous(out, model, left(), warm, log)
    else:
        _solve_linear(out, model, left(), warm, log)
    if out.bound is None and out.status is not Status.ERROR:
        lp = _lp_bound(model, left()) if model.model.num_vars else 0.0
        out.bound, out.stats["bound_source"] = (
            (model.fixed_bytes + lp, "lp") if lp is not None else (model.fixed_bytes, "presolve")
        )
    if out.solution is not None:
        _verify(out, capacity)
    out.runtime_s = time.perf_counter() - t0
    return out


def _time_left(time_limit: float | None, t0: float) -> Any:
    """The seconds of ``time_limit`` left since ``t0``, as a function (at least 0.01 s)."""
    return lambda: None if time_limit is None else max(0.01, time_limit - time.perf_counter() + t0)


def _solve_linear(
    out: Result, model: ResidencyModel, time_limit: float | None, warm: bool, log: bool
) -> None:
    from npusched.solvers.dispatch import solve_linear

    fixed = model.fixed_bytes
    hint = belady_gaps(model.gaps, model.capacity, improve=True) if warm else None
    out.stats["hint_bytes"] = None if hint is None else hint.bytes
    if model.model.num_vars == 0:
        out.status = Status.OPTIMAL
        _found(out, model.gaps, model.decode(np.zeros(0)))
        out.bound, out.stats["bound_source"] = out.objective, "presolve"
        return
    t = time.perf_counter()
    raw = solve_linear(
        model.model,
        out.backend,
        time_limit=time_limit,
        threads=out.threads,
        seed=out.seed,
        warm_start=None if hint is None else model.hint(hint),
        log=log,
    )
    out.stats["solve_s"] = time.perf_counter() - t
    out.status, out.trace, out.message = raw.status, _shift(raw.trace, fixed), raw.message
    if raw.bound is not None and math.isfinite(raw.bound):
        out.bound, out.stats["bound_source"] = fixed + raw.bound, "solver"
    if raw.x is not None:
        _found(out, model.gaps, model.decode(raw.x))
        assert out.objective is not None
        if raw.objective is not None and abs(fixed + raw.objective - out.objective) > 0.5:
            out.status = Status.ERROR
            out.message = f"solver objective {fixed + raw.objective} != recomputed {out.objective}"


def _solve_contiguous(
    out: Result, base: ResidencyModel, time_limit: float | None, warm: bool, log: bool
) -> None:
    """CP-SAT on :class:`ContiguousModel`. With a time limit it runs in a child process stopped at
    the limit (:func:`~npusched.solvers.cpsat.run_cpsat_within`): with 2 workers its packing
    neighbourhoods overran a 15 s limit by 20 s on a 640-box model."""
    from npusched.solvers.cpsat import run_cpsat, run_cpsat_within

    t = time.perf_counter()
    model = ContiguousModel(base)
    out.stats |= {"boxes": model.n_boxes, "build_cp_s": time.perf_counter() - t}
    hint = contiguous_gaps(base.gaps, base.capacity) if warm else None
    if hint is not None:
        out.stats["hint_bytes"] = hint.bytes
        model.hint(hint)
    t = time.perf_counter()
    kw: dict[str, Any] = dict(threads=out.threads, seed=out.seed, params=model.PARAMETERS)
    kw["log"] = log
    solver: Any
    if time_limit is None:
        status, solver, rec = run_cpsat(model.model, time_limit=None, **kw)
        points = rec.points
    else:
        ran = run_cpsat_within(model.model, time_limit=float(time_limit), **kw)
        status, solver, points = (Status.TIME_LIMIT_NO_SOLUTION, None, []) if ran is None else ran
    out.stats["solve_s"] = time.perf_counter() - t
    fixed = model.fixed_bytes
    out.status, out.trace = status, _shift(points, fixed)
    if solver is not None and math.isfinite(solver.best_objective_bound):
        out.bound, out.stats["bound_source"] = fixed + solver.best_objective_bound, "solver"
    if solver is not None and status in (Status.OPTIMAL, Status.FEASIBLE):
        _found(out, model.gaps, *model.decode(solver))
        if abs(fixed + solver.objective_value - (out.objective or 0)) > 0.5:
            out.status = Status.ERROR
            out.message = f"CP-SAT objective {fixed + solver.objective_value} != {out.objective}"
    elif hint is not None and status is Status.TIME_LIMIT_NO_SOLUTION:
        out.status, out.solution, out.objective = Status.FEASIBLE, hint, hint.bytes
        out.message = "CP-SAT returned no solution in time; the objective is the warm start's"


def _verify(out: Result, capacity: int) -> None:
    """Independent checks of the decoded answer (capacity; boxes when contiguous)."""
    plan = out.solution
    assert isinstance(plan, ResidencyPlan)
    bad = plan.gaps.over_capacity(plan.kept, capacity)
    problems = [f"step {t} over capacity" for t in bad[:5]]
    if plan.address is not None:
        problems += plan.gaps.overlaps(plan.kept, plan.address, capacity)[:5]
    if problems:
        out.status = Status.ERROR
        out.message = "; ".join([out.message, *problems] if out.message else problems)


__all__ = ["BACKENDS", "BOUND_SOURCES", "ContiguousModel", "ResidencyModel", "offline_bound"]
