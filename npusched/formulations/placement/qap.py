"""Placement of tasks on mesh cells minimising Σ bytes × hops (Klotski Problem 3, eq. 9–14, in
QAP form), with the separable linearisation of the Manhattan distance (DESIGN: solver facts).

Klotski linearises eq. 10–11 (``x = ⌊a/x⌋``, ``y = a mod x``) with extra integer and binary
variables (eq. 20–28). Because the cell coordinates ``(r_k, c_k)`` are constants, the row of task
``t`` is linear in its assignment binaries, ``R_t = Σ_k r_k z_tk``, and ``|R_t − R_u|`` needs two
inequalities: no floor, no mod.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from npusched.problem.placement import Placement, PlacementInstance
from npusched.solvers.linear import LinearModel


class PlacementModel:
    """Integer linear model of the placement problem.

    Variables: ``z_tk ∈ {0,1}`` (task ``t`` on cell ``k``), integer coordinates ``R_t, C_t`` and
    per-pair distances ``DR_tu, DC_tu`` for every pair with traffic ``w_tu = f_tu + f_ut > 0``.
    Objective ``Σ_{t<u} w_tu (DR_tu + DC_tu)``.
    """

    def __init__(self, inst: PlacementInstance, symmetry_breaking: bool = True) -> None:
        self.inst = inst
        self.model = LinearModel(f"placement_{inst.name}")
        n, L = inst.n, inst.cell_array.size
        rc = inst.mesh.coords()[inst.cell_array]
        self.r, self.c = rc[:, 0], rc[:, 1]
        iu, ju = np.triu_indices(n, 1)
        keep = inst.weight[iu, ju] > 0
        self.pairs = list(zip(iu[keep].tolist(), ju[keep].tolist(), strict=True))
        self.z = np.array(
            [[self.model.add_var(f"z[{t},{k}]", 0, 1) for k in range(L)] for t in range(n)],
            dtype=np.int64,
        )
        self.R = [self.model.add_var(f"R[{t}]", 0, int(self.r.max())) for t in range(n)]
        self.C = [self.model.add_var(f"C[{t}]", 0, int(self.c.max())) for t in range(n)]
        self.DR = {p: self.model.add_var(f"DR{p}", 0, int(self.r.max())) for p in self.pairs}
        self.DC = {p: self.model.add_var(f"DC{p}", 0, int(self.c.max())) for p in self.pairs}
        families = [self._assignment, self._apart, self._coordinates, self._distance]
        if inst.all_distinct:
            families.append(self._gilmore_lawler)
        if symmetry_breaking:
            families.append(self._symmetry)
        for add in families:
            add()
        w = inst.weight
        self.model.cost = {v: float(w[p]) for dv in (self.DR, self.DC) for p, v in dv.items()}

    def _assignment(self) -> None:
        """Each task on one cell (Klotski eq. 17).

        .. math:: \\sum_k z_{tk} = 1 \\quad \\forall t
        """
        self.model.family("assignment")
        for t in range(self.inst.n):
            self.model.add_row(self.z[t], np.ones(self.z.shape[1]), 1, 1)

    def _apart(self) -> None:
        """Tasks of one group take distinct cells: all tasks in QAP form; in Klotski's stage 2 the
        μops that overlap in time (eq. 12, one row per maximal clique of the interval graph).

        .. math:: \\sum_{t \\in K} z_{tk} \\le 1 \\quad \\forall \\text{group } K,\\ \\forall k
        """
        self.model.family("apart")
        groups = [np.arange(self.inst.n)] if self.inst.groups is None else self.inst.groups
        for g in groups:
            if g.size > 1:
                for k in range(self.z.shape[1]):
                    self.model.add_row(self.z[g, k], np.ones(g.size), ub=1)

    def _coordinates(self) -> None:
        """Coordinates are linear in the assignment (replaces eq. 10–11 and 20–28).

        .. math:: R_t = \\sum_k r_k z_{tk}, \\qquad C_t = \\sum_k c_k z_{tk}
        """
        self.model.family("coordinates")
        for t in range(self.inst.n):
            for var, coord in ((self.R[t], self.r), (self.C[t], self.c)):
                self.model.add_row(np.append(self.z[t], var), np.append(coord, -1.0), 0, 0)

    def _distance(self) -> None:
        """Manhattan hops of each communicating pair (eq. 9) as two inequalities per axis.

        .. math:: DR_{tu} \\ge \\pm (R_t - R_u), \\qquad DC_{tu} \\ge \\pm (C_t - C_u)
        """
        self.model.family("distance")
        for t, u in self.pairs:
            for dv, pos in ((self.DR, self.R), (self.DC, self.C)):
                for sign in (1.0, -1.0):
                    self.model.add_row([dv[(t, u)], pos[t], pos[u]], [1.0, -sign, sign], lb=0)

    def _gilmore_lawler(self) -> None:
        """Valid cut per task: its traffic costs at least the Gilmore–Lawler bound of its cell.

        .. math:: \\sum_{u} w_{tu} (DR_{tu} + DC_{tu}) \\ge \\sum_k g_{tk} z_{tk}, \\qquad
                  g_{tk} = \\langle w_{t\\cdot}^{\\downarrow}, d_{k\\cdot}^{\\uparrow} \\rangle

        ``g_tk`` pairs the task's weights in decreasing order with the distances from ``k`` to the
        other cells in increasing order: the least its row can cost with ``t`` on ``k``. Without
        these rows the LP bound is 0 (all tasks fractionally at the centre).
        """
        self.model.family("gilmore-lawler")
        w, d = self.inst.weight, self.inst.distance()
        L = d.shape[0]
        for t in range(self.inst.n):
            wt = np.sort(np.delete(w[t], t))[::-1]
            g = np.array([np.sort(np.delete(d[k], k))[: wt.size] @ wt for k in range(L)], float)
            idx, coef = list(self.z[t]), list(-g)
            for p in self.pairs:
                if t in p:
                    idx += [self.DR[p], self.DC[p]]
                    coef += [float(w[p])] * 2
            self.model.add_row(idx, coef, lb=0)

    def _symmetry(self) -> None:
        """Mesh symmetry breaking: the heaviest task sits on the smallest cell of its orbit under
        the mesh symmetries that keep the cell set (flips; transposes on square meshes).

        .. math:: z_{t^\\ast k} = 0 \\quad \\forall k \\ne \\min_{g \\in G} g(k)
        """
        self.model.family("symmetry")
        sym = self.inst.symmetries()
        heavy = int(np.argmax(self.inst.weight.sum(axis=1)))
        for k in range(self.z.shape[1]):
            if min(int(g[k]) for g in sym) != k:
                self.model.ub[self.z[heavy, k]] = 0

    def hint(self, placement: Placement) -> NDArray[np.float64]:
        """Variable vector of ``placement`` (a warm start), mapped into the symmetry-broken
        region when needed."""
        loc = placement.loc
        heavy = int(np.argmax(self.inst.weight.sum(axis=1)))
        for g in self.inst.symmetries():
            if self.model.ub[self.z[heavy, g[loc[heavy]]]] > 0:
                loc = g[loc]
                break
        x = np.zeros(self.model.num_vars)
        x[self.z[np.arange(self.inst.n), loc]] = 1
        x[self.R] = self.r[loc]
        x[self.C] = self.c[loc]
        for t, u in self.pairs:
            x[self.DR[(t, u)]] = abs(self.r[loc[t]] - self.r[loc[u]])
            x[self.DC[(t, u)]] = abs(self.c[loc[t]] - self.c[loc[u]])
        return x

    def decode(self, x: NDArray[np.float64]) -> Placement:
        """The placement in a solution vector ``x`` (over ``model``'s variables): each task on
        the cell whose ``z_tk`` is largest, which is the one set to 1 in an integer solution."""
        return Placement(np.argmax(x[self.z], axis=1))
