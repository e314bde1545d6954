"""OR-Tools CP-SAT backend: runs CP models and integer linear models."""

from __future__ import annotations

from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from npusched.solvers.common import RawOutput, TraceRecorder, run_within
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Result, Status

_BIG = 2**40


class _Incumbents(cp_model.CpSolverSolutionCallback):
    def __init__(self, recorder: TraceRecorder) -> None:
        super().__init__()
        self.recorder = recorder

    def on_solution_callback(self) -> None:
        self.recorder.update(self.ObjectiveValue(), self.BestObjectiveBound())


def run_cpsat(
    model: cp_model.CpModel,
    *,
    time_limit: float | None,
    threads: int,
    seed: int,
    log: bool = False,
    params: dict[str, Any] | None = None,
) -> tuple[Status, cp_model.CpSolver, TraceRecorder]:
    """Solve ``model`` and record its anytime trace (incumbents and bound improvements).

    ``params`` are extra ``SatParameters`` fields a formulation asks for (e.g. stronger
    propagation of its global constraints).
    """
    solver = cp_model.CpSolver()
    p = solver.parameters
    for key, value in (params or {}).items():
        if isinstance(value, list):  # a repeated field (e.g. subsolvers)
            getattr(p, key).extend(value)
        else:
            setattr(p, key, value)
    if time_limit is not None:
        p.max_time_in_seconds = max(0.01, float(time_limit))
    p.num_workers = max(1, int(threads))
    p.random_seed = int(seed)
    p.log_search_progress = log
    recorder = TraceRecorder()
    solver.best_bound_callback = lambda bound: recorder.update(bound=bound)
    code = solver.solve(model, _Incumbents(recorder))
    status = {
        cp_model.OPTIMAL: Status.OPTIMAL,
        cp_model.FEASIBLE: Status.FEASIBLE,
        cp_model.INFEASIBLE: Status.INFEASIBLE,
        cp_model.UNKNOWN: Status.TIME_LIMIT_NO_SOLUTION,
    }.get(code, Status.ERROR)
    if status in (Status.OPTIMAL, Status.FEASIBLE):
        recorder.update(solver.objective_value, solver.best_objective_bound, at=solver.wall_time)
    return status, solver, recorder


def solve_linear(
    lm: LinearModel,
    *,
    time_limit: float | None,
    threads: int,
    seed: int,
    warm_start: np.ndarray | None = None,
    log: bool = False,
) -> RawOutput:
    """Solve an all-integer :class:`LinearModel` with CP-SAT (coefficients must be integers)."""
    if not all(lm.integral):
        return RawOutput(Status.ERROR, message="CP-SAT needs every variable integral")
    model = cp_model.CpModel()

    def clip(v: float) -> int:
        return int(max(-_BIG, min(_BIG, v)))

    xs = [
        model.new_int_var(clip(lo), clip(hi), name)
        for lo, hi, name in zip(lm.lb, lm.ub, lm.var_names, strict=True)
    ]
    for idx, coef, lo, hi in lm.rows:
        if not np.allclose(coef, np.round(coef)):
            return RawOutput(Status.ERROR, message="CP-SAT needs integer coefficients")
        expr = cp_model.LinearExpr.weighted_sum([xs[j] for j in idx], [int(c) for c in coef])
        model.add_linear_constraint(expr, clip(lo), clip(hi))
    cost = lm.cost_vector()
    nz = np.flatnonzero(cost)
    model.minimize(
        cp_model.LinearExpr.weighted_sum([xs[j] for j in nz], [int(c) for c in cost[nz]])
        + int(lm.offset)
    )
    model.clear_hints()
    if warm_start is not None:
        for var, v in zip(xs, warm_start, strict=True):
            model.add_hint(var, int(round(v)))
    status, solver, rec = run_cpsat(
        model, time_limit=time_limit, threads=threads, seed=seed, log=log
    )
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return RawOutput(status, trace=rec.points)
    x = np.array([solver.value(v) for v in xs], dtype=float)
    return RawOutput(status, x, solver.objective_value, solver.best_objective_bound, rec.points)


class Values:
    """What :func:`run_cpsat_within` brings back from the child process: the variable values of
    the best solution, read like a ``CpSolver`` (``value``, ``boolean_value``)."""

    def __init__(self, solution: list[int], objective: float, bound: float, wall: float) -> None:
        self.solution, self.objective_value = solution, objective
        self.best_objective_bound, self.wall_time = bound, wall

    def value(self, var: cp_model.IntVar) -> int:
        """The value of the integer variable ``var`` in the best solution the child process
        found."""
        return int(self.solution[var.index])

    def boolean_value(self, var: cp_model.IntVar) -> bool:
        """The value of the Boolean variable ``var`` in the best solution the child process
        found."""
        return bool(self.solution[var.index])


def _solve_for_parent(model: cp_model.CpModel, kw: dict[str, Any]) -> tuple[Any, ...]:
    """:func:`run_cpsat` with its answer as plain values (to cross a process boundary)."""
    status, solver, rec = run_cpsat(model, **kw)
    found = status in (Status.OPTIMAL, Status.FEASIBLE)
    return (
        status,
        list(solver.response_proto.solution) if found else [],
        solver.objective_value if found else float("nan"),
        solver.best_objective_bound if found else float("nan"),
        solver.wall_time,
        rec.points,
    )


def run_cpsat_within(
    model: cp_model.CpModel,
    *,
    time_limit: float,
    threads: int,
    seed: int,
    log: bool = False,
    params: dict[str, Any] | None = None,
    grace: float = 2.0,
) -> tuple[Status, Values | None, list[Any]] | None:
    """:func:`run_cpsat` in a forked process that is stopped at the time limit, for models so
    large that CP-SAT overruns its own limit while loading them (it does not check the limit
    there). CP-SAT gets ``grace`` seconds less (at most half the limit) to hand back its result.
    Returns ``None`` when the process had to be stopped."""
    inner = max(time_limit - grace, time_limit / 2)
    kw = dict(time_limit=inner, threads=threads, seed=seed, log=log, params=params)
    how, out = run_within(lambda: _solve_for_parent(model, kw), time_limit)
    if how != "done":
        return None
    status, solution, objective, bound, wall, points = out
    values = Values(solution, objective, bound, wall) if solution else None
    return status, values, points


def cpsat_result(
    method: str,
    status: Status,
    solver: cp_model.CpSolver,
    rec: TraceRecorder,
    decode: Any,
    stats: dict[str, Any] | None = None,
) -> Result:
    """The :class:`Result` of a :func:`run_cpsat` run: CP-SAT's value, bound and trace, and the
    solution ``decode(solver)`` when it found one (without one, its bound still holds)."""
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return Result(status, method, "cpsat", bound=rec.bound, trace=rec.points,
                      stats=stats or {})  # fmt: skip
    return Result(
        status, method, "cpsat", solver.objective_value, solver.best_objective_bound,
        solution=decode(solver), trace=rec.points, stats=stats or {},
    )  # fmt: skip
