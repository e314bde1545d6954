"""CP-SAT interval model for μop scheduling on m cores (P|prec|Cmax and R|prec|Cmax)."""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule, assign_cores
from npusched.problem.scheduling.windows import Windows, asap_alap


class IntervalModel:
    """Klotski Problem 2 as a CP model.

    Identical cores: one interval per μop and a cumulative of capacity ``m``; cores are given
    afterwards by interval colouring, which always succeeds under the cumulative. Per-core
    latencies: an optional interval per (μop, core), exactly one present, NoOverlap per core.

    Start domains are the ASAP/ALAP windows of the horizon (Klotski eq. 1–2), and the makespan
    carries the redundant lower bounds that let 2 CP-SAT workers close the gap (DESIGN: solver
    facts).
    """

    #: CP-SAT settings for this model. With 2 workers the default cumulative propagation leaves the
    #: bound short on the STG set; timetable edge finding, the overload checker and precedence
    #: reasoning inside the cumulative, plus the objective lower-bound search, close 12 of the 16
    #: cases the defaults left open at 10 s in the STG sweep (docs/results_stg.md).
    PARAMETERS: dict[str, bool] = {
        "use_timetable_edge_finding_in_cumulative": True,
        "use_overload_checker_in_cumulative": True,
        "use_hard_precedences_in_cumulative": True,
        "use_objective_lb_search": True,
    }

    def __init__(self, instance: SchedulingInstance, horizon: int) -> None:
        self.instance = instance
        self.windows: Windows = asap_alap(instance, horizon)
        self.identical = instance.identical_cores
        self.model = cp_model.CpModel()
        for add in (
            self._intervals,
            self._precedence,
            self._resources,
            self._makespan,
            self._lower_bounds,
        ):
            add()
        self.model.minimize(self.C)

    def _intervals(self) -> None:
        """``s_i ∈ [S_i, L_i]``, ``e_i = s_i + d_i``; with per-core latencies, presences ``y_ik``.

        .. math:: \\sum_k y_{ik} = 1,\\qquad d_i = \\sum_k l_{ik}\\, y_{ik}
        """
        inst, w, md = self.instance, self.windows, self.model
        dur = inst.duration
        self.start = [
            md.new_int_var(int(w.earliest[i]), int(w.latest[i]), f"s{i}") for i in range(inst.n)
        ]
        if self.identical:
            self.end = [self.start[i] + int(dur[i, 0]) for i in range(inst.n)]
            self.size: list = [int(dur[i, 0]) for i in range(inst.n)]
            self.interval = [
                md.new_fixed_size_interval_var(self.start[i], int(dur[i, 0]), f"I{i}")
                for i in range(inst.n)
            ]
            return
        self.present: list[list[cp_model.IntVar]] = []
        self.per_core: list[list[cp_model.IntervalVar]]
        self.end, self.size, self.interval = [], [], []
        self.per_core = [[] for _ in range(inst.m)]
        for i in range(inst.n):
            lo, hi = int(dur[i].min()), int(dur[i].max())
            size = md.new_int_var(lo, hi, f"d{i}")
            end = md.new_int_var(int(w.earliest[i]) + lo, w.horizon, f"e{i}")
            self.interval.append(md.new_interval_var(self.start[i], size, end, f"I{i}"))
            ys = [md.new_bool_var(f"y{i},{k}") for k in range(inst.m)]
            md.add_exactly_one(ys)
            md.add(size == sum(int(dur[i, k]) * ys[k] for k in range(inst.m)))
            for k in range(inst.m):
                self.per_core[k].append(
                    md.new_optional_fixed_size_interval_var(
                        self.start[i], int(dur[i, k]), ys[k], f"I{i},{k}"
                    )
                )
            self.present.append(ys)
            self.end.append(end)
            self.size.append(size)

    def _precedence(self) -> None:
        """.. math:: s_q \\ge e_p \\quad \\forall u_p \\prec u_q"""
        g = self.instance.graph
        for p, q in zip(g.src.tolist(), g.dst.tolist(), strict=True):
            self.model.add(self.start[q] >= self.end[p])

    def _resources(self) -> None:
        """Identical cores: ``cumulative({I_i}, 1, m)``. Per-core latencies: ``NoOverlap`` over the
        optional intervals of each core, plus the cumulative as a redundant constraint."""
        m = self.instance.m
        self.model.add_cumulative(self.interval, [1] * len(self.interval), m)
        if not self.identical:
            for intervals in self.per_core:
                self.model.add_no_overlap(intervals)

    def _makespan(self) -> None:
        """.. math:: C \\ge e_i \\quad \\forall u_i"""
        lb = self.instance.lower_bound()
        self.C = self.model.new_int_var(lb, self.windows.horizon, "C")
        for e in self.end:
            self.model.add(e <= self.C)

    def _lower_bounds(self) -> None:
        """Redundant bounds (DESIGN: solver facts) besides ``C ≥ max(CP, ⌈Σ l / m⌉)`` on its domain.

        .. math::
            C \\ge s_i + \\mathrm{tail}_i \\;\\; \\forall i, \\qquad
            m\\,C \\ge \\sum_i d_i, \\qquad
            C \\ge \\sum_i l_{ik} y_{ik} \\;\\; \\forall k \\text{ (per-core latencies)}

        where ``tail_i`` is the longest path from the start of ``u_i`` to the end of the DAG with
        the fastest latencies.
        """
        inst, md = self.instance, self.model
        tail = inst.graph.tails(inst.min_duration)
        for i in range(inst.n):
            md.add(self.start[i] + int(tail[i]) <= self.C)
        md.add(inst.m * self.C >= sum(self.size))
        if not self.identical:
            for k in range(inst.m):
                md.add(
                    sum(int(inst.duration[i, k]) * self.present[i][k] for i in range(inst.n))
                    <= self.C
                )

    # ---- solution <-> model -----------------------------------------------------------------
    def hint(self, schedule: Schedule) -> None:
        """Replace the model's hints by ``schedule`` (a warm start)."""
        md = self.model
        md.clear_hints()
        for i, s in enumerate(schedule.start.tolist()):
            md.add_hint(self.start[i], s)
            if not self.identical:
                for k, y in enumerate(self.present[i]):
                    md.add_hint(y, int(schedule.core[i] == k))
        md.add_hint(self.C, schedule.makespan(self.instance))

    def decode(self, solver: cp_model.CpSolver) -> Schedule:
        """The schedule in a solved ``CpSolver``: each μop's start, and its core, the one whose
        presence is true (per-core latencies) or by interval colouring (identical cores, see
        :func:`~npusched.problem.scheduling.schedule.assign_cores`)."""
        start = np.array([solver.value(s) for s in self.start], dtype=np.int64)
        if self.identical:
            core = assign_cores(start, self.instance.duration[:, 0], self.instance.m)
        else:
            core = np.array(
                [
                    next(k for k, y in enumerate(ys) if solver.boolean_value(y))
                    for ys in self.present
                ],
                dtype=np.int64,
            )
        return Schedule(start, core)
