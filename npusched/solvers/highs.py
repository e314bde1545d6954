"""HiGHS backend through highspy (in process, with callbacks for the anytime trace)."""

from __future__ import annotations

import time

import highspy
import numpy as np

from npusched.solvers.common import RawOutput, TraceRecorder
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Status


def solve_linear(
    lm: LinearModel,
    *,
    time_limit: float | None,
    threads: int,
    seed: int,
    warm_start: np.ndarray | None = None,
    log: bool = False,
) -> RawOutput:
    """Solve ``lm`` with HiGHS; a warm start becomes HiGHS's starting MIP solution. The time
    spent here passing the model (seconds for 10⁶ columns) counts against ``time_limit``."""
    t0 = time.perf_counter()
    # HiGHS keeps one global thread pool: a run with another thread count than the last ends in
    # error, and a forked solver process (run_within) inherits the pool without its threads and
    # hangs; a fresh pool per solve avoids both (milliseconds)
    highspy.Highs.resetGlobalScheduler(True)
    h = highspy.Highs()
    h.setOptionValue("output_flag", bool(log))
    h.setOptionValue("threads", max(1, int(threads)))
    h.setOptionValue("random_seed", int(seed))
    h.setOptionValue("mip_rel_gap", 0.0)
    for option, setting in lm.highs_options.items():
        h.setOptionValue(option, setting)
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = lm.num_vars, lm.num_rows
    lp.col_cost_ = lm.cost_vector()
    lp.offset_ = lm.offset
    lp.col_lower_ = np.clip(np.asarray(lm.lb, float), -inf, inf)
    lp.col_upper_ = np.clip(np.asarray(lm.ub, float), -inf, inf)
    rlo, rhi = lm.row_bounds()
    lp.row_lower_, lp.row_upper_ = np.clip(rlo, -inf, inf), np.clip(rhi, -inf, inf)
    start, index, value = lm.csr()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = start, index, value
    lp.integrality_ = [
        highspy.HighsVarType.kInteger if t else highspy.HighsVarType.kContinuous
        for t in lm.integral
    ]
    h.passModel(lp)
    if warm_start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(map(float, warm_start))
        sol.value_valid = True
        h.setSolution(sol)

    rec = TraceRecorder()

    def improving(e: highspy.cb.HighsCallbackEvent) -> None:
        d = e.data_out
        rec.update(d.objective_function_value, d.mip_dual_bound, at=d.running_time)

    def interrupt(e: highspy.cb.HighsCallbackEvent) -> None:
        d = e.data_out
        rec.update(d.mip_primal_bound, d.mip_dual_bound, at=d.running_time)

    h.cbMipImprovingSolution.subscribe(improving)
    h.cbMipInterrupt.subscribe(interrupt)
    if time_limit is not None:
        left = float(time_limit) - (time.perf_counter() - t0)
        h.setOptionValue("time_limit", max(0.01, left))
    h.run()
    ms = h.getModelStatus()
    info = h.getInfo()
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    M = highspy.HighsModelStatus
    if ms == M.kOptimal:
        status = Status.OPTIMAL
    elif ms == M.kInfeasible:
        status = Status.INFEASIBLE
    elif ms in (M.kTimeLimit, M.kInterrupt, M.kIterationLimit, M.kSolutionLimit):
        status = Status.FEASIBLE if has_sol else Status.TIME_LIMIT_NO_SOLUTION
    else:
        return RawOutput(Status.ERROR, trace=rec.points, message=h.modelStatusToString(ms))
    if not has_sol:
        return RawOutput(status, trace=rec.points)
    x = np.asarray(h.getSolution().col_value, dtype=float)
    bound = info.mip_dual_bound if np.isfinite(info.mip_dual_bound) else None
    rec.update(info.objective_function_value, bound, at=h.getRunTime())
    return RawOutput(status, x, info.objective_function_value, bound, rec.points)
