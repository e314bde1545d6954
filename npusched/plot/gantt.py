"""Gantt chart of a schedule, one row per core."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from npusched.plot._figure import finish
from npusched.problem import Schedule, SchedulingInstance


def _transfers(
    ax: plt.Axes, instance: SchedulingInstance, schedule: Schedule, end: np.ndarray
) -> None:
    from npusched.verify.schedule import edge_delays

    g = instance.graph
    delay = edge_delays(instance, schedule)
    for e in np.flatnonzero(delay > 0).tolist():
        p, q = int(g.src[e]), int(g.dst[e])
        ax.barh(
            int(schedule.core[q]) + 0.45,
            int(delay[e]),
            left=int(end[p]),
            height=0.1,
            color="tab:orange",
            alpha=0.7,
        )


def gantt(
    instance: SchedulingInstance,
    schedule: Schedule,
    path: str | Path | None = None,
    title: str = "",
    label_limit: int = 80,
) -> plt.Figure:
    """Draw ``schedule`` with cores as rows; μop ids are written in the bars when they fit.

    Bars are coloured by their position on the longest path (darker = more critical), so idle time
    that delays the critical chain stands out. On a NoC with transfer delays, each transfer between
    cores is a thin orange bar under the consumer's row, from the producer's end to the data's
    arrival. Returns the figure; saves a PNG when ``path`` is given."""
    end = schedule.end(instance)
    ms = int(end.max())
    slack = instance.graph.heads(instance.min_duration) + instance.graph.tails(
        instance.min_duration
    )
    crit = slack / max(1, slack.max())
    fig, ax = plt.subplots(
        figsize=(min(18, 4 + 0.08 * ms + 0.1 * instance.n), 1 + 0.45 * instance.m)
    )
    cmap = plt.get_cmap("viridis_r")
    for i in range(instance.n):
        k, s, e = int(schedule.core[i]), int(schedule.start[i]), int(end[i])
        ax.barh(
            k,
            e - s,
            left=s,
            height=0.8,
            color=cmap(0.15 + 0.7 * crit[i]),
            edgecolor="black",
            linewidth=0.4,
        )
        if instance.n <= label_limit:
            ax.text(
                (s + e) / 2,
                k,
                str(instance.graph.ids[i]),
                ha="center",
                va="center",
                fontsize=7,
                color="white",
            )
    _transfers(ax, instance, schedule, end)
    ax.axvline(ms, color="red", lw=1, ls="--")
    ax.set_yticks(np.arange(instance.m), [f"core {c.id}" for c in instance.accelerator.cores])
    ax.invert_yaxis()
    ax.set_xlabel("cycle")
    ax.set_title(title or f"{instance.name}: makespan {ms}")
    return finish(fig, path)
