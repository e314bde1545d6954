"""A schedule: start time and core of every μop, as arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npusched.problem.scheduling.dag import IntArray
from npusched.problem.scheduling.instance import SchedulingInstance


@dataclass(frozen=True, eq=False)
class Schedule:
    """Start cycle and core index of each μop (``start[i]``, ``core[i]``, indices into the
    instance).

    The schedule recomputes its own objective from the instance; it trusts no solver.
    """

    start: IntArray
    core: IntArray

    def __post_init__(self) -> None:
        start = np.asarray(self.start, dtype=np.int64).reshape(-1)
        core = np.asarray(self.core, dtype=np.int64).reshape(-1)
        if start.shape != core.shape:
            raise ValueError("start and core need one entry per μop")
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "core", core)

    def end(self, instance: SchedulingInstance) -> IntArray:
        """Finish cycle of each μop on its core."""
        return self.start + instance.duration[np.arange(instance.n), self.core]

    def makespan(self, instance: SchedulingInstance) -> int:
        """The makespan ``Cmax`` in cycles: the latest finish (:meth:`end`) over all μops,
        recomputed from ``instance``'s durations."""
        return int(self.end(instance).max())


def assign_cores(start: IntArray, duration: IntArray, m: int) -> IntArray:
    """Give each μop a core for fixed start times on ``m`` identical cores.

    Intervals are placed in start order on a core that is free (interval-graph colouring), which
    succeeds whenever at most ``m`` μops run at any instant. Where more run, the μop goes to
    the core that frees first and overlaps there: ``verify`` reports the overload instead of
    hiding it.
    """
    order = np.lexsort((duration, start))
    free_at = np.zeros(m, dtype=np.int64)
    core = np.empty(start.size, dtype=np.int64)
    for i in order:
        k = int(np.argmin(free_at))
        core[i] = k
        free_at[k] = max(free_at[k], start[i] + duration[i]) if duration[i] > 0 else free_at[k]
    return core
