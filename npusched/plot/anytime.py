"""Anytime curve: incumbent and proven bound against time."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt

from npusched.plot._figure import finish
from npusched.solvers.result import Result


def anytime(
    results: Sequence[Result],
    path: str | Path | None = None,
    title: str = "",
    reference: float | None = None,
) -> plt.Figure:
    """Step plot of every result's incumbent (solid) and bound (dashed) over time."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, r in enumerate(results):
        color = f"C{k}"
        pts = r.trace
        end = max(r.runtime_s, pts[-1].time if pts else 0.0)
        for attr, style, lab in (("incumbent", "-", "incumbent"), ("bound", "--", "bound")):
            xy = [(p.time, getattr(p, attr)) for p in pts if getattr(p, attr) is not None]
            if xy:
                xs, ys = zip(*xy, strict=True)
                ax.step(
                    [*xs, end],
                    [*ys, ys[-1]],
                    where="post",
                    ls=style,
                    color=color,
                    label=f"{r.method}/{r.backend} {lab}",
                )
    if reference is not None:
        ax.axhline(reference, color="grey", lw=0.8, ls=":", label="reference optimum")
    ax.set_xlabel("seconds")
    ax.set_ylabel("makespan")
    ax.set_title(title or "anytime")
    ax.legend(fontsize=7)
    return finish(fig, path)
