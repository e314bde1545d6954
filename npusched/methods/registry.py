"""The registry behind ``solve(problem, method, backend, *, params) -> Result``.

Each decision registers its methods in its own module (:mod:`npusched.methods.scheduling`,
:mod:`~npusched.methods.placement`, :mod:`~npusched.methods.tiling`,
:mod:`~npusched.methods.flexer`). A :class:`Method` names the problem type it solves, its
backends, its parameters (a small frozen dataclass, PyVRP's ``SolveParams``), whether it applies
to a given problem, and how to run it. :func:`solve` does what is common to all: it checks the
names, builds the parameters (unknown names raise), sets the deadline, runs, and stamps the
:class:`~npusched.solvers.result.Result` with its runtime, threads, seed and time limit.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from npusched.solvers.common import STOPPED, run_within, why_stopped
from npusched.solvers.result import Result, Status, TracePoint


@dataclass(frozen=True)
class NoParams:
    """Parameters of a method that takes none of its own."""


@dataclass(frozen=True)
class Context:
    """What every method takes besides its own parameters.

    Attributes
    ----------
    time_limit
        Wall-clock seconds for the whole call, model building included (``None``: no limit).
    threads, seed
        Solver threads and random seed.
    warm_start
        A feasible solution to start from (what it is depends on the decision), or ``None``.
    log
        Print the solver's log.
    deadline
        ``time.perf_counter()`` value at which the time limit runs out.
    started
        ``time.perf_counter()`` value at the start of the call (``None``: not known).
    history
        Anytime points found while preparing the warm start (``prepare``: the steps a method
        runs before its own search), their times in seconds from ``started``.
    """

    time_limit: float | None = None
    threads: int = 1
    seed: int = 0
    warm_start: Any = None
    log: bool = False
    deadline: float | None = None
    started: float | None = None
    history: tuple[TracePoint, ...] = ()

    def remaining(self) -> float | None:
        """Seconds left before the deadline (at least 0.01), or ``None`` without a limit."""
        if self.deadline is None:
            return None
        return max(0.01, self.deadline - time.perf_counter())

    def until(self, deadline: float | None) -> Context:
        """This context with an earlier ``deadline`` (for one stage of a method)."""
        return dataclasses.replace(self, deadline=deadline)


STOP_MARGIN = 0.1
"""Seconds before the limit at which :func:`bounded` stops the forked solve: killing it and
taking back control took up to 0.07 s on these machines with the solver's threads busy on both
cores (measured on the Stream bench's ResNet-18 pairs)."""


def bounded(method: str, backend: str, ctx: Context, run: Callable[[Context], Result]) -> Result:
    """``run(ctx)`` — model building and solving — in a forked process stopped at the time limit
    (:func:`~npusched.solvers.common.run_within`): building and loading large models overran
    limits by minutes (CP-SAT on 10⁴ μops and 10⁵ edges: 92 s for 15 s). The solver inside gets
    a second less to hand its answer back, and the process is stopped :data:`STOP_MARGIN` before
    the limit. Stopped, the result is ``time_limit_no_solution``
    (``error`` when the process died, e.g. past ``--memory-limit``) with the reason, and
    :func:`solve` returns the warm start in its place."""
    remaining = ctx.remaining()
    if remaining is None:
        return run(ctx)
    inner = ctx.until(time.perf_counter() + max(remaining - 1.0, remaining / 2))
    how, res = run_within(lambda: run(inner), max(0.01, remaining - STOP_MARGIN))
    if how == "done":
        return res
    status = Status.TIME_LIMIT_NO_SOLUTION if how == "time" else Status.ERROR
    return Result(status, method, backend, message=f"{backend} {why_stopped(how)}")


def _always(problem: Any) -> str | None:
    """The default ``applies`` of a :class:`Method`: ``None`` for every ``problem``, so the method
    solves every instance of its problem type."""
    return None


@dataclass(frozen=True)
class Method:
    """A registered method.

    Attributes
    ----------
    name
        What :func:`solve` and the CLI call it.
    problem
        The problem type(s) it solves.
    backends
        Backends it runs on; the first is the default (``"none"`` for heuristics).
    run
        ``run(problem, backend, params, ctx) -> Result``.
    description
        One line for ``--help`` and the README's tables.
    params
        Its parameters dataclass; :func:`solve` builds it from keyword options.
    applies
        ``applies(problem)`` is ``None`` when the method solves ``problem``, else the reason
        why not.
    prepare
        ``prepare(problem, params, ctx) -> ctx``: checks or builds the warm start before ``run``.
    default_for
        Problem types for which :func:`solve` uses this method when none is named.
    """

    name: str
    problem: type | tuple[type, ...]
    backends: tuple[str, ...]
    run: Callable[[Any, str, Any, Context], Result]
    description: str
    params: type = NoParams
    applies: Callable[[Any], str | None] = _always
    prepare: Callable[[Any, Any, Context], Context] | None = None
    default_for: tuple[type, ...] = ()

    def supports(self, problem: Any) -> bool:
        """Whether the method solves ``problem``."""
        return isinstance(problem, self.problem) and self.applies(problem) is None

    def make_params(self, params: Any = None, **options: Any) -> Any:
        """``params`` (default: the dataclass's defaults) with ``options`` replaced.

        Raises
        ------
        ValueError
            ``params`` is of another method, or an option is not one of its fields.
        """
        if params is None:
            params = self.params()
        elif not isinstance(params, self.params):
            raise ValueError(
                f"method {self.name!r} takes {self.params.__name__}, not {type(params).__name__}"
            )
        fields = [f.name for f in dataclasses.fields(self.params)]
        unknown = sorted(set(options) - set(fields))
        if unknown:
            takes = f"its options: {', '.join(fields)}" if fields else "it takes none"
            raise ValueError(f"method {self.name!r} has no option {', '.join(unknown)} ({takes})")
        return dataclasses.replace(params, **options) if options else params


#: Every registered method by name, in registration order.
METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add ``method`` to :data:`METHODS`.

    Raises
    ------
    ValueError
        A method of that name exists.
    """
    if method.name in METHODS:
        raise ValueError(f"method {method.name!r} is registered twice")
    METHODS[method.name] = method
    return method


def applicable(problem: Any) -> list[str]:
    """Names of the methods that solve ``problem``."""
    return [name for name, m in METHODS.items() if m.supports(problem)]


def default_method(problem: Any) -> str:
    """The default method for ``problem``'s type.

    Raises
    ------
    ValueError
        No method solves problems of that type.
    """
    for name, m in METHODS.items():
        if isinstance(problem, m.default_for):
            return name
    raise ValueError(f"no method solves a {type(problem).__name__}")


def _resolve(problem: Any, method: str | None, backend: str | None) -> tuple[Method, str]:
    name = method or default_method(problem)
    try:
        meth = METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}") from None
    backend = backend or meth.backends[0]
    if backend not in meth.backends:
        raise ValueError(f"method {name!r} runs on {', '.join(meth.backends)}, not {backend!r}")
    if not isinstance(problem, meth.problem):
        why = f" (it solves {_type_names(meth.problem)}, not {type(problem).__name__})"
    else:
        reason = meth.applies(problem)
        why = "" if reason is None else f" ({reason})"
    if why:
        fits = applicable(problem)
        raise ValueError(f"method {name!r} does not apply to this instance{why}; use one of {fits}")
    return meth, backend


def _meets(objective: float | None, bound: float | None) -> bool:
    """The objective reaches its bound (minimisation; both in the objective's units)."""
    return objective is not None and bound is not None and objective <= bound + 1e-9


def _forwarding_bound(problem: Any, result: Result) -> None:
    """On a routed instance whose cores may forward DRAM tensors
    (:attr:`~npusched.problem.scheduling.routed.RoutedInstance.forward`), which the exact models
    do not model, a bound or optimum a model proved holds for its schedules only: the result's
    bound (and its trace's) is capped by the instance's own lower bound, which holds for
    forwarded copies too, and a status of optimal stays only where the solution meets it."""
    floor = float(problem.lower_bound())
    capped = result.bound is not None and result.bound > floor
    if capped:
        result.bound = floor
        result.message = (result.message + "; " if result.message else "") + (
            "bound capped at the instance's lower bound: the models do not forward DRAM tensors")
    result.trace = [dataclasses.replace(p, bound=min(p.bound, floor)) if p.bound is not None
                    else p for p in result.trace]  # fmt: skip
    if result.status is Status.OPTIMAL and not _meets(result.objective, floor):
        result.status = Status.FEASIBLE


def _type_names(types: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))


def _keep_warm_start(problem: Any, result: Result, warm: Any) -> Result:
    """A solver that ended without a solution of its own — stopped by its time limit or its
    memory limit, or in error — while the warm start it was given (checked feasible by
    ``prepare``) is in hand: return the warm start, with the solver's bound or else the
    problem's trivial lower bound (the better of the two), ``stats["fallback"] = "warm_start"``
    and a note. Stopped by a limit, the result is ``feasible`` (``optimal`` when the warm start
    meets the bound); after a solver error it stays ``error`` (the CLI exits non-zero) but still
    carries the warm start."""
    if hasattr(warm, "makespan"):
        value = float(warm.makespan(problem))
    elif hasattr(warm, "loc") and hasattr(problem, "cost"):
        value = float(problem.cost(warm.loc))
    else:
        return result
    if result.status is Status.TIME_LIMIT_NO_SOLUTION:
        note = "no solution within the time limit: this is the warm start the solver was given"
        result.status = Status.FEASIBLE
    elif STOPPED["died"] in result.message:
        note = "no solution within the memory limit: this is the warm start the solver was given"
        result.status = Status.FEASIBLE
    else:
        note = "the solver ended in error: this is the warm start it was given, not its answer"
    result.objective, result.solution = value, warm
    if hasattr(problem, "lower_bound"):  # both bounds hold: keep the better
        trivial = float(problem.lower_bound())
        result.bound = trivial if result.bound is None else max(result.bound, trivial)
    if result.status is Status.FEASIBLE and result.bound is not None and value <= result.bound:
        result.status = Status.OPTIMAL  # the warm start meets the bound
    result.stats["fallback"] = "warm_start"
    result.message = f"{result.message}; {note}" if result.message else note
    return result


def solve(
    problem: Any,
    method: str | None = None,
    backend: str | None = None,
    *,
    params: Any = None,
    time_limit: float | None = 10.0,
    threads: int = 1,
    seed: int = 0,
    warm_start: Any = None,
    log: bool = False,
    **options: Any,
) -> Result:
    """Solve ``problem`` with ``method`` on ``backend``.

    Parameters
    ----------
    problem
        Any registered problem type: a scheduling, routed or placement instance, a TSO layer, a
        Flexer layer problem, ... (:data:`METHODS` lists what solves what).
    method
        A name in :data:`METHODS`; default: the one registered as default for the problem's type.
    backend
        One of the method's backends; default its first.
    params
        The method's parameters dataclass (``METHODS[method].params``); default its defaults.
    time_limit
        Wall-clock seconds for the whole call, model building included.
    threads, seed
        Solver threads and random seed.
    warm_start
        A feasible solution to start from (checked before it is used).
    log
        Print the solver's log.
    **options
        Fields of ``params`` to replace, e.g. ``solve(inst, "timeindexed", relaxed=True)``.

    Raises
    ------
    ValueError
        Unknown method, backend or option, or a method that does not apply to ``problem``.
    """
    t0 = time.perf_counter()
    meth, backend = _resolve(problem, method, backend)
    prm = meth.make_params(params, **options)
    deadline = None if time_limit is None else t0 + time_limit
    ctx = Context(time_limit, threads, seed, warm_start, log, deadline, t0)
    if meth.prepare is not None:
        ctx = meth.prepare(problem, prm, ctx)
    result = meth.run(problem, backend, prm, ctx)
    lost = result.status in (Status.TIME_LIMIT_NO_SOLUTION, Status.ERROR)
    if lost and result.solution is None and ctx.warm_start is not None:
        result = _keep_warm_start(problem, result, ctx.warm_start)
    if getattr(problem, "forward", False):
        _forwarding_bound(problem, result)
    if result.status is Status.FEASIBLE and _meets(result.objective, result.bound):
        result.status = Status.OPTIMAL  # a solution at its proven bound is optimal
    result.runtime_s = time.perf_counter() - t0
    result.threads, result.seed, result.time_limit = threads, seed, time_limit
    if not result.trace and result.objective is not None:
        result.trace = [TracePoint(result.runtime_s, result.objective, result.bound)]
    return result
