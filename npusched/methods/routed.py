"""Routed instances (Stream's hardware model) in :func:`npusched.solve`: their warm starts, with
and without memory capacities, and ``joint``'s CP-SAT model of them."""

from __future__ import annotations

from typing import Any

from npusched.formulations.scheduling.routed import RoutedModel
from npusched.heuristics.scheduling.list_scheduling import Priority
from npusched.heuristics.scheduling.memory_list import MemoryDeadlock, memory_list_schedule
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.methods.registry import Context, bounded
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.solvers.result import Result, Status


def routed_warm_start(instance: RoutedInstance, priority: Priority) -> RoutedSchedule:
    """The best list schedule on the instance and, when it carries a known allocation (Stream's),
    on that allocation; with memory capacities the memory-aware list's."""
    if instance.capacity is not None:
        try:
            return memory_list_schedule(instance, memory_priority(priority))
        except MemoryDeadlock as err:
            raise ValueError(f"no warm start within the memories: {err}") from None
    cands = [routed_list_schedule(instance, priority)]
    if instance.preferred is not None and not instance.fixed_allocation:
        cands.append(routed_list_schedule(instance.restricted(instance.preferred), priority))
    return min(cands, key=lambda s: s.makespan(instance))


def memory_priority(priority: Priority) -> str:
    """Stream's list priority for an instance with memories: ``latency`` (also for the default
    ``blevel``) or ``memory``."""
    priority = "latency" if priority == "blevel" else priority
    if priority not in ("latency", "memory"):
        raise ValueError(
            f"with a memory capacity the list takes Stream's priority latency or memory, "
            f"not {priority!r}"
        )
    return str(priority)


def run_routed(instance: RoutedInstance, ctx: Context) -> Result:
    """Schedule, allocation and link-contended transfers in one CP-SAT model (makespan), built
    and solved within the time limit (:func:`bounded`: 3 100 μops with contention took 35 s to
    build alone). Without a solution :func:`solve` returns the warm start with the bound."""
    return bounded("joint", "cpsat", ctx, lambda c: _routed_answer(instance, c))


def _routed_answer(instance: RoutedInstance, ctx: Context) -> Result:
    from npusched.solvers.cpsat import run_cpsat

    warm = ctx.warm_start
    model = RoutedModel(instance, warm.makespan(instance))
    model.hint(warm)
    stats = {"intervals_on_links": sum(len(v) for v in model.res_intervals.values())}
    kw: dict[str, Any] = dict(threads=ctx.threads, seed=ctx.seed, log=ctx.log)
    status, solver, rec = run_cpsat(model.model, time_limit=ctx.remaining(), **kw)
    if status not in (Status.OPTIMAL, Status.FEASIBLE):  # CP-SAT's bound still holds
        return Result(status, "joint", "cpsat", bound=rec.bound, trace=rec.points, stats=stats)
    return Result(
        status,
        "joint",
        "cpsat",
        solver.objective_value,
        solver.best_objective_bound,
        solution=model.decode(solver),
        trace=rec.points,
        stats=stats,
    )
