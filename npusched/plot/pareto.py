"""The latency–memory trade-off of allocations (Stream's GA, §III-D): every allocation evaluated,
its Pareto front, and a reference point (Stream's own allocation)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from npusched.plot._figure import finish


def pareto_front(
    makespan: np.ndarray,
    peak: np.ndarray,
    front: np.ndarray,
    path: str | Path | None = None,
    reference: tuple[float, float] | None = None,
    title: str = "",
    unit: str = "bits",
    energy: np.ndarray | None = None,
) -> plt.Figure:
    """Scatter of ``(makespan, peak)`` of every feasible allocation and the front (indices
    ``front``; joined as a staircase when it is the front of these two objectives alone, else
    coloured by ``energy``, the third), with ``reference`` marked. Returns the figure; saves a
    PNG at ``path``."""
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ok = np.isfinite(makespan) & np.isfinite(peak)
    ax.scatter(makespan[ok], peak[ok], s=12, color="0.6", label=f"evaluated ({int(ok.sum())})")
    order = front[np.argsort(makespan[front])]
    label = f"Pareto front ({order.size})"
    if energy is None:
        ax.step(makespan[order], peak[order], where="post", color="tab:blue", lw=1)
        ax.scatter(makespan[order], peak[order], s=30, color="tab:blue", label=label)
    else:
        dots = ax.scatter(makespan[order], peak[order], s=30, c=energy[order], cmap="viridis",
                          label=label + ", with energy")  # fmt: skip
        fig.colorbar(dots, ax=ax, label="compute energy")
    if reference is not None:
        ax.scatter([reference[0]], [reference[1]], marker="*", s=160, color="tab:red",
                   label="Stream's allocation", zorder=3)  # fmt: skip
    ax.set_xlabel("makespan (cycles)")
    ax.set_ylabel(f"peak memory, all cores ({unit})")
    ax.legend(fontsize=8)
    ax.set_title(title or "allocations: latency against memory", fontsize=10)
    return finish(fig, path)
