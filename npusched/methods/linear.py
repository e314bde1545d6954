"""Running a formulation's :class:`~npusched.solvers.linear.LinearModel` inside a method: warm
start in, decoded solution and :class:`~npusched.solvers.result.Result` out."""

from __future__ import annotations

from typing import Any

from npusched.methods.registry import Context
from npusched.solvers.common import RawOutput
from npusched.solvers.dispatch import solve_linear
from npusched.solvers.result import Result


def run_model(model: Any, backend: str, warm: Any, ctx: Context) -> tuple[RawOutput, Any]:
    """Run ``model.model`` on ``backend`` warm-started from ``model.hint(warm)`` within the
    context's deadline; return the backend's output and ``model.decode`` of its answer."""
    raw = solve_linear(
        model.model,
        backend,
        time_limit=ctx.remaining(),
        threads=ctx.threads,
        seed=ctx.seed,
        warm_start=model.hint(warm),
        log=ctx.log,
    )
    return raw, (model.decode(raw.x) if raw.x is not None else None)


def linear_result(
    method: str, backend: str, raw: RawOutput, solution: Any, stats: dict[str, Any]
) -> Result:
    """The :class:`Result` of one linear solve: the backend's status, objective, bound, trace."""
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
