"""Exact spill-victim selection of Flexer's memory manager (seed ``000_4482881724fd7be8.txt``,
§4.1, Algorithm 2) as an integer linear model over contiguous runs of segments.

Algorithm 2 (:func:`npusched.heuristics.flexer.spill.flexer_victims`) scans, from every start,
the shortest run of movable segments that frees ``required`` bytes and keeps the least
``(fragmentation, disadvantage, live blocks)``
(:func:`~npusched.heuristics.flexer.spill.spill_key`).
:class:`SpillModel` states the same choice over *all* contiguous runs of movable segments and
:func:`solve_spill_exact` solves it lexicographically, so the two keys must be equal.

Lexicographic objective: successive solves
------------------------------------------
The three levels are solved one after another: minimise fragmentation :math:`F`; add
:math:`F = F^*` and minimise disadvantage :math:`D`; add :math:`D = D^*` and minimise the number
of live blocks :math:`L`. Each level starts from the previous level's solution (feasible for it).
A single weighted objective :math:`W_F F + W_D D + L` with :math:`W_D = L_{max} + 1`,
:math:`W_F = W_D (D_{max} + 1)` would also be exact in integer arithmetic, but its coefficients
reach :math:`\\sum size \\cdot \\sum size \\times uses \\cdot n` (:math:`10^{15}`–:math:`10^{18}`
for MiB-sized blocks): beyond the :math:`2^{53}` integers of a float64 MIP solver, and there the
solver's integrality and optimality tolerances (relative to the objective) would let a worse
:math:`D` or :math:`L` pass as optimal. Successive solves keep every level's coefficients at
:math:`\\le \\sum size \\times uses`, on every backend. The result is claimed optimal only if the
solver returned optimal at all three levels.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from npusched.heuristics.flexer.spill import spill_key
from npusched.problem.flexer.layer import SpillRequest
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Result, Status

#: Backends of :func:`solve_spill_exact` (names of :func:`npusched.solvers.dispatch.solve_linear`).
BACKENDS = ("cpsat", "cbc", "highs")
#: The objective levels, most significant first.
LEVELS = ("fragmentation", "disadvantage", "live_blocks")


class SpillModel:
    """Choose one contiguous run of movable segments freeing at least ``required`` bytes.

    Variables: :math:`x_i \\in \\{0,1\\}` (segment :math:`i` is freed) and
    :math:`s_i \\in \\{0,1\\}` (the run starts at :math:`i`). The constraint families are the
    private methods; :attr:`objectives` holds the three levels as cost dictionaries with their
    constant offsets.

    Parameters
    ----------
    sizes, uses, movable, live
        The memory map in address order, as for
        :func:`~npusched.heuristics.flexer.spill.flexer_victims` (sizes and uses non-negative).
    required
        Bytes that must become contiguous.
    """

    def __init__(
        self,
        sizes: Sequence[int],
        uses: Sequence[int],
        movable: Sequence[bool],
        live: Sequence[bool],
        required: int,
    ) -> None:
        n = len(sizes)
        if not len(uses) == len(movable) == len(live) == n:
            raise ValueError("sizes, uses, movable and live differ in length")
        if any(v < 0 for v in sizes) or any(v < 0 for v in uses):
            raise ValueError("sizes and uses must be non-negative")
        self.sizes, self.uses = [int(v) for v in sizes], [int(v) for v in uses]
        self.movable, self.live = [bool(v) for v in movable], [bool(v) for v in live]
        self.required, self.n = int(required), n
        self.model = LinearModel("flexer_spill")
        self.x = np.array([self.model.add_var(f"x[{i}]", 0, 1) for i in range(n)], dtype=np.int64)
        self.s = np.array([self.model.add_var(f"s[{i}]", 0, 1) for i in range(n)], dtype=np.int64)
        for add in (self._one_run, self._contiguity, self._pinned, self._capacity):
            add()
        self.objectives: list[tuple[dict[int, float], float]] = self._objectives()

    def _one_run(self) -> None:
        """Exactly one run, and it starts at a freed segment.

        .. math:: \\sum_i s_i = 1, \\qquad s_i \\le x_i \\quad \\forall i
        """
        self.model.family("one_run")
        self.model.add_row(self.s, np.ones(self.n), 1, 1)
        for i in range(self.n):
            self.model.add_row([self.s[i], self.x[i]], [1.0, -1.0], ub=0)

    def _contiguity(self) -> None:
        """A freed segment continues the run of its predecessor or starts it
        (:math:`x_{-1} = 0`). Every maximal block of freed segments then needs a start at its
        first segment, so with one start there is one block, beginning at that start.

        .. math:: x_i \\le x_{i-1} + s_i \\quad \\forall i
        """
        self.model.family("contiguity")
        for i in range(self.n):
            if i == 0:
                self.model.add_row([self.x[0], self.s[0]], [1.0, -1.0], ub=0)
            else:
                self.model.add_row([self.x[i], self.x[i - 1], self.s[i]], [1.0, -1.0, -1.0], ub=0)

    def _pinned(self) -> None:
        """Pinned segments (operands of the operation set being issued) stay: a run cannot
        cross them (as a variable bound).

        .. math:: x_i = 0 \\quad \\forall i : \\neg movable_i
        """
        for i in range(self.n):
            if not self.movable[i]:
                self.model.ub[self.x[i]] = 0

    def _capacity(self) -> None:
        """The run frees enough bytes.

        .. math:: \\sum_i size_i \\, x_i \\ge required
        """
        self.model.family("capacity")
        self.model.add_row(self.x, np.asarray(self.sizes, dtype=float), lb=self.required)

    def _objectives(self) -> list[tuple[dict[int, float], float]]:
        """Algorithm 2's levels (lines 15–26), most significant first.

        .. math::

            F = \\sum_i size_i \\, x_i - required, \\qquad
            D = \\sum_i size_i \\, uses_i \\, x_i, \\qquad
            L = \\sum_{i : live_i} x_i
        """
        x = self.x.tolist()
        frag = {j: float(v) for j, v in zip(x, self.sizes, strict=True) if v}
        dis = {j: float(v * u) for j, v, u in zip(x, self.sizes, self.uses, strict=True) if v * u}
        blocks = {j: 1.0 for j, lv in zip(x, self.live, strict=True) if lv}
        return [(frag, -float(self.required)), (dis, 0.0), (blocks, 0.0)]

    def fix_level(self, level: int, value: float) -> None:
        """Add the row holding objective ``level`` at ``value`` (its optimum)."""
        cost, offset = self.objectives[level]
        self.model.family(f"fix_{LEVELS[level]}")
        idx = list(cost)
        self.model.add_row(idx, [cost[j] for j in idx], value - offset, value - offset)

    def hint(self, run: Sequence[int]) -> NDArray[np.float64]:
        """The solution vector that frees the contiguous ``run`` of segments (a warm start)."""
        x = np.zeros(self.model.num_vars)
        if run:
            x[self.x[list(run)]] = 1.0
            x[self.s[run[0]]] = 1.0
        return x

    def decode(self, x: NDArray[np.float64]) -> list[int] | None:
        """The freed segments of solution ``x``, or ``None`` if they are not one contiguous run
        of movable segments."""
        run = [i for i in range(self.n) if x[self.x[i]] > 0.5]
        if not run or run != list(range(run[0], run[-1] + 1)):
            return None
        if not all(self.movable[i] for i in run):
            return None
        return run


def solve_spill_exact(
    sizes: Sequence[int],
    uses: Sequence[int],
    movable: Sequence[bool],
    live: Sequence[bool],
    required: int,
    *,
    backend: str = "cpsat",
    time_limit: float = 10.0,
    threads: int = 1,
    seed: int = 0,
) -> Result:
    """Solve :class:`SpillModel` lexicographically (three successive solves; module docstring).

    Parameters
    ----------
    sizes, uses, movable, live, required
        The memory map and the request, as for
        :func:`~npusched.heuristics.flexer.spill.flexer_victims`.
    backend
        ``"cpsat"``, ``"cbc"`` (PuLP) or ``"highs"`` (highspy), through
        :func:`npusched.solvers.dispatch.solve_linear`.
    time_limit
        Seconds for all levels together; each level gets what is left.
    threads, seed
        Solver threads (1 is fastest on these small models) and random seed.

    Returns
    -------
    Result
        ``solution``: the indices of the segments to free (one contiguous run), or ``None``;
        ``stats["key"]``: :func:`~npusched.heuristics.flexer.spill.spill_key` of that run,
        recomputed from the segments (not read from the solver), ``stats["levels"]``: the
        solver status of each level that ran; ``objective``: the key's fragmentation, ``bound``:
        the fragmentation level's bound. ``optimal`` only if every level was solved to
        optimality; ``infeasible`` when no contiguous run of movable segments frees
        ``required`` bytes; ``error`` if a solver's answer is not one run or its level values
        disagree with the recomputed key.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    t0 = time.perf_counter()
    out = Result(Status.INFEASIBLE, "flexer-spill", backend, threads=threads, seed=seed)
    out.time_limit, out.stats = time_limit, {"key": None, "levels": ()}
    model = SpillModel(sizes, uses, movable, live, required)
    if model.n > 0:  # else nothing to free: no row to hand to a solver
        _solve_levels(out, model, t0)
    out.runtime_s = time.perf_counter() - t0
    return out


def _solve_levels(out: Result, model: SpillModel, t0: float) -> None:
    """Run the three levels on ``out.backend`` and fill ``out`` (see :func:`solve_spill_exact`)."""
    from npusched.solvers.dispatch import solve_linear

    statuses: list[Status] = []
    x: NDArray[np.float64] | None = None
    values: list[float] = []
    for level, (cost, offset) in enumerate(model.objectives):
        model.model.cost, model.model.offset = dict(cost), offset
        left = (out.time_limit or 0.0) - (time.perf_counter() - t0)
        raw = solve_linear(
            model.model, out.backend, time_limit=max(0.01, left), threads=out.threads,
            seed=out.seed, warm_start=x,
        )  # fmt: skip
        statuses.append(raw.status)
        if level == 0:
            out.bound = raw.bound
        if raw.x is None or raw.objective is None:
            break
        x = raw.x
        values.append(raw.objective)
        if level + 1 < len(model.objectives):
            model.fix_level(level, round(raw.objective))
    out.stats["levels"] = levels = tuple(statuses)
    if x is None:
        out.status = statuses[0] if statuses[0] != Status.OPTIMAL else Status.ERROR
        return
    run = model.decode(x)
    if run is None:
        out.status = Status.ERROR
        return
    key = spill_key(model.sizes, model.uses, model.live, run, model.required)
    out.solution, out.objective, out.stats["key"] = run, float(key[0]), key
    if any(round(v) != k for v, k in zip(values, key, strict=False)):
        out.status = Status.ERROR
        return
    done = len(levels) == len(LEVELS) and all(s == Status.OPTIMAL for s in levels)
    out.status = Status.OPTIMAL if done else Status.FEASIBLE


def solve_spill(request: SpillRequest, **options: Any) -> Result:
    """:func:`solve_spill_exact` of a :class:`~npusched.problem.flexer.layer.SpillRequest`."""
    r = request
    return solve_spill_exact(r.sizes, r.uses, r.movable, r.live, r.required, **options)
