"""Klotski's orchestration end to end (Fig. 4): Bayesian optimization of the partition around a
fast inner scheduler, then the exact stages on the best partition.

1. :func:`~npusched.search.bo.bayes_search` over the feasible shapes ``s``, each evaluated by
   :func:`~npusched.search.objective.evaluate` with the ``inner`` method (``list``: the list
   scheduler with NoC delays; ``twostage`` or ``joint`` on small cases);
2. on the best ``s``: Klotski's two stages (``twostage``: the slot ILP of eq. 16–18 with one
   time slot per cycle, i.e. μop latencies in cycles are used as they are, then the mapping MIP of
   eq. 9–14 on those slots, re-timed on the NoC), then ``joint`` (CP-SAT, eq. 15) warm-started
   from the best schedule so far; each under ``final_time_limit`` and only where the method
   applies. The best verified schedule wins; ``joint``'s proven bound is reported.
"""

from __future__ import annotations

import functools
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from npusched.arch.model import Arch
from npusched.methods import solve
from npusched.methods.registry import applicable
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule
from npusched.search.bo import SearchResult, bayes_search
from npusched.search.objective import evaluate
from npusched.search.space import DesignSpace
from npusched.solvers.result import Result, Status
from npusched.verify import check
from npusched.workload.network import Network

INNER = ("list", "twostage", "joint")


@dataclass
class Orchestration:
    """The search, the best partition's instance and schedule, and how the stages did."""

    network: str
    arch: str
    search: SearchResult
    instance: SchedulingInstance
    result: Result
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    runtime_s: float = 0.0

    @property
    def schedule(self) -> Schedule:
        assert isinstance(self.result.solution, Schedule)
        return self.result.solution

    @property
    def cycles(self) -> int:
        return self.schedule.makespan(self.instance)


def _stage(inst: SchedulingInstance, method: str, warm: Schedule, limit: float, threads: int,
           seed: int) -> tuple[Result | None, dict[str, Any]]:  # fmt: skip
    """Run one final stage if it applies and has time; its verified result and a summary."""
    if limit <= 0 or method not in applicable(inst):
        return None, {
            "status": "skipped",
            "why": "no time left" if limit <= 0 else "not applicable",
        }
    try:
        res = solve(inst, method, time_limit=limit, threads=threads, seed=seed, warm_start=warm)
    except ValueError as err:  # e.g. the slot ILP's size guard on large partitions
        return None, {"status": "skipped", "why": str(err)}
    info: dict[str, Any] = {"status": res.status.value, "objective": res.objective,
                            "bound": res.bound, "runtime_s": round(res.runtime_s, 3)}  # fmt: skip
    if not isinstance(res.solution, Schedule) or not check(inst, res.solution).ok:
        return None, info
    return res, info


def orchestrate(
    net: Network,
    arch: Arch,
    budget: int = 50,
    objective: str = "entropy",
    inner: str = "list",
    time_limit: float | None = None,
    final_time_limit: float = 60.0,
    seed: int = 0,
    threads: int = 1,
    q: int = 1,
    executor: Executor | None = None,
    progress: bool = True,
) -> Orchestration:
    """Steps 1–2 of the module docstring. ``time_limit`` bounds the search (the run is then
    marked incomplete); the final stages get ``final_time_limit`` each."""
    if inner not in INNER:
        raise ValueError(f"unknown inner method {inner!r}; choose from {', '.join(INNER)}")
    t0 = time.perf_counter()
    space = DesignSpace.build(net, arch)
    run = functools.partial(evaluate, net, arch, objective=objective, method=inner,
                            time_limit=final_time_limit, threads=threads, seed=seed)  # fmt: skip
    deadline = None if time_limit is None else t0 + time_limit
    found = bayes_search(space, run, budget, seed=seed, deadline=deadline, progress=progress,
                         q=q, executor=executor)  # fmt: skip
    best = found.best
    inst, sched = best.instance, best.schedule
    result = Result(Status.FEASIBLE, inner, "none", float(best.makespan), inst.lower_bound(),
                    solution=sched, seed=seed)  # fmt: skip
    stages: dict[str, dict[str, Any]] = {}
    for method in ("twostage", "joint"):
        res, stages[method] = _stage(inst, method, sched, final_time_limit, threads, seed)
        new = None if res is None else res.solution
        if (
            res is not None
            and isinstance(new, Schedule)
            and new.makespan(inst) < sched.makespan(inst)
        ):
            result, sched = res, new
    joint = stages.get("joint", {})
    if joint.get("bound") is not None and (result.bound is None or joint["bound"] > result.bound):
        result.bound = float(joint["bound"])
    result.objective = float(sched.makespan(inst))
    runtime = time.perf_counter() - t0
    return Orchestration(net.name, arch.name, found, inst, result, stages, runtime)
