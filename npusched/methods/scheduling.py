"""μop scheduling methods (Klotski Problem 2, eq. 15-19; Stream's routed transfers): ``list``,
``etf``, ``dls``, ``timeindexed``, ``cpsat``, ``twostage``, ``joint``, ``zigzag``,
``zigzag-spread``, ``atomic``.

Every method but the heuristics starts from a warm start: the list schedule with the method's
``priority`` unless one is given (its makespan is the horizon of the ASAP/ALAP windows, as
Klotski's Theorem 1 uses it), chosen as ``list`` chooses: with NoC delays earliest-task-first
up to ``ETF_LIMIT`` μops, the priority list above.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from npusched.common.limits import MAX_BETA
from npusched.formulations.placement.qap import PlacementModel
from npusched.formulations.scheduling.intervals import IntervalModel
from npusched.formulations.scheduling.joint import JointModel
from npusched.formulations.scheduling.timeindexed import TimeIndexedModel
from npusched.heuristics.scheduling.atomic import atomic_schedule
from npusched.heuristics.scheduling.dls import SIGMA, dls_schedule, restarts_for
from npusched.heuristics.scheduling.list_scheduling import (
    Priority,
    etf_schedule,
    list_schedule,
)
from npusched.heuristics.scheduling.memory_list import MemoryDeadlock
from npusched.heuristics.scheduling.mesh_baselines import (
    retime,
    zigzag_schedule,
    zigzag_spread_schedule,
)
from npusched.heuristics.scheduling.plans import atomic_routed, zigzag_routed
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.methods.linear import linear_result, run_model
from npusched.methods.registry import Context, Method, NoParams, bounded, register
from npusched.methods.routed import (
    memory_list_best,
    memory_priority,
    routed_warm_start,
    run_routed,
)
from npusched.problem.placement import Placement, stage2_instance
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.problem.scheduling.schedule import Schedule
from npusched.solvers.dispatch import LINEAR_BACKENDS
from npusched.solvers.result import Result, Status, TracePoint
from npusched.verify import check, verify

SCHEDULING = (SchedulingInstance, RoutedInstance)


@dataclass(frozen=True)
class ListParams:
    """``list`` and ``etf``: the list's priority (b-level, ASAP, ALAP, ``rank`` or a user order).

    ``list`` runs Graham's list without NoC delays; with delays earliest-task-first up to
    ``ETF_LIMIT`` μops (so small instances keep their published schedules and warm starts) and
    the near-linear priority list above (there ``blevel`` is HEFT's upward rank with mean
    transfer costs); see :func:`~npusched.heuristics.scheduling.list_scheduling.list_schedule`.
    ``etf`` always runs earliest-task-first (quadratic: for comparisons and small instances).
    """

    priority: Priority = "blevel"


@dataclass(frozen=True)
class DlsParams:
    """``dls``: dynamic level scheduling (Sih and Lee 1993) with insertion into idle gaps
    (``insertion``) and ``restarts`` more runs on static levels perturbed by ``sigma`` (``None``:
    8 up to 10 000 μops, none above), seeded by ``solve``'s ``seed``; see
    :func:`~npusched.heuristics.scheduling.dls.dls_schedule`."""

    insertion: bool = True
    restarts: int | None = None
    sigma: float = SIGMA

    def __post_init__(self) -> None:
        if self.restarts is not None and not 0 <= self.restarts <= MAX_RESTARTS:
            raise ValueError(f"restarts must be between 0 and {MAX_RESTARTS}, got {self.restarts}")
        if not 0 <= self.sigma <= 1:  # NaN fails too
            raise ValueError(f"sigma must be between 0 and 1, got {self.sigma}")


MAX_RESTARTS = 1000
"""Most restarts ``dls`` takes (each is one more full run)."""


@dataclass(frozen=True)
class TimeIndexedParams:
    """``timeindexed``: Klotski's eq. 19 instead of the exact resource rows (``relaxed``), the
    precedence rows (``"eq18"``, Klotski's aggregated form, or ``"disaggregated"``), and the
    warm start's list priority."""

    relaxed: bool = False
    precedence: str = "eq18"
    priority: Priority = "blevel"


@dataclass(frozen=True)
class CpsatParams:
    """``cpsat``: the warm start's list priority."""

    priority: Priority = "blevel"


@dataclass(frozen=True)
class TwoStageParams:
    """``twostage``: NoC cost Σ bytes × hops (``weighted``) instead of Σ hops (eq. 14)."""

    weighted: bool = False
    priority: Priority = "blevel"


@dataclass(frozen=True)
class JointParams:
    """``joint``: minimise ``T + β·C`` (``beta``), or lexicographically (T, then C) when ``None``;
    ``weighted`` NoC cost as in :class:`TwoStageParams`."""

    beta: float | None = None
    weighted: bool = False
    priority: Priority = "blevel"

    def __post_init__(self) -> None:
        if self.beta is not None and not 0 <= self.beta <= MAX_BETA:  # NaN fails too
            raise ValueError(f"beta must be between 0 and {MAX_BETA:g}, got {self.beta}")


def _on_mesh(applies: Callable[[Any], str | None], mesh: bool = True
             ) -> Callable[[Any], str | None]:  # fmt: skip
    """``applies`` that also asks a routed instance for a partition's plan: its compute-only view
    with a network's layers (and a mesh, with ``mesh``)."""

    def check(problem: Any) -> str | None:
        if isinstance(problem, RoutedInstance):
            if not isinstance(problem.source.get("layers"), list):
                return "it plans partitioned networks (the instance has no layer record)"
            if mesh and problem.accelerator.cells() is None:
                return "it needs cores on a mesh"
        return applies(problem)

    return check


def _applies(
    identical_cores: bool = False,
    mesh: bool = False,
    comm_delays: bool = False,
    routing: bool = False,
    network: bool = False,
) -> Callable[[Any], str | None]:
    """``applies`` of a scheduling method from what it needs (identical cores, a mesh, any
    network: mesh or hypercube) and what it handles (transfer delays, routed links; every method
    of routed instances handles their memory capacities)."""

    def applies(problem: Any) -> str | None:
        if isinstance(problem, RoutedInstance):
            if not routing:
                return "it does not model transfers on shared links"
            return None
        acc = problem.accelerator
        if (
            (mesh and acc.cells() is None)
            or (network and acc.topology is None)
            or (acc.has_comm_delays and not comm_delays)
            or (identical_cores and not problem.identical_cores)
        ):
            needs = ["identical cores"] if identical_cores else []
            needs += ["cores on a mesh"] if mesh else []
            needs += ["cores on a mesh or hypercube"] if network else []
            needs += [] if comm_delays else ["no NoC transfer delays"]
            return f"it needs {' and '.join(needs)}"
        return None

    return applies


def _warm_start(problem: Any, params: Any, ctx: Context) -> Context:
    """The given warm start, checked, or the list schedule with ``params.priority``.

    Raises
    ------
    ValueError
        The given warm start is not a feasible schedule of ``problem``.
    """
    warm = ctx.warm_start
    if isinstance(problem, RoutedInstance):
        if warm is None:
            warm = routed_warm_start(problem, params.priority, ctx.threads)
        elif not isinstance(warm, RoutedSchedule) or not check(problem, warm).ok:
            raise ValueError("a routed warm start must be a feasible RoutedSchedule")
        problem.lower_bound()  # kept on the instance: no pass over it after a forked solve
    elif warm is None:
        warm = list_schedule(problem, params.priority)
    elif not isinstance(warm, Schedule):
        raise ValueError("a scheduling warm start must be a Schedule")
    else:
        verify(problem, warm).raise_if_failed()
    return dataclasses.replace(ctx, warm_start=warm)


def _check_given(problem: Any, params: Any, ctx: Context) -> Context:
    """Heuristics ignore warm starts, but a given one is still checked."""
    return ctx if ctx.warm_start is None else _warm_start(problem, params, ctx)


def heuristic_result(
    method: str, instance: SchedulingInstance | RoutedInstance, sched: Schedule | RoutedSchedule
) -> Result:
    """A heuristic's schedule with the instance's trivial bound (max(CP, ⌈W/m⌉), plus forced
    core loads and DRAM traffic on routed instances; valid with NoC delays)."""
    ms = sched.makespan(instance)  # type: ignore[arg-type]
    lb = instance.lower_bound()
    return Result(
        Status.OPTIMAL if ms == lb else Status.FEASIBLE,
        method,
        "none",
        ms,
        lb,
        solution=sched,
        message="bound = the instance's lower_bound(); optimal when it is reached",
    )


def _run_list(instance: Any, backend: str, params: ListParams, ctx: Context) -> Result:
    priority = params.priority
    if isinstance(instance, RoutedInstance) and instance.capacity is not None:
        try:
            sched: Schedule | RoutedSchedule
            sched, priority = memory_list_best(instance, memory_priority(priority), ctx.threads,
                                               ctx.deadline)
        except MemoryDeadlock as err:  # no room even by evicting: a method failure
            bound = instance.lower_bound()
            return Result(Status.ERROR, "list", "none", None, bound, message=str(err))
    elif isinstance(instance, RoutedInstance):
        sched = routed_list_schedule(instance, priority)
    else:
        sched = list_schedule(instance, priority)
    result = heuristic_result("list", instance, sched)
    result.stats["priority"] = str(priority)
    return result


def _run_etf(instance: Any, backend: str, params: ListParams, ctx: Context) -> Result:
    result = heuristic_result("etf", instance, etf_schedule(instance, params.priority))
    result.stats["priority"] = str(params.priority)
    return result


def _run_dls(instance: Any, backend: str, params: DlsParams, ctx: Context) -> Result:
    sched = dls_schedule(
        instance,
        insertion=params.insertion,
        restarts=params.restarts,
        sigma=params.sigma,
        seed=ctx.seed,
    )
    result = heuristic_result("dls", instance, sched)
    restarts = restarts_for(instance.n, params.restarts)
    result.stats.update(insertion=params.insertion, restarts=restarts, sigma=params.sigma)
    return result


def _plan_result(method: str, instance: RoutedInstance, plan: Any) -> Result:
    """A plan executed on the routed machine, or the error of a plan whose data cannot fit."""
    try:
        return heuristic_result(method, instance, plan(instance))
    except MemoryDeadlock as err:
        return Result(Status.ERROR, method, "none", None, instance.lower_bound(), message=str(err))


def _run_zigzag(instance: Any, backend: str, params: NoParams, ctx: Context) -> Result:
    if isinstance(instance, RoutedInstance):
        return _plan_result("zigzag", instance, zigzag_routed)
    return heuristic_result("zigzag", instance, zigzag_schedule(instance))


def _run_zigzag_spread(instance: Any, backend: str, params: NoParams, ctx: Context) -> Result:
    return heuristic_result("zigzag-spread", instance, zigzag_spread_schedule(instance))


def _run_atomic(instance: Any, backend: str, params: NoParams, ctx: Context) -> Result:
    if isinstance(instance, RoutedInstance):
        return _plan_result("atomic", instance, atomic_routed)
    return heuristic_result("atomic", instance, atomic_schedule(instance))


def _run_timeindexed(
    instance: SchedulingInstance, backend: str, params: TimeIndexedParams, ctx: Context
) -> Result:
    """The slot ILP within the time limit, model building included (:func:`bounded`: building
    10⁶ binaries in Python takes seconds — 1 000 μops, 2 s limit: 8.8 s before)."""
    return bounded(
        "timeindexed", backend, ctx, lambda c: _timeindexed_answer(instance, backend, params, c)
    )


def _timeindexed_answer(
    instance: SchedulingInstance, backend: str, params: TimeIndexedParams, ctx: Context
) -> Result:
    warm = ctx.warm_start
    model = TimeIndexedModel(instance, warm.makespan(instance), params.relaxed, params.precedence)
    raw, decoded = run_model(model, backend, warm, ctx)
    stats = {
        "variables": model.model.num_vars,
        "rows": model.model.row_counts(),
        "horizon": model.windows.horizon,
        "relaxed_eq19": params.relaxed,
        "precedence": params.precedence,
    }
    return linear_result("timeindexed", backend, raw, decoded, stats)


def _run_cpsat(
    instance: SchedulingInstance, backend: str, params: CpsatParams, ctx: Context
) -> Result:
    """The interval model in CP-SAT, within the time limit, model building included
    (:func:`~npusched.methods.registry.bounded`)."""
    return bounded("cpsat", "cpsat", ctx, lambda c: _cpsat_answer(instance, c))


def _cpsat_answer(instance: SchedulingInstance, ctx: Context) -> Result:
    from npusched.solvers.cpsat import cpsat_result, run_cpsat

    warm, limit = ctx.warm_start, ctx.remaining()
    model = IntervalModel(instance, warm.makespan(instance))
    model.hint(warm)
    kw = dict(threads=ctx.threads, seed=ctx.seed, log=ctx.log, params=model.PARAMETERS)
    status, solver, rec = run_cpsat(model.model, time_limit=limit, **kw)  # type: ignore[arg-type]
    stats = {
        "horizon": model.windows.horizon,
        "branches": solver.num_branches,
        "conflicts": solver.num_conflicts,
    }
    return cpsat_result("cpsat", status, solver, rec, model.decode, stats)


def _run_twostage(
    instance: SchedulingInstance, backend: str, params: TwoStageParams, ctx: Context
) -> Result:
    """Klotski §III-D: stage 1 the slot ILP (eq. 18) for the makespan, stage 2 the mapping MIP for
    the NoC cost with the slots fixed (eq. 12, 14). Each stage gets half of the remaining time."""
    warm = ctx.warm_start
    remaining = ctx.remaining()
    stage1 = None if remaining is None else time.perf_counter() + remaining / 2
    first = _run_timeindexed(instance, backend, TimeIndexedParams(), ctx.until(stage1))
    slots = first.solution if isinstance(first.solution, Schedule) else warm
    mapping = stage2_instance(instance, slots.start, params.weighted)
    if ctx.deadline is not None and time.perf_counter() >= ctx.deadline:  # no time for stage 2
        second = Result(Status.TIME_LIMIT_NO_SOLUTION, "twostage", backend)
    else:
        second = bounded(
            "twostage", backend, ctx, lambda c: _mapping_answer(mapping, backend, slots, c)
        )
    placement = second.solution if isinstance(second.solution, Placement) else None
    cores = slots.core if placement is None else placement.loc
    sched = Schedule(slots.start, cores)
    if instance.accelerator.has_comm_delays:
        sched = retime(instance, sched)  # the plan, run on the NoC with its transfer delays
    stats = {
        "stage1": {"status": first.status.value, "makespan": first.objective, "bound": first.bound},
        "stage2": {
            "status": second.status.value,
            "noc_cost": None if second.objective is None else round(second.objective, 6),
            "bound": second.bound,
            "weighted": params.weighted,
            "groups": len(mapping.groups or ()),
        },
    }
    notes = [
        "two stages: optimal slots, then the cheapest mapping of those slots; neither is "
        "claimed optimal for makespan and NoC cost together"
    ]
    if not isinstance(first.solution, Schedule):
        why = first.message or first.status.value
        notes.append(f"stage 1 gave no slots ({why}): the warm start's slots are used")
    if placement is None:
        why = second.message or second.status.value
        notes.append(f"stage 2 gave no mapping ({why}): the slots' cores are kept")
    return Result(
        Status.FEASIBLE,
        "twostage",
        backend,
        sched.makespan(instance),
        first.bound if first.bound is not None else float(instance.lower_bound()),
        solution=sched,
        trace=first.trace,
        stats=stats,
        message="; ".join(notes),
    )


def _mapping_answer(mapping: Any, backend: str, slots: Schedule, ctx: Context) -> Result:
    """Twostage's second stage: the mapping MIP of the fixed slots, from the slots' cores."""
    raw, placement = run_model(PlacementModel(mapping), backend, Placement(slots.core), ctx)
    return linear_result("twostage", backend, raw, placement, {})


def _run_joint(instance: Any, backend: str, params: JointParams, ctx: Context) -> Result:
    """Klotski eq. 15 solved as one CP-SAT model: ``T + βC``, or lexicographic (``beta=None``):
    first the makespan, then the NoC cost with the makespan held (half the time each)."""
    if isinstance(instance, RoutedInstance):
        return run_routed(instance, ctx)
    return bounded("joint", "cpsat", ctx, lambda c: _joint_answer(instance, params, c))


def _joint_answer(instance: SchedulingInstance, params: JointParams, ctx: Context) -> Result:
    warm = ctx.warm_start
    rep = verify(instance, warm)
    warm_cost = (rep.noc_bytes_hops if params.weighted else rep.noc_cost) or 0
    model = JointModel(instance, warm.makespan(instance), params.beta, params.weighted, warm_cost)
    model.hint(warm)
    if params.beta is not None:
        return _joint_weighted(model, params, ctx)
    return _joint_lexicographic(instance, model, params, ctx)


def _joint_weighted(model: JointModel, params: JointParams, ctx: Context) -> Result:
    """``min T + β·C`` in one solve."""
    from npusched.solvers.cpsat import run_cpsat

    kw: dict[str, Any] = dict(
        threads=ctx.threads, seed=ctx.seed, log=ctx.log, params=model.PARAMETERS
    )
    status, solver, rec = run_cpsat(model.model, time_limit=ctx.remaining(), **kw)
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return Result(status, "joint", "cpsat", trace=rec.points)
    scale = model.scale
    return Result(
        status,
        "joint",
        "cpsat",
        solver.objective_value / scale,
        solver.best_objective_bound / scale,
        solution=model.decode(solver),
        trace=[
            TracePoint(p.time, _div(p.incumbent, scale), _div(p.bound, scale)) for p in rec.points
        ],
        stats={"beta": params.beta, "weighted": params.weighted},
    )


def _joint_lexicographic(
    instance: SchedulingInstance, model: JointModel, params: JointParams, ctx: Context
) -> Result:
    """The makespan first (half the remaining time; all of it when the first half found no
    solution), then the NoC cost with it held."""
    from npusched.solvers.cpsat import run_cpsat

    remaining = ctx.remaining()
    kw: dict[str, Any] = dict(
        threads=ctx.threads, seed=ctx.seed, log=ctx.log, params=model.PARAMETERS
    )
    first_limit = None if remaining is None else remaining / 2
    status, solver, rec = run_cpsat(model.model, time_limit=first_limit, **kw)
    if status is Status.TIME_LIMIT_NO_SOLUTION:  # nothing yet: the makespan gets all the time
        status, solver, rec = run_cpsat(model.model, time_limit=ctx.remaining(), **kw)
    if status not in (Status.OPTIMAL, Status.FEASIBLE):  # CP-SAT's bound on T still holds
        return Result(status, "joint", "cpsat", bound=rec.bound, trace=rec.points)
    sched = model.decode(solver)
    makespan, makespan_status = int(solver.objective_value), status
    bound = solver.best_objective_bound
    model.fix_makespan(makespan)
    model.hint(sched)
    status2, solver2, _trace2 = run_cpsat(model.model, time_limit=ctx.remaining(), **kw)
    if status2 in (Status.OPTIMAL, Status.FEASIBLE):
        sched = model.decode(solver2)
    both = makespan_status is Status.OPTIMAL and status2 is Status.OPTIMAL
    return Result(
        Status.OPTIMAL if both else Status.FEASIBLE,
        "joint",
        "cpsat",
        sched.makespan(instance),
        bound,
        solution=sched,
        trace=rec.points,
        stats={
            "objective": "lexicographic (makespan, NoC cost)",
            "makespan_status": makespan_status.value,
            "noc_cost_status": status2.value,
            "noc_cost_bound": solver2.best_objective_bound if status2 is not Status.ERROR else None,
            "weighted": params.weighted,
        },
        message="optimal = lexicographically optimal (makespan first, then NoC cost)"
        if both
        else "",
    )


def _div(v: float | None, d: int) -> float | None:
    return None if v is None else v / d


register(
    Method(
        "list",
        SCHEDULING,
        ("none",),
        _run_list,
        "list scheduling (b-level priority; with NoC delays earliest-task-first on small "
        "instances, a HEFT-like priority list on large ones; transfers booked on links for "
        "routed instances; with memory capacities Stream's latency or memory priority)",
        params=ListParams,
        applies=_applies(comm_delays=True, routing=True),
        prepare=_check_given,
    )
)
register(
    Method(
        "etf",
        (SchedulingInstance,),
        ("none",),
        _run_etf,
        "earliest-task-first list scheduling with NoC delays (Hwang et al. 1989; quadratic)",
        params=ListParams,
        applies=_applies(comm_delays=True),
        prepare=_check_given,
    )
)
register(
    Method(
        "dls",
        (SchedulingInstance,),
        ("none",),
        _run_dls,
        "dynamic level scheduling with NoC delays (Sih and Lee 1993): the (ready μop, core) pair "
        "of largest static level minus earliest start, exact with heaps per core (near-linear), "
        "insertion into idle gaps, perturbed restarts",
        params=DlsParams,
        applies=_applies(comm_delays=True),
        prepare=_check_given,
    )
)
register(
    Method(
        "joint",
        SCHEDULING,
        ("cpsat",),
        _run_joint,
        "joint schedule + mapping + NoC delays, Klotski eq. 15 (T + beta C, or lexicographic); "
        "on routed instances transfers on links with NoOverlap per link",
        params=JointParams,
        applies=_applies(network=True, comm_delays=True, routing=True),
        prepare=_warm_start,
        default_for=(RoutedInstance,),
    )
)
register(
    Method(
        "timeindexed",
        SCHEDULING,
        LINEAR_BACKENDS,
        _run_timeindexed,
        "time-indexed slot ILP, Klotski eq. 16-18 (19 with --relaxed)",
        params=TimeIndexedParams,
        applies=_applies(identical_cores=True),
        prepare=_warm_start,
    )
)
register(
    Method(
        "cpsat",
        SCHEDULING,
        ("cpsat",),
        _run_cpsat,
        "CP-SAT interval model (cumulative / NoOverlap per core)",
        params=CpsatParams,
        applies=_applies(),
        prepare=_warm_start,
        default_for=(SchedulingInstance,),
    )
)
register(
    Method(
        "twostage",
        SCHEDULING,
        LINEAR_BACKENDS,
        _run_twostage,
        "Klotski two-stage: slot ILP (eq. 18), then mapping MIP on the mesh (eq. 12, 14)",
        params=TwoStageParams,
        applies=_applies(identical_cores=True, mesh=True, comm_delays=True),
        prepare=_warm_start,
    )
)
register(
    Method(
        "zigzag",
        SCHEDULING,
        ("none",),
        _run_zigzag,
        "Klotski baseline 1: layer by layer, each layer on the next core of the zig-zag path",
        applies=_on_mesh(_applies(mesh=True, comm_delays=True, routing=True)),
        prepare=_check_given,
    )
)
register(
    Method(
        "zigzag-spread",
        SCHEDULING,
        ("none",),
        _run_zigzag_spread,
        "baseline 1 spread: each depth level's μops over the zig-zag path, level by level",
        applies=_applies(mesh=True, comm_delays=True),
        prepare=_check_given,
    )
)
register(
    Method(
        "atomic",
        SCHEDULING,
        ("none",),
        _run_atomic,
        "Klotski baseline 2: the atomic dataflow (Zheng et al. 2022) without rounds: critical-"
        "path choice among all ready μops, each on the idle core with least input traffic",
        applies=_on_mesh(_applies(comm_delays=True, routing=True), mesh=False),
        prepare=_check_given,
    )
)
