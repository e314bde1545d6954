"""``reassign``: simulated annealing over the core assignment of a scheduling instance with
transfer delays, each assignment decoded by a list that only orders
(:mod:`npusched.heuristics.scheduling.reassign`). It starts from the given warm start or the
best of ``list`` and ``dls``, and runs until the time limit (default 10 s), ``max_moves``, or the
instance's lower bound."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from npusched.heuristics.scheduling.reassign import reassign_schedule
from npusched.methods.registry import Context, Method, register
from npusched.methods.scheduling import heuristic_result
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule
from npusched.solvers.result import Result


@dataclass(frozen=True)
class ReassignParams:
    """``max_moves``: the most moves (``None``: until the time limit; one of the two is needed)."""

    max_moves: int | None = None

    def __post_init__(self) -> None:
        if self.max_moves is not None and self.max_moves < 0:
            raise ValueError(f"max_moves must be >= 0, got {self.max_moves}")


def best_list_schedule(problem: SchedulingInstance) -> Schedule:
    """The shorter of the ``list`` and ``dls`` schedules: the delay-aware lists' best."""
    from npusched.methods.registry import solve

    cands = [solve(problem, m, time_limit=None).solution for m in ("list", "dls")]
    return min((c for c in cands if isinstance(c, Schedule)), key=lambda c: c.makespan(problem))


def checked_warm_start(problem: Any, params: Any, ctx: Context) -> Context:
    """The given warm start, checked, or :func:`best_list_schedule` (a method's ``prepare``)."""
    from npusched.verify import check

    warm = ctx.warm_start
    if warm is not None:
        if not isinstance(warm, Schedule) or not check(problem, warm).ok:
            raise ValueError("a warm start must be a feasible Schedule")
    else:
        warm = best_list_schedule(problem)
    return dataclasses.replace(ctx, warm_start=warm)


def _run(instance: Any, backend: str, params: ReassignParams, ctx: Context) -> Result:
    import time

    left = None if ctx.deadline is None else max(0.0, ctx.deadline - time.perf_counter())
    if left is None and params.max_moves is None:
        raise ValueError("reassign needs a time limit or max_moves")
    warm = ctx.warm_start
    sched, moves = reassign_schedule(instance, warm, time_limit=left, max_moves=params.max_moves,
                                     seed=ctx.seed)  # fmt: skip
    result = heuristic_result("reassign", instance, sched)
    result.stats.update(moves=moves, warm_makespan=warm.makespan(instance))
    return result


def _applies(problem: Any) -> str | None:
    acc = problem.accelerator
    if acc.topology is None or not acc.has_comm_delays or problem.m < 2:
        return "it needs two or more cores with transfer delays on a mesh or hypercube"
    return None


register(
    Method(
        "reassign",
        (SchedulingInstance,),
        ("none",),
        _run,
        "simulated annealing over the core assignment under transfer delays, each assignment "
        "ordered by earliest start (edge-zeroing, move and swap moves); from the best list "
        "schedule, until the time limit or the lower bound",
        params=ReassignParams,
        applies=_applies,
        prepare=checked_warm_start,
    )
)
