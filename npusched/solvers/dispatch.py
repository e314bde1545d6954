"""``solve_linear``: one :class:`~npusched.solvers.linear.LinearModel` on any linear backend."""

from __future__ import annotations

import numpy as np

from npusched.solvers.common import RawOutput
from npusched.solvers.linear import LinearModel

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

        raw = highs.solve_linear(lm, **kw)
    elif backend == "cpsat":
        from npusched.solvers import cpsat

        raw = cpsat.solve_linear(lm, **kw)
    elif backend in ("cbc", "pulp-highs"):
        from npusched.solvers import pulp_backend

        raw = pulp_backend.solve_linear(lm, solver="cbc" if backend == "cbc" else "highs", **kw)
    else:
        raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(LINEAR_BACKENDS)}")
    if raw.x is not None:
        # integer variables come back with round-off (1013.9999…): snap them, recompute the value
        integral = np.asarray(lm.integral)
        raw.x[integral] = np.round(raw.x[integral])
        raw.objective = lm.objective_value(raw.x)
    return raw
