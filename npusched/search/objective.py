"""Klotski's partition objective (eq. 3, §III-B) and what the Gaussian process models of it.

.. math::

    E(s) = -\\Big(\\sum_{u_i \\in V} \\frac{l(u_i)}{l(V)} \\ln \\frac{l(u_i)}{l(V)}\\Big)
           \\Big/ (\\alpha \\cdot \\mathrm{makespan}), \\qquad l(V) = \\sum_{u_i \\in V} l(u_i)

- **The distribution.** Nothing is binned: each μop's share of the total latency,
  ``p_i = l(u_i) / l(V)``, is one outcome, so the entropy is ``ln |V|`` when all μops are equally
  long (the paper's "uniform distribution", §III-B) and smaller when a few μops dominate. ``l(u_i)``
  is the μop's latency in cycles on its fastest core (the instance's ``min_duration``; the Klotski
  meshes have identical cores). μops of zero latency carry no share and are left out (0 ln 0 = 0).
- **α.** The paper calls α "a pre-determined coefficient to normalize the entropy score" and
  reports it effective "by setting [α] as the mean latency of all μops"; so ``α = l(V) / |V|`` of
  the partition being scored. Then ``E = |V| H / (l(V) · makespan)``, which grows like
  ``|V| ln |V|`` when the total work ``l(V)`` and the makespan barely change — finer partitions
  score higher; :data:`npusched.search.space.MAX_UOPS` bounds how fine.
- **``--objective makespan``** scores ``−makespan`` instead (maximised like eq. 3).
- **The GP's target** (:func:`gp_target`) is the logarithm of the score (``ln E`` or
  ``−ln makespan``): E spans several orders of magnitude over one design space (1e−11 … 1e−6 on
  ResNet-18), and the logarithm, being monotone, keeps the maximiser.
"""

from __future__ import annotations

import math

import numpy as np

OBJECTIVES = ("entropy", "makespan")


def entropy_score(latency: np.ndarray, makespan: float) -> float:
    """Klotski eq. 3 with ``α`` = the mean μop latency (module docstring); 0 when nothing runs."""
    lat = np.asarray(latency, dtype=np.float64)
    total = lat.sum()
    if total <= 0 or makespan <= 0:
        return 0.0
    share = lat[lat > 0] / total
    alpha = total / lat.size
    return float(-(share * np.log(share)).sum() / (alpha * makespan))


def score(objective: str, entropy: float, makespan: float) -> float:
    """What the search maximises: eq. 3 (``entropy``) or ``−makespan``."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose from {', '.join(OBJECTIVES)}")
    return entropy if objective == "entropy" else -float(makespan)


def gp_target(objective: str, entropy: float, makespan: float) -> float:
    """The value the GP is fitted to: ``ln E`` or ``−ln makespan`` (module docstring); a zero
    score (one μop, no entropy) maps to a large negative number instead of −∞."""
    value = entropy if objective == "entropy" else 1.0 / max(float(makespan), 1e-300)
    return math.log(max(value, 1e-300))
