"""``lns``: large-neighbourhood search on the exact model of any instance with transfer delays —
a scheduling instance on a mesh or hypercube (the joint model, Klotski eq. 15 with delays:
:class:`~npusched.formulations.scheduling.joint.JointModel`) or a routed instance (links, DRAM,
memories: :class:`~npusched.formulations.scheduling.routed.RoutedModel`; where the memories
bind, :class:`~npusched.formulations.scheduling.routed_spill.SpillModel`, whose copies may be
evicted and fetched again, so that the memory-aware list's schedules are points of it) — for
instances whose model is too large to solve whole.

From the best list schedule (or a given warm start) — on a scheduling instance with a time limit
first, where the lower bound leaves no idle time (``m·LB`` = the work), two searches for a
schedule at the bound: the depth-first ``dfbb`` for a share ``fill`` of the limit
(:mod:`npusched.heuristics.scheduling.depth_first`: on task graphs built around a schedule
without idle time it finds the optimum in about a second where the graph is dense and the cores
up to 9), then CP-SAT on the decision model at the bound, ``target``, for a share ``decide`` of
what is left (:mod:`npusched.formulations.scheduling.target`: it finds the optimum of those
graphs at every density and up to 16 cores, within a minute or two up to n = 500); a bound
either proves unreachable (no schedule ends by it) is raised, and the next step aims at it.
Then the schedule is annealed over its core assignment by ``reassign`` for a share
``reassign`` of the rest (:mod:`npusched.heuristics.scheduling.reassign`: the CP-SAT rounds
below keep most μops on their cores, and on graphs with heavy transfers the cores are what the
lists choose badly) — each round frees a neighbourhood and re-solves it with CP-SAT for at most
``step`` seconds from the current schedule:

- **time**: ``window`` μops consecutive by start (a random block);
- **pair** (scheduling instances): the μops of two random cores in a random window of time,
  about ``window`` of them, so that work can move between the two.

Every other μop keeps its core; those before the neighbourhood keep their start, and the later
ones keep their order on their core (and, on the routed model, the later transfers their order
on each link), their times free, so the schedule after the neighbourhood can close up
(:meth:`JointModel.neighbourhood`, :meth:`RoutedModel.neighbourhood`); on routed instances
above :data:`SHIFT_ABOVE` μops they move by one shift instead. On the routed model the
allocation is the warm start's. An improvement is kept. The window grows by a
quarter after a neighbourhood solved to optimality without an improvement and shrinks by a fifth
after one that ran out of time, within ``[4, n]``. The search stops at the time limit or when the
schedule meets the instance's lower bound (or the bound a step proved), which proves it
optimal. A round's solver gets at most
``step`` seconds, fewer near the limit: the most any round took beyond its solver's limit
(building and loading the neighbourhood: seconds at n = 300 with 20 000 edges) and
:data:`SPARE` are kept, so the search hands back its own best schedule before the limit. Its
answer carries the anytime trace (every improvement) and, on stderr, a progress line.

Large-neighbourhood search for scheduling: Shaw, "Using constraint programming and local search
methods to solve vehicle routing problems", CP 1998 (the method); Godard, Laborie and Nuijten,
"Randomized large neighborhood search for cumulative scheduling", ICAPS 2005 (time-window and
resource neighbourhoods, the order kept outside them).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm import tqdm

from npusched.formulations.scheduling.joint import JointModel
from npusched.formulations.scheduling.routed import RoutedModel
from npusched.formulations.scheduling.routed_spill import SpillModel, segments_for
from npusched.heuristics.scheduling.list_scheduling import Priority
from npusched.methods.reassign import best_list_schedule
from npusched.methods.registry import Context, Method, applicable, bounded, register
from npusched.methods.routed import routed_warm_start
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.problem.scheduling.schedule import Schedule
from npusched.solvers.result import Result, Status, TracePoint

KINDS = ("time", "pair")
SHIFT_ABOVE = 500
"""Routed instances with more μops than this cut neighbourhoods whose tail moves by one shift
(``tail="shift"``) and solve them with :data:`LIGHT_PRESOLVE`: with the tail's times free, CP-SAT's
presolve alone took 15 s on a 4 864-μop ResNet-50 partition, longer than a round's ``step``,
and no round found a solution (measured; the shifted tail solves in about a second)."""
LIGHT_PRESOLVE = {"max_presolve_iterations": 1, "cp_model_probing_level": 0}
"""CP-SAT parameters of a large routed instance's rounds (:data:`SHIFT_ABOVE`)."""
REASSIGN = 0.5
"""Default share of ``lns``'s time limit spent by ``reassign`` on the warm start's assignment
(:mod:`npusched.heuristics.scheduling.reassign`) before the CP-SAT rounds."""
FILL = 0.05
"""Default share of ``lns``'s time limit spent by ``dfbb`` looking for a schedule at the lower
bound (:mod:`npusched.heuristics.scheduling.depth_first`) before ``target``."""
DECIDE = 0.8
"""Default share of what is left of ``lns``'s time limit after ``dfbb`` that ``target`` (CP-SAT
on the decision model at the lower bound, :mod:`npusched.methods.target`) spends before
``reassign``."""


@dataclass(frozen=True)
class LnsParams:
    """``lns``: μops freed per neighbourhood at first (``window``, adapted as it goes), seconds
    per neighbourhood (``step``), the neighbourhoods taken in turn (``kinds``, comma separated:
    ``time``, ``pair``), ``priority`` of the warm start, the share of the time limit that
    ``reassign`` spends on the warm start's core assignment first (``reassign``; with a time
    limit, on the scheduling instances ``reassign`` applies to: two or more cores), the shares
    that ``dfbb`` and then ``target`` spend before it looking for a schedule at the lower bound
    (``fill`` of the limit, ``decide`` of what is left after ``dfbb``; with a time limit, on
    scheduling instances whose bound leaves no idle time), and ``progress`` (a line on
    stderr)."""

    window: int = 30
    step: float = 2.0
    kinds: str = "time,pair"
    priority: Priority = "blevel"
    reassign: float = REASSIGN
    fill: float = FILL
    decide: float = DECIDE
    progress: bool = False

    def __post_init__(self) -> None:
        if self.window < 1 or not 0 < self.step < float("inf"):
            raise ValueError("window must be at least 1 and step a positive number of seconds")
        for name in ("reassign", "fill", "decide"):
            if not 0 <= getattr(self, name) < 1:  # NaN fails too
                raise ValueError(f"{name} must be a share in [0, 1), got {getattr(self, name)}")
        bad = set(self.kinds.split(",")) - set(KINDS)
        if bad or not self.kinds:
            raise ValueError(f"neighbourhood kinds are {', '.join(KINDS)}; got {self.kinds!r}")


def run_lns(instance: Any, backend: str, params: LnsParams, ctx: Context) -> Result:
    """The search of the module docstring within the time limit (in a forked process stopped at
    it, :func:`bounded`; without a limit, about two passes over the schedule)."""
    return bounded("lns", "cpsat", ctx, lambda c: _answer(instance, params, c))


def _model(instance: Any, warm: Any) -> tuple[Any, Any]:
    """The model the neighbourhoods are cut from, and the instance its schedules belong to."""
    if isinstance(instance, RoutedInstance):
        fixed = instance if instance.fixed_allocation else instance.restricted(warm.core)
        if fixed.capacity is not None and fixed.binds_within(warm.makespan(instance)):
            return SpillModel(fixed, warm.makespan(instance), segments_for(warm)), fixed
        return RoutedModel(fixed, warm.makespan(instance)), fixed
    return JointModel(instance, warm.makespan(instance), symmetry=False), instance


def _answer(instance: Any, params: LnsParams, ctx: Context) -> Result:
    from npusched.solvers.cpsat import run_cpsat

    best = ctx.warm_start
    model, _ = _model(instance, best)
    rng = np.random.default_rng(ctx.seed)
    # the lower bound, or what a step before the rounds proved (no schedule ends by it)
    lb = max([instance.lower_bound(), *(int(p.bound) for p in ctx.history if p.bound is not None)])
    kinds = ["time"] if isinstance(instance, RoutedInstance) else params.kinds.split(",")
    size, rounds, improved, n = min(params.window, instance.n), 0, 0, instance.n
    t0 = time.perf_counter() if ctx.started is None else ctx.started
    trace = list(ctx.history)  # the steps before the rounds, then the warm start they made
    if not trace or trace[-1].incumbent != best.makespan(instance):
        trace.append(TracePoint(time.perf_counter() - t0, best.makespan(instance), lb))
    bar = tqdm(total=None, disable=not params.progress, desc="lns", unit="nbhd", leave=False)
    overhead = 0.0  # the most seconds a round took beyond its solver's limit (building, loading)
    try:
        while best.makespan(instance) > lb:
            step = _step(params.step, ctx.remaining(), overhead)
            if step <= 0:
                break
            kind = kinds[rounds % len(kinds)]
            if kind == "pair":
                free = _pair(best, size, instance.m, rng)
            else:
                free = _window(best, size, rng)
            kw: dict[str, Any] = dict(threads=ctx.threads, seed=ctx.seed + rounds, log=ctx.log)
            t_round = time.perf_counter()
            if isinstance(instance, RoutedInstance) and n > SHIFT_ABOVE:
                nbhd = model.neighbourhood(best, free, tail="shift")
                kw["params"] = LIGHT_PRESOLVE
            else:
                nbhd = model.neighbourhood(best, free)
            status, solver, _ = run_cpsat(nbhd, time_limit=step, **kw)
            overhead = max(overhead, time.perf_counter() - t_round - step)
            rounds += 1
            better = False
            if status in (Status.OPTIMAL, Status.FEASIBLE):
                cand = model.decode(solver)
                if cand.makespan(instance) < best.makespan(instance):
                    best, improved, better = cand, improved + 1, True
                    trace.append(TracePoint(time.perf_counter() - t0, best.makespan(instance),
                                            lb))  # fmt: skip
            if status is Status.OPTIMAL and not better:
                size = min(n, int(size * 1.25) + 1)
            elif status not in (Status.OPTIMAL, Status.FEASIBLE) or not better:
                size = max(min(4, n), int(size * 0.8))
            bar.update(1)
            bar.set_postfix(best=best.makespan(instance), bound=lb, window=size)
            if ctx.deadline is None and rounds >= 2 * (n // max(1, size) + 1):
                break  # without a limit: about two passes over the schedule
    finally:
        bar.close()
    ms = best.makespan(instance)
    return Result(
        Status.OPTIMAL if ms <= lb else Status.FEASIBLE, "lns", "cpsat", ms, lb, solution=best,
        trace=trace, stats={"neighbourhoods": rounds, "improvements": improved, "window": size},
        message="bound = the instance's lower_bound(), or a step's proof that none ends by it",
    )  # fmt: skip


SPARE = 0.5
"""Seconds of the time limit that ``lns`` keeps for handing its answer back."""


def _step(step: float, remaining: float | None, overhead: float) -> float:
    """The solver's seconds for the next round: ``step``, cut so that the round, with the most
    any round took beyond its solver's limit (building the neighbourhood, loading it), ends
    :data:`SPARE` seconds before the limit; 0 when no useful round fits (under 0.1 s)."""
    if remaining is None:
        return step
    left = min(step, remaining - SPARE - overhead)
    return left if left >= 0.1 else 0.0


def _window(sched: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` μops consecutive by start, from a random one."""
    n = sched.start.size
    order = np.argsort(sched.start, kind="stable")
    k = int(rng.integers(0, n - size + 1))
    free = np.zeros(n, dtype=bool)
    free[order[k : k + size]] = True
    return free


def _pair(sched: Any, size: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """The μops of two random cores in a window of time holding about ``size`` of them."""
    if m < 2:
        return _window(sched, size, rng)
    a, b = rng.choice(m, size=2, replace=False)
    on = np.flatnonzero((sched.core == a) | (sched.core == b))
    free = np.zeros(sched.start.size, dtype=bool)
    if on.size == 0:
        return _window(sched, size, rng)
    on = on[np.argsort(sched.start[on], kind="stable")]
    k = int(rng.integers(0, max(1, on.size - size + 1)))
    free[on[k : k + size]] = True
    return free


def _applies(problem: Any) -> str | None:
    if isinstance(problem, RoutedInstance):
        return None
    acc = problem.accelerator
    if acc.topology is None or not acc.has_comm_delays:
        return "it needs transfer delays on a mesh or hypercube (or a routed instance)"
    return None


def _zero_idle_bound(problem: Any) -> bool:
    """Whether the lower bound is the load bound with no idle time to spare (``m·LB`` equals
    the total fastest work), where ``dfbb``'s search is complete and a schedule without idle
    time is optimal."""
    if not isinstance(problem, SchedulingInstance):
        return False
    return problem.m * problem.lower_bound() == int(problem.min_duration.sum())


def _warm_start(problem: Any, params: LnsParams, ctx: Context) -> Context:
    """The given warm start, checked, or the best of the list heuristics that apply."""
    from npusched.methods.registry import solve
    from npusched.verify import check

    warm = ctx.warm_start
    if warm is not None:
        kind = RoutedSchedule if isinstance(problem, RoutedInstance) else Schedule
        if not isinstance(warm, kind) or not check(problem, warm).ok:
            raise ValueError(f"an lns warm start must be a feasible {kind.__name__}")
    elif isinstance(problem, RoutedInstance):
        warm = routed_warm_start(problem, params.priority, ctx.threads)
    else:
        warm = best_list_schedule(problem)
    history = [_point(problem, warm, ctx)]
    _say(params, "list", history[-1])
    steps = (
        ("dfbb", params.fill, _zero_idle_bound),
        ("target", params.decide, lambda p: _zero_idle_bound(p) and "target" in applicable(p)),
        ("reassign", params.reassign, lambda p: "reassign" in applicable(p)),
    )
    bound = problem.lower_bound()
    for name, share, applies in steps:
        left = ctx.remaining()
        if share <= 0 or left is None or warm.makespan(problem) <= bound:
            continue
        if not applies(problem):
            continue
        aim = {} if name == "reassign" else {"target": bound}  # what it searches for
        res = solve(problem, name, time_limit=share * left, threads=ctx.threads, seed=ctx.seed,
                    warm_start=warm, **aim)  # fmt: skip
        if res.bound is not None and res.bound > bound:  # proved: nothing ends by the bound
            bound = int(res.bound)
            history.append(_point(problem, warm, ctx, bound))
        if isinstance(res.solution, Schedule) and check(problem, res.solution).ok:
            warm = _better(problem, warm, res.solution, history, ctx, bound)
        _say(params, name, _point(problem, warm, ctx, bound))
    return dataclasses.replace(ctx, warm_start=warm, history=tuple(history))


def _better(
    problem: Any, warm: Any, cand: Schedule, history: list[TracePoint], ctx: Context, bound: int
) -> Any:
    """``cand`` when it is shorter than ``warm`` (its point added to ``history``), else
    ``warm``."""
    if cand.makespan(problem) >= warm.makespan(problem):
        return warm
    history.append(_point(problem, cand, ctx, bound))
    return cand


def _say(params: LnsParams, step: str, point: TracePoint) -> None:
    """With ``progress``, a line on stderr after each step before the rounds."""
    if params.progress:
        print(f"lns: {step} {point.incumbent} (bound {point.bound}, {point.time:.1f} s)",
              file=sys.stderr)  # fmt: skip


def _point(problem: Any, sched: Any, ctx: Context, bound: int | None = None) -> TracePoint:
    """An anytime point of ``sched`` now, its time from the call's start, with ``bound``
    (default: the instance's lower bound)."""
    t0 = time.perf_counter() if ctx.started is None else ctx.started
    lb = problem.lower_bound() if bound is None else bound
    return TracePoint(time.perf_counter() - t0, sched.makespan(problem), lb)


register(
    Method(
        "lns",
        (SchedulingInstance, RoutedInstance),
        ("cpsat",),
        run_lns,
        "large-neighbourhood search on the exact model of an instance with delays (joint on a "
        "mesh or hypercube, routed with links and memory): windows by start or by a core pair "
        "re-solved by CP-SAT, the rest fixed or closing up; stops at the lower bound",
        params=LnsParams,
        applies=_applies,
        prepare=_warm_start,
    )
)
