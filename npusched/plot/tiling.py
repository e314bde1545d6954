"""Plots of tile choices: a roofline of the chosen tiles (TSO Fig. 11) and the LOAD / STORE / MAC
time breakdown of two tile selections side by side (TSO Fig. 9)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from npusched.plot._figure import finish


def roofline(
    intensity: Sequence[float],
    performance: Sequence[float],
    peak: float,
    bandwidth: float,
    labels: Sequence[str] | None = None,
    path: str | Path | None = None,
    title: str = "",
) -> plt.Figure:
    """Attained performance against operational intensity, under the roof
    ``min(peak, bandwidth · intensity)``.

    Parameters
    ----------
    intensity
        MACs per byte moved to and from DRAM, one point per layer (or tile choice).
    performance
        Attained MACs per second of the same points.
    peak, bandwidth
        Peak MACs per second of the accelerator and its DRAM bandwidth in bytes per second.
    labels
        Optional point labels (layer names), written when there are at most 30 points.
    """
    x = np.asarray(intensity, dtype=float)
    y = np.asarray(performance, dtype=float)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    lo = max(min(float(x.min()) / 2, peak / bandwidth / 10), 1e-3) if x.size else 1e-2
    hi = max(float(x.max()) * 2, peak / bandwidth * 10) if x.size else 1e3
    xs = np.geomspace(lo, hi, 200)
    ax.loglog(xs, np.minimum(peak, bandwidth * xs), color="black", lw=1.5, label="roof")
    ax.axvline(peak / bandwidth, color="grey", ls=":", lw=1, label="ridge point")
    ax.scatter(x, y, s=18, color="tab:blue", zorder=3, label="chosen tiles")
    if labels is not None and len(labels) <= 30:
        for xi, yi, name in zip(x, y, labels, strict=True):
            ax.annotate(name, (xi, yi), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("operational intensity (MAC / DRAM byte)")
    ax.set_ylabel("attained performance (MAC / s)")
    ax.set_title(title or "roofline of the chosen tiles")
    ax.legend(fontsize=8)
    return finish(fig, path)


def time_breakdown(
    names: Sequence[str],
    parts: dict[str, dict[str, Sequence[float]]],
    path: str | Path | None = None,
    title: str = "",
) -> plt.Figure:
    """Stacked LOAD / STORE / MAC time per layer for each selection (e.g. ``{"burst": {"load":
    …, "store": …, "mac": …}, "noburst": {…}}``), bars side by side."""
    keys = list(parts)
    n = len(names)
    width = 0.8 / max(1, len(keys))
    fig, ax = plt.subplots(figsize=(min(18, 3 + 0.35 * n * len(keys)), 4))
    colors = {"load": "tab:blue", "store": "tab:orange", "mac": "tab:green"}
    for s, key in enumerate(keys):
        bottom = np.zeros(n)
        xs = np.arange(n) + (s - (len(keys) - 1) / 2) * width
        for part in ("load", "store", "mac"):
            v = np.asarray(parts[key][part], dtype=float)
            ax.bar(
                xs,
                v,
                width,
                bottom=bottom,
                color=colors[part],
                alpha=1.0 if s == 0 else 0.55,
                edgecolor="black",
                linewidth=0.3,
                label=f"{part.upper()} ({key})",
            )
            bottom += v
    ax.set_xticks(np.arange(n), names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("time (µs)")
    ax.set_title(title or "time per layer: LOAD / STORE / MAC")
    ax.legend(fontsize=7, ncol=len(keys))
    return finish(fig, path)
