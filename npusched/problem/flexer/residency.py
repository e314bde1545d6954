"""The offline residency problem of Flexer (Min, Kwon, Egger, CGO 2023, seed
``000_4482881724fd7be8.txt``, §4.1): a tiled layer issued as a *fixed* order of operation sets,
its uses and the gaps between them (:class:`UseGaps`), and a keep/evict choice per gap
(:class:`ResidencyPlan`, the solution of
:func:`npusched.formulations.flexer.offline.offline_bound` and of the greedy plans of
:mod:`npusched.heuristics.flexer.residency`).

Step :math:`t` is the index of a set in the order; :math:`U_t` the distinct data tiles its
operations read or write and :math:`D_t = \\sum_{d \\in U_t} b_d` its demand. A tile used at the
sorted distinct steps :math:`s_0 < s_1 < \\dots < s_m` has the *gaps* :math:`g = (s_j, s_{j+1})`;
evicting a gap costs :math:`c_g = b_d` (IN, WT) or :math:`2 b_d` (OT: write-back and reload).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from npusched.problem.flexer.layer import OT, TiledConv

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


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
        """Number of gaps (per tile, the distinct steps it is used at minus one, summed over
        the tiles), the length of the per-gap arrays."""
        return int(self.data.size)

    @property
    def n_uses(self) -> int:
        """Number of uses (a tile at one of the distinct steps it is used at), the length of
        the per-use arrays."""
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


def check_fits(gaps: UseGaps, capacity: int) -> None:
    """Raise ``ValueError`` when a set's own tiles exceed ``capacity``."""
    peak = int(gaps.demand.max(initial=0))
    if peak > capacity:
        t = int(np.argmax(gaps.demand))
        raise ValueError(f"set {t} needs {peak} bytes on chip at once, more than {capacity}")


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


def index_order(problem: TiledConv, n: int) -> list[tuple[int, ...]]:
    """Operations in index order (:meth:`Tiling.index`, ``C`` innermost) in consecutive sets of
    ``n``: the simplest order to bound (a set may hold a partial-sum chain segment)."""
    if n < 1:
        raise ValueError(f"set size must be positive, got {n}")
    ops = range(problem.n_ops)
    return [tuple(ops[i : i + n]) for i in range(0, problem.n_ops, n)]


@dataclass(frozen=True, eq=False)
class ResidencyProblem:
    """What ``solve(…, "flexer-offline")`` bounds: ``problem`` issued as the operation sets
    ``order`` with a global buffer of ``capacity`` bytes.

    Raises
    ------
    ValueError
        A non-positive capacity.
    """

    problem: TiledConv
    order: Sequence[Sequence[int]]
    capacity: int

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"capacity must be positive, got {self.capacity}")

    def gaps(self) -> UseGaps:
        """Uses and gaps of the order (:func:`use_gaps`; raises ``ValueError`` if invalid)."""
        return use_gaps(self.problem, self.order)
