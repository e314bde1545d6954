"""Where Flexer's out-of-order scheduling pays (issue 25, item 2): one heat map per NPU count of
the end-to-end speed-up over the best static order, global buffer × DRAM bandwidth
(:mod:`npusched.bench.flexer_sweep`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import TwoSlopeNorm

from npusched.plot._figure import finish


def sweep_grid(
    rows: Sequence[Mapping[str, Any]], npus: int, key: str
) -> tuple[list[float], list[float], np.ndarray]:
    """The buffers (KiB), the bandwidths and the ``(buffers, bandwidths)`` array of ``key`` of
    the rows with ``npus`` NPUs (NaN where a cell is missing or has no value)."""
    cells = [r for r in rows if r["npus"] == npus]
    buffers = sorted({float(r["buffer_kib"]) for r in cells})
    drams = sorted({float(r["dram"]) for r in cells})
    grid = np.full((len(buffers), len(drams)), np.nan)
    for r in cells:
        value = np.nan if r[key] is None else r[key]
        grid[buffers.index(float(r["buffer_kib"])), drams.index(float(r["dram"]))] = value
    return buffers, drams, grid


def sweep_heatmaps(rows: Sequence[Mapping[str, Any]], path: str | Path | None = None,
                   title: str = "", speed: str = "speedup",
                   saved: str = "transfer_reduction") -> Path | None:  # fmt: skip
    """A panel per NPU count: the speed-up (static latency / OoO latency, end to end; the rows'
    ``speed`` key) in colour, white at 1 (blue: OoO slower, red: faster), each cell labelled
    with the speed-up and the transfer reduction (``saved``, "b"); a cell without a ratio
    (``None``) stays blank. Saves a PNG at ``path`` and returns it; a ValueError for no
    rows."""
    if not rows:
        raise ValueError("no sweep rows to draw")
    counts = sorted({int(r["npus"]) for r in rows})
    spans = np.array([r[speed] for r in rows if r[speed] is not None] or [1.0])
    norm = TwoSlopeNorm(vcenter=1.0, vmin=min(0.95, spans.min()), vmax=max(1.05, spans.max()))
    fig, axes = plt.subplots(1, len(counts), figsize=(4.2 * len(counts) + 1, 3.8), squeeze=False)
    image = None
    for ax, n in zip(axes[0], counts, strict=True):
        buffers, drams, up = sweep_grid(rows, n, speed)
        _, _, less = sweep_grid(rows, n, saved)
        image = ax.imshow(up, cmap="RdBu_r", norm=norm, origin="lower", aspect="auto")
        for i, j in np.ndindex(up.shape):
            if not np.isnan(up[i, j]):
                dark = abs(float(norm(up[i, j])) - 0.5) > 0.3  # white text on deep colour
                ax.text(j, i, f"{up[i, j]:.2f}×\n{less[i, j]:.2f}b", ha="center",
                        va="center", fontsize=7, color="white" if dark else "black")  # fmt: skip
        ax.set_xticks(range(len(drams)), [f"{d:g}" for d in drams])
        ax.set_yticks(range(len(buffers)), [f"{b:g}" for b in buffers])
        ax.set_xlabel("DRAM bandwidth (bytes/cycle)")
        ax.set_ylabel("global buffer (KiB)")
        ax.set_title(f"{n} NPUs")
    assert image is not None
    fig.colorbar(image, ax=axes[0, -1], label="OoO speed-up over the best static order")
    first = rows[0]
    fig.suptitle(title or f"{first['network']}, {first['cost']} cost model: OoO / static, "
                 "end to end (b: transfer reduction)", fontsize=9)  # fmt: skip
    finish(fig, path)
    return None if path is None else Path(path)
