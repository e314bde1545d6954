"""Joint scheduling and mapping on a mesh with NoC transfer delays (Klotski eq. 15), in CP-SAT.

Klotski declares the unified model ``min T + βC`` (eq. 15, with eq. 5–13) unsolvable because of
the floor/mod of eq. 10–11 and splits it in two stages. With the separable linearisation (DESIGN:
solver facts) it is an ordinary CP-SAT model: the row of μop ``i`` is ``R_i = Σ_k r_k y_ik``, the
hops of an edge are ``|R_p − R_q| + |C_p − C_q|``, and the transfer delay is linear in them.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule


class JointModel:
    """Optional interval per (μop, core), NoOverlap per core, transfer delays on the mesh.

    Parameters
    ----------
    instance
        Its accelerator must have cores on a mesh.
    horizon
        Makespan of a known schedule (the warm start); with ``beta`` the horizon is widened to
        ``horizon + ⌊β·C_warm⌋``, beyond which no schedule can beat the warm start.
    beta
        Weight of the NoC cost in ``T + β·C``; ``None`` minimises ``T`` only (the lexicographic
        second step then fixes ``T`` and minimises ``C``: see :meth:`fix_makespan`).
    weighted
        NoC cost in bytes × hops instead of hops (eq. 14).
    symmetry
        Break the network's symmetry (:meth:`_symmetry`); off for large-neighbourhood search,
        whose neighbourhoods fix cores of a given schedule.
    """

    PARAMETERS: dict[str, bool] = {"use_timetable_edge_finding_in_cumulative": True}

    def __init__(
        self,
        instance: SchedulingInstance,
        horizon: int,
        beta: float | None = None,
        weighted: bool = False,
        warm_cost: int = 0,
        symmetry: bool = True,
    ) -> None:
        acc = instance.accelerator
        if acc.topology is None:
            raise ValueError("the joint model needs cores on a mesh or a hypercube")
        self.instance, self.beta, self.weighted = instance, beta, weighted
        self.symmetric = symmetry and instance.identical_cores
        self.horizon = horizon + (int(beta * warm_cost) if beta else 0)
        self.model = cp_model.CpModel()
        self.xy = acc.coords()  # (m, D): (row, col) on a mesh, the bits on a hypercube
        for add in self.FAMILIES:
            getattr(self, add)()
        self._objective()

    FAMILIES: tuple[str, ...] = (
        "_intervals",
        "_resources",
        "_coordinates",
        "_transfers",
        "_makespan",
        "_lower_bounds",
        "_symmetry",
    )
    """The constraint families, in the order they are added (a subclass may extend them)."""

    def windows(self) -> tuple[np.ndarray, np.ndarray]:
        """Each μop's earliest and latest start within the horizon: eq. 1–2 (the heads, and
        the horizon less the tails)."""
        inst = self.instance
        head = inst.graph.heads(inst.min_duration)
        return head, self.horizon - inst.graph.tails(inst.min_duration)

    def _intervals(self) -> None:
        """Start ``s_i`` in its window (:meth:`windows`), presence ``y_ik`` on one core, end
        ``e_i = s_i + Σ_k l_ik y_ik``."""
        inst, md = self.instance, self.model
        dur = inst.duration
        head, latest = self.windows()
        self.start: list[cp_model.IntVar] = []
        self.end: list[cp_model.IntVar] = []
        self.y: list[list[cp_model.IntVar]] = []
        self.per_core: list[list[cp_model.IntervalVar]] = [[] for _ in range(inst.m)]
        for i in range(inst.n):
            s = md.new_int_var(int(head[i]), int(latest[i]), f"s{i}")
            e = md.new_int_var(int(head[i] + dur[i].min()), self.horizon, f"e{i}")
            ys = [md.new_bool_var(f"y{i},{k}") for k in range(inst.m)]
            md.add_exactly_one(ys)
            md.add(e == s + sum(int(dur[i, k]) * ys[k] for k in range(inst.m)))
            for k in range(inst.m):
                self.per_core[k].append(
                    md.new_optional_fixed_size_interval_var(s, int(dur[i, k]), ys[k], f"I{i},{k}")
                )
            self.start.append(s)
            self.end.append(e)
            self.y.append(ys)

    def _resources(self) -> None:
        """One μop at a time per core: ``NoOverlap({I_ik : i})`` for every core ``k``."""
        for intervals in self.per_core:
            self.model.add_no_overlap(intervals)

    def _coordinates(self) -> None:
        """Separable coordinates (instead of eq. 10–11, 20–28), one per axis ``a`` of the
        network (row and column on a mesh, each bit on a hypercube).

        .. math:: X_{ia} = \\sum_k x_{ka} y_{ik}
        """
        md, m = self.model, self.instance.m
        top = self.xy.max(axis=0)
        self.X = [
            [md.new_int_var(0, int(top[a]), f"X{i},{a}") for a in range(self.xy.shape[1])]
            for i in range(self.instance.n)
        ]
        for i, ys in enumerate(self.y):
            for a, x in enumerate(self.X[i]):
                md.add(x == sum(int(self.xy[k, a]) * ys[k] for k in range(m)))

    def _transfers(self) -> None:
        """Hops of each edge (eq. 9: the L1 distance of the coordinates) and precedence with the
        transfer delay, :func:`add_transfer` on every edge."""
        inst, md = self.instance, self.model
        g = inst.graph
        per_hop, fixed = inst.accelerator.delay_terms(g.bytes)
        top = self.xy.max(axis=0)
        self.hops: list[cp_model.IntVar] = []
        self.diffs: list[list[cp_model.IntVar]] = []
        self.leaves: list[cp_model.IntVar] = []
        for e, (p, q) in enumerate(zip(g.src.tolist(), g.dst.tolist(), strict=True)):
            diffs, h, leaves = add_transfer(
                md, self.X[p], self.X[q], self.end[p], self.start[q],
                int(per_hop[e]), int(fixed[e]), top, exact=True,
            )  # fmt: skip
            assert leaves is not None
            self.hops.append(h)
            self.diffs.append(diffs)
            self.leaves.append(leaves)

    def _makespan(self) -> None:
        """.. math:: T \\ge e_i \\quad \\forall u_i"""
        self.tmax = self.model.new_int_var(self.instance.lower_bound(), self.horizon, "makespan")
        for e in self.end:
            self.model.add(self.tmax >= e)

    def _lower_bounds(self) -> None:
        """Redundant bounds: ``T ≥ s_i + tail_i``, ``m·T ≥ Σ_i d_i`` (transfers only add time),
        ``T ≥`` each core's load, and, on identical cores, the μops as one cumulative of
        capacity ``m`` (no more than ``m`` run at once: the packing view, strong where the
        optimum leaves no core idle)."""
        inst, md = self.instance, self.model
        tail = inst.graph.tails(inst.min_duration)
        for i in range(inst.n):
            md.add(self.tmax >= self.start[i] + int(tail[i]))
        work = [
            int(inst.duration[i, k]) * self.y[i][k] for i in range(inst.n) for k in range(inst.m)
        ]
        md.add(inst.m * self.tmax >= sum(work))
        for k in range(inst.m):  # each core's own load
            md.add(self.tmax >= sum(int(inst.duration[i, k]) * self.y[i][k] for i in range(inst.n)))
        if inst.identical_cores:
            d = inst.duration[:, 0]
            whole = [md.new_interval_var(self.start[i], int(d[i]), self.end[i], f"J{i}")
                     for i in range(inst.n)]  # fmt: skip
            md.add_cumulative(whole, [1] * inst.n, inst.m)

    def _symmetry(self) -> None:
        """Network symmetry (identical cores only): the first μop in topological order sits on
        the smallest core of its orbit under the network's symmetries that keep the set of cores
        (:meth:`~npusched.problem.Accelerator.symmetries`: mesh flips and rotations, hypercube
        bit permutations and flips)."""
        inst = self.instance
        if not self.symmetric:
            return
        sym = inst.accelerator.symmetries()
        first = int(inst.graph.topo[0])
        for k in range(inst.m):
            if min(int(g[k]) for g in sym) != k:
                self.model.add(self.y[first][k] == 0)

    def _objective(self) -> None:
        """``min T + β C`` (eq. 15) with ``C = Σ_e w_e h_e``, or ``min T`` when ``β`` is None."""
        g = self.instance.graph
        w = g.bytes if self.weighted else np.ones(g.num_edges, dtype=np.int64)
        self.cost = sum(int(w[e]) * h for e, h in enumerate(self.hops))
        if self.beta is None:
            self.model.minimize(self.tmax)
            return
        frac = Fraction(self.beta).limit_denominator(1000)
        self.scale = frac.denominator
        self.model.minimize(frac.denominator * self.tmax + frac.numerator * self.cost)

    def fix_makespan(self, makespan: int) -> None:
        """Lexicographic second step: keep ``T ≤ makespan`` and minimise the NoC cost."""
        self.model.add(self.tmax <= makespan)
        self.model.minimize(self.cost)

    def hint(self, schedule: Schedule) -> None:
        """Hint every variable from ``schedule`` (a complete hint: CP-SAT takes it as its first
        solution right after presolve, where a hint of starts and cores alone cost seconds of
        search on 200 μops), its cores first mapped by a network symmetry onto the orbit
        representative :meth:`_symmetry` requires (same hops, same makespan and NoC cost)."""
        inst, md = self.instance, self.model
        md.clear_hints()
        core = schedule.core
        if self.symmetric:
            first = int(inst.graph.topo[0])
            core = min(inst.accelerator.symmetries(), key=lambda g: int(g[core[first]]))[core]
        start = schedule.start
        end = start + inst.duration[np.arange(inst.n), core]
        for i, (s, e, k) in enumerate(
            zip(start.tolist(), end.tolist(), core.tolist(), strict=True)
        ):
            md.add_hint(self.start[i], s)
            md.add_hint(self.end[i], e)
            for kk, y in enumerate(self.y[i]):
                md.add_hint(y, int(kk == k))
            for a, x in enumerate(self.X[i]):
                md.add_hint(x, int(self.xy[k, a]))
        g = inst.graph
        diff = np.abs(self.xy[core[g.src]] - self.xy[core[g.dst]])  # (edges, axes)
        for e, (ds, h, leaves) in enumerate(zip(self.diffs, self.hops, self.leaves, strict=True)):
            for d, v in zip(ds, diff[e].tolist(), strict=True):
                md.add_hint(d, v)
            md.add_hint(h, int(diff[e].sum()))
            md.add_hint(leaves, int(diff[e].sum() > 0))
        md.add_hint(self.tmax, int(end.max(initial=0)))

    def neighbourhood(self, sched: Schedule, free: np.ndarray) -> cp_model.CpModel:
        """A copy of the model, hinted from ``sched``, where only the μops ``free`` (a boolean
        mask) choose their core and start freely: every other μop keeps its core; those that
        start before the first free one keep their start, and the later ones keep their order
        on their core, their starts free (so the schedule after the free μops may close up).
        ``sched`` itself is feasible in it. Needs a model built with ``symmetry=False``.

        .. math:: s_i = \\bar s_i \\ (i \\notin F,\\ \\bar s_i < a), \\qquad
                  y_{i \\bar k_i} = 1 \\ (i \\notin F), \\qquad
                  s_j \\ge e_i \\ (i, j \\notin F \\text{ consecutive on a core}, \\bar s_i \\ge a)
        """
        if self.symmetric:
            raise ValueError("a neighbourhood needs the model without symmetry breaking")
        self.hint(sched)
        md = self.model.clone()
        free = np.asarray(free, dtype=bool)
        a = int(sched.start[free].min()) if free.any() else int(sched.start.max()) + 1
        fixed = np.flatnonzero(~free)
        for i in fixed.tolist():
            md.add(self.y[i][int(sched.core[i])] == 1)
            if sched.start[i] < a:
                md.add(self.start[i] == int(sched.start[i]))
        tail = fixed[sched.start[fixed] >= a]
        order = tail[np.lexsort((sched.start[tail], sched.core[tail]))]
        for i, j in zip(order[:-1].tolist(), order[1:].tolist(), strict=True):
            if sched.core[i] == sched.core[j]:
                md.add(self.start[j] >= self.end[i])
        return md

    def decode(self, solver: cp_model.CpSolver) -> Schedule:
        """The schedule in a solved ``CpSolver``: each μop's start and the core whose presence
        ``y_ik`` is true."""
        start = np.array([solver.value(s) for s in self.start], dtype=np.int64)
        core = np.array(
            [next(k for k, y in enumerate(ys) if solver.boolean_value(y)) for ys in self.y],
            dtype=np.int64,
        )
        return Schedule(start, core)


def add_transfer(
    md: cp_model.CpModel,
    xp: list[cp_model.IntVar],
    xq: list[cp_model.IntVar],
    end_p: Any,
    start_q: Any,
    per_hop: int,
    fixed: int,
    top: np.ndarray,
    exact: bool,
) -> tuple[list[cp_model.IntVar], cp_model.IntVar, cp_model.IntVar | None]:
    """The precedence of an edge ``u_p → u_q`` with its transfer delay, on the separable
    coordinates ``X`` of the two μops (one per axis: row and column on a mesh, each bit on a
    hypercube):

    .. math::
        d_a \\ge |X_{pa} - X_{qa}|, \\qquad h_e = \\sum_a d_a, \\qquad
        \\delta_e \\in \\{0, 1\\},\\; \\delta_e \\le h_e \\le h_{\\max}\\, \\delta_e, \\\\
        s_q \\ge e_p + \\lambda_e\\, h_e + \\phi_e\\, \\delta_e

    with the delay model's per-hop and fixed terms ``(λ_e, φ_e)`` of
    :meth:`~npusched.problem.Accelerator.delay_terms`: ``(hop latency, ⌈b_e / B⌉)`` under
    ``"bandwidth"``, ``(c_e, 0)`` under ``"per_hop"``; ``δ_e`` says whether the edge leaves its
    core (eq. 12's distinct mapping follows from NoOverlap). ``exact`` states ``d_a = |X_pa −
    X_qa|`` (the hops a NoC cost counts) and always creates ``δ_e``; otherwise only ``d_a ≥ ±(X_pa
    − X_qa)``, which is all a makespan needs (a larger ``d_a`` only delays ``u_q``), and ``δ_e``
    only where ``φ_e > 0``. Returns ``(d, h_e, δ_e)``."""
    diffs = []
    for a, (x, z) in enumerate(zip(xp, xq, strict=True)):
        d = md.new_int_var(0, int(top[a]), "")
        if exact:
            md.add_abs_equality(d, x - z)
        else:
            md.add(d >= x - z)
            md.add(d >= z - x)
        diffs.append(d)
    hmax = int(top.sum())
    h = md.new_int_var(0, hmax, "")
    md.add(h == sum(diffs))
    leaves = None
    if exact or fixed:
        leaves = md.new_bool_var("")
        md.add(h >= leaves)
        md.add(h <= hmax * leaves)
    md.add(start_q >= end_p + per_hop * h + (fixed * leaves if leaves is not None else 0))
    return diffs, h, leaves
