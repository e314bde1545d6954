"""Gantt chart of a schedule, one row per core."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from npusched.plot._figure import finish
from npusched.problem import Schedule, SchedulingInstance
from npusched.problem.scheduling.routed import (
    FORWARD,
    RoutedInstance,
    RoutedSchedule,
    required_transfers,
)
from npusched.verify.scheduling.memory import move_routes


def _transfers(
    ax: plt.Axes, instance: SchedulingInstance, schedule: Schedule, end: np.ndarray
) -> None:
    from npusched.verify.scheduling.schedule import edge_delays

    g = instance.graph
    delay = edge_delays(instance, schedule)
    moved = np.flatnonzero(delay > 0)
    row = schedule.core[g.dst[moved]]
    for k in np.unique(row).tolist():  # one collection per core: fast with 10⁵ transfers
        e = moved[row == k]
        spans = np.stack([end[g.src[e]], delay[e]], axis=1).tolist()
        ax.broken_barh(spans, (k + 0.4, 0.1), facecolors="tab:orange", alpha=0.7)


def _link_rows(ax: plt.Axes, inst: RoutedInstance, sched: RoutedSchedule) -> list[str]:
    """One row per link (bus) under the cores: its transfers, DRAM fetches in red, eviction
    write-backs and re-fetches in purple, DRAM tensors forwarded between cores in green."""
    tr = required_transfers(inst, sched.core)
    topo = inst.topology
    spans = [(route, int(sched.tstart[t]), int(sched.tend[t]),
              "tab:red" if tr.src[t] < 0 else "tab:orange")
             for t, route in enumerate(tr.route) if sched.tstart[t] >= 0]  # fmt: skip
    mv = sched.moves
    if mv is not None:
        spans += [(route, int(mv.tstart[k]), int(mv.tend[k]),
                   "tab:green" if mv.kind[k] == FORWARD else "tab:purple")
                  for k, route in enumerate(move_routes(inst, sched))]  # fmt: skip
    rows: dict[int, list[tuple[int, int, str]]] = {}  # resource -> its bars, in first use
    names: list[str] = []
    for route, ts, te, color in spans:
        for x in route:
            r = int(topo.resource_of[x])
            if r not in rows:
                rows[r] = []
                names.append(f"link {topo.links[x].id}")
            rows[r].append((ts, te - ts, color))
    for y, bars in enumerate(rows.values(), start=inst.m):  # one collection per row
        colors = [c for *_, c in bars]
        ax.broken_barh([(ts, w) for ts, w, _ in bars], (y - 0.3, 0.6), facecolors=colors,
                       edgecolor="black", linewidth=0.2)  # fmt: skip
    return names


def gantt(
    instance: SchedulingInstance | RoutedInstance,
    schedule: Schedule | RoutedSchedule,
    path: str | Path | None = None,
    title: str = "",
    label_limit: int = 80,
) -> plt.Figure:
    """Draw ``schedule`` with cores as rows; μop ids are written in the bars when they fit.

    Bars are coloured by their position on the longest path (darker = more critical), so idle time
    that delays the critical chain stands out. On a NoC with transfer delays, each transfer between
    cores is a thin orange bar under the consumer's row, from the producer's end to the data's
    arrival. With routed transfers, each link (bus) used gets a row of its own below the cores
    (orange: outputs between cores, red: DRAM fetches). Returns the figure; saves a PNG when
    ``path`` is given."""
    routed = instance if isinstance(instance, RoutedInstance) else None
    base = routed.base if routed is not None else instance
    assert isinstance(base, SchedulingInstance)
    schedule_ = Schedule(schedule.start, schedule.core)
    end = schedule_.end(base)
    ms = int(end.max())
    slack = base.graph.heads(base.min_duration) + base.graph.tails(base.min_duration)
    crit = slack / max(1, slack.max())
    fig, ax = plt.subplots(
        figsize=(
            min(18, 4 + 0.08 * ms + 0.1 * base.n),
            1 + 0.45 * (base.m + (routed.topology.num_resources if routed else 0)),
        )
    )
    cmap = plt.get_cmap("viridis_r")
    colors = cmap(0.15 + 0.7 * crit)
    for k in np.unique(schedule.core).tolist():  # one collection per core: fast with 10⁵ μops
        on = np.flatnonzero(schedule.core == k)
        spans = np.stack([schedule.start[on], end[on] - schedule.start[on]], axis=1).tolist()
        ax.broken_barh(spans, (k - 0.4, 0.8), facecolors=colors[on], edgecolor="black",
                       linewidth=0.4)  # fmt: skip
    for i in range(base.n) if base.n <= label_limit else ():
        k, s, e = int(schedule.core[i]), int(schedule.start[i]), int(end[i])
        ax.text((s + e) / 2, k, str(base.graph.ids[i]), ha="center", va="center", fontsize=7,
                color="white")  # fmt: skip
    labels = [f"core {c.id}" for c in base.accelerator.cores]
    if routed is not None and isinstance(schedule, RoutedSchedule):
        labels += _link_rows(ax, routed, schedule)
    else:
        _transfers(ax, base, schedule_, end)
    ax.axvline(ms, color="red", lw=1, ls="--")
    ax.set_xlim(left=0)
    ax.set_yticks(np.arange(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("cycle")
    ax.set_title(title or f"{base.name}: makespan {ms}")
    return finish(fig, path)
