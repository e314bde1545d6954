"""Memory trace per core (Stream's Fig. 7): the data each core holds over time."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from npusched.plot._figure import finish
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.verify.scheduling.routed import residency


def memory_trace(
    inst: RoutedInstance,
    sched: RoutedSchedule,
    path: str | Path | None = None,
    title: str = "",
) -> plt.Figure:
    """One panel per core with its resident data over time
    (:func:`~npusched.verify.scheduling.routed.residency`: Stream's lifetime rules), its peak
    marked and its memory's size drawn dashed where the instance records one (its capacity, else
    ``source["memory_bits"]`` of a Stream export; named in a corner when the curve stays below a
    fifth of it). Returns the figure; saves a PNG at ``path``."""
    res = residency(inst, sched)
    sizes = inst.memory_sizes()
    cores = inst.accelerator.cores
    makespan = sched.makespan(inst)
    fig, axes = plt.subplots(len(cores), 1, sharex=True, squeeze=False,
                             figsize=(9, 0.6 + 1.4 * len(cores)))  # fmt: skip
    for k, (core, ax) in enumerate(zip(cores, axes[:, 0], strict=True)):
        t, level = res.usage(k)
        ax.step(np.r_[0, t], np.r_[0, level], where="post", color="tab:blue", lw=1)
        ax.fill_between(np.r_[0, t], np.r_[0, level], step="post", alpha=0.25)
        peak = int(level.max(initial=0))
        size = sizes[k]
        if size and peak >= size / 5:
            ax.axhline(size, color="red", ls="--", lw=1)
        elif size:  # a line far above the curve would flatten it
            ax.text(0.99, 0.9, f"memory {size} (off scale)", transform=ax.transAxes,
                    ha="right", va="top", fontsize=7, color="red")  # fmt: skip
        over = " — over its memory" if size and peak > size else ""
        ax.set_ylabel(f"core {core.id}", rotation=0, ha="right", va="center")
        ax.set_title(f"{core.name or core.id}: peak {peak} {inst.data_unit}{over}", fontsize=8,
                     loc="left")  # fmt: skip
        ax.set_ylim(bottom=0)
    axes[-1, 0].set_xlim(0, max(1, makespan))
    axes[-1, 0].set_xlabel("cycle")
    limit = "memory enforced" if inst.capacity is not None else "no memory limit"
    fig.suptitle(title or f"{inst.name}: resident {inst.data_unit} per core ({limit})")
    return finish(fig, path)
