"""The joint model as a decision problem: a schedule of makespan at most a target ``T``, in CP-SAT.

Where the joint model (:class:`~npusched.formulations.scheduling.joint.JointModel`) minimises
the makespan down from a warm start, this model asks whether a schedule ends by ``T`` — the
instance's lower bound, typically, where a yes is a proof of optimality. Fixing ``T`` makes the
time windows of every μop narrow (:func:`~npusched.problem.scheduling.windows.load_windows`: the
heads and tails, and the work of its ancestors and descendants spread over the cores; on
Davidović and Crainic's graphs with a known optimum, 2–5 % of a μop's latency wide at 16
processors and density 50–80 %: the starts are nearly known), and the narrow windows say much
about the cores before any search:

- **transfers left out**: an edge whose windows leave room for the longest transfer the network
  has is met by every schedule in them, and an edge whose delay a path of two edges covers
  (:meth:`~npusched.problem.scheduling.dag.UopGraph.dominated_edges`) is met wherever the path
  is; neither gets a row (40–60 % of the edges of those graphs at density 50–80 %);
- **hop balls**: an edge whose windows leave room for at most ``H`` hops puts its consumer within
  ``H`` hops of its producer's core (clauses on the presence literals; ``H = 0``: one core);
- **zero idle** (when ``m·T`` equals the total work on identical cores, as on those graphs):
  every core is busy from 0 to ``T``, so each core's μops form a chain in which each starts when
  the one before ends. The chains are the routes of a vehicle-routing constraint (CP-SAT's
  ``AddMultipleCircuit``): a depot that starts ``m`` chains at 0 and ends ``m`` at ``T``, and an arc
  ``i → j`` (``j`` runs right after ``i`` on its core) for every pair the windows allow, with
  ``s_j = e_i`` and equal coordinates. This is what packs the sparse graphs, whose cores must
  be filled to exact sums.

The search is chronological (the μop of least earliest start starts there, CP-SAT's fixed
search with its propagation and clause learning): a schedule without idle time is built from
the left. Symmetries of the network are broken by a stabilizer chain on the μops of least
window (:func:`~npusched.problem.scheduling.noc.stabilizer_chain`).

Measured (``python -m npusched.bench.delays exact --methods target``, ``docs/results_delays.md``):
on those graphs it finds the optimum at n = 50 for every density and 2–16 processors in
seconds, where the joint model from a warm start stalled on sparse graphs and 16 processors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from npusched.formulations.scheduling.joint import JointModel, add_transfer
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.noc import stabilizer_chain
from npusched.problem.scheduling.windows import load_windows

SYMMETRY_DEPTH = 4
"""Levels of the stabilizer chain (μops whose cores are broken for symmetry)."""

MAX_UOPS = 5000
"""The most μops the model is built for: its windows need the descendant matrix (``n²`` bits)
and its chains an arc per pair of μops whose windows touch, both quadratic in μops; at 500
μops CP-SAT already takes up to a minute or two (``docs/results_delays.md``)."""


class TargetModel(JointModel):
    """Start ``s_i`` in its window (:meth:`windows`), presence ``y_ik``, NoOverlap per core, the
    transfers neither the windows nor a two-edge path already meet, hop balls, and, when no core
    may idle, the chains of μops on each core (module docstring); no objective.

    Parameters
    ----------
    instance
        Its accelerator must have cores on a mesh or a hypercube.
    target
        The makespan ``T`` asked for (at least the critical path, or the windows are empty and
        the model is infeasible at once).
    """

    PARAMETERS: dict[str, Any] = {
        "use_timetable_edge_finding_in_cumulative": True,
        "search_branching": cp_model.FIXED_SEARCH,
        "cp_model_probing_level": 0,
        "max_presolve_iterations": 1,
    }
    """The search of the module docstring, with a lighter presolve: no probing, one round (on
    generated graphs of 100–500 μops the default presolve took most of the time, up to half a
    minute; ``docs/results_delays.md``)."""

    FAMILIES = (*JointModel.FAMILIES, "_zero_idle")

    def __init__(self, instance: SchedulingInstance, target: int) -> None:
        if instance.n > MAX_UOPS:
            raise ValueError(f"{instance.n} μops: the decision model is built for at most "
                             f"{MAX_UOPS} (quadratic in μops)")  # fmt: skip
        self.target = target
        win = load_windows(instance, target)
        self.head, self.latest = win.earliest, win.latest
        self.empty = bool((win.latest < win.earliest).any())  # no schedule ends by the target
        work = int(instance.duration[:, 0].sum())
        self.zero_idle = instance.identical_cores and instance.m * target == work
        self.counts: dict[str, int] = {}
        super().__init__(instance, target, symmetry=True)

    def windows(self) -> tuple[np.ndarray, np.ndarray]:
        """The windows of :func:`~npusched.problem.scheduling.windows.load_windows` (the heads
        and tails, and the work of each μop's ancestors and descendants spread over the cores);
        an empty one is kept one start wide and the model made infeasible
        (:meth:`_zero_idle`)."""
        return self.head, np.maximum(self.latest, self.head)

    def _transfers(self) -> None:
        """Each edge ``p → q`` that no two-edge path dominates
        (:meth:`~npusched.problem.scheduling.dag.UopGraph.dominated_edges`) by what its windows
        leave: the gap ``s_q − e_p`` lies in ``[head_q − L_p − d_p, L_q − head_p − d_p]`` (``L``
        the latest start), so

        .. math::
            \\text{gap}_{\\min} \\ge \\lambda_e h_{\\max} + \\phi_e &\\Rightarrow
            \\text{no row (always met)} \\\\
            H_e = \\max\\{h \\le h_{\\max} : \\lambda_e h + \\phi_e \\le \\text{gap}_{\\max}\\}
            &\\Rightarrow y_{pk} \\Rightarrow \\textstyle\\sum_{r:\\ \\text{hops}(k, r) \\le H_e}
            y_{qr} \\quad \\forall k \\ (H_e < h_{\\max})

        (``H_e = 0``: equal coordinates), and the other edges get the delay row of
        :func:`~npusched.formulations.scheduling.joint.add_transfer`."""
        inst, md = self.instance, self.model
        g, acc = inst.graph, inst.accelerator
        per_hop, fixed = acc.delay_terms(g.bytes)
        hops = acc.hops()
        hmax = int(hops.max())
        top = self.xy.max(axis=0)
        dmin, dmax = inst.min_duration, inst.duration.max(axis=1)
        src, dst = g.src, g.dst
        low = self.head[dst] - self.latest[src] - dmax[src]
        high = self.latest[dst] - self.head[src] - dmin[src]
        steps = np.arange(1, hmax + 1)
        ball = (per_hop[:, None] * steps + fixed[:, None] <= high[:, None]).sum(axis=1)
        rows = np.flatnonzero((low < per_hop * hmax + fixed) & ~g.dominated_edges(per_hop, fixed))
        within = {h: [np.flatnonzero(hops[k] <= h).tolist() for k in range(inst.m)]
                  for h in range(1, hmax)}  # fmt: skip
        self.counts.update(edges=int(src.size), left_out=int(src.size - rows.size), one_core=0,
                           balls=0)  # fmt: skip
        for e in rows.tolist():
            p, q, h = int(src[e]), int(dst[e]), int(ball[e])
            if h == 0:
                self.counts["one_core"] += 1
                for xp, xq in zip(self.X[p], self.X[q], strict=True):
                    md.add(xp == xq)
                md.add(self.start[q] >= self.end[p])
                continue
            if h < hmax:
                self.counts["balls"] += 1
                for k in range(inst.m):
                    md.add_bool_or([self.y[p][k].Not(), *(self.y[q][r] for r in within[h][k])])
            add_transfer(md, self.X[p], self.X[q], self.end[p], self.start[q], int(per_hop[e]),
                         int(fixed[e]), top, exact=False)  # fmt: skip

    def _zero_idle(self) -> None:
        """When no core may idle (``m·T = Σ_i d_i``, identical cores): every core's load is
        ``T``, and its μops are a chain from 0 to ``T`` (module docstring), the routes of
        ``AddMultipleCircuit`` on arcs ``0 → j`` (``s_j = 0``), ``i → 0`` (``e_i = T``) and
        ``i → j``:

        .. math::
            \\sum_i d_i y_{ik} = T \\ \\forall k, \\qquad
            \\sum_j a_{0j} = \\sum_i a_{i0} = m, \\qquad
            a_{ij} \\Rightarrow s_j = e_i \\wedge X_i = X_j

        for ``j`` not an ancestor of ``i`` with ``head_j ≤ L_i + d_i`` and
        ``head_i + d_i ≤ L_j``."""
        if self.empty:
            self.model.add_bool_or([])  # an empty window: nothing ends by the target
        if not self.zero_idle:
            return
        inst, md, T = self.instance, self.model, self.target
        d = inst.duration[:, 0]
        for k in range(inst.m):
            md.add(sum(int(d[i]) * self.y[i][k] for i in range(inst.n)) == T)
        arcs: list[tuple[int, int, Any]] = []
        for j in np.flatnonzero(self.head == 0).tolist():
            arcs.append((0, j + 1, md.new_bool_var("")))
            md.add(self.start[j] == 0).only_enforce_if(arcs[-1][2])
        md.add(sum(a[2] for a in arcs) == inst.m)
        last = []
        for i in np.flatnonzero(self.latest + d >= T).tolist():
            arcs.append((i + 1, 0, md.new_bool_var("")))
            md.add(self.end[i] == T).only_enforce_if(arcs[-1][2])
            last.append(arcs[-1][2])
        md.add(sum(last) == inst.m)
        below = inst.graph.descendants()
        early, late = self.head + d, self.latest + d
        for i in range(inst.n):
            for j in np.flatnonzero((self.head <= late[i]) & (early[i] <= self.latest)).tolist():
                if j == i or (below[j] >> i) & 1:
                    continue
                arc = md.new_bool_var("")
                arcs.append((i + 1, j + 1, arc))
                md.add(self.start[j] == self.end[i]).only_enforce_if(arc)
                for xi, xj in zip(self.X[i], self.X[j], strict=True):
                    md.add(xi == xj).only_enforce_if(arc)
        md.add_multiple_circuit(arcs)
        self.counts["arcs"] = len(arcs)

    def _symmetry(self) -> None:
        """The stabilizer chain of the network's symmetries
        (:func:`~npusched.problem.scheduling.noc.stabilizer_chain`, identical cores only) on the
        μops in order of earliest start, then longest tail: for each prefix of cores ``c`` of
        the μops before and each excluded core ``k`` of the next μop ``u``,
        ``∧_l y_{u_l c_l} ⇒ ¬y_{uk}``."""
        inst = self.instance
        if not self.symmetric:
            return
        tail = self.target - self.latest
        order = np.lexsort((-tail, self.head))
        chain = stabilizer_chain(inst.accelerator.symmetries(), SYMMETRY_DEPTH)
        chain = [(prefix, excluded) for prefix, excluded in chain if len(prefix) < inst.n]
        for prefix, excluded in chain:
            u = int(order[len(prefix)])
            when = [self.y[int(order[level])][c] for level, c in enumerate(prefix)]
            self.model.add_bool_and([self.y[u][k].Not() for k in excluded]).only_enforce_if(when)
        self.counts["symmetry"] = len(chain)

    def _objective(self) -> None:
        """No objective: any schedule within the target. The search decides starts from the
        left (least earliest start first, at its earliest)."""
        self.model.add_decision_strategy(self.start, cp_model.CHOOSE_LOWEST_MIN,
                                         cp_model.SELECT_MIN_VALUE)  # fmt: skip
