"""``dfbb``: depth-first search for a schedule at a target makespan (default: the instance's
lower bound) under transfer delays, with an idle budget and restarts
(:mod:`npusched.heuristics.scheduling.depth_first`, after Kasahara and Narita's DF/IHS). It
returns the schedule it finds; otherwise the warm start (the best of ``list`` and ``dls``).
When the target is the load bound (no idle time possible) and a run ends without a schedule,
no schedule of that length exists, and the bound it reports is the target + 1."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from npusched.heuristics.scheduling.depth_first import depth_first_schedule
from npusched.methods.reassign import checked_warm_start
from npusched.methods.registry import Context, Method, register
from npusched.methods.scheduling import heuristic_result
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.solvers.result import Result, Status


@dataclass(frozen=True)
class DepthFirstParams:
    """``target``: the makespan searched for (``None``: the instance's lower bound);
    ``max_nodes``: the most nodes over all runs (``None``: until the time limit; one of the
    two is needed)."""

    target: int | None = None
    max_nodes: int | None = None

    def __post_init__(self) -> None:
        if self.max_nodes is not None and self.max_nodes < 0:
            raise ValueError(f"max_nodes must be >= 0, got {self.max_nodes}")
        if self.target is not None and self.target < 0:
            raise ValueError(f"target must be >= 0, got {self.target}")


def _run(instance: Any, backend: str, params: DepthFirstParams, ctx: Context) -> Result:
    left = None if ctx.deadline is None else max(0.0, ctx.deadline - time.perf_counter())
    if left is None and params.max_nodes is None:
        raise ValueError("dfbb needs a time limit or max_nodes")
    out = depth_first_schedule(instance, params.target, time_limit=left,
                               max_nodes=params.max_nodes, seed=ctx.seed)  # fmt: skip
    warm = ctx.warm_start
    best = out.schedule
    if best is None or warm.makespan(instance) < best.makespan(instance):
        best = warm
    result = heuristic_result("dfbb", instance, best)
    target = instance.lower_bound() if params.target is None else params.target
    # no schedule of makespan ≤ target exists
    if out.proved and result.bound is not None and target >= result.bound:
        result.bound = target + 1
        if result.objective is not None and result.objective <= result.bound:
            result.status = Status.OPTIMAL
        result.message = f"no schedule of makespan {target} exists (proved by exhausting it)"
    result.stats.update(runs=out.runs, nodes=out.nodes, found=out.schedule is not None,
                        target=target, warm_makespan=warm.makespan(instance))  # fmt: skip
    return result


register(
    Method(
        "dfbb",
        (SchedulingInstance,),
        ("none",),
        _run,
        "depth-first search for a schedule at the lower bound (or a target) under transfer "
        "delays: the core free earliest runs a ready μop, least idle and longest tail first, "
        "within the idle budget m·T − work; restarts with noisy tails (Kasahara-Narita DF/IHS)",
        params=DepthFirstParams,
        prepare=checked_warm_start,
    )
)
