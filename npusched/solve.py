"""The one entry point: ``solve(instance, method, backend, ...) -> Result``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from npusched.formulations.cpsat_intervals import IntervalModel
from npusched.formulations.linear import LinearModel
from npusched.formulations.timeindexed import TimeIndexedModel
from npusched.heuristics.list_scheduling import Priority, list_schedule
from npusched.problem.instance import SchedulingInstance
from npusched.problem.schedule import Schedule
from npusched.solvers.common import RawOutput
from npusched.solvers.result import Result, Status, TracePoint
from npusched.verify import verify

LINEAR_BACKENDS = ("highs", "cbc", "pulp-highs", "cpsat")


def solve_linear(
    lm: LinearModel,
    backend: str,
    *,
    time_limit: float | None,
    threads: int,
    seed: int,
    warm_start=None,
    log: bool = False,
) -> RawOutput:
    """Run a :class:`LinearModel` on ``backend`` (one of :data:`LINEAR_BACKENDS`)."""
    kw = dict(time_limit=time_limit, threads=threads, seed=seed, warm_start=warm_start, log=log)
    if backend == "highs":
        from npusched.solvers import highs

        return highs.solve_linear(lm, **kw)
    if backend == "cpsat":
        from npusched.solvers import cpsat

        return cpsat.solve_linear(lm, **kw)
    if backend in ("cbc", "pulp-highs"):
        from npusched.solvers import pulp_backend

        return pulp_backend.solve_linear(lm, solver="cbc" if backend == "cbc" else "highs", **kw)
    raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(LINEAR_BACKENDS)}")


@dataclass(frozen=True)
class Method:
    """A registered scheduling method."""

    name: str
    backends: tuple[str, ...]
    run: Callable[..., Result]
    description: str
    needs_identical_cores: bool = False

    def supports(self, instance: SchedulingInstance) -> bool:
        return instance.identical_cores or not self.needs_identical_cores


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.01, deadline - time.perf_counter())


def _run_list(instance, backend, *, priority: Priority = "blevel", **_) -> Result:
    sched = list_schedule(instance, priority)
    ms = sched.makespan(instance)
    lb = instance.lower_bound()
    status = Status.OPTIMAL if ms == lb else Status.FEASIBLE
    return Result(
        status,
        "list",
        "none",
        ms,
        lb,
        solution=sched,
        stats={"priority": str(priority)},
        message="bound = max(critical path, ceil(work / m)); optimal when it is reached",
    )


def _run_timeindexed(
    instance,
    backend,
    *,
    time_limit,
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
    x0 = model.encode(warm)
    raw = solve_linear(
        model.lm,
        backend,
        time_limit=_remaining(deadline),
        threads=threads,
        seed=seed,
        warm_start=x0,
        log=log,
    )
    sched = model.decode(raw.x) if raw.x is not None else None
    stats = {
        "variables": model.lm.num_vars,
        "rows": model.lm.row_counts(),
        "horizon": model.windows.horizon,
        "relaxed_eq19": relaxed,
        "precedence": precedence,
    }
    return Result(
        raw.status,
        "timeindexed",
        backend,
        raw.objective,
        raw.bound,
        solution=sched,
        trace=raw.trace,
        stats=stats,
        message=raw.message,
    )


def _run_cpsat(
    instance,
    backend,
    *,
    time_limit,
    threads,
    seed,
    warm: Schedule,
    log: bool = False,
    deadline=None,
    **_,
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


METHODS: dict[str, Method] = {
    "list": Method("list", ("none",), _run_list, "list scheduling (b-level priority)"),
    "timeindexed": Method(
        "timeindexed",
        LINEAR_BACKENDS,
        _run_timeindexed,
        "time-indexed slot ILP, Klotski eq. 16-18 (19 with --relaxed)",
        needs_identical_cores=True,
    ),
    "cpsat": Method(
        "cpsat", ("cpsat",), _run_cpsat, "CP-SAT interval model (cumulative / NoOverlap per core)"
    ),
}


def solve(
    instance: SchedulingInstance,
    method: str = "cpsat",
    backend: str | None = None,
    *,
    time_limit: float | None = 10.0,
    threads: int = 1,
    seed: int = 0,
    warm_start: Schedule | None = None,
    relaxed: bool = False,
    precedence: str = "eq18",
    priority: Priority = "blevel",
    log: bool = False,
) -> Result:
    """Schedule ``instance`` with ``method`` on ``backend``.

    Parameters
    ----------
    method
        ``"list"``, ``"timeindexed"`` or ``"cpsat"`` (see :data:`METHODS`).
    backend
        For ``timeindexed``: ``"highs"`` (default), ``"cbc"``, ``"pulp-highs"`` or ``"cpsat"``.
    time_limit
        Wall-clock seconds for the whole call, model building included.
    warm_start
        A feasible schedule; its makespan is the horizon of the ASAP/ALAP windows (Klotski uses
        the list schedule, which is the default).
    relaxed
        Time-indexed model only: Klotski's eq. 19 instead of the exact resource constraint.
    precedence
        Time-indexed model only: ``"eq18"`` (Klotski's aggregated rows) or ``"disaggregated"``.
    priority
        List-scheduling priority of the heuristic and of the default warm start.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    try:
        meth = METHODS[method]
    except KeyError:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}") from None
    backend = backend or meth.backends[0]
    if backend not in meth.backends:
        raise ValueError(f"method {method!r} runs on {', '.join(meth.backends)}, not {backend!r}")
    if not meth.supports(instance):
        raise ValueError(
            f"method {method!r} needs identical cores; this instance has per-core "
            "latencies (use 'cpsat' or 'list')"
        )
    if (relaxed or precedence != "eq18") and method != "timeindexed":
        raise ValueError("--relaxed and --precedence apply to the time-indexed model only")
    if warm_start is None:
        warm_start = list_schedule(instance, priority)
    else:
        verify(instance, warm_start).raise_if_failed()
    result = meth.run(
        instance,
        backend,
        time_limit=time_limit,
        threads=threads,
        seed=seed,
        warm=warm_start,
        relaxed=relaxed,
        precedence=precedence,
        priority=priority,
        log=log,
        deadline=deadline,
    )
    result.runtime = time.perf_counter() - t0
    result.threads, result.seed, result.time_limit = threads, seed, time_limit
    if not result.trace and result.objective is not None:
        result.trace = [TracePoint(result.runtime, result.objective, result.bound)]
    return result
