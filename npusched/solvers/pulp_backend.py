"""PuLP backend: CBC (the ``cbcbox`` binary through ``COIN_CMD``) and HiGHS (in process)."""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import pulp

from npusched.solvers.common import RawOutput
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Status, TracePoint

_CBC_LOWER = re.compile(r"^Lower bound:\s+(-?[\d.eE+-]+)", re.MULTILINE)


def _cbc(
    time_limit: float | None, threads: int, seed: int, warm: bool, log_path: str, log: bool
) -> pulp.LpSolver:
    import cbcbox  # the binary distribution behind ``pulp[cbc]``

    return pulp.COIN_CMD(
        path=cbcbox.cbc_bin_path(),
        msg=log,
        timeLimit=time_limit,
        threads=threads,
        warmStart=warm,
        logPath=log_path,
        options=[f"randomCbcSeed {max(1, seed)}", "ratioGap 0", "allowableGap 0"],
    )


def solve_linear(
    lm: LinearModel,
    *,
    solver: str,
    time_limit: float | None,
    threads: int,
    seed: int,
    warm_start: np.ndarray | None = None,
    log: bool = False,
) -> RawOutput:
    """Solve ``lm`` through PuLP with ``solver`` = ``"cbc"`` or ``"highs"``.

    PuLP reports no bound, so it is read where the solver states it: CBC's closing ``Lower bound:``
    line in its log, HiGHS's ``mip_dual_bound`` from the in-process model. PuLP's in-process HiGHS
    takes no warm start before PuLP 4.0; a warm start given to it is ignored and said so.
    """
    prob, xs = _pulp_model(lm)
    message = ""
    if warm_start is not None:
        for var, v in zip(xs, warm_start, strict=True):
            var.setInitialValue(float(v))
    with tempfile.TemporaryDirectory(prefix="npusched-pulp-") as tmp:
        log_path = os.path.join(tmp, "solver.log")
        if solver == "cbc":
            backend = _cbc(time_limit, threads, seed, warm_start is not None, log_path, log)
        elif solver == "highs":
            backend = pulp.HiGHS(
                msg=log, timeLimit=time_limit, threads=threads, random_seed=seed, mip_rel_gap=0.0
            )
            if warm_start is not None:
                message = "warm start ignored: PuLP's in-process HiGHS does not take one"
        else:
            raise ValueError(f"unknown PuLP solver {solver!r}; choose 'cbc' or 'highs'")
        t0 = time.perf_counter()
        prob.solve(backend)
        runtime = time.perf_counter() - t0
        cbc_log = Path(log_path).read_text() if os.path.exists(log_path) else ""

    status = _status(prob)
    if status is Status.ERROR:
        return RawOutput(status, message=f"PuLP status {pulp.LpStatus[prob.status]}")
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return RawOutput(status, message=message)
    x = np.array([v.value() if v.value() is not None else 0.0 for v in xs], dtype=float)
    objective = lm.objective_value(x)  # PuLP gives None for a constant objective
    bound: float | None = None
    if solver == "cbc":
        found = _CBC_LOWER.findall(cbc_log)
        # CBC prints no "Lower bound:" line when it proves optimality: the bound is the optimum.
        bound = float(found[-1]) if found else (objective if status is Status.OPTIMAL else None)
    else:
        dual = prob.solverModel.getInfo().mip_dual_bound
        bound = float(dual) if np.isfinite(dual) else None
    trace = [TracePoint(runtime, objective, bound)]
    return RawOutput(status, x, objective, bound, trace, message)


def _pulp_model(lm: LinearModel) -> tuple[pulp.LpProblem, list[pulp.LpVariable]]:
    """``lm`` as a PuLP problem: one variable per column, ranged rows split in two."""
    prob = pulp.LpProblem(lm.name, pulp.LpMinimize)
    xs = [
        prob.add_variable(
            f"x{j}",
            None if lo == -np.inf else lo,
            None if hi == np.inf else hi,
            pulp.LpInteger if integral else pulp.LpContinuous,
        )
        for j, (lo, hi, integral) in enumerate(zip(lm.lb, lm.ub, lm.integral, strict=True))
    ]
    cost = lm.cost_vector()
    prob += pulp.LpAffineExpression(
        [(xs[j], float(cost[j])) for j in np.flatnonzero(cost)], constant=lm.offset
    )
    for r, (idx, coef, lo, hi) in enumerate(lm.rows):
        expr = pulp.LpAffineExpression([(xs[j], float(c)) for j, c in zip(idx, coef, strict=True)])
        if lo == hi:
            prob += pulp.LpConstraint(expr, pulp.LpConstraintEQ, f"r{r}", lo)
            continue
        if lo > -np.inf:
            prob += pulp.LpConstraint(expr, pulp.LpConstraintGE, f"r{r}l", lo)
        if hi < np.inf:
            prob += pulp.LpConstraint(expr, pulp.LpConstraintLE, f"r{r}u", hi)
    return prob, xs


def _status(prob: pulp.LpProblem) -> Status:
    """PuLP's solution status as ours (``ERROR`` for anything it does not name)."""
    sol = prob.sol_status
    if sol == pulp.LpSolutionOptimal:
        return Status.OPTIMAL
    if sol == pulp.LpSolutionIntegerFeasible:
        return Status.FEASIBLE
    if sol == pulp.LpSolutionInfeasible or prob.status == pulp.LpStatusInfeasible:
        return Status.INFEASIBLE
    if sol == pulp.LpSolutionNoSolutionFound:
        return Status.TIME_LIMIT_NO_SOLUTION
    return Status.ERROR
