"""``solve_linear``: one :class:`~npusched.solvers.linear.LinearModel` on any linear backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from npusched.solvers.common import RawOutput, run_within, why_stopped
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Status

LINEAR_BACKENDS = ("highs", "cbc", "pulp-highs", "cpsat")
CHILD_ABOVE = 200_000
"""Models of at least this many columns run in a forked process stopped at the time limit
(:func:`~npusched.solvers.common.run_within`): passing and presolving them takes HiGHS seconds
to minutes in which it does not check its limit (a 1.6 M-column slot ILP: 26 s against 10 s)."""
GRACE = 1.0
"""Seconds (at most half the limit) the solver in the child gives up to hand back its answer."""


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
    if time_limit is not None and lm.num_vars >= CHILD_ABOVE and backend in LINEAR_BACKENDS:
        inner = dict(kw, time_limit=max(time_limit - GRACE, time_limit / 2))
        how, raw = run_within(lambda: _run(lm, backend, inner), time_limit)
        if how != "done":
            status = Status.TIME_LIMIT_NO_SOLUTION if how == "time" else Status.ERROR
            return RawOutput(
                status, message=f"{backend} {why_stopped(how)} ({lm.num_vars} columns)"
            )
    else:
        raw = _run(lm, backend, kw)
    if raw.x is not None:
        # integer variables come back with round-off (1013.9999…): snap them, recompute the value
        integral = np.asarray(lm.integral)
        fractional = bool((np.abs(raw.x[integral] - np.round(raw.x[integral])) > 1e-5).any())
        raw.x[integral] = np.round(raw.x[integral])
        if fractional or not lm.satisfies(raw.x, tol=1e-4, rel=1e-6):  # CBC stopped in its LP
            return RawOutput(Status.TIME_LIMIT_NO_SOLUTION, trace=raw.trace, message=(
                f"{backend} reported {raw.status.value} but its values do not satisfy the model "
                "(a fractional or partial answer); not used"))  # fmt: skip
        raw.objective = lm.objective_value(raw.x)
    return raw


def _run(lm: LinearModel, backend: str, kw: dict[str, Any]) -> RawOutput:
    if backend == "highs":
        from npusched.solvers import highs

        raw = highs.solve_linear(lm, **kw)
    elif backend == "cpsat":
        from npusched.solvers import cpsat

        raw = cpsat.solve_linear(lm, **kw)
    elif backend in ("cbc", "pulp-highs"):
        from npusched.solvers import pulp_backend

        raw = pulp_backend.solve_linear(lm, solver="cbc" if backend == "cbc" else "highs", **kw)
    else:
        raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(LINEAR_BACKENDS)}")
    return raw
