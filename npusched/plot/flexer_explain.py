"""Where a Flexer layer's time goes, OoO against the best static order (issue 25, item 1): one
pair of stacked bars per layer, each bar the layer's latency split into compute, stalls on
data movement and idle time by cause
(:func:`~npusched.heuristics.flexer.explain.time_split`, divided by the NPUs, so a bar's height
is the latency)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from numpy.typing import NDArray

from npusched.heuristics.flexer.explain import CATEGORIES
from npusched.plot._figure import finish

COLORS = {
    "compute": "0.6",
    "load": "tab:blue",
    "spill": "tab:orange",
    "writeback": "tab:red",
    "dependency": "tab:purple",
    "dram": "tab:cyan",
    "buffer": "tab:green",
    "tail": "0.85",
}


def bar_segments(splits: Sequence[Mapping[str, int]], n_npus: int) -> NDArray[np.float64]:
    """``(len(splits), len(CATEGORIES))``: each category's NPU cycles over ``n_npus`` — the
    stacked segments of a bar whose height is the layer's latency."""
    return np.array([[s.get(c, 0) / n_npus for c in CATEGORIES] for s in splits], float).reshape(
        -1, len(CATEGORIES)
    )


def time_split_bars(
    labels: Sequence[str],
    ooo: Sequence[Mapping[str, int]],
    static: Sequence[Mapping[str, int]],
    n_npus: int,
    path: str | Path | None = None,
    title: str = "",
    losing: Sequence[bool] | None = None,
) -> plt.Figure:
    """Per layer, the OoO bar (left, solid) and the best static order's (right, hatched), each
    stacked by category; layers where OoO loses by the paper's metric (``losing``) get a red
    tick label. Returns the figure; saves a PNG at ``path``."""
    if not len(labels) == len(ooo) == len(static):
        raise ValueError("labels, ooo and static differ in length")
    x = np.arange(len(labels))
    width = 0.4
    fig, ax = plt.subplots(figsize=(max(6.0, 0.32 * len(labels) + 2), 4.5))
    for off, splits, hatch in ((-width / 2, ooo, None), (width / 2, static, "//")):
        seg = bar_segments(splits, n_npus)
        bottom = np.zeros(len(labels))
        for j, c in enumerate(CATEGORIES):
            ax.bar(
                x + off,
                seg[:, j],
                width,
                bottom=bottom,
                color=COLORS[c],
                hatch=hatch,
                edgecolor="white" if hatch else None,
                linewidth=0,
                label=c if hatch is None else None,
            )
            bottom += seg[:, j]
    ax.set_xticks(x, labels, rotation=90, fontsize=6)
    if losing is not None:
        for tick, bad in zip(ax.get_xticklabels(), losing, strict=True):
            if bad:
                tick.set_color("tab:red")
    ax.set_ylabel("cycles (NPU cycles / NPUs = latency)")
    ax.set_title(title or "where the time goes: OoO (left) and best static order (right, hatched)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return finish(fig, path)
