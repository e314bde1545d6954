"""Exact placement in QAP form by Gilmore–Lawler branch and bound (Gilmore 1962; Lawler 1963).

Why a branch and bound and not a model
--------------------------------------
The static models cannot prove nug12 (optimum 578) in 60 s on two threads (measured):

* :class:`~npusched.formulations.placement.qap.PlacementModel` (separable Manhattan rows,
  Gilmore–Lawler cuts): bound 462 on CP-SAT, 496 on HiGHS;
* the Adams & Johnson (1994) RLT1 linearisation (``y_tkul = z_tk z_ul`` with its RLT
  equalities), tried and not kept: LP bound 538.5, but HiGHS's dual simplex needs 40 s for the
  root LP alone (the LP is very degenerate), and CP-SAT on the same model stops at 348;
* a CP-SAT model with ``AllDifferent`` cells, per-pair distances by table or ``abs`` and the
  Gilmore–Lawler cuts: 488 at any ``linearization_level``.

The Gilmore–Lawler cuts of the static models pair each task's traffic with the distances of the
whole mesh. Recomputed on the *reduced* problem after some tasks are placed (the remaining tasks'
traffic with the remaining free cells, plus the now-linear traffic to the placed tasks) the bound
tightens at every level, and the search proves nug12 with about a thousand nodes.

The method
----------
Node: a partial placement ``P`` (tasks ``A`` on distinct cells), remaining tasks ``U``, free cells
``F``. Its cost splits into the fixed part among ``A``, a linear part ``ℓ_{tk} = Σ_{a∈A} w_{ta}
d_{k,P(a)}`` and the quadratic part among ``U``. The Gilmore–Lawler bound is the assignment
problem

.. math::

    \\mathrm{GLB}(P) = \\sum_{a<b \\in A} w_{ab} d_{P(a)P(b)}
        + \\min_{\\pi: U \\hookrightarrow F} \\sum_{t\\in U} \\Big(\\ell_{t\\pi(t)}
        + \\tfrac12 \\langle w_{t,U\\setminus t}^{\\downarrow},
                          d_{\\pi(t),F\\setminus\\pi(t)}^{\\uparrow} \\rangle\\Big)

(descending traffic against ascending distances: the least the row of ``t`` can cost with ``t``
on that cell; the ½ because each pair appears in two rows). It is a valid lower bound on every
completion of ``P``, and exact when ``|U| ≤ 1``. The assignment problems are solved exactly by
``scipy.optimize.linear_sum_assignment``.

Search: best first on the bound (ties: deeper first), so the reported bound is the smallest open
bound and rises monotonically. A node branches on one remaining task (the one with the most
traffic to placed tasks, then the heaviest), one child per free cell; children whose bound is not
below the incumbent are discarded (costs are integers, so the bound is rounded up). Mesh
symmetries (:meth:`~npusched.problem.placement.PlacementInstance.symmetries`) that fix every placed
task map the children ``t → k`` and ``t → g(k)`` onto each other, so only the smallest cell of
each orbit is kept. The assignment solution of the best child is a complete placement, evaluated
as an incumbent. The search is exact: when the open list empties the incumbent is optimal. It is
sequential and deterministic (no threads, no seed).

Measured (2-core machine, tabu warm start, 60 s including tabu): nug12 proved 578 in 0.6 s
(1,166 nodes; 0.2 s of search); nug14 proved 1014 in 12 s; nug15 proved 1150 in 8 s; nug16b
proved 1240 in 17 s; nug16a stops at bound 1564 (optimum 1610) after 261k nodes.
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment

from npusched.problem.placement import Placement, PlacementInstance
from npusched.solvers.result import Result, Status, TracePoint

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass
class _Search:
    """State of one branch-and-bound run."""

    w: FloatArray
    d: FloatArray
    symmetries: list[IntArray]
    incumbent: IntArray
    upper: int
    lower: int = 0
    t0: float = field(default_factory=time.perf_counter)
    nodes: int = 0
    trace: list[TracePoint] = field(default_factory=list)

    def cost(self, loc: IntArray) -> int:
        return int(round(0.5 * (self.w * self.d[loc][:, loc]).sum()))

    def offer(self, loc: IntArray) -> None:
        """A complete placement found in the search; keep it if it beats the incumbent."""
        value = self.cost(loc)
        if value < self.upper:
            self.upper, self.incumbent = value, loc.copy()
            self.record()

    def record(self) -> None:
        """Trace point: incumbent and the least open bound (never above the incumbent)."""
        self.lower = min(self.lower, self.upper)
        self.trace.append(TracePoint(time.perf_counter() - self.t0, self.upper, self.lower))


def glb_root(inst: PlacementInstance) -> int:
    """The Gilmore–Lawler bound of the whole instance (nothing placed), rounded up."""
    w, d = inst.weight.astype(float), inst.distance().astype(float)
    n = inst.n
    ws = -np.sort(-w, axis=1)[:, : n - 1]
    ds = np.sort(d, axis=1)[:, 1:n]
    g = ws @ ds.T
    r, c = linear_sum_assignment(g)
    return int(np.ceil(0.5 * g[r, c].sum() - 1e-9))


def _children(
    s: _Search, loc: IntArray, fixed: int, t: int, cells: IntArray
) -> list[tuple[int, int, int]]:
    """Bounds of placing task ``t`` on each of ``cells`` (free, orbit representatives): a list of
    ``(bound, cell, fixed cost)`` with bound below the incumbent. The assignment solution of the
    child with the least bound is a complete placement: it is offered as an incumbent."""
    w, d = s.w, s.d
    is_placed = loc >= 0
    placed = np.flatnonzero(is_placed)
    is_placed[t] = True
    rest = np.flatnonzero(~is_placed)  # U' (tasks left in every child)
    used = np.zeros(d.shape[0], dtype=bool)
    used[loc[placed]] = True
    free = np.flatnonzero(~used)  # F (includes the child's cell)
    f, m, nc = free.size, rest.size, cells.size
    # linear part of the children: traffic to the placed tasks and to t (on the child's cell)
    dpf = d[loc[placed]]
    lin = w[rest][:, placed] @ dpf[:, free]  # (m, f)
    own = w[t, placed] @ dpf[:, cells]  # t's traffic to placed tasks, per child cell
    pos = np.searchsorted(free, cells)  # child cell k = free[pos]
    keep = np.ones((nc, f), dtype=bool)
    keep[np.arange(nc), pos] = False  # F' = F \ {k}, per child
    dff = d[free][:, free]
    lin_c = lin[None, :, :] + w[rest, t][None, :, None] * dff[pos][:, None, :]
    lin_c = lin_c.transpose(0, 2, 1)[keep].reshape(nc, f - 1, m).transpose(0, 2, 1)
    if m > 1:
        ws = -np.sort(-w[rest][:, rest], axis=1)[:, : m - 1]  # (m, m-1), same for all children
        order = np.argsort(dff, axis=1, kind="stable")
        srt = np.take_along_axis(dff, order, axis=1)  # rows of F sorted ascending
        # per child: drop its cell from every row, then its own row
        mask = order[None, :, :] != pos[:, None, None]
        rows = np.broadcast_to(srt, (nc, f, f))[mask].reshape(nc, f, f - 1)
        rows = rows[keep].reshape(nc, f - 1, f - 1)
        g = 2 * lin_c + np.einsum("ij,pkj->pik", ws, rows[:, :, 1:m])  # skip distance 0 to self
    else:
        g = 2 * lin_c
    cells_l = cells.tolist()
    fixed_c = fixed + np.rint(own).astype(np.int64)
    out = []
    best: tuple[int, IntArray] | None = None  # child with the least bound
    for p in range(nc):
        if m == 0:
            child = loc.copy()
            child[t] = cells_l[p]
            s.offer(child)
            continue
        gp = g[p]
        r, c = linear_sum_assignment(gp)
        bound = int(fixed_c[p]) + int(np.ceil(0.5 * gp[r, c].sum() - 1e-9))
        if bound >= s.upper:
            continue
        if best is None or bound < best[0]:
            child = loc.copy()
            child[t] = cells_l[p]
            child[rest[r]] = free[keep[p]][c]
            best = (bound, child)
        if m > 1:  # with one task left the bound is the cost of the assignment's placement
            out.append((bound, cells_l[p], int(fixed_c[p])))
    if best is not None:
        s.offer(best[1])
    return [o for o in out if o[0] < s.upper]


def _branch_task(w: FloatArray, loc: IntArray) -> int:
    """The remaining task with the most traffic to placed tasks (ties: the heaviest)."""
    rest = loc < 0
    key = w[:, ~rest].sum(axis=1) * (1 + w.sum()) + w.sum(axis=1)
    return int(np.flatnonzero(rest)[np.argmax(key[rest])])


def _first_incumbent(n: int, n_cells: int, warm_start: Placement | None) -> np.ndarray:
    """The warm start's cells (checked: every task on its own cell), or tasks on cells 0..n−1."""
    loc0 = np.arange(n) if warm_start is None else np.asarray(warm_start.loc, dtype=np.int64)
    if (
        loc0.shape != (n,)
        or len(set(loc0.tolist())) < n
        or (loc0 < 0).any()
        or (loc0 >= n_cells).any()
    ):
        raise ValueError("the warm start must put every task on its own cell of the instance")
    return loc0


def _free_cells(s: _Search, loc: np.ndarray, n_cells: int) -> np.ndarray:
    """The cells a node may give its next task: unused ones, one per orbit of the symmetries
    that fix the tasks placed so far."""
    placed = loc[loc >= 0]
    used = np.zeros(n_cells, dtype=bool)
    used[placed] = True
    stab = [g for g in s.symmetries if (g[placed] == placed).all()]
    if len(stab) > 1:
        used |= np.min(np.stack(stab), axis=0) < np.arange(n_cells)
    return np.flatnonzero(~used)


def solve_qap_bnb(
    inst: PlacementInstance,
    *,
    time_limit: float | None = None,
    warm_start: Placement | None = None,
) -> Result:
    """Prove the optimal placement of ``inst`` (QAP form) by Gilmore–Lawler branch and bound.

    Parameters
    ----------
    inst
        Every task on its own cell (``inst.all_distinct``); cells may be a subset of the mesh.
    time_limit
        Wall-clock seconds; ``None`` runs to the proof.
    warm_start
        A feasible placement (the first incumbent). The search finds its own otherwise, but a good
        one (tabu search) prunes from the start.

    Returns
    -------
    Result
        ``method="qap-bnb"``, ``backend="none"``; ``status`` ``OPTIMAL`` when the tree is
        exhausted (then ``bound == objective``), else ``FEASIBLE`` with the smallest open bound;
        ``solution`` the best placement; ``stats`` nodes, root bound and seconds.
    """
    if not inst.all_distinct:
        raise ValueError("branch and bound needs the QAP form (every task on its own cell)")
    n = inst.n
    w = inst.weight.astype(float)
    d = inst.distance().astype(float)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    loc0 = _first_incumbent(n, d.shape[0], warm_start)
    s = _Search(w, d, [np.asarray(g) for g in inst.symmetries()], loc0.copy(), 0)
    s.upper = s.cost(loc0)
    root = glb_root(inst)
    s.lower = root
    s.record()
    tie = itertools.count()
    # open nodes (bound, -depth, tie, fixed cost, placement as int16 bytes), least bound first
    heap: list[tuple[int, int, int, int, bytes]] = [
        (root, 0, next(tie), 0, np.full(n, -1, np.int16).tobytes())
    ]
    while heap and heap[0][0] < s.upper:
        # stop early enough to free the open list (~0.3 µs a node) within the limit
        if deadline is not None and time.perf_counter() + 3e-7 * len(heap) > deadline:
            break
        bound, depth, _, fixed, code = heapq.heappop(heap)
        loc = np.frombuffer(code, dtype=np.int16).astype(np.int64)
        s.nodes += 1
        t = _branch_task(w, loc)
        for cb, k, fk in _children(s, loc, fixed, t, _free_cells(s, loc, d.shape[0])):
            child = loc.astype(np.int16)
            child[t] = k
            heapq.heappush(heap, (max(cb, bound), depth - 1, next(tie), fk, child.tobytes()))
        if min(heap[0][0] if heap else s.upper, s.upper) > s.lower:
            s.lower = heap[0][0] if heap else s.upper
            s.record()
    lower = heap[0][0] if heap and heap[0][0] < s.upper else s.upper
    if lower != s.lower or s.trace[-1].incumbent != s.upper:
        s.lower = lower
        s.record()
    seconds = time.perf_counter() - s.t0
    return Result(
        Status.OPTIMAL if lower >= s.upper else Status.FEASIBLE,
        "qap-bnb",
        "none",
        s.upper,
        lower,
        runtime_s=seconds,
        solution=Placement(s.incumbent),
        trace=s.trace,
        time_limit=time_limit,
        stats={"nodes": s.nodes, "root_bound": root, "seconds": seconds},
    )
