"""A second exact model of small routed instances, written apart from the CP-SAT model
(:mod:`npusched.formulations.scheduling.routed`) to check its optima: a time-indexed integer
program (solved by HiGHS, or any backend of :class:`~npusched.solvers.linear.LinearModel`).

Scope: instances without memory capacities (nothing is evicted, so every schedule sends each
copy by its required transfer) whose copies do not depend on the allocation (no ``output``:
every edge carries its producer's whole output, Stream's rule). Time is in cycles, ``0..H``.

Notation: ``x_ikt`` μop ``i`` starts on core ``k`` at ``t``; ``X_ik = Σ_t x_ikt``;
``y_pact`` the transfer of ``p``'s output from core ``a`` to core ``c`` starts at ``t`` (length
``L_pac``, the :meth:`~npusched.problem.scheduling.routed.Topology.cycles` of the output on the
route); ``w_jct`` DRAM tensor ``j`` starts towards core ``c`` at ``t`` (length ``L_jc``);
``T`` the makespan. Prefix sums over time, ``x_ik(≤t) = Σ_{τ≤t} x_ikτ``, state the
precedences in their strong (disaggregated) form.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule, required_transfers
from npusched.solvers.linear import LinearModel


class RoutedTimeIndexed:
    """The time-indexed model of a small routed instance under horizon ``H`` (a known
    makespan); minimises the makespan ``T``."""

    MAX_COLUMNS = 300_000
    """Most columns the model builds (a ValueError past it): it is for small instances."""

    def __init__(self, inst: RoutedInstance, horizon: int) -> None:
        if inst.capacity is not None or inst.output is not None:
            raise ValueError("the time-indexed routed model takes instances without memory "
                             "capacities and without per-μop outputs")  # fmt: skip
        self.inst, self.H = inst, int(horizon)
        self.lm = LinearModel(f"routed_ti_{inst.name}")
        self.x: dict[tuple[int, int], np.ndarray] = {}  # (i, k) -> columns over t = 0..H-d
        self.y: dict[tuple[int, int, int], np.ndarray] = {}  # (p, a, c) or (-1-j, -1, c)
        self.length: dict[tuple[int, int, int], int] = {}
        for add in (self._variables, self._assignment, self._cores, self._precedence,
                    self._transfers, self._dram, self._links, self._makespan):  # fmt: skip
            add()

    def _cols(self, name: str, last: int) -> np.ndarray:
        """Binary columns for starts ``0..last`` (none when ``last < 0``)."""
        if self.lm.num_vars + max(0, last + 1) > self.MAX_COLUMNS:
            raise ValueError(f"the time-indexed routed model needs over {self.MAX_COLUMNS} columns")
        return np.array([self.lm.add_var(f"{name}@{t}", 0, 1) for t in range(last + 1)],
                        dtype=np.int64)  # fmt: skip

    def _variables(self) -> None:
        """``x_ikt`` per allowed core and start, ``y_pact`` per producer, allowed core and
        other core that hosts a consumer of it, ``w_jct`` per DRAM tensor and core that may
        host a reader, and ``T``."""
        inst, H = self.inst, self.H
        d = inst.duration
        for i in range(inst.n):
            for k in np.flatnonzero(inst.mask[i]).tolist():
                self.x[(i, k)] = self._cols(f"x{i},{k}", H - int(d[i, k]))
        g = inst.graph
        out = inst.output_data
        for p in np.unique(g.src[g.bytes > 0]).tolist():
            cores = {int(k) for q in g.succs(p).tolist() for k in np.flatnonzero(inst.mask[q])}
            for a in np.flatnonzero(inst.mask[p]).tolist():
                for c in sorted(cores - {a}):
                    ln = inst.topology.cycles(int(out[p]), inst.route(a, c))
                    self.length[(p, a, c)] = ln
                    self.y[(p, a, c)] = self._cols(f"y{p},{a},{c}", H - ln)
        for j, t in enumerate(inst.dram):
            if t.data <= 0:
                continue
            for c in sorted({int(k) for q in t.consumers.tolist()
                             for k in np.flatnonzero(inst.mask[q])}):  # fmt: skip
                ln = inst.topology.cycles(int(t.data), inst.route(-1, c))
                self.length[(-1 - j, -1, c)] = ln
                self.y[(-1 - j, -1, c)] = self._cols(f"w{j},{c}", H - ln)
        self.T = self.lm.add_var("T", 0, H)
        self.lm.cost[self.T] = 1.0

    def _assignment(self) -> None:
        """Each μop starts once, on one allowed core.

        .. math:: \\sum_{k, t} x_{ikt} = 1
        """
        lm = self.lm.family("assignment")
        for i in range(self.inst.n):
            cols = np.concatenate([v for (j, _), v in self.x.items() if j == i])
            lm.add_row(cols, np.ones(cols.size), 1, 1)

    def _cores(self) -> None:
        """One μop at a time on each core.

        .. math:: \\sum_i \\sum_{t - d_{ik} < \\tau \\le t} x_{ik\\tau} \\le 1 \\quad \\forall k, t
        """
        per: dict[int, list[tuple[np.ndarray, int]]] = defaultdict(list)
        for (i, k), v in self.x.items():
            per[k].append((v, int(self.inst.duration[i, k])))
        self._one_at_a_time("cores", per)

    def _one_at_a_time(self, family: str, per: dict[int, list[tuple[np.ndarray, int]]],
                       lanes: Any = None) -> None:  # fmt: skip
        """For each resource of ``per`` (its intervals: start columns and a length): at most one
        runs at each instant, at most ``lanes[r]`` on resource ``r`` with lanes."""
        lm = self.lm.family(family)
        for r, items in per.items():
            cap = 1 if lanes is None else int(lanes[r])
            if len(items) <= cap:
                continue
            for t in range(self.H):
                idx = [v[max(0, t - ln + 1): t + 1] for v, ln in items if ln > 0]
                cols = np.concatenate([c for c in idx if c.size] or [np.zeros(0, np.int64)])
                if cols.size > cap:
                    lm.add_row(cols, np.ones(cols.size), ub=cap)

    def _prefix_leq(self, family: str, late: np.ndarray, early: np.ndarray, shift: int,
                    cond: np.ndarray | None = None) -> None:  # fmt: skip
        """``late(≤t) ≤ early(≤t − shift)`` for every ``t``: whatever starts by ``t`` in
        ``late`` needs a start in ``early`` by ``t − shift``; with ``cond`` (columns of one
        μop on one core) only when that μop is placed there: ``+ 1 − Σ cond`` on the right."""
        lm = self.lm.family(family)
        extra = np.zeros(0, np.int64) if cond is None else cond
        for t in range(late.size):
            e = early[: max(0, t - shift + 1)]
            cols = np.concatenate([late[: t + 1], e, extra])
            coef = np.concatenate([np.ones(t + 1), -np.ones(e.size), np.ones(extra.size)])
            lm.add_row(cols, coef, ub=0 if cond is None else 1)

    def _transfers(self) -> None:
        """A transfer ``(p, a, c)`` runs when ``p`` is on ``a`` and a consumer on ``c``, starts
        after ``p`` ends, and ends before each consumer it serves starts; one per triple.

        .. math:: \\sum_t y_{pact} \\ge X_{pa} + X_{qc} - 1, \\quad
                  y_{pac}(\\le t) \\le x_{pa}(\\le t - d_{pa}), \\quad
                  x_{qc}(\\le t) \\le y_{pac}(\\le t - L_{pac}) + 1 - X_{pa}
        """
        g, d = self.inst.graph, self.inst.duration
        lm = self.lm
        for (p, a, c), y in self.y.items():
            if p < 0:
                continue
            lm.family("transfer_once").add_row(y, np.ones(y.size), ub=1)
            self._prefix_leq("transfer_after_producer", y, self.x[(p, a)], int(d[p, a]))
            for q in g.succs(p).tolist():
                if (q, c) not in self.x or g.bytes[self._edge(p, q)] <= 0:
                    continue
                xp, xq = self.x[(p, a)], self.x[(q, c)]
                cols = np.concatenate([y, xp, xq])
                coef = np.concatenate([np.ones(y.size), -np.ones(xp.size), -np.ones(xq.size)])
                lm.family("transfer_present").add_row(cols, coef, lb=-1)
                self._prefix_leq("consumer_after_transfer", xq, y, self.length[(p, a, c)], xp)

    def _edge(self, p: int, q: int) -> int:
        """The index of edge ``p → q``."""
        g = self.inst.graph
        return int(np.flatnonzero((g.src == p) & (g.dst == q))[0])

    def _precedence(self) -> None:
        """Every edge orders its μops, whatever their cores.

        .. math:: \\sum_{k,t} t\\, x_{qkt} \\ge \\sum_{k,t} (t + d_{pk})\\, x_{pkt}
                  \\quad \\forall (p, q) \\in E
        """
        d, g = self.inst.duration, self.inst.graph
        for p, q in zip(g.src.tolist(), g.dst.tolist(), strict=True):
            cols, coef = [], []
            for (i, k), v in self.x.items():
                if i == q:
                    cols.append(v)
                    coef.append(np.arange(v.size, dtype=float))
                elif i == p:
                    cols.append(v)
                    coef.append(-(np.arange(v.size) + float(d[p, k])))
            self.lm.family("precedence").add_row(np.concatenate(cols), np.concatenate(coef), lb=0)

    def _dram(self) -> None:
        """A DRAM tensor goes to every core hosting one of its consumers, before they start.

        .. math:: \\sum_t w_{jct} \\ge X_{qc}, \\quad x_{qc}(\\le t) \\le w_{jc}(\\le t - L_{jc})
        """
        for (src, _, c), w in self.y.items():
            if src >= 0:
                continue
            self.lm.family("dram_once").add_row(w, np.ones(w.size), ub=1)
            for q in self.inst.dram[-1 - src].consumers.tolist():
                if (q, c) in self.x:
                    xq = self.x[(q, c)]
                    self.lm.family("dram_present").add_row(
                        np.concatenate([w, xq]),
                        np.concatenate([np.ones(w.size), -np.ones(xq.size)]), lb=0)  # fmt: skip
                    self._prefix_leq("consumer_after_fetch", xq, w, self.length[(src, -1, c)])

    def _links(self) -> None:
        """One transfer at a time on each link (bus), ``P_ℓ`` on a link with lanes.

        .. math:: \\sum_{\\tau: \\ell \\in route(\\tau)} \\sum_{t - L_\\tau < s \\le t}
                  y_{\\tau s} \\le P_\\ell \\quad \\forall \\ell, t
        """
        inst, per = self.inst, defaultdict(list)
        for (src, a, c), y in self.y.items():
            for r in {int(inst.topology.resource_of[x]) for x in inst.route(a, c)}:
                per[r].append((y, self.length[(src, a, c)]))
        self._one_at_a_time("links", per, inst.topology.lanes)

    def _makespan(self) -> None:
        """.. math:: T \\ge \\sum_{k,t} (t + d_{ik})\\, x_{ikt} \\quad \\forall i"""
        d = self.inst.duration
        for i in range(self.inst.n):
            items = [(v, k) for (j, k), v in self.x.items() if j == i]
            cols = np.concatenate([[self.T]] + [v for v, _ in items])
            coef = np.concatenate([[1.0]] + [-(np.arange(v.size) + float(d[i, k]))
                                             for v, k in items])  # fmt: skip
            self.lm.family("makespan").add_row(cols, coef, lb=0)

    def decode(self, values: Any) -> RoutedSchedule:
        """The schedule of a solution vector (starts, cores, transfer starts)."""
        val = np.asarray(values) > 0.5
        n = self.inst.n
        start, core = np.zeros(n, np.int64), np.zeros(n, np.int64)
        for (i, k), v in self.x.items():
            on = np.flatnonzero(val[v])
            if on.size:
                start[i], core[i] = int(on[0]), k
        tr = required_transfers(self.inst, core)
        ts = np.zeros(tr.size, np.int64)
        for t in range(tr.size):
            src, c = tr.key(t)
            a = -1 if src < 0 else int(core[src])
            on = np.flatnonzero(val[self.y[(src, a, c)]])
            ts[t] = int(on[0]) if on.size else -1
        return RoutedSchedule(start, core, ts, ts + tr.cycles)
