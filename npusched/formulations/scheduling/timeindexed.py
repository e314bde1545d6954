"""Klotski's time-indexed slot ILP for μop scheduling (Problem 2, eq. 16–19).

Slots are 0-based here (the paper counts from 1): a μop placed in slot ``j`` occupies
``[j, j + l_i)``, so its finish is ``j + l_i`` where the paper writes ``j + l(u_i) − 1``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule, assign_cores
from npusched.problem.scheduling.windows import Windows, asap_alap
from npusched.solvers.linear import LinearModel


class TimeIndexedModel:
    """Time-indexed ILP of Klotski eq. 18 (exact) or eq. 18 with eq. 19 (``relaxed=True``).

    Variables: ``X[i, j] ∈ {0, 1}`` for ``j ∈ [S_i, L_i]`` (eq. 16) and the makespan ``T``; the
    windows come from ASAP/ALAP under the horizon of an upper bound (a list schedule, eq. 1–2).

    With ``relaxed=True`` the resource constraint counts only μops *issued* in a slot (eq. 19).
    That admits schedules in which more than ``m`` μops *run* at once: with three μops of length 2
    on one core, eq. 19 allows starts 0, 1, 2 and a makespan of 4 where 6 is optimal. The decoded
    schedule then overloads a core, and :func:`npusched.verify.verify` reports the overlap.
    Klotski accepts this because its NoC buffers the contention; npusched reports it.
    """

    PRECEDENCE = ("eq18", "disaggregated")
    #: refuse to build models larger than this (memory and build time grow with it)
    MAX_BINARIES = 2_000_000

    def __init__(
        self,
        instance: SchedulingInstance,
        horizon: int,
        relaxed: bool = False,
        precedence: str = "eq18",
    ) -> None:
        if precedence not in self.PRECEDENCE:
            raise ValueError(f"precedence must be one of {self.PRECEDENCE}, got {precedence!r}")
        if not instance.identical_cores:
            raise ValueError("the time-indexed model needs identical cores (one latency per μop)")
        self.instance = instance
        self.relaxed = relaxed
        self.windows: Windows = asap_alap(instance, horizon)
        self.model = LinearModel(f"timeindexed_{instance.name}")
        self.lat = instance.duration[:, 0]
        self.x: list[NDArray[np.int64]] = []  # X[i] as variable indices over slots S_i..L_i
        self._variables()
        families = [
            self._assignment,
            self._makespan,
            self._precedence if precedence == "eq18" else self._precedence_disaggregated,
            self._resource_issue if relaxed else self._resource,
            self._lower_bounds,
        ]
        for add in families:
            add()
        self.model.cost = {self.T: 1.0}

    def _variables(self) -> None:
        """``X_ij`` binary over each window (eq. 16), ``T`` integer in ``[0, horizon]``."""
        w = self.windows
        size = int(w.width.astype(object).sum())  # Python ints: n · 2^62 overflows int64
        if size > self.MAX_BINARIES:
            raise ValueError(
                f"the time-indexed model would need {size:,} binaries (windows of the horizon "
                f"{w.horizon}); the limit is {self.MAX_BINARIES:,}: use the cpsat method "
                "(joint with NoC transfer delays)"
            )
        for i in range(self.instance.n):
            first = self.model.num_vars
            for j in range(int(w.earliest[i]), int(w.latest[i]) + 1):
                self.model.add_var(f"X[{i},{j}]", 0, 1)
            self.x.append(np.arange(first, self.model.num_vars, dtype=np.int64))
        self.T = self.model.add_var("T", 0, w.horizon)

    def slots(self, i: int) -> NDArray[np.int64]:
        """The issue slots ``S_i, …, L_i`` of μop ``i`` (its ASAP/ALAP window), in the order of its
        binaries ``X_ij`` in ``x[i]``: ``slots(i)[k]`` is the start that ``x[i][k]`` stands for."""
        return np.arange(self.windows.earliest[i], self.windows.latest[i] + 1, dtype=np.int64)

    def _assignment(self) -> None:
        """Each μop is issued exactly once inside its window (eq. 18, first line).

        .. math:: \\sum_{j=S_i}^{L_i} X_{ij} = 1 \\quad \\forall u_i \\in V
        """
        self.model.family("assignment")
        for xi in self.x:
            self.model.add_row(xi, np.ones(xi.size), 1, 1)

    def _makespan(self) -> None:
        """Every μop finishes by ``T`` (eq. 18, first line, right).

        .. math:: \\sum_{j=S_i}^{L_i} (j + l(u_i))\\, X_{ij} \\le T \\quad \\forall u_i \\in V
        """
        self.model.family("makespan")
        for i, xi in enumerate(self.x):
            coef = (self.slots(i) + self.lat[i]).astype(float)
            self.model.add_row(np.append(xi, self.T), np.append(coef, -1.0), ub=0)

    def _precedence(self) -> None:
        """A consumer starts after its producer ends (eq. 18, second line).

        .. math:: \\sum_{j} j\\, X_{pj} - \\sum_{j} j\\, X_{qj} \\le -l(u_p)
                  \\quad \\forall u_p \\prec u_q
        """
        self.model.family("precedence")
        g = self.instance.graph
        for p, q in zip(g.src.tolist(), g.dst.tolist(), strict=True):
            idx = np.concatenate([self.x[p], self.x[q]])
            coef = np.concatenate([self.slots(p), -self.slots(q)]).astype(float)
            self.model.add_row(idx, coef, ub=-float(self.lat[p]))

    def _precedence_disaggregated(self) -> None:
        """Precedence, disaggregated: an alternative to eq. 18's second line (not in Klotski).

        .. math:: \\sum_{s \\le t} X_{qs} \\le \\sum_{s \\le t - l(u_p)} X_{ps}
                  \\quad \\forall u_p \\prec u_q,\\; t \\in [S_q, L_q]

        ``u_q`` can have started by ``t`` only if ``u_p`` started by ``t − l(u_p)``. Same integer
        solutions as eq. 18; its LP relaxation is much tighter (the aggregated row only constrains
        the mean start), at the price of ``Σ_(p,q) (L_q − S_q + 1)`` rows.
        """
        self.model.family("precedence (disaggregated)")
        g = self.instance.graph
        for p, q in zip(g.src.tolist(), g.dst.tolist(), strict=True):
            sp, sq = self.slots(p), self.slots(q)
            for t in sq.tolist():
                q_by_t = self.x[q][sq <= t]
                p_by_t = self.x[p][sp <= t - self.lat[p]]
                coef = np.concatenate([np.ones(q_by_t.size), -np.ones(p_by_t.size)])
                self.model.add_row(np.concatenate([q_by_t, p_by_t]), coef, ub=0)

    def _resource(self) -> None:
        """At most ``m`` μops run in any slot (eq. 18, last line: the exact resource constraint).

        .. math:: \\sum_{i=1}^{|V|} \\sum_{p=0}^{l(u_i)-1} X_{i(j-p)} \\le \\|a\\|
                  \\quad \\forall j \\in \\{0, \\dots, T-1\\}
        """
        self.model.family("resource")
        idx_by_slot: list[list[int]] = [[] for _ in range(self.windows.horizon)]
        for i, xi in enumerate(self.x):
            for var, j in zip(xi.tolist(), self.slots(i).tolist(), strict=True):
                for t in range(j, j + int(self.lat[i])):
                    idx_by_slot[t].append(var)
        self._capacity_rows(idx_by_slot)

    def _resource_issue(self) -> None:
        """Relaxed resource constraint: at most ``m`` μops are *issued* per slot (eq. 19).

        .. math:: \\sum_{i \\in \\{i \\mid j \\in [S_i, L_i]\\}} X_{ij} \\le \\|a\\|
                  \\quad \\forall j \\in \\{0, \\dots, T-1\\}
        """
        self.model.family("resource (eq. 19, relaxed)")
        idx_by_slot: list[list[int]] = [[] for _ in range(self.windows.horizon + 1)]
        for i, xi in enumerate(self.x):
            for var, j in zip(xi.tolist(), self.slots(i).tolist(), strict=True):
                idx_by_slot[j].append(var)
        self._capacity_rows(idx_by_slot)

    def _capacity_rows(self, idx_by_slot: list[list[int]]) -> None:
        m = self.instance.m
        for idx in idx_by_slot:
            if len(idx) > m:
                self.model.add_row(idx, np.ones(len(idx)), ub=m)

    def _lower_bounds(self) -> None:
        """Redundant bound on ``T`` (DESIGN: solver facts): critical path, and total load for the
        exact model.

        .. math:: T \\ge \\max_i \\mathrm{ASAP}(u_i) + l(u_i), \\qquad
                  T \\ge \\Big\\lceil \\textstyle\\sum_i l(u_i) / \\|a\\| \\Big\\rceil
                  \\text{ (exact resource constraint only)}

        The load bound is a valid cut for eq. 18 but not for eq. 19, whose feasible set contains
        overloaded schedules shorter than it; the relaxed model keeps only the critical path.
        """
        d = self.lat
        cp = int((self.windows.earliest + d).max())
        load = -(-int(d.sum()) // self.instance.m)
        self.model.lb[self.T] = float(cp if self.relaxed else max(cp, load))

    # ---- solution <-> variable vector -------------------------------------------------------
    def hint(self, schedule: Schedule) -> NDArray[np.float64] | None:
        """Variable vector of ``schedule`` (a warm start), or ``None`` if it leaves the windows."""
        x = np.zeros(self.model.num_vars)
        w = self.windows
        for i, s in enumerate(schedule.start.tolist()):
            if not w.earliest[i] <= s <= w.latest[i]:
                return None
            x[self.x[i][s - w.earliest[i]]] = 1.0
        x[self.T] = schedule.makespan(self.instance)
        return x

    def decode(self, x: NDArray[np.float64]) -> Schedule:
        """Starts from the chosen slots; cores by interval colouring (see :func:`assign_cores`)."""
        start = np.array(
            [self.slots(i)[int(np.argmax(x[xi]))] for i, xi in enumerate(self.x)], dtype=np.int64
        )
        return Schedule(start, assign_cores(start, self.lat, self.instance.m))
