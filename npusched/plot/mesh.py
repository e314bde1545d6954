"""Mesh heat map: traffic on every directed link under XY routing."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection

from npusched.plot._figure import finish
from npusched.problem.scheduling.noc import Mesh


def link_traffic(
    mesh: Mesh, src_cell: np.ndarray, dst_cell: np.ndarray, weight: np.ndarray
) -> np.ndarray:
    """Traffic per link id: each transfer adds its weight to every link of its XY route."""
    load = np.zeros(len(mesh.links))
    for a, b, w in zip(src_cell.tolist(), dst_cell.tolist(), weight.tolist(), strict=True):
        for link in mesh.route(a, b):
            load[link] += w
    return load


def mesh_heatmap(
    mesh: Mesh,
    load: np.ndarray,
    labels: dict[int, str] | None = None,
    path: str | Path | None = None,
    title: str = "",
) -> plt.Figure:
    """Cores as squares, each directed link as an offset segment coloured by its traffic."""
    fig, ax = plt.subplots(figsize=(1.6 * mesh.cols + 1.5, 1.6 * mesh.rows))
    segs, off = [], 0.08
    for a, b in mesh.links:
        (ra, ca), (rb, cb) = divmod(a, mesh.cols), divmod(b, mesh.cols)
        dr, dc = rb - ra, cb - ca
        shift = np.array([dc, -dr]) * off  # opposite directions side by side
        segs.append(
            [
                (ca + 0.2 * dc + shift[1], ra + 0.2 * dr + shift[0]),
                (cb - 0.2 * dc + shift[1], rb - 0.2 * dr + shift[0]),
            ]
        )
    vmax = max(1.0, float(load.max()))
    lc = LineCollection(segs, cmap="inferno_r", linewidths=5)
    lc.set_array(load)
    lc.set_clim(0, vmax)
    ax.add_collection(lc)
    for k in range(mesh.size):
        r, c = divmod(k, mesh.cols)
        ax.add_patch(plt.Rectangle((c - 0.18, r - 0.18), 0.36, 0.36, fc="#dde", ec="black"))
        text = labels.get(k, str(k)) if labels else str(k)
        ax.text(c, r, text, ha="center", va="center", fontsize=8)
    ax.set_xlim(-0.5, mesh.cols - 0.5)
    ax.set_ylim(mesh.rows - 0.5, -0.5)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.colorbar(lc, ax=ax, label="traffic per link")
    ax.set_title(title or f"{mesh.rows}x{mesh.cols} mesh: total {load.sum():g}")
    return finish(fig, path)
