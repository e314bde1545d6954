"""The one entry point: ``solve(problem, method, backend, ...) -> Result``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from npusched.formulations.placement.qap import PlacementModel
from npusched.formulations.scheduling.intervals import IntervalModel
from npusched.formulations.scheduling.joint import JointModel
from npusched.formulations.scheduling.routed import RoutedModel
from npusched.formulations.scheduling.timeindexed import TimeIndexedModel
from npusched.heuristics.placement import (
    anneal_placement,
    greedy_placement,
    snake_placement,
    tabu_placement,
)
from npusched.heuristics.scheduling.list_scheduling import Priority, list_schedule
from npusched.heuristics.scheduling.mesh_baselines import retime, zigzag_schedule
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.problem.placement import Placement, PlacementInstance, stage2_instance
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.problem.scheduling.schedule import Schedule
from npusched.solvers.common import RawOutput
from npusched.solvers.dispatch import LINEAR_BACKENDS, solve_linear
from npusched.solvers.result import Result, Status, TracePoint
from npusched.verify import check, verify, verify_placement

Problem = SchedulingInstance | PlacementInstance | RoutedInstance


@dataclass(frozen=True)
class Method:
    """A registered method: the problem type it solves, its backends, and how to run it."""

    name: str
    problem: type | tuple[type, ...]
    backends: tuple[str, ...]
    run: Callable[..., Result]
    description: str
    needs_identical_cores: bool = False
    needs_mesh: bool = False
    handles_comm_delays: bool = False
    handles_routing: bool = False
    needs_qap_form: bool = False

    def supports(self, problem: Any) -> bool:
        if isinstance(problem, RoutedInstance):
            return self.handles_routing
        if not isinstance(problem, self.problem):
            return False
        if isinstance(problem, PlacementInstance):
            return problem.all_distinct or not self.needs_qap_form
        if not isinstance(problem, SchedulingInstance):
            return True
        if self.needs_mesh and problem.accelerator.cells() is None:
            return False
        if problem.accelerator.has_comm_delays and not self.handles_comm_delays:
            return False
        return not self.needs_identical_cores or problem.identical_cores


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.01, deadline - time.perf_counter())


def _run_model(
    model: Any, backend: str, warm: Any, threads: int, seed: int, log: bool, deadline: float | None
) -> tuple[RawOutput, Any]:
    """Run a formulation's :class:`LinearModel` warm-started from ``warm``; decode the answer."""
    raw = solve_linear(
        model.lm,
        backend,
        time_limit=_remaining(deadline),
        threads=threads,
        seed=seed,
        warm_start=model.encode(warm),
        log=log,
    )
    return raw, (model.decode(raw.x) if raw.x is not None else None)


def _linear_result(method: str, backend: str, raw: RawOutput, solution: Any, stats: dict) -> Result:
    return Result(
        raw.status,
        method,
        backend,
        raw.objective,
        raw.bound,
        solution=solution,
        trace=raw.trace,
        stats=stats,
        message=raw.message,
    )


# ---- μop scheduling (Klotski Problem 2) ---------------------------------------------------------
def _heuristic_result(
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


def _run_list(instance, backend, *, priority: Priority = "blevel", **_) -> Result:
    if isinstance(instance, RoutedInstance):
        sched: Schedule | RoutedSchedule = routed_list_schedule(instance, priority)
    else:
        sched = list_schedule(instance, priority)
    result = _heuristic_result("list", instance, sched)
    result.stats["priority"] = str(priority)
    return result


def _run_timeindexed(
    instance,
    backend,
    *,
    threads,
    seed,
    warm: Schedule,
    relaxed: bool = False,
    precedence: str = "eq18",
    log: bool = False,
    deadline=None,
    **_,
) -> Result:
    model = TimeIndexedModel(instance, warm.makespan(instance), relaxed, precedence)
    raw, decoded = _run_model(model, backend, warm, threads, seed, log, deadline)
    stats = {
        "variables": model.lm.num_vars,
        "rows": model.lm.row_counts(),
        "horizon": model.windows.horizon,
        "relaxed_eq19": relaxed,
        "precedence": precedence,
    }
    return _linear_result("timeindexed", backend, raw, decoded, stats)


def _run_cpsat(
    instance, backend, *, threads, seed, warm: Schedule, log: bool = False, deadline=None, **_
) -> Result:
    from npusched.solvers.cpsat import run_cpsat

    model = IntervalModel(instance, warm.makespan(instance))
    model.hint(warm)
    status, solver, rec = run_cpsat(
        model.model,
        time_limit=_remaining(deadline),
        threads=threads,
        seed=seed,
        log=log,
        params=model.PARAMETERS,
    )
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return Result(status, "cpsat", "cpsat", trace=rec.points)
    stats = {
        "horizon": model.windows.horizon,
        "branches": solver.num_branches,
        "conflicts": solver.num_conflicts,
    }
    return Result(
        status,
        "cpsat",
        "cpsat",
        solver.objective_value,
        solver.best_objective_bound,
        solution=model.decode(solver),
        trace=rec.points,
        stats=stats,
    )


def _run_twostage(
    instance,
    backend,
    *,
    threads,
    seed,
    warm: Schedule,
    weighted: bool = False,
    log: bool = False,
    deadline=None,
    **_,
) -> Result:
    """Klotski §III-D: stage 1 the slot ILP (eq. 18) for the makespan, stage 2 the mapping MIP for
    the NoC cost with the slots fixed (eq. 12, 14). Each stage gets half of the remaining time."""
    remaining = _remaining(deadline)
    stage1_deadline = None if remaining is None else time.perf_counter() + remaining / 2
    first = _run_timeindexed(
        instance, backend, threads=threads, seed=seed, warm=warm, log=log, deadline=stage1_deadline
    )
    slots = first.solution if isinstance(first.solution, Schedule) else warm
    mapping = stage2_instance(instance, slots.start, weighted)
    model = PlacementModel(mapping)
    raw, placement = _run_model(model, backend, Placement(slots.core), threads, seed, log, deadline)
    cores = slots.core if placement is None else placement.loc
    sched = Schedule(slots.start, cores)
    if instance.accelerator.has_comm_delays:
        sched = retime(instance, sched)  # the plan, run on the NoC with its transfer delays
    stats = {
        "stage1": {"status": first.status.value, "makespan": first.objective, "bound": first.bound},
        "stage2": {
            "status": raw.status.value,
            "noc_cost": None if raw.objective is None else round(raw.objective, 6),
            "bound": raw.bound,
            "weighted": weighted,
            "groups": len(mapping.groups or ()),
        },
    }
    return Result(
        Status.FEASIBLE,
        "twostage",
        backend,
        sched.makespan(instance),
        first.bound,
        solution=sched,
        trace=first.trace,
        stats=stats,
        message="two stages: optimal slots, then the cheapest mapping of those slots; "
        "neither is claimed optimal for makespan and NoC cost together",
    )


def _run_routed(
    instance: RoutedInstance,
    *,
    threads: int,
    seed: int,
    warm: RoutedSchedule,
    log: bool = False,
    deadline: float | None = None,
) -> Result:
    """Schedule, allocation and link-contended transfers in one CP-SAT model (makespan).

    CP-SAT runs in a child process stopped at the time limit: on models with thousands of
    intervals it spends minutes loading them without checking its own limit. When stopped, the
    result is the warm start with the instance's lower bound, and the message says so."""
    from npusched.solvers.cpsat import run_cpsat_within

    model = RoutedModel(instance, warm.makespan(instance))
    model.hint(warm)
    stats = {"intervals_on_links": sum(len(v) for v in model.res_intervals.values())}
    remaining = _remaining(deadline)
    out = run_cpsat_within(
        model.model,
        time_limit=3600.0 if remaining is None else remaining,
        threads=threads,
        seed=seed,
        log=log,
    )
    if out is None or out[1] is None:
        status = Status.FEASIBLE if out is None else out[0]
        if status in (Status.INFEASIBLE, Status.ERROR):
            return Result(status, "joint", "cpsat", stats=stats)
        result = _heuristic_result("joint", instance, warm)
        result.backend, result.stats = "cpsat", stats
        result.message = (
            "CP-SAT returned no solution within the time limit; result = the warm start, "
            "bound = the instance's lower bound"
        )
        return result
    status, values, points = out
    assert values is not None
    return Result(
        status,
        "joint",
        "cpsat",
        values.objective_value,
        values.best_objective_bound,
        solution=model.decode(values),
        trace=points,
        stats=stats,
    )


def _routed_warm_start(instance: RoutedInstance, priority: Priority) -> RoutedSchedule:
    """The best list schedule on the instance and, when it carries a known allocation (Stream's),
    on that allocation."""
    cands = [routed_list_schedule(instance, priority)]
    if instance.preferred is not None and not instance.fixed_allocation:
        cands.append(routed_list_schedule(instance.restricted(instance.preferred), priority))
    return min(cands, key=lambda s: s.makespan(instance))


def _run_joint(
    instance,
    backend,
    *,
    threads,
    seed,
    warm: Schedule | RoutedSchedule,
    beta: float | None = None,
    weighted: bool = False,
    log: bool = False,
    deadline=None,
    **_,
) -> Result:
    """Klotski eq. 15 solved as one CP-SAT model: ``T + βC``, or lexicographic (``beta=None``):
    first the makespan, then the NoC cost with the makespan held (half the time each)."""
    from npusched.solvers.cpsat import run_cpsat

    if isinstance(instance, RoutedInstance):
        assert isinstance(warm, RoutedSchedule)
        return _run_routed(
            instance, threads=threads, seed=seed, warm=warm, log=log, deadline=deadline
        )
    assert isinstance(warm, Schedule)
    rep = verify(instance, warm)
    warm_cost = (rep.noc_bytes_hops if weighted else rep.noc_cost) or 0
    model = JointModel(instance, warm.makespan(instance), beta, weighted, warm_cost)
    model.hint(warm)
    remaining = _remaining(deadline)
    first_limit = remaining if beta is not None or remaining is None else remaining / 2
    kw = dict(threads=threads, seed=seed, log=log, params=model.PARAMETERS)
    status, solver, rec = run_cpsat(model.model, time_limit=first_limit, **kw)
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return Result(status, "joint", "cpsat", trace=rec.points)
    sched = model.decode(solver)
    if beta is not None:
        scale = model.scale
        return Result(
            status,
            "joint",
            "cpsat",
            solver.objective_value / scale,
            solver.best_objective_bound / scale,
            solution=sched,
            trace=[
                TracePoint(p.time, _div(p.incumbent, scale), _div(p.bound, scale))
                for p in rec.points
            ],
            stats={"beta": beta, "weighted": weighted},
        )
    makespan, makespan_status = int(solver.objective_value), status
    bound = solver.best_objective_bound
    model.fix_makespan(makespan)
    model.hint(sched)
    status2, solver2, _trace2 = run_cpsat(model.model, time_limit=_remaining(deadline), **kw)
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
            "weighted": weighted,
        },
        message="optimal = lexicographically optimal (makespan first, then NoC cost)"
        if both
        else "",
    )


def _div(v: float | None, d: int) -> float | None:
    return None if v is None else v / d


# ---- placement on a mesh (Klotski Problem 3, QAP form) -----------------------------------------
_PLACEMENT_HEURISTICS: dict[str, Callable[..., Placement]] = {
    "snake": lambda inst, seed: snake_placement(inst),
    "greedy": lambda inst, seed: greedy_placement(inst),
    "anneal": lambda inst, seed: anneal_placement(inst, seed=seed),
    "tabu": lambda inst, seed: tabu_placement(inst, seed=seed),
}


def _run_placement_heuristic(inst, backend, *, method: str, seed: int = 0, **_) -> Result:
    placement = _PLACEMENT_HEURISTICS[method](inst, seed)
    return Result(Status.FEASIBLE, method, "none", inst.cost(placement.loc), solution=placement)


def _run_qap_bnb(instance, backend, *, warm, deadline=None, **_) -> Result:
    from npusched.formulations.placement.bnb import solve_qap_bnb

    return solve_qap_bnb(instance, time_limit=_remaining(deadline), warm_start=warm)


def _run_qap(
    inst, backend, *, threads, seed, warm: Placement, log: bool = False, deadline=None, **_
) -> Result:
    model = PlacementModel(inst)
    raw, decoded = _run_model(model, backend, warm, threads, seed, log, deadline)
    stats = {"variables": model.lm.num_vars, "rows": model.lm.row_counts()}
    return _linear_result("qap", backend, raw, decoded, stats)


METHODS: dict[str, Method] = {
    "list": Method(
        "list",
        (SchedulingInstance, RoutedInstance),
        ("none",),
        _run_list,
        "list scheduling (b-level priority; earliest-task-first with NoC delays; transfers "
        "booked on links for routed instances)",
        handles_comm_delays=True,
        handles_routing=True,
    ),
    "joint": Method(
        "joint",
        (SchedulingInstance, RoutedInstance),
        ("cpsat",),
        _run_joint,
        "joint schedule + mapping + NoC delays, Klotski eq. 15 (T + beta C, or lexicographic); "
        "on routed instances transfers on links with NoOverlap per link",
        needs_mesh=True,
        handles_comm_delays=True,
        handles_routing=True,
    ),
    "timeindexed": Method(
        "timeindexed",
        SchedulingInstance,
        LINEAR_BACKENDS,
        _run_timeindexed,
        "time-indexed slot ILP, Klotski eq. 16-18 (19 with --relaxed)",
        needs_identical_cores=True,
    ),
    "cpsat": Method(
        "cpsat",
        SchedulingInstance,
        ("cpsat",),
        _run_cpsat,
        "CP-SAT interval model (cumulative / NoOverlap per core)",
    ),
    "twostage": Method(
        "twostage",
        SchedulingInstance,
        LINEAR_BACKENDS,
        _run_twostage,
        "Klotski two-stage: slot ILP (eq. 18), then mapping MIP on the mesh (eq. 12, 14)",
        needs_identical_cores=True,
        needs_mesh=True,
        handles_comm_delays=True,
    ),
    "zigzag": Method(
        "zigzag",
        SchedulingInstance,
        ("none",),
        lambda inst, backend, **_: _heuristic_result("zigzag", inst, zigzag_schedule(inst)),
        "Klotski baseline 1: layer-wise schedule, zig-zag core allocation (Tangram)",
        needs_mesh=True,
        handles_comm_delays=True,
    ),
    **{
        name: Method(
            name, PlacementInstance, ("none",), _run_placement_heuristic, f"{name} placement"
        )
        for name in _PLACEMENT_HEURISTICS
    },
    "qap": Method(
        "qap",
        PlacementInstance,
        ("cpsat", "highs", "cbc", "pulp-highs"),
        _run_qap,
        "placement MIP: separable Manhattan linearisation, Gilmore-Lawler cuts, mesh symmetry",
    ),
    "qap-bnb": Method(
        "qap-bnb",
        PlacementInstance,
        ("none",),
        _run_qap_bnb,
        "placement in QAP form by Gilmore-Lawler branch and bound (exact; proves nug12-nug16b)",
        needs_qap_form=True,
    ),
}


def default_method(problem: Problem) -> str:
    if isinstance(problem, RoutedInstance):
        return "joint"
    return "cpsat" if isinstance(problem, SchedulingInstance) else "qap"


def solve(
    problem: Problem,
    method: str | None = None,
    backend: str | None = None,
    *,
    time_limit: float | None = 10.0,
    threads: int = 1,
    seed: int = 0,
    warm_start: Schedule | RoutedSchedule | Placement | None = None,
    relaxed: bool = False,
    precedence: str = "eq18",
    weighted: bool = False,
    beta: float | None = None,
    priority: Priority = "blevel",
    log: bool = False,
) -> Result:
    """Solve ``problem`` with ``method`` on ``backend``.

    Parameters
    ----------
    problem
        A :class:`SchedulingInstance` (methods ``list``, ``timeindexed``, ``cpsat``) or a
        :class:`PlacementInstance` (``snake``, ``greedy``, ``anneal``, ``tabu``, ``qap``).
    method
        See :data:`METHODS`; default ``cpsat`` for scheduling, ``qap`` for placement.
    backend
        ``timeindexed`` and ``qap``: ``"highs"``, ``"cbc"``, ``"pulp-highs"`` or ``"cpsat"``.
    time_limit
        Wall-clock seconds for the whole call, model building included.
    warm_start
        A feasible solution. Scheduling: its makespan is the horizon of the ASAP/ALAP windows
        (Klotski uses the list schedule, which is the default). Placement: default tabu search.
    relaxed
        Time-indexed model only: Klotski's eq. 19 instead of the exact resource constraint.
    precedence
        Time-indexed model only: ``"eq18"`` (Klotski's aggregated rows) or ``"disaggregated"``.
    weighted
        ``twostage``, ``joint``: NoC cost Σ bytes × hops instead of Σ hops (eq. 14).
    beta
        ``joint``: minimise ``T + β·C``; ``None`` (default) is lexicographic (T, then C).
    priority
        List-scheduling priority of the heuristic and of the default warm start.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    method = method or default_method(problem)
    try:
        meth = METHODS[method]
    except KeyError:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}") from None
    backend = backend or meth.backends[0]
    if backend not in meth.backends:
        raise ValueError(f"method {method!r} runs on {', '.join(meth.backends)}, not {backend!r}")
    if not meth.supports(problem):
        fits = [name for name, m in METHODS.items() if m.supports(problem)]
        why = ""
        if isinstance(problem, RoutedInstance):
            why = " (it does not model transfers on shared links)"
        elif isinstance(problem, PlacementInstance):
            why = " (it needs every task on its own cell: the QAP form)"
        elif isinstance(problem, meth.problem):
            needs = ["identical cores"] if meth.needs_identical_cores else []
            needs += ["cores on a mesh"] if meth.needs_mesh else []
            needs += [] if meth.handles_comm_delays else ["no NoC transfer delays"]
            why = f" (it needs {' and '.join(needs)})"
        raise ValueError(
            f"method {method!r} does not apply to this instance{why}; use one of {fits}"
        )
    if (relaxed or precedence != "eq18") and method != "timeindexed":
        raise ValueError("--relaxed and --precedence apply to the time-indexed model only")
    if isinstance(problem, RoutedInstance):
        if warm_start is None:
            warm_start = _routed_warm_start(problem, priority)
        elif not isinstance(warm_start, RoutedSchedule) or not check(problem, warm_start).ok:
            raise ValueError("a routed warm start must be a feasible RoutedSchedule")
    elif isinstance(problem, SchedulingInstance):
        if warm_start is None:
            warm_start = list_schedule(problem, priority)
        elif not isinstance(warm_start, Schedule):
            raise ValueError("a scheduling warm start must be a Schedule")
        else:
            verify(problem, warm_start).raise_if_failed()
    elif meth.run in (_run_qap, _run_qap_bnb):
        if warm_start is None:
            warm_start = tabu_placement(problem, seed=seed)
        elif not isinstance(warm_start, Placement) or verify_placement(problem, warm_start):
            raise ValueError("a placement warm start must be a feasible Placement")
    result = meth.run(
        problem,
        backend,
        method=method,
        threads=threads,
        seed=seed,
        warm=warm_start,
        relaxed=relaxed,
        precedence=precedence,
        weighted=weighted,
        beta=beta,
        priority=priority,
        log=log,
        deadline=deadline,
    )
    result.runtime_s = time.perf_counter() - t0
    result.threads, result.seed, result.time_limit = threads, seed, time_limit
    if not result.trace and result.objective is not None:
        result.trace = [TracePoint(result.runtime_s, result.objective, result.bound)]
    return result
