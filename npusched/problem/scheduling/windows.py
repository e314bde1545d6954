"""ASAP / ALAP scheduling windows (Klotski §II-B, eq. 1–2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npusched.problem.scheduling.dag import IntArray
from npusched.problem.scheduling.instance import SchedulingInstance


@dataclass(frozen=True)
class Windows:
    """Start window ``[S_i, L_i]`` of every μop for a makespan of at most ``horizon``."""

    earliest: IntArray
    latest: IntArray
    horizon: int

    @property
    def width(self) -> IntArray:
        """Number of feasible start cycles of each μop, ``L_i − S_i + 1`` (shape ``(n,)``): its
        binaries ``X_ij`` in the time-indexed model (eq. 16)."""
        return self.latest - self.earliest + 1


def asap_alap(instance: SchedulingInstance, horizon: int) -> Windows:
    """Klotski eq. 1–2 with the list-scheduling makespan as the horizon ``T``.

    .. math::

        \\mathrm{ASAP}(u_i) = \\max_{u_j \\prec u_i} \\mathrm{ASAP}(u_j) + l(u_j), \\qquad
        \\mathrm{ALAP}(u_i) = \\min_{u_i \\prec u_j} \\mathrm{ALAP}(u_j) - l(u_i)

    with ``ASAP = 0`` at sources and ``ALAP = T − l(u_i)`` at sinks. Eq. 2 as printed subtracts
    ``l(u_j)``, the successor's latency; the latest start of ``u_i`` must leave room for its *own*
    latency, so we subtract ``l(u_i)`` (the usual ALAP). The ALAP of a sink is ``T − l(u_i)``, so
    that any schedule of makespan ≤ T starts every μop inside its window. With per-core latencies
    the fastest latency is used, which keeps the windows valid for every core assignment.
    """
    d = instance.min_duration
    head = instance.graph.heads(d)
    tail = instance.graph.tails(d)
    latest = horizon - tail
    if (latest < head).any():
        i = int(np.argmax(head - latest))
        raise ValueError(
            f"horizon {horizon} is shorter than the critical path through μop "
            f"{instance.graph.ids[i]} ({head[i] + tail[i]})"
        )
    return Windows(head, latest, horizon)
