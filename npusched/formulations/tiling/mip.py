"""The candidate-choice MIP of TSO's tiling: one binary per candidate enumerated by
:func:`npusched.heuristics.tiling.space.tso_layer_space`, exactly one chosen, minimising
:math:`\\sum_k t_k x_k` (integer cycles), solved by HiGHS through
:func:`npusched.solvers.dispatch.solve_linear`. It is trivially exact *relative to the enumerated
space* (its LP relaxation is already integral); the CP-SAT model
(:mod:`npusched.formulations.tiling.cpsat`) is exact over the integer tile domains and so checks
the enumeration itself. This is the ``highs`` backend of ``tso-exact``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from npusched.arch.model import Arch
from npusched.formulations.tiling.layer_cpsat import tile_choice
from npusched.heuristics.tiling.space import TileSpace, tso_layer_space
from npusched.problem.tiling import TLE_SLICINGS, TLT_SCHEDULES, TsoLayer
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Result, Status
from npusched.workload.layers import Layer, Shape

#: Above this many candidates :func:`solve_layer_mip` (``form="auto"``) passes the choice as an
#: LP. HiGHS 1.14's MIP presolve is quadratic in the binaries of this one-row model (measured,
#: random costs: 8 000 binaries 1.3 s, 72 628 (ResNet-50 layer4.2.conv3) no answer in 60 s, and
#: it overruns its time limit there), while its LP solves 32 000 columns in 0.06 s.
MIP_MAX_BINARIES = 5000


class CandidateChoiceMIP:
    """Pick one enumerated candidate: one binary per entry of a
    :class:`~npusched.heuristics.tiling.search.TileSpace`, costs in integer cycles.

    Exact only relative to the enumerated space (whatever :func:`layer_space` leaves out is not
    seen). The constraint matrix is one row of ones, so every vertex of the LP relaxation is a
    unit vector: with ``integral=False`` the same model is an LP whose basic optimal solution
    (HiGHS's simplex returns one) is an optimal binary choice.
    """

    def __init__(self, space: TileSpace, freq_hz: float, integral: bool = True) -> None:
        self.space = space
        self.model = LinearModel(f"tso_candidates_{len(space)}")
        mhz = freq_hz / 1e6
        cyc = np.rint(space.time_us * mhz)
        if not np.allclose(cyc, space.time_us * mhz, rtol=0, atol=1e-6 * np.maximum(1, cyc)):
            raise ValueError("candidate times are not whole cycles")
        self.cycles = cyc.astype(np.int64)
        n = len(space)
        self.x = np.arange(n, dtype=np.int64)
        self.model.lb.extend([0.0] * n)
        self.model.ub.extend([1.0] * n)
        self.model.integral.extend([integral] * n)
        self.model.var_names.extend(f"x[{k}]" for k in range(n))
        if not integral:
            # HiGHS 1.14's LP presolve of this one row overruns its time limit by minutes (VGG-16
            # conv4_2, 74 541 columns: 195 s for 0.5 s); without it the simplex takes 0.1 s
            self.model.highs_options["presolve"] = "off"
        self._choose_one()
        self.model.cost = {int(k): float(c) for k, c in zip(self.x, self.cycles, strict=True)}

    def _choose_one(self) -> None:
        """Exactly one candidate.

        .. math:: \\sum_k x_k = 1,\\qquad x_k \\in \\{0, 1\\}

        Objective :math:`\\min \\sum_k t_k x_k` with :math:`t_k` the candidate's cycles.
        """
        self.model.family("choose-one")
        self.model.add_row(self.x, np.ones(self.x.size), 1, 1)

    def hint(self, k: int) -> np.ndarray:
        """The unit vector choosing candidate ``k`` (a warm start)."""
        x = np.zeros(self.x.size)
        x[k] = 1.0
        return x

    def decode(self, x: np.ndarray) -> int | None:
        """Index of the chosen candidate, or ``None`` when ``x`` is not a unit vector."""
        k = int(np.argmax(x))
        if abs(x[k] - 1) > 1e-9 or np.abs(np.delete(x, k)).max(initial=0.0) > 1e-9:
            return None
        return k


def _decoded(space: TileSpace, k: int | None) -> tuple[str, str, tuple[int, int, int, int]] | None:
    """Slicing, schedule and tile sizes of candidate ``k`` (``None`` when the answer is not a
    single candidate)."""
    if k is None:
        return None
    tle, tlt = TLE_SLICINGS[int(space.tle[k])], TLT_SCHEDULES[int(space.tlt[k])]
    tiles = (int(space.T_R[k]), int(space.T_C[k]), int(space.T_N[k]), int(space.T_M[k]))
    return tle, tlt, tiles


def solve_tso_mip(
    problem: TsoLayer,
    time_limit: float | None = 60.0,
    threads: int = 1,
    seed: int = 0,
    backend: str = "highs",
    form: str = "auto",
) -> Result:
    """Solve :class:`CandidateChoiceMIP` on ``problem``'s
    :func:`~npusched.heuristics.tiling.space.tso_layer_space` with
    :func:`npusched.solvers.dispatch.solve_linear` (HiGHS by default); status and bound as
    returned, in cycles (µs and the chosen candidate's cycles in ``stats``).

    ``form``: ``"mip"`` (binaries), ``"lp"`` (the same model with :math:`0 \\le x \\le 1`
    continuous, integral at a basic optimum, checked), or ``"auto"``: ``"mip"`` up to
    :data:`MIP_MAX_BINARIES` candidates. ``stats["form"]`` says which ran; a non-unit LP
    answer is reported as ``error``.
    """
    from npusched.solvers.dispatch import solve_linear

    if form not in ("auto", "mip", "lp"):
        raise ValueError(f"unknown form {form!r}; choose from auto, mip, lp")
    t0 = time.perf_counter()
    space = tso_layer_space(problem)
    if form == "auto":
        form = "mip" if len(space) <= MIP_MAX_BINARIES else "lp"
    stats: dict[str, object] = {"layer": problem.name, "model": problem.model}
    stats.update({"candidates": len(space), "form": form})
    if len(space) == 0:
        return Result(Status.INFEASIBLE, "tso-exact", backend, stats=stats)
    mip = CandidateChoiceMIP(space, problem.nmp.freq_hz, integral=form == "mip")
    raw = solve_linear(mip.model, backend, time_limit=time_limit, threads=threads, seed=seed)
    k = None if raw.x is None else mip.decode(raw.x)
    status, message = raw.status, raw.message
    if raw.x is not None and k is None:
        status, message = Status.ERROR, "the solver's answer is not a single candidate"
    bound = raw.bound
    if form == "lp":
        # HiGHS has no MIP dual bound for an LP (the backend reads mip_dual_bound, which is 0
        # there); an optimal LP's dual objective equals its primal objective
        bound = raw.objective if status == Status.OPTIMAL else None
    chosen = _decoded(space, k)
    cycles = None if k is None else int(mip.cycles[k])
    us = problem.nmp.us
    stats["choice"] = None if chosen is None else [chosen[0], chosen[1], *chosen[2]]
    stats.update({"objective_cycles": cycles, "bound_cycles": bound})
    stats["objective_us"] = None if raw.objective is None else us(raw.objective)
    stats["bound_us"] = None if bound is None else us(bound)
    solution = None
    if chosen is not None and cycles is not None:
        solution = tile_choice(problem, *chosen, cycles)
    return Result(
        status=status,
        method="tso-exact",
        backend=backend,
        objective=raw.objective,
        bound=bound,
        runtime_s=time.perf_counter() - t0,
        solution=solution,
        trace=raw.trace,
        stats=stats,
        message=message,
    )


def solve_layer_mip(
    layer: Layer, in_shape: Shape, arch: Arch, model: str = "burst", **options: Any
) -> Result:
    """:func:`solve_tso_mip` of a ``conv``/``fc`` ``layer`` with input ``in_shape`` on ``arch``
    (all 9 slicing × schedule pairs); ``options`` are :func:`solve_tso_mip`'s."""
    return solve_tso_mip(TsoLayer.from_layer(layer, in_shape, arch, model), **options)


__all__ = ["MIP_MAX_BINARIES", "CandidateChoiceMIP", "solve_layer_mip", "solve_tso_mip"]
