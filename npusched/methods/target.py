"""``target``: CP-SAT on the decision model "a schedule of makespan at most ``T``" (``T`` the
instance's lower bound unless given) of a scheduling instance with transfer delays
(:class:`~npusched.formulations.scheduling.target.TargetModel`). A schedule it finds at the
lower bound is optimal; CP-SAT's proof that none exists raises the bound to ``T + 1``. Without
either it returns the warm start (the best of ``list`` and ``dls``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from npusched.formulations.scheduling.target import MAX_UOPS, TargetModel
from npusched.methods.reassign import checked_warm_start
from npusched.methods.registry import Context, Method, bounded, register
from npusched.methods.scheduling import heuristic_result
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.solvers.result import Result, Status, TracePoint


@dataclass(frozen=True)
class TargetParams:
    """``target``: the makespan asked for (``None``: the instance's lower bound)."""

    target: int | None = None

    def __post_init__(self) -> None:
        if self.target is not None and self.target < 0:
            raise ValueError(f"target must be >= 0, got {self.target}")


def _run(instance: Any, backend: str, params: TargetParams, ctx: Context) -> Result:
    """The model built and solved in a forked process stopped at the time limit
    (:func:`~npusched.methods.registry.bounded`)."""
    return bounded("target", "cpsat", ctx, lambda c: _answer(instance, params, c))


def _answer(instance: SchedulingInstance, params: TargetParams, ctx: Context) -> Result:
    from npusched.solvers.cpsat import run_cpsat

    t0 = time.perf_counter() if ctx.started is None else ctx.started
    warm = ctx.warm_start
    lb = instance.lower_bound()
    target = lb if params.target is None else params.target
    if warm.makespan(instance) <= target or target < lb:  # nothing to search for
        return _result(instance, warm, lb, {"target": target, "found": False})
    first = TracePoint(time.perf_counter() - t0, warm.makespan(instance), lb)
    model = TargetModel(instance, target)
    stats: dict[str, Any] = {"target": target, **model.counts}
    status, solver, _ = run_cpsat(model.model, time_limit=ctx.remaining(), threads=ctx.threads,
                                  seed=ctx.seed, log=ctx.log, params=model.PARAMETERS)  # fmt: skip
    stats["found"] = status in (Status.OPTIMAL, Status.FEASIBLE)
    if stats["found"]:
        res = _result(instance, model.decode(solver), lb, stats)
    else:
        res = _result(instance, warm, lb, stats)
        if status is Status.INFEASIBLE and target >= lb:  # no schedule ends by the target
            res.bound = target + 1
            if res.objective is not None and res.objective <= res.bound:
                res.status = Status.OPTIMAL
            res.message = f"no schedule of makespan {target} exists (CP-SAT proved it)"
    res.trace = [first, TracePoint(time.perf_counter() - t0, res.objective, res.bound)]
    return res


def _result(instance: SchedulingInstance, sched: Any, lb: int, stats: dict[str, Any]) -> Result:
    res = heuristic_result("target", instance, sched)
    res.backend, res.bound = "cpsat", lb
    res.stats.update(stats)
    res.message = "bound = the instance's lower_bound(); optimal when it is reached"
    return res


def _applies(problem: Any) -> str | None:
    acc = problem.accelerator
    if acc.topology is None or not acc.has_comm_delays:
        return "it needs transfer delays on a mesh or hypercube"
    if problem.n > MAX_UOPS:
        return f"it builds models of at most {MAX_UOPS} μops (quadratic in μops), not {problem.n}"
    return None


register(
    Method(
        "target",
        (SchedulingInstance,),
        ("cpsat",),
        _run,
        "CP-SAT on the decision model 'makespan <= target' (default: the lower bound, where a "
        "schedule is optimal) under transfer delays: windows from the target, implied transfers "
        "left out, hop balls, and chains of zero-idle cores as routes; chronological search",
        params=TargetParams,
        applies=_applies,
        prepare=checked_warm_start,
    )
)
