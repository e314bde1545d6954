"""Convergence of the partition search: each evaluation's value, the best so far, and the GP's
prediction (mean ± one standard deviation) at the points it chose, all in the GP's units."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from npusched.plot._figure import finish
from npusched.search.bo import SearchResult


def convergence(found: SearchResult, path: str | Path | None = None, title: str = "") -> plt.Figure:
    """Two panels against the evaluation: the GP's target (``ln E`` of eq. 3, or ``−ln makespan``;
    :func:`npusched.search.objective.gp_target`) with the GP's predictions, and the makespan.
    Infeasible evaluations are left out of both."""
    evals = found.evaluations
    objective = evals[0].objective if evals else "entropy"
    ok = [k for k, e in enumerate(evals) if e.target is not None]
    n = np.array(ok) + 1
    target = np.array([evals[k].target for k in ok], dtype=float)
    makespan = np.array([evals[k].makespan for k in ok], dtype=float)
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    a.plot(n, target, "o", color="C0", ms=4, label="evaluated")
    if ok:
        a.step(n, np.maximum.accumulate(target), where="post", color="C0", label="best so far")
    guided = [(k + 1, p) for k, p in enumerate(found.predicted) if p is not None]
    if guided:
        xs = np.array([k for k, _ in guided])
        mu = np.array([p[0] for _, p in guided])
        sd = np.array([p[1] for _, p in guided])
        a.errorbar(xs, mu, yerr=sd, fmt="x", color="C1", ms=4, lw=0.8, label="GP mean ± sd")
    a.set_xlabel("evaluation")
    a.set_ylabel("ln E(s) (eq. 3)" if objective == "entropy" else "−ln makespan")
    a.legend(fontsize=8)
    b.plot(n, makespan, "o", color="C2", ms=4, label="evaluated")
    if ok:
        b.step(n, np.minimum.accumulate(makespan), where="post", color="C2", label="best so far")
    b.set_xlabel("evaluation")
    b.set_ylabel("makespan (cycles)")
    b.legend(fontsize=8)
    fig.suptitle(title or "partition search")
    return finish(fig, path)
