"""Klotski's orchestration end to end (Fig. 4): Bayesian optimization of the partition around a
fast inner scheduler, then the exact stages on the best partition.

1. :func:`~npusched.search.bo.bayes_search` over the design space
   (:class:`~npusched.search.space.DesignSpace`), each shape evaluated by
   :func:`~npusched.search.evaluate.evaluate` with the ``inner`` method (``list``: the list
   scheduler with NoC delays; ``twostage`` or ``joint`` on small cases), with all but the
   last ``polish`` share of the budget (and of the search's time); that share polishes BO's
   best by a descent over its unevaluated coordinate steps, then its nearest shapes
   (:func:`~npusched.search.anneal.descend`; ours, not the paper's: with a few seconds per
   evaluation and a tenth of the paper's runtime, BO gets 12–22 evaluations on VGG and lost to
   baseline 2's annealing by a neighbouring shape, 0.004 % on VGG16 4×4);
2. on the best ``s``: Klotski's two stages (:func:`~npusched.search.evaluate.two_stages`: the slot
   ILP of eq. 16–18 on a time-quantised copy — the quantum and its rounding are stated there —
   then the mapping MIP of eq. 9–14, executed back in cycles on the NoC, on the routed machine
   by the memory-aware list), then ``joint`` (CP-SAT, eq. 15) warm-started from the best schedule
   so far, and on the routed machine first the atomic dataflow's plan and the memory-aware list
   (:data:`STAGES`) and last ``lns`` (large-neighbourhood search on the routed CP-SAT model,
   links, DRAM and memory included) on the best schedule's allocation; each under
   ``final_time_limit`` (with a run's time limit, also under an equal share of what is left:
   :func:`stage_share`) and only where it applies. The shortest verified schedule wins; the
   bound is the larger of the instance's (critical path, load after each head and before each
   tail, DRAM traffic) and ``joint``'s proven one.

3. Klotski's baselines beside it (:mod:`npusched.search.baselines`): baseline 1 (``zigzag``) on
   the coarsest partition its plan fits, baseline 2 (``atomic``) on its own partition, annealed
   with the same budget (and, for the ablation, on the best one); not counted in the runtime.

With a ``time_limit`` the whole run stops there: the search ends early (``complete`` false) and
the final stages get what is left; the best result so far is returned either way.
"""

from __future__ import annotations

import functools
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from npusched.arch.model import Arch
from npusched.costmodel import CostModel
from npusched.methods import solve
from npusched.methods.registry import applicable
from npusched.partition.api import machine_cost_model, partition_network
from npusched.problem.scheduling.machine_view import MachineView
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.problem.scheduling.schedule import Schedule
from npusched.search.anneal import descend
from npusched.search.baselines import Baseline, baselines, utilisation
from npusched.search.bo import SearchResult, bayes_search
from npusched.search.evaluate import INNER, Instance, Plan, best_of, evaluate, two_stages
from npusched.search.space import MAX_UOPS, DesignSpace, Shape4
from npusched.solvers.common import run_within, why_stopped
from npusched.solvers.result import Result, Status
from npusched.verify import check
from npusched.workload.network import Network

MIN_STAGE = 3.0
"""With a run's time limit, a final stage with less of it left is skipped: its own preparation
(the list schedule, the time quantum, building the model) takes 1–3 s on 5 000 μops, so it
could only overrun the limit."""


@dataclass
class Orchestration:
    """The search, the best partition's instance and schedule, and how the stages did."""

    network: str
    arch: str
    search: SearchResult
    instance: Instance
    result: Result
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    runtime_s: float = 0.0
    complete: bool = True
    baselines: dict[str, Baseline] = field(default_factory=dict)

    @property
    def schedule(self) -> Plan:
        """The winning schedule on :attr:`instance`: the shortest verified one of the search's
        best and the final stages' (:attr:`result`'s solution), a
        :class:`~npusched.problem.scheduling.schedule.Schedule` on the compute-only machine or a
        :class:`~npusched.problem.scheduling.routed_schedule.RoutedSchedule` on the routed one."""
        assert isinstance(self.result.solution, Schedule | RoutedSchedule)
        return self.result.solution

    @property
    def cycles(self) -> int:
        """The winning schedule's makespan in cycles, recomputed on :attr:`instance` (what
        :attr:`result`'s ``objective`` is set to)."""
        return self.schedule.makespan(self.instance)  # type: ignore[arg-type]

    @property
    def hur(self) -> float | None:
        """Utilisation relative to baseline 1's (:mod:`npusched.search.baselines`)."""
        if "baseline1" not in self.baselines:
            return None
        return utilisation(self.instance, self.schedule) / self.baselines["baseline1"].utilisation


STAGES = {
    "compute-only": ("twostage", "joint"),
    "routed": ("atomic", "list", "twostage", "joint", "lns"),
}
"""The final stages by machine, in order (each warm-started from the best schedule so far). On the
routed machine the atomic dataflow's plan and the memory-aware list on the best partition are two
more warm starts (a heuristic of the papers is a warm start here as much as a baseline; the one
the search did not use costs a second), and ``lns`` ends."""

CHEAP_MODELS = ("analytic", "compute")
"""Cost models fast enough to cost every tile of a design space for its lower bounds."""

HAND_BACK = 1.0
"""Seconds of a final stage's limit kept for handing its answer back from the stage's process."""


BOUND_SCOPE = {"twostage": "slots", "lns": "allocation"}
"""What a final stage's bound holds for where it is not the instance: ``lns`` solves the
instance restricted to the warm start's allocation, ``twostage`` bounds its slot model; the
report's bound is the best one that holds for the instance (``bound_by`` names the stage),
never one of these."""


def _stage(inst: Instance, method: str, warm: Plan, limit: float, threads: int,
           seed: int) -> tuple[Result | None, dict[str, Any]]:  # fmt: skip
    """Run one final stage if it applies and has time; its verified result and a summary. The
    stage runs in a process stopped at ``limit`` (:func:`~npusched.solvers.common.run_within`):
    its preparation (the time quantum's re-timings, building a model) checks no clock, so only
    a stop from outside holds the run's limit; its solvers get ``limit`` less :data:`HAND_BACK`."""
    applies = method == "twostage" or method in applicable(_stage_instance(inst, method, warm))
    if limit <= 0 or not applies:
        return None, {
            "status": "skipped",
            "why": "no time left" if limit <= 0 else "not applicable",
        }
    inner = max(0.1, limit - HAND_BACK)
    try:
        how, out = run_within(lambda: _answer(inst, method, warm, inner, threads, seed), limit)
    except ValueError as err:  # a model that refuses this instance
        return None, {"status": "skipped", "why": str(err)}
    if how != "done":
        return None, {"status": "stopped", "why": f"{method} {why_stopped(how)}"}
    res, extra = out
    info: dict[str, Any] = {"status": res.status.value, "objective": res.objective,
                            "bound": res.bound, "runtime_s": round(res.runtime_s, 3)}  # fmt: skip
    info.update({k: v for k, v in extra.items() if k != "stats"})
    if not isinstance(res.solution, Schedule | RoutedSchedule) or not check(inst, res.solution).ok:
        info["verified"] = False
        return None, info
    return res, info


def _stage_instance(inst: Instance, method: str, warm: Plan) -> Instance:
    """What a stage solves: ``lns`` keeps the warm start's allocation (its neighbourhoods
    re-time μops and transfers, they do not move μops between cores)."""
    if method == "lns" and isinstance(inst, RoutedInstance):
        return inst.restricted(warm.core)
    return inst


def _answer(inst: Instance, method: str, warm: Plan, limit: float, threads: int,
            seed: int) -> tuple[Result, dict[str, Any]]:  # fmt: skip
    """One final stage's result and summary."""
    if method == "twostage":
        return two_stages(inst, limit, threads, seed, warm)
    run = _stage_instance(inst, method, warm)
    return solve(run, method, time_limit=limit, threads=threads, seed=seed, warm_start=warm), {}


def stage_share(deadline: float, stages_left: int, limit: float) -> float:
    """A final stage's seconds under the run's ``deadline``: an equal share of what is left among
    the ``stages_left`` stages still to run (this one included; what a stage leaves unused passes
    on to the next ones), at most ``limit``; 0 below :data:`MIN_STAGE` (too little for a stage to
    prepare and solve). Without the shares the two stages' ILPs, which rarely beat the list on
    5 000 μops, took the whole rest of the limit and ``lns`` never ran."""
    left = deadline - time.perf_counter()
    if left < MIN_STAGE:
        return 0.0
    return min(limit, max(MIN_STAGE, left / stages_left))


def final_stages(
    inst: Instance,
    start: Result,
    limit: float,
    threads: int = 1,
    seed: int = 0,
    deadline: float | None = None,
) -> tuple[Result, dict[str, dict[str, Any]]]:
    """Step 2 of the module docstring from ``start`` (the search's best schedule)."""
    assert isinstance(start.solution, Schedule | RoutedSchedule)
    results, stages = [start], {}
    methods = STAGES["routed" if isinstance(inst, RoutedInstance) else "compute-only"]
    for k, method in enumerate(methods):
        left = limit if deadline is None else stage_share(deadline, len(methods) - k, limit)
        warm = best_of(inst, results).solution
        assert isinstance(warm, Schedule | RoutedSchedule)
        res, stages[method] = _stage(inst, method, warm, left, threads, seed)
        if res is not None:
            results.append(res)
    best = best_of(inst, results)
    for method, info in stages.items():
        if info.get("bound") is not None:
            info["bound_scope"] = BOUND_SCOPE.get(method, "instance")
    # joint's bound holds for the instance; twostage's is in slots, lns's only for its allocation
    bounds = [(float(inst.lower_bound()), "lower_bound")] + [
        (float(r.bound), r.method) for r in results if r.bound is not None and r.method == "joint"
    ]
    best.bound, best.stats["bound_by"] = max(bounds, key=lambda b: b[0])
    assert isinstance(best.solution, Schedule | RoutedSchedule)
    best.objective = float(best.solution.makespan(inst))  # type: ignore[arg-type]
    return best, stages


def orchestrate(
    net: Network,
    arch: Arch | MachineView,
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
    first: tuple[Shape4, ...] = (),
    max_uops: int | None = MAX_UOPS,
    machine: str = "routed",
    cost: str | CostModel = "analytic",
    final_share: float = 0.3,
    polish: float = 0.2,
    bounds: bool = True,
    baseline_deadline: float | None = None,
) -> Orchestration:
    """Steps 1–2 of the module docstring. ``time_limit`` bounds the whole run; ``first`` are
    shapes to evaluate before the Sobol points (a ValueError if one is outside the space);
    ``machine`` and ``cost`` as in :func:`~npusched.partition.api.partition_network` (one cost
    model serves every evaluation of a process, so shapes are costed once). With a
    ``time_limit`` the search ends by ``1 - final_share`` of it, so the final stages get at
    least the rest; ``polish`` is the share of the budget and of the search's time that
    polishes BO's best (step 1). With ``bounds``, the makespan objective and a cost model
    computed here (not ``zigzag``, whose calls cost seconds each), the search and the polish
    are given the space's lower bounds (:meth:`~npusched.search.space.DesignSpace.lower_bounds`,
    :mod:`npusched.search.bo`); computing them counts in the runtime. The baselines run after
    (not in the runtime), unlimited or until ``baseline_deadline`` (``time.perf_counter()``;
    those not done then are left out of :attr:`Orchestration.baselines`)."""
    if not 0 <= final_share < 1:
        raise ValueError(f"final_share must be in [0, 1), got {final_share}")
    if not 0 <= polish < 1:
        raise ValueError(f"polish must be in [0, 1), got {polish}")
    if inner not in INNER:
        raise ValueError(f"unknown inner method {inner!r}; choose from {', '.join(INNER)}")
    t0 = time.perf_counter()
    arch = MachineView.of(arch)  # read once: every partition below shares what it derives
    space = DesignSpace.build(net, arch, max_uops)
    starts = [space.locate(net, arch, s) for s in first]
    model = machine_cost_model(machine, cost, arch)
    lbs = None
    if bounds and objective == "makespan" and model.name in CHEAP_MODELS:
        lbs = space.lower_bounds(net, arch, model, executor, q)
    run = functools.partial(evaluate, net, arch, objective=objective, method=inner,
                            time_limit=final_time_limit, threads=threads, seed=seed,
                            machine=machine, cost=model)  # fmt: skip
    deadline = None if time_limit is None else t0 + time_limit
    search_end = None if time_limit is None else t0 + (1 - final_share) * time_limit
    bo_end = None if time_limit is None else t0 + (1 - final_share) * (1 - polish) * time_limit
    bo_budget = max(1, budget - round(polish * budget))
    found = bayes_search(space, run, bo_budget, seed=seed, deadline=bo_end, progress=progress,
                         q=q, executor=executor, first=starts, bounds=lbs)  # fmt: skip
    found = descend(
        space,
        run,
        found,
        budget - len(found.evaluations),
        deadline=search_end,
        q=q,
        executor=executor,
        bounds=lbs,
    )
    found.bounds = lbs
    found.complete = (
        found.complete or found.exhausted or len(found.evaluations) >= min(budget, len(space))
    )
    best = found.best
    # rebuilt: evaluations stay light
    inst = partition_network(net, arch, "klotski", s=best.s, machine=machine, cost=model)
    assert best.schedule is not None
    assert best.makespan == best.schedule.makespan(inst)  # type: ignore[arg-type]
    start = Result(Status.FEASIBLE, inner, "none", float(best.makespan), solution=best.schedule,
                   seed=seed)  # fmt: skip
    result, stages = final_stages(inst, start, final_time_limit, threads, seed, deadline)
    complete = found.complete and all(
        st.get("why") != "no time left"
        and st.get("status") not in ("time_limit_no_solution", "stopped")
        for st in stages.values()
    )
    runtime = time.perf_counter() - t0  # the baselines are not part of Klotski's runtime
    found_baselines = baselines(net, arch, space, inst, best.s, machine, model, budget, seed,
                                baseline_deadline)  # fmt: skip
    return Orchestration(net.name, arch.name, found, inst, result, stages, runtime, complete,
                         found_baselines)  # fmt: skip
