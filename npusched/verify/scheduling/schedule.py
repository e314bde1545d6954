"""Check a schedule against its instance without trusting the method that produced it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Self

import numpy as np

from npusched.common.limits import MAX_TIME, MAX_VALUE
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule


class VerificationError(AssertionError):
    """A schedule violates its instance."""


class Checked:
    """``ok`` and ``raise_if_failed`` for a report with a ``violations`` list."""

    violations: list[str]

    @property
    def ok(self) -> bool:
        return not self.violations

    def raise_if_failed(self) -> Self:
        """Return ``self``, or raise :class:`VerificationError` listing the violations."""
        if self.violations:
            shown = "\n  ".join(self.violations[:10])
            more = (
                f"\n  ... and {len(self.violations) - 10} more" if len(self.violations) > 10 else ""
            )
            raise VerificationError(f"{len(self.violations)} violation(s):\n  {shown}{more}")
        return self


@dataclass
class VerifyReport(Checked):
    """Outcome of :func:`verify`: the recomputed makespan and every violation found."""

    makespan: int | None
    violations: list[str] = field(default_factory=list)
    noc_cost: int | None = None
    noc_bytes_hops: int | None = None


def edge_delays(instance: SchedulingInstance, schedule: Schedule) -> np.ndarray:
    """Transfer time of every edge under ``schedule`` (0 on one core or without NoC delays)."""
    acc, g = instance.accelerator, instance.graph
    if not acc.has_comm_delays:
        return np.zeros(g.num_edges, dtype=np.int64)
    hops = acc.hops()[schedule.core[g.src], schedule.core[g.dst]]
    return acc.comm_delay(hops, g.bytes).astype(np.int64)


def _outside_domain(instance: SchedulingInstance, schedule: Schedule) -> list[str]:
    """Durations above 2^40 or transfer delays above 2^61 (an instance built in code, beyond
    what the readers accept): with starts at most ``MAX_TIME`` every sum below is then an
    int64, so a verdict is never drawn from a value that wrapped around."""
    g, acc = instance.graph, instance.accelerator
    bad = []
    for i, k in np.argwhere(instance.duration > MAX_VALUE)[:10]:
        bad.append(
            f"μop {g.ids[i]} takes {instance.duration[i, k]} cycles on core index {k}, "
            "more than 2^40: outside the domain verify checks"
        )
    if acc.has_comm_delays and g.num_edges:
        hops = acc.hops()[schedule.core[g.src], schedule.core[g.dst]]
        per_hop, fixed = acc.delay_terms(g.bytes)
        approx = np.where(hops > 0, hops * per_hop.astype(float) + fixed, 0.0)
        for e in np.flatnonzero(~(approx <= 2.0**61))[:10]:
            bad.append(
                f"transfer {g.ids[g.src[e]]} -> {g.ids[g.dst[e]]} takes {approx[e]:.3g} cycles, "
                "more than 2^61: outside the domain verify checks"
            )
    return bad


def verify(
    instance: SchedulingInstance, schedule: Schedule, claimed_makespan: float | None = None
) -> VerifyReport:
    """Check that ``schedule`` is feasible for ``instance``; on a mesh, recompute the NoC cost.

    Checks: every μop has exactly one start and one core; starts are non-negative integers; cores
    exist; each edge ``u → v`` has ``start[v] ≥ end[u] + delay`` (``delay`` = the NoC transfer
    time between their cores, :meth:`Accelerator.comm_delay`); no two μops overlap on one core
    (half-open intervals ``[start, end)``); the makespan is recomputed and compared with
    ``claimed_makespan`` when given. When the cores sit on a mesh or a hypercube, ``noc_cost``
    is Klotski's eq. 14 (Σ over producer→consumer edges of the hops between their cores) and
    ``noc_bytes_hops`` the same weighted by the edges' bytes.
    """
    g, n, m = instance.graph, instance.n, instance.m
    ids = g.ids
    if schedule.start.shape != (n,) or schedule.core.shape != (n,):
        return VerifyReport(None, [f"schedule has {schedule.start.size} entries for {n} μops"])
    bad: list[str] = []
    for i in np.flatnonzero(schedule.start < 0):
        bad.append(f"μop {ids[i]} starts at negative time {schedule.start[i]}")
    for i in np.flatnonzero(schedule.start > MAX_TIME)[:10]:  # start + duration stays an int64
        bad.append(f"μop {ids[i]} starts at {schedule.start[i]}, past the time domain 0..MAX_TIME")
    for i in np.flatnonzero((schedule.core < 0) | (schedule.core >= m)):
        bad.append(
            f"μop {ids[i]} is on core index {schedule.core[i]}, which does not exist (m={m})"
        )
    if bad:
        return VerifyReport(None, bad)
    bad = _outside_domain(instance, schedule)
    if bad:
        return VerifyReport(None, bad)

    end = schedule.end(instance)
    ready = end[g.src] + edge_delays(instance, schedule)
    late = np.flatnonzero(schedule.start[g.dst] < ready)
    for e in late:
        u, v = int(g.src[e]), int(g.dst[e])
        wait = "" if ready[e] == end[u] else f" plus its transfer, i.e. by {ready[e]}"
        bad.append(
            f"precedence {ids[u]} -> {ids[v]}: {ids[v]} starts at {schedule.start[v]} "
            f"before {ids[u]} ends at {end[u]}{wait}"
        )

    busy = np.flatnonzero(end > schedule.start)  # zero-length μops occupy no core time
    order = busy[np.lexsort((schedule.start[busy], schedule.core[busy]))]
    same_core = schedule.core[order[1:]] == schedule.core[order[:-1]]
    clash = np.flatnonzero(same_core & (schedule.start[order[1:]] < end[order[:-1]]))
    for k in clash:
        a, b = int(order[k]), int(order[k + 1])
        bad.append(
            f"core {instance.accelerator.cores[schedule.core[a]].id}: μops {ids[a]} "
            f"[{schedule.start[a]}, {end[a]}) and {ids[b]} [{schedule.start[b]}, {end[b]}) "
            "overlap"
        )

    makespan = int(end.max())
    if claimed_makespan is not None and abs(claimed_makespan - makespan) > 1e-6:
        bad.append(f"claimed makespan {claimed_makespan} differs from recomputed {makespan}")
    report = VerifyReport(makespan, bad)
    acc = instance.accelerator
    if acc.topology is not None:
        hops = acc.hops()[schedule.core[g.src], schedule.core[g.dst]]
        report.noc_cost = int(hops.sum())
        report.noc_bytes_hops = int((hops * g.bytes).sum())
    return report
