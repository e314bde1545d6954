"""Placement heuristics: snake (zig-zag), greedy by traffic, swap simulated annealing.

Baselines and warm starts for the QAP-form mapping model (Klotski baseline 1 places layers in
zig-zag order; Tangram uses the same snake order).
"""

from __future__ import annotations

import math
import time

import numpy as np

from npusched.problem.placement import Placement, PlacementInstance


def _require_qap(inst: PlacementInstance) -> None:
    if not inst.all_distinct:
        raise ValueError("placement heuristics need the QAP form (every task on its own cell)")


def snake_placement(inst: PlacementInstance) -> Placement:
    """Task ``t`` goes to the ``t``-th available cell in boustrophedon order."""
    _require_qap(inst)
    index = {int(c): k for k, c in enumerate(inst.cell_array)}
    order = [index[c] for c in inst.mesh.snake() if c in index]
    return Placement(np.array(order[: inst.n]))


def greedy_placement(inst: PlacementInstance) -> Placement:
    """Heaviest task on the most central cell; then, repeatedly, the unplaced task with the most
    traffic to placed tasks on the free cell that adds the least cost."""
    _require_qap(inst)
    w, d = inst.weight, inst.distance()
    n, L = inst.n, d.shape[0]
    loc = np.full(n, -1, dtype=np.int64)
    free = np.ones(L, dtype=bool)
    first = int(np.argmax(w.sum(axis=1)))
    loc[first] = int(np.argmin(d.sum(axis=1)))
    free[loc[first]] = False
    pull = w[:, first].copy()  # each task's traffic to the placed ones, kept up to date
    for _ in range(n - 1):
        t = int(np.argmax(np.where(loc < 0, pull, -1)))
        partners = np.flatnonzero((w[t] > 0) & (loc >= 0))  # O(L · degree), not O(L · n)
        added = d[:, loc[partners]] @ w[t, partners]
        added[~free] = np.iinfo(np.int64).max
        loc[t] = int(np.argmin(added))
        free[loc[t]] = False
        pull += w[:, t]
    return Placement(loc)


def anneal_placement(
    inst: PlacementInstance,
    start: Placement | None = None,
    seed: int = 0,
    sweeps: int = 400,
    t0: float | None = None,
    deadline: float | None = None,
) -> Placement:
    """Simulated annealing over pairwise swaps (empty cells take part as zero-flow dummies).

    The cost change of swapping the cells of ``a`` and ``b`` is evaluated in O(n):
    ``Δ = Σ_u (w_au − w_bu)(d(l_b, l_u) − d(l_a, l_u))`` over ``u ≠ a, b``. Geometric cooling over
    ``sweeps × L²/2`` proposals from ``t0`` (default: the mean ``|Δ|`` of random swaps) to
    ``t0/1000``; returns the best placement seen, at ``deadline`` (``time.perf_counter()``) the
    best so far. The proposals are drawn in blocks (a 32 × 32 mesh has 2·10⁸ of them).
    Repeatable for a given ``seed`` when it runs to the end.
    """
    rng = np.random.default_rng(seed)
    w, loc = _padded(inst, start)
    L = loc.size
    d = inst.distance()

    def delta(a: int, b: int) -> int:
        da, db = d[loc[a]], d[loc[b]]
        diff = (w[a] - w[b]) * (db[loc] - da[loc])
        return int(diff.sum() - diff[a] - diff[b])

    cost = inst.cost(loc[: inst.n])
    best, best_loc = cost, loc.copy()
    steps = max(1, sweeps * L * (L - 1) // 2)
    if t0 is None:
        pairs = rng.integers(0, L, size=(64, 2))
        t0 = max(1.0, float(np.mean([abs(delta(a, b)) for a, b in pairs if a != b] or [1])))
    alpha = math.exp(math.log(1e-3) / steps)
    temp = t0
    for first in range(0, steps, 4096):
        if deadline is not None and time.perf_counter() > deadline:
            break
        block = min(4096, steps - first)
        a_s, b_s, u_s = rng.integers(0, L, block), rng.integers(0, L, block), rng.random(block)
        for a, b, u in zip(a_s.tolist(), b_s.tolist(), u_s.tolist(), strict=True):
            temp *= alpha
            if a == b or (a >= inst.n and b >= inst.n):
                continue
            dl = delta(a, b)
            if dl <= 0 or u < math.exp(-dl / temp):
                loc[a], loc[b] = loc[b], loc[a]
                cost += dl
                if cost < best:
                    best, best_loc = cost, loc.copy()
    return Placement(best_loc[: inst.n])


def _padded(inst: PlacementInstance, start: Placement | None) -> tuple[np.ndarray, np.ndarray]:
    """Weights padded with zero-flow dummy tasks on the free cells, and the full cell vector."""
    _require_qap(inst)
    L = inst.cell_array.size
    w = np.zeros((L, L), dtype=np.int64)
    w[: inst.n, : inst.n] = inst.weight
    first = (start or greedy_placement(inst)).loc
    loc = np.concatenate([first, np.setdiff1d(np.arange(L), first)]).astype(np.int64)
    return w, loc


def swap_deltas(w: np.ndarray, d: np.ndarray, loc: np.ndarray) -> np.ndarray:
    """Cost change of swapping the cells of every pair of tasks, all at once.

    With ``D = d[loc][:, loc]`` and ``P = W D`` (both symmetric),
    ``Δ_ab = P_ab + P_ba − P_aa − P_bb + 2 w_ab D_ab``.
    """
    D = d[np.ix_(loc, loc)]
    if float(np.abs(w).max(initial=0)) * float(D.max(initial=0)) * len(loc) < 2.0**53:
        P = np.rint(w.astype(float) @ D.astype(float)).astype(np.int64)  # BLAS, exact here
    else:
        P = w @ D
    diag = np.diag(P)
    return P + P.T - diag[:, None] - diag[None, :] + 2 * w * D


def tabu_placement(
    inst: PlacementInstance,
    start: Placement | None = None,
    seed: int = 0,
    iterations: int | None = None,
    deadline: float | None = None,
) -> Placement:
    """Robust tabu search over pairwise swaps (Taillard 1991), the standard QAP local search,
    stopped early at ``deadline`` (``time.perf_counter()``) with the best placement so far.

    Each iteration takes the best non-tabu swap (all swap deltas come from one matrix product,
    :func:`swap_deltas`); a swap is tabu when it puts both tasks back on cells they left within
    the last ``tenure`` iterations, ``tenure`` drawn in ``[0.9 L, 1.1 L]``; a tabu swap that beats
    the best cost is allowed (aspiration). Default ``iterations`` = ``1000 L``. Repeatable per seed.
    """
    rng = np.random.default_rng(seed)
    w, loc = _padded(inst, start)
    d = inst.distance()
    L = loc.size
    if L < 2:
        return Placement(loc[: inst.n])
    iterations = iterations or 1000 * L
    tabu_until = np.zeros((L, L), dtype=np.int64)  # [task, cell]
    cost = inst.cost(loc[: inst.n])
    best, best_loc = cost, loc.copy()
    iu = np.triu_indices(L, 1)
    for it in range(1, iterations + 1):
        if deadline is not None and time.perf_counter() > deadline:  # an iteration is O(L³)
            break
        delta = swap_deltas(w, d, loc)[iu]
        a, b = iu
        tabu = (tabu_until[a, loc[b]] >= it) & (tabu_until[b, loc[a]] >= it)
        allowed = ~tabu | (cost + delta < best)
        both_dummy = (a >= inst.n) & (b >= inst.n)
        allowed &= ~both_dummy
        if not allowed.any():
            continue
        masked = np.where(allowed, delta, np.iinfo(np.int64).max)
        choice = np.flatnonzero(masked == masked.min())
        k = int(choice[rng.integers(choice.size)])
        ta, tb = int(a[k]), int(b[k])
        tenure = int(rng.integers(max(1, int(0.9 * L)), int(1.1 * L) + 2))
        tabu_until[ta, loc[ta]] = it + tenure
        tabu_until[tb, loc[tb]] = it + tenure
        loc[ta], loc[tb] = loc[tb], loc[ta]
        cost += int(delta[k])
        if cost < best:
            best, best_loc = cost, loc.copy()
    return Placement(best_loc[: inst.n])
