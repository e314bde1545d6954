"""What a backend returns before the method decodes it into a :class:`Result`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from npusched.solvers.result import Status, TracePoint


@dataclass
class RawOutput:
    """Backend outcome for a :class:`~npusched.solvers.linear.LinearModel`."""

    status: Status
    x: NDArray[np.float64] | None = None
    objective: float | None = None
    bound: float | None = None
    trace: list[TracePoint] = field(default_factory=list)
    message: str = ""


class TraceRecorder:
    """Collects (time, incumbent, bound) points from solver callbacks, dropping repeats."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.points: list[TracePoint] = []
        self.incumbent: float | None = None
        self.bound: float | None = None

    def update(
        self, incumbent: float | None = None, bound: float | None = None, at: float | None = None
    ) -> None:
        changed = False
        if incumbent is not None and np.isfinite(incumbent) and incumbent != self.incumbent:
            self.incumbent, changed = float(incumbent), True
        if bound is not None and np.isfinite(bound) and bound != self.bound:
            self.bound, changed = float(bound), True
        if changed:
            t = time.perf_counter() - self.t0 if at is None else at
            self.points.append(TracePoint(t, self.incumbent, self.bound))
