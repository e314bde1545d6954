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


def load_windows(instance: SchedulingInstance, horizon: int) -> Windows:
    """Start windows for a makespan of at most ``horizon`` that also count the work around each
    μop (ours; valid for any core assignment, with the fastest latencies ``d``):

    .. math::

        S_i \\ge \\Bigl\\lceil \\tfrac{1}{m}
        \\textstyle\\sum_{j \\in \\mathrm{Anc}(i)} d_j \\Bigr\\rceil, \\qquad
        S_i + d_i \\le T - \\Bigl\\lceil \\tfrac{1}{m}
        \\textstyle\\sum_{j \\in \\mathrm{Desc}(i)} d_j \\Bigr\\rceil

    (every ancestor has ended on ``m`` cores before ``u_i`` starts, every descendant starts
    after it ends), then carried along the edges like eq. 1–2 (:meth:`UopGraph.heads
    <npusched.problem.scheduling.dag.UopGraph.heads>` with these as releases,
    :meth:`~npusched.problem.scheduling.dag.UopGraph.latest_starts` with these as due times).
    Much narrower than :func:`asap_alap` where the graph is wide and its paths short (generated
    graphs with a known optimum on 4 processors at density 20 %: 26 → 7 latencies wide on
    average at n = 300). ``O(n²)`` memory (the descendant matrix): for up to some thousands of
    μops. The windows may be empty (``latest < earliest``) when no schedule ends by
    ``horizon``."""
    g, m = instance.graph, instance.m
    d = instance.min_duration.astype(np.int64)
    reach = g.reach()
    above, below = np.zeros(g.n, np.int64), np.zeros(g.n, np.int64)
    for a in range(0, g.n, 1024):  # rows in blocks: no n × n integer copy of the matrix
        rows = reach[a : a + 1024].astype(np.int64)
        above += d[a : a + 1024] @ rows  # work of each μop's ancestors
        below[a : a + 1024] = rows @ d  # work of its descendants
    before, after = -(-above // m), -(-below // m)  # spread over m cores, rounded up
    earliest = g.heads(d, release=before)
    latest = g.latest_starts(d, horizon - after)
    return Windows(earliest, latest, horizon)
