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
:func:`belady_plan` simulates Belady's rule (evict the tile whose next use is farthest) without
contiguity: a feasible keep vector whose bytes upper-bound the optimum; ``improve=True`` then
keeps every evicted gap that still fits (the warm start). :func:`contiguous_plan` is the same
rule with best-fit addresses (a feasible solution of the contiguous model).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from ortools.sat.python import cp_model

from npusched.problem.flexer import OT, TiledConv
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Status, TracePoint

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

#: Backends of :func:`offline_bound` (``contiguous=True`` needs ``"cpsat"``).
BACKENDS = ("highs", "cpsat", "cbc")

#: Where :attr:`OfflineBound.bound` comes from.
BOUND_SOURCES = ("solver", "lp", "presolve")


# ---- steps, uses and gaps -----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class UseGaps:
    """The uses of every data tile in a fixed order of operation sets and the gaps between them.

    Uses are sorted by (data tile, step), so the gap after use ``u`` (when the tile is used again)
    lies between uses ``u`` and ``u + 1``.

    Attributes
    ----------
    n_steps
        Number of operation sets.
    demand
        :math:`D_t`, bytes of the distinct tiles each step uses.
    use_data, use_step, use_size
        Data tile, step and size of every use.
    gap_after
        Gap index after each use, ``-1`` after a tile's last use.
    data, first, last, size, cost
        Per gap: the tile, the steps :math:`t_1 < t_2` of its two uses, :math:`b_d`, and the
        bytes an eviction costs (:math:`b_d`, or :math:`2 b_d` for an output tile).
    mandatory
        Bytes of every schedule: IN/WT tiles loaded once, OT tiles written once (``out_bytes``).
    """

    n_steps: int
    demand: IntArray
    use_data: IntArray
    use_step: IntArray
    use_size: IntArray
    gap_after: IntArray
    data: IntArray
    first: IntArray
    last: IntArray
    size: IntArray
    cost: IntArray
    mandatory: int
    _step_uses: tuple[IntArray, ...] = field(repr=False, default=())

    @property
    def n_gaps(self) -> int:
        return int(self.data.size)

    @property
    def n_uses(self) -> int:
        return int(self.use_data.size)

    @property
    def span(self) -> IntArray:
        """Steps strictly inside each gap, :math:`t_2 - t_1 - 1`."""
        return self.last - self.first - 1

    def uses_at(self, t: int) -> IntArray:
        """Uses (indices) at step ``t``."""
        return self._step_uses[t]

    def occupancy(self, kept: BoolArray) -> IntArray:
        """Bytes of the kept gaps that span each step."""
        k = np.asarray(kept, bool)
        diff = np.zeros(self.n_steps + 1, np.int64)
        np.add.at(diff, self.first[k] + 1, self.size[k])
        np.add.at(diff, self.last[k], -self.size[k])
        return np.cumsum(diff)[:-1]

    def transfer_bytes(self, kept: BoolArray) -> int:
        """DRAM bytes of a keep vector: mandatory plus the cost of every evicted gap."""
        return self.mandatory + int(self.cost[~np.asarray(kept, bool)].sum())

    def over_capacity(self, kept: BoolArray, capacity: int) -> IntArray:
        """Steps where the demand plus the kept gaps exceed ``capacity``."""
        return np.flatnonzero(self.demand + self.occupancy(kept) > capacity)

    def overlaps(self, kept: BoolArray, address: IntArray, capacity: int) -> list[str]:
        """Violations of a contiguous plan: addresses out of ``[0, C − b]``, a kept gap that
        changes address, and pairs of boxes that share a step and an address."""
        k = np.asarray(kept, bool)
        a = np.asarray(address, np.int64)
        out: list[str] = []
        bad = np.flatnonzero((a < 0) | (a + self.use_size > capacity))
        out += [f"use {u} of tile {self.use_data[u]} at address {a[u]}" for u in bad]
        after = np.flatnonzero(self.gap_after >= 0)
        g = self.gap_after[after]
        moved = after[k[g] & (a[after] != a[after + 1])]
        out += [f"tile {self.use_data[u]} moves across kept gap {self.gap_after[u]}" for u in moved]
        # one row per (box, step) it covers; sort by (step, address); neighbours must not overlap
        length = np.ones(self.n_uses, np.int64)
        length[after] += np.where(k[g], self.span[g], 0)
        box = np.repeat(np.arange(self.n_uses), length)
        offset = np.arange(box.size) - np.repeat(np.cumsum(length) - length, length)
        step = self.use_step[box] + offset
        order = np.lexsort((a[box], step))
        box, step = box[order], step[order]
        same = step[1:] == step[:-1]
        clash = same & (a[box[1:]] < a[box[:-1]] + self.use_size[box[:-1]])
        out += [
            f"step {step[i]}: tiles {self.use_data[box[i]]} and {self.use_data[box[i + 1]]} overlap"
            for i in np.flatnonzero(clash)
        ]
        return out


def use_gaps(problem: TiledConv, order: Sequence[Sequence[int]]) -> UseGaps:
    """Steps, uses and gaps of ``problem`` issued as the operation sets ``order``.

    Raises
    ------
    ValueError
        A set is empty, an operation is missing, repeated or unknown, or an operation is issued
        before its partial-sum predecessor (the two may share a set).
    """
    n = problem.n_ops
    step_of = np.full(n, -1, np.int64)
    for t, ops in enumerate(order):
        if len(ops) == 0:
            raise ValueError(f"operation set {t} is empty")
        for o in map(int, ops):
            if not 0 <= o < n:
                raise ValueError(f"set {t}: operation {o} is not in 0..{n - 1}")
            if step_of[o] >= 0:
                raise ValueError(f"operation {o} is issued twice (sets {step_of[o]} and {t})")
            step_of[o] = t
    missing = np.flatnonzero(step_of < 0)
    if missing.size:
        raise ValueError(f"{missing.size} operations are not issued, e.g. {missing[:5].tolist()}")
    chained = np.flatnonzero(problem.op_c > 0)
    early = chained[step_of[chained - 1] > step_of[chained]]
    if early.size:
        o = int(early[0])
        raise ValueError(f"operation {o} is issued before its partial-sum predecessor {o - 1}")
    T = len(order)
    data = np.concatenate([problem.op_in, problem.op_wt, problem.op_ot])
    key = np.unique(data * T + np.tile(step_of, 3))
    use_data, use_step = key // T, key % T
    use_size = problem.data_bytes[use_data].astype(np.int64)
    same = use_data[1:] == use_data[:-1]
    n_gaps = int(same.sum())
    gap_after = np.full(use_data.size, -1, np.int64)
    gap_after[np.flatnonzero(same)] = np.arange(n_gaps)
    g_data = use_data[:-1][same]
    size = problem.data_bytes[g_data].astype(np.int64)
    cost = np.where(problem.data_type[g_data] == OT, 2 * size, size)
    demand = np.zeros(T, np.int64)
    np.add.at(demand, use_step, use_size)
    by_step = np.argsort(use_step, kind="stable")
    step_uses = tuple(np.split(by_step, np.cumsum(np.bincount(use_step, minlength=T))[:-1]))
    used = np.unique(use_data)
    is_ot = problem.data_type[used] == OT
    mandatory = int(problem.data_bytes[used[~is_ot]].sum() + problem.out_bytes[used[is_ot]].sum())
    return UseGaps(
        n_steps=T,
        demand=demand,
        use_data=use_data,
        use_step=use_step,
        use_size=use_size,
        gap_after=gap_after,
        data=g_data,
        first=use_step[:-1][same],
        last=use_step[1:][same],
        size=size,
        cost=cost.astype(np.int64),
        mandatory=mandatory,
        _step_uses=step_uses,
    )


def _check_fits(gaps: UseGaps, capacity: int) -> None:
    peak = int(gaps.demand.max(initial=0))
    if peak > capacity:
        t = int(np.argmax(gaps.demand))
        raise ValueError(f"set {t} needs {peak} bytes on chip at once, more than {capacity}")


# ---- greedy plans (upper bounds, warm starts) ---------------------------------------------------


@dataclass
class ResidencyPlan:
    """A keep/evict choice per gap (and, for contiguous plans, an address per use).

    Attributes
    ----------
    gaps
        The uses and gaps the plan refers to.
    kept
        Per gap, whether the tile stays on chip across it.
    bytes
        DRAM bytes of the plan (:meth:`UseGaps.transfer_bytes`).
    address
        Per use, the tile's address (contiguous plans), else ``None``.
    """

    gaps: UseGaps
    kept: BoolArray
    bytes: int
    address: IntArray | None = None


def _evict_key(gaps: UseGaps, u: int) -> tuple[int, float]:
    """Belady's victim order for a tile whose last use so far is ``u``: farthest next use first,
    ties to the lower eviction cost per byte (IN/WT before partial sums)."""
    g = int(gaps.gap_after[u])
    return int(gaps.last[g]), -float(gaps.cost[g]) / float(gaps.size[g])


def _improve(gaps: UseGaps, kept: BoolArray, capacity: int) -> BoolArray:
    """Keep every evicted gap that still fits, most bytes saved per byte-step first."""
    kept = kept.copy()
    room = capacity - gaps.demand - gaps.occupancy(kept)
    span = gaps.span
    cand = np.flatnonzero(~kept)
    ratio = gaps.cost[cand] / (gaps.size[cand] * np.maximum(span[cand], 1))
    for g in cand[np.argsort(-ratio, kind="stable")]:
        a, b = int(gaps.first[g]) + 1, int(gaps.last[g])
        if a >= b or room[a:b].min() >= gaps.size[g]:
            kept[g] = True
            room[a:b] -= gaps.size[g]
    return kept


def _belady(gaps: UseGaps, capacity: int, improve: bool) -> ResidencyPlan:
    _check_fits(gaps, capacity)
    kept = np.zeros(gaps.n_gaps, bool)
    resident: dict[int, int] = {}  # tile -> its latest use
    used = 0
    for t in range(gaps.n_steps):
        us = gaps.uses_at(t)
        pinned = {int(gaps.use_data[u]) for u in us}
        need = 0
        for u in us:
            d = int(gaps.use_data[u])
            if d in resident:
                kept[gaps.gap_after[resident[d]]] = True
            else:
                need += int(gaps.use_size[u])
        if used + need > capacity:
            victims = sorted(
                (d for d in resident if d not in pinned),
                key=lambda d: _evict_key(gaps, resident[d]),
                reverse=True,
            )
            for d in victims:
                if used + need <= capacity:
                    break
                used -= int(gaps.size[gaps.gap_after[resident.pop(d)]])
        used += need
        for u in us:
            d = int(gaps.use_data[u])
            if gaps.gap_after[u] >= 0:
                resident[d] = int(u)
            else:  # last use: the tile leaves (an output is written, mandatory bytes)
                resident.pop(d, None)
                used -= int(gaps.use_size[u])
    if improve:
        kept = _improve(gaps, kept, capacity)
    return ResidencyPlan(gaps, kept, gaps.transfer_bytes(kept))


def belady_plan(
    problem: TiledConv, order: Sequence[Sequence[int]], capacity: int, *, improve: bool = False
) -> ResidencyPlan:
    """Belady's rule without contiguity: before each set, load its missing tiles, evicting the
    tiles not used by the set whose next use is farthest (ties: IN/WT before partial sums).

    Its bytes are an upper bound on the offline optimum. ``improve=True`` afterwards keeps every
    evicted gap that still fits at all of its steps (still feasible, never more bytes).

    Raises
    ------
    ValueError
        A set's own tiles exceed ``capacity``, or ``order`` is invalid (:func:`use_gaps`).
    """
    return _belady(use_gaps(problem, order), capacity, improve)


def belady_bytes(problem: TiledConv, order: Sequence[Sequence[int]], capacity: int) -> int:
    """DRAM bytes of :func:`belady_plan` (an upper bound on :func:`offline_bound`)."""
    return belady_plan(problem, order, capacity).bytes


def _best_fit(spans: list[tuple[int, int]], size: int, capacity: int) -> int | None:
    """Lowest address of the smallest free hole of at least ``size`` bytes."""
    best: tuple[int, int] | None = None
    prev = 0
    for lo, hi in [*sorted(spans), (capacity, capacity)]:
        hole = lo - prev
        if hole >= size and (best is None or hole < best[0]):
            best = (hole, prev)
        prev = max(prev, hi)
    return None if best is None else best[1]


def _contiguous(gaps: UseGaps, capacity: int) -> ResidencyPlan:
    _check_fits(gaps, capacity)
    kept = np.zeros(gaps.n_gaps, bool)
    address = np.zeros(gaps.n_uses, np.int64)
    resident: dict[int, tuple[int, int]] = {}  # tile -> (address, latest use)
    for t in range(gaps.n_steps):
        us = gaps.uses_at(t)
        pinned = {int(gaps.use_data[u]) for u in us}
        carried = {d for d in pinned if d in resident}
        missing = sorted(
            (int(u) for u in us if int(gaps.use_data[u]) not in resident),
            key=lambda u: -int(gaps.use_size[u]),
        )
        repack = False
        for u in missing:
            d, s = int(gaps.use_data[u]), int(gaps.use_size[u])
            while True:
                boxes = [(x, x + int(gaps.use_size[v])) for x, v in resident.values()]
                a = _best_fit(boxes, s, capacity)
                victims = [e for e in resident if e not in pinned]
                if a is not None or not victims:
                    break
                del resident[max(victims, key=lambda e: _evict_key(gaps, resident[e][1]))]
            if a is None:
                repack = True
                break
            resident[d] = (a, u)
        if repack:  # the set's own tiles are fragmented: reload them packed from address 0
            resident, carried = {}, set()
            offsets = np.cumsum(gaps.use_size[us]) - gaps.use_size[us]
            for u, a in zip(us, offsets, strict=True):
                resident[int(gaps.use_data[u])] = (int(a), int(u))
        for u in us:
            d = int(gaps.use_data[u])
            if d in carried:
                kept[gaps.gap_after[resident[d][1]]] = True
            address[u] = resident[d][0]
            if gaps.gap_after[u] >= 0:
                resident[d] = (resident[d][0], int(u))
            else:
                del resident[d]
    return ResidencyPlan(gaps, kept, gaps.transfer_bytes(kept), address)


def contiguous_plan(
    problem: TiledConv, order: Sequence[Sequence[int]], capacity: int
) -> ResidencyPlan:
    """Belady's rule with best-fit addresses and no moves on chip: a feasible solution of the
    contiguous model (:meth:`UseGaps.overlaps` is empty). When the set's own resident tiles leave
    no hole large enough, all of them are reloaded packed from address 0.

    Raises
    ------
    ValueError
        A set's own tiles exceed ``capacity``, or ``order`` is invalid (:func:`use_gaps`).
    """
    return _contiguous(use_gaps(problem, order), capacity)


# ---- the exact models ---------------------------------------------------------------------------


class ResidencyModel:
    """Keep/evict per gap as an integer linear program (any linear backend).

    Variables :math:`e_g \\in \\{0, 1\\}` (gap evicted) for the gaps the presolve leaves open;
    objective :math:`\\sum_g c_g e_g` (bytes above :attr:`fixed_bytes`, no constant offset, so
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
        Per gap, its column in :attr:`lm` (``-1`` when fixed).
    fixed_bytes
        Mandatory bytes plus the cost of the gaps the presolve evicts.
    rows
        ``(gaps, residual)`` of every capacity row: :math:`\\sum_{g} b_g k_g \\le C - D_t`.
    """

    def __init__(self, gaps: UseGaps, capacity: int) -> None:
        self.gaps, self.capacity = gaps, int(capacity)
        self.residual = self.capacity - gaps.demand
        self.lm = LinearModel(f"flexer_offline_{gaps.n_steps}x{gaps.n_gaps}")
        self.rows: list[tuple[IntArray, int]] = []
        self._presolve()
        self.var = np.full(gaps.n_gaps, -1, np.int64)
        for g in np.flatnonzero(self.fixed < 0):
            self.var[g] = self.lm.add_var(f"e[{g}]", 0, 1)
        for add in (self._capacity,):
            add()
        free = np.flatnonzero(self.fixed < 0)
        self.lm.cost = {int(self.var[g]): float(gaps.cost[g]) for g in free}

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
        self.lm.family("capacity")
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
            self.lm.add_row(self.var[idx], sizes.astype(float), lb=float(sizes.sum() - r))

    def encode(self, kept: BoolArray) -> NDArray[np.float64]:
        """Column vector of a keep vector (a warm start)."""
        x = np.zeros(self.lm.num_vars)
        free = np.flatnonzero(self.fixed < 0)
        x[self.var[free]] = (~np.asarray(kept, bool)[free]).astype(float)
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
    use. Objective :math:`\\sum_g c_g (1 - k_g)` (bytes above :attr:`fixed_bytes`).

    Parameters
    ----------
    base
        The linear model of the same order and capacity (its presolve and capacity rows, added
        here as redundant linear constraints).

    Attributes
    ----------
    md
        The ``CpModel``.
    """

    #: Stronger propagation of NoOverlap2D (energy of the boxes per step window).
    PARAMETERS: dict[str, Any] = {"use_energetic_reasoning_in_no_overlap_2d": True}

    def __init__(self, base: ResidencyModel) -> None:
        self.base, self.gaps, self.capacity = base, base.gaps, base.capacity
        self.fixed_bytes = base.fixed_bytes
        self.md = cp_model.CpModel()
        g = self.gaps
        self.k: list[cp_model.IntVar | int] = [
            0 if base.fixed[j] == 0 else self.md.new_bool_var(f"k[{j}]") for j in range(g.n_gaps)
        ]
        self.a = [
            self.md.new_int_var(0, self.capacity - int(g.use_size[u]), f"a[{u}]")
            for u in range(g.n_uses)
        ]
        for add in (self._same_address, self._no_overlap, self._capacity):
            add()
        self.md.minimize(
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
                self.md.add(self.a[u] == self.a[u + 1]).only_enforce_if(k)

    def _no_overlap(self) -> None:
        """Residencies are disjoint rectangles in (step × address); use :math:`u` of a tile of
        :math:`b` bytes with the gap :math:`g` after it (:math:`L_g` inner steps) is

        .. math::

            [s_u,\\; s_u + 1 + L_g k_g) \\times [a_u,\\; a_u + b), \\qquad
            \\text{NoOverlap2D over all uses}
        """
        g, md = self.gaps, self.md
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
            self.md.add(sum(int(size[j]) * self.k[j] for j in idx) <= r)

    def hint(self, plan: ResidencyPlan) -> None:
        """Hint a contiguous plan (keep vector and addresses)."""
        self.md.clear_hints()
        for j, k in enumerate(self.k):
            if not isinstance(k, int):
                self.md.add_hint(k, bool(plan.kept[j]))
        if plan.address is not None:
            for u, a in enumerate(self.a):
                self.md.add_hint(a, int(plan.address[u]))

    def decode(self, solver: Any) -> tuple[BoolArray, IntArray]:
        """Keep vector and addresses of a solver answer."""
        kept = np.array(
            [False if isinstance(k, int) else solver.boolean_value(k) for k in self.k], bool
        )
        address = np.array([solver.value(a) for a in self.a], np.int64)
        return kept, address


# ---- running it ---------------------------------------------------------------------------------


@dataclass
class OfflineBound:
    """Outcome of :func:`offline_bound`; bytes throughout.

    Attributes
    ----------
    status
        What the solver returned (``infeasible`` without a solver run when a set alone exceeds
        the capacity; ``error`` when the decoded answer fails the independent checks).
    gaps
        Uses and gaps of the order.
    mandatory
        Bytes every schedule moves (:attr:`UseGaps.mandatory`).
    objective
        Bytes of the best keep vector found, recomputed from it, or ``None``.
    bound
        Proven lower bound: the solver's bound (plus the fixed bytes), else the LP relaxation's
        optimum, else the presolve's fixed bytes; :attr:`bound_source` says which.
    bound_source
        ``"solver"``, ``"lp"``, ``"presolve"`` or ``""`` (no bound).
    kept
        Per gap of :attr:`gaps`, whether the best solution keeps it.
    address
        Per use, the address (``contiguous=True``), else ``None``.
    runtime
        Wall seconds, building and solving.
    hint_bytes
        Bytes of the warm start (:func:`belady_plan` with ``improve=True``, or
        :func:`contiguous_plan`), or ``None``.
    stats
        Model sizes and timings.
    """

    status: Status
    gaps: UseGaps
    mandatory: int
    backend: str
    contiguous: bool
    objective: int | None = None
    bound: float | None = None
    bound_source: str = ""
    kept: BoolArray | None = None
    address: IntArray | None = None
    runtime: float = 0.0
    hint_bytes: int | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    trace: list[TracePoint] = field(default_factory=list)
    message: str = ""

    @property
    def gap(self) -> float | None:
        """Relative gap ``(objective − bound) / objective``."""
        if self.objective is None or self.bound is None:
            return None
        return (
            0.0 if self.objective == 0 else max(0.0, (self.objective - self.bound) / self.objective)
        )

    def summary(self) -> str:
        kind = "contiguous" if self.contiguous else "offline"
        bound = "-" if self.bound is None else f"{self.bound:.0f} ({self.bound_source})"
        return (
            f"{kind}/{self.backend}: {self.status.value} objective={self.objective} "
            f"bound={bound} mandatory={self.mandatory} time={self.runtime:.2f}s"
        )


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

    lp = dataclasses.replace(model.lm, integral=[False] * model.lm.num_vars)
    try:
        raw = solve_linear(lp, "highs", time_limit=time_limit, threads=1, seed=0)
    except (ImportError, OSError):  # highspy missing or not loadable next to ortools
        return None
    return raw.objective if raw.status is Status.OPTIMAL else None


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
) -> OfflineBound:
    """Least DRAM bytes of any schedule issuing the sets ``order`` with a global buffer of
    ``capacity`` bytes (the module docstring gives the model and why it is a lower bound).

    Parameters
    ----------
    problem
        The tiled layer.
    order
        Operation sets in issue order; every operation exactly once, never before its
        partial-sum predecessor.
    capacity
        Global buffer bytes.
    contiguous
        Also place every residency at a fixed address range (CP-SAT only).
    backend
        ``"highs"``, ``"cpsat"`` or ``"cbc"`` (:data:`BACKENDS`).
    time_limit, threads, seed, log
        Solver settings.
    warm
        Start from :func:`belady_plan` (``improve=True``) or, contiguous, :func:`contiguous_plan`.

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
    out = OfflineBound(Status.INFEASIBLE, gaps, gaps.mandatory, backend, contiguous)
    out.stats = {"steps": gaps.n_steps, "tiles": int(np.unique(gaps.use_data).size)}
    out.stats |= {"uses": gaps.n_uses, "gaps": gaps.n_gaps}
    try:
        _check_fits(gaps, capacity)
    except ValueError as err:
        out.message, out.runtime = str(err), time.perf_counter() - t0
        return out
    model = ResidencyModel(gaps, capacity)
    out.stats |= {
        "kept_free": int((model.fixed == 1).sum()),
        "evicted_presolve": int((model.fixed == 0).sum()),
        "variables": model.lm.num_vars,
        "rows": model.lm.num_rows,
    }
    if contiguous:
        _solve_contiguous(out, model, time_limit, threads, seed, warm, log)
    else:
        _solve_linear(out, model, time_limit, threads, seed, warm, log)
    if out.bound is None and out.status is not Status.ERROR:
        lp = _lp_bound(model, time_limit) if model.lm.num_vars else 0.0
        out.bound, out.bound_source = (
            (model.fixed_bytes + lp, "lp") if lp is not None else (model.fixed_bytes, "presolve")
        )
    if out.kept is not None:
        _verify(out, capacity)
    out.runtime = time.perf_counter() - t0
    return out


def _solve_linear(
    out: OfflineBound,
    model: ResidencyModel,
    time_limit: float | None,
    threads: int,
    seed: int,
    warm: bool,
    log: bool,
) -> None:
    from npusched.solvers.dispatch import solve_linear

    fixed = model.fixed_bytes
    hint = _belady(model.gaps, model.capacity, improve=True) if warm else None
    out.hint_bytes = None if hint is None else hint.bytes
    if model.lm.num_vars == 0:
        out.status, out.kept = Status.OPTIMAL, model.decode(np.zeros(0))
        out.objective = out.gaps.transfer_bytes(out.kept)
        out.bound, out.bound_source = float(out.objective), "presolve"
        return
    t = time.perf_counter()
    raw = solve_linear(
        model.lm,
        out.backend,
        time_limit=time_limit,
        threads=threads,
        seed=seed,
        warm_start=None if hint is None else model.encode(hint.kept),
        log=log,
    )
    out.stats["solve_s"] = time.perf_counter() - t
    out.status, out.trace, out.message = raw.status, _shift(raw.trace, fixed), raw.message
    if raw.bound is not None and math.isfinite(raw.bound):
        out.bound, out.bound_source = fixed + raw.bound, "solver"
    if raw.x is not None:
        out.kept = model.decode(raw.x)
        out.objective = out.gaps.transfer_bytes(out.kept)
        if raw.objective is not None and abs(fixed + raw.objective - out.objective) > 0.5:
            out.status = Status.ERROR
            out.message = f"solver objective {fixed + raw.objective} != recomputed {out.objective}"


def _solve_contiguous(
    out: OfflineBound,
    base: ResidencyModel,
    time_limit: float | None,
    threads: int,
    seed: int,
    warm: bool,
    log: bool,
) -> None:
    """CP-SAT on :class:`ContiguousModel`. With a time limit it runs in a child process stopped at
    the limit (:func:`~npusched.solvers.cpsat.run_cpsat_within`): with 2 workers its packing
    neighbourhoods overran a 15 s limit by 20 s on a 640-box model."""
    from npusched.solvers.cpsat import run_cpsat, run_cpsat_within

    t = time.perf_counter()
    model = ContiguousModel(base)
    out.stats |= {"boxes": model.n_boxes, "build_cp_s": time.perf_counter() - t}
    hint = _contiguous(base.gaps, base.capacity) if warm else None
    if hint is not None:
        out.hint_bytes = hint.bytes
        model.hint(hint)
    t = time.perf_counter()
    kw: dict[str, Any] = dict(threads=threads, seed=seed, log=log, params=model.PARAMETERS)
    solver: Any
    if time_limit is None:
        status, solver, rec = run_cpsat(model.md, time_limit=None, **kw)
        points = rec.points
    else:
        ran = run_cpsat_within(model.md, time_limit=float(time_limit), **kw)
        status, solver, points = (Status.TIME_LIMIT_NO_SOLUTION, None, []) if ran is None else ran
    out.stats["solve_s"] = time.perf_counter() - t
    fixed = model.fixed_bytes
    out.status, out.trace = status, _shift(points, fixed)
    if solver is not None and math.isfinite(solver.best_objective_bound):
        out.bound, out.bound_source = fixed + solver.best_objective_bound, "solver"
    if solver is not None and status in (Status.OPTIMAL, Status.FEASIBLE):
        out.kept, out.address = model.decode(solver)
        out.objective = out.gaps.transfer_bytes(out.kept)
        if abs(fixed + solver.objective_value - out.objective) > 0.5:
            out.status = Status.ERROR
            out.message = f"CP-SAT objective {fixed + solver.objective_value} != {out.objective}"
    elif hint is not None and status is Status.TIME_LIMIT_NO_SOLUTION:
        out.status, out.kept, out.address = Status.FEASIBLE, hint.kept, hint.address
        out.objective = hint.bytes
        out.message = "CP-SAT returned no solution in time; the objective is the warm start's"


def _verify(out: OfflineBound, capacity: int) -> None:
    """Independent checks of the decoded answer (capacity; boxes when contiguous)."""
    assert out.kept is not None
    bad = out.gaps.over_capacity(out.kept, capacity)
    problems = [f"step {t} over capacity" for t in bad[:5]]
    if out.address is not None:
        problems += out.gaps.overlaps(out.kept, out.address, capacity)[:5]
    if problems:
        out.status = Status.ERROR
        out.message = "; ".join([out.message, *problems] if out.message else problems)


def index_order(problem: TiledConv, n: int) -> list[tuple[int, ...]]:
    """Operations in index order (:meth:`Tiling.index`, ``C`` innermost) in consecutive sets of
    ``n``: the simplest order to bound (a set may hold a partial-sum chain segment)."""
    if n < 1:
        raise ValueError(f"set size must be positive, got {n}")
    ops = range(problem.n_ops)
    return [tuple(ops[i : i + n]) for i in range(0, problem.n_ops, n)]


__all__ = [
    "BACKENDS",
    "BOUND_SOURCES",
    "ContiguousModel",
    "OfflineBound",
    "ResidencyModel",
    "ResidencyPlan",
    "UseGaps",
    "belady_bytes",
    "belady_plan",
    "contiguous_plan",
    "index_order",
    "offline_bound",
    "use_gaps",
]
