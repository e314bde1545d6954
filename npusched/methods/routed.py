"""Routed instances (Stream's hardware model) in :func:`npusched.solve`: their warm starts, with
and without memory capacities, and ``joint``'s CP-SAT model of them (``lns`` on that model:
:mod:`npusched.methods.lns`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from npusched.formulations.scheduling.routed import RoutedModel
from npusched.heuristics.scheduling.list_scheduling import Priority, list_schedule
from npusched.heuristics.scheduling.memory_list import MemoryDeadlock, memory_list_schedule
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.methods.registry import Context, bounded
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.solvers.result import Result, Status


def with_allocation(instance: RoutedInstance) -> RoutedInstance:
    """``instance`` with a preferred allocation for the memory-aware list, which needs one: the
    instance's own (Stream's), else the cores the priority list chooses on the instance's
    compute-only view (earliest finish with transfer delays, no contention, no memory: a
    partition's allocation is free)."""
    if instance.fixed_allocation or instance.preferred is not None:
        return instance
    core = list_schedule(instance.base, "blevel").core
    if not instance.mask[np.arange(instance.n), core].all():
        raise ValueError("the list's allocation leaves a μop's allowed cores; give a preferred one")
    return dataclasses.replace(instance, preferred=core)


def routed_warm_start(instance: RoutedInstance, priority: Priority) -> RoutedSchedule:
    """The best list schedule on the instance and, when it carries a known allocation (Stream's),
    on that allocation; with memory capacities the memory-aware list's (on the allocation of
    :func:`with_allocation`)."""
    if instance.capacity is not None:
        try:
            return memory_list_schedule(with_allocation(instance), memory_priority(priority))
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
    build alone). Without a solution :func:`~npusched.methods.registry.solve` returns the warm
    start with the bound."""
    return bounded("joint", "cpsat", ctx, lambda c: _routed_answer(instance, c))


def _routed_answer(instance: RoutedInstance, ctx: Context) -> Result:
    from npusched.solvers.cpsat import cpsat_result, run_cpsat

    warm = ctx.warm_start
    model = RoutedModel(instance, warm.makespan(instance))
    model.hint(warm)
    stats = {"intervals_on_links": sum(len(v) for v in model.res_intervals.values())}
    kw: dict[str, Any] = dict(threads=ctx.threads, seed=ctx.seed, log=ctx.log)
    status, solver, rec = run_cpsat(model.model, time_limit=ctx.remaining(), **kw)
    res = cpsat_result("joint", status, solver, rec, model.decode, stats)
    return res if instance.capacity is None else without_eviction(instance, warm, res)


def without_eviction(instance: RoutedInstance, warm: RoutedSchedule, res: Result) -> Result:
    """A CP-SAT answer of the routed model with memory, which has no eviction: its schedules are
    valid, but its bound (and an infeasibility proof) hold only for schedules that evict
    nothing, so the instance's own bound is reported, and without a schedule from the model
    the warm start (which may evict) is the answer."""
    lb = instance.lower_bound()
    note = "bound = the instance's lower_bound() (the model's holds only without eviction)"
    trace = [dataclasses.replace(p, bound=lb) for p in res.trace]
    if res.solution is None:
        ms = warm.makespan(instance)
        status = Status.OPTIMAL if ms == lb else Status.FEASIBLE
        return dataclasses.replace(
            res, status=status, objective=ms, bound=lb, solution=warm, trace=trace,
            message=f"the model found no schedule without eviction ({res.status.value}): the "
            f"warm start is returned; {note}",
        )  # fmt: skip
    status = Status.OPTIMAL if res.objective == lb else Status.FEASIBLE
    return dataclasses.replace(res, status=status, bound=lb, trace=trace, message=note)
