"""Convergence of the partition search: the score of each evaluation, the best so far, and the
GP's prediction (mean ± one standard deviation) at the points it chose."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from npusched.plot._figure import finish
from npusched.search.bo import SearchResult


def convergence(found: SearchResult, path: str | Path | None = None, title: str = "") -> plt.Figure:
    """Two panels: the score (eq. 3, or −makespan) and the makespan, against the evaluation."""
    n = np.arange(1, len(found.evaluations) + 1)
    score = np.array([e.score for e in found.evaluations])
    makespan = np.array([e.makespan for e in found.evaluations])
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    a.plot(n, score, "o", color="C0", ms=4, label="evaluated")
    a.step(n, np.maximum.accumulate(score), where="post", color="C0", label="best so far")
    guided = [(k + 1, p) for k, p in enumerate(found.predicted) if p is not None]
    if guided:
        xs = np.array([k for k, _ in guided])
        mu = np.array([p[0] for _, p in guided])
        sd = np.array([p[1] for _, p in guided])
        a.errorbar(xs, mu, yerr=sd, fmt="x", color="C1", ms=4, lw=0.8, label="GP mean ± sd")
    a.set_xlabel("evaluation")
    a.set_ylabel("score (maximised)")
    a.legend(fontsize=8)
    b.plot(n, makespan, "o", color="C2", ms=4, label="evaluated")
    b.step(n, np.minimum.accumulate(makespan), where="post", color="C2", label="best so far")
    b.set_xlabel("evaluation")
    b.set_ylabel("makespan (cycles)")
    b.legend(fontsize=8)
    fig.suptitle(title or "partition search")
    return finish(fig, path)
