"""Klotski's partition objective (eq. 3) and the evaluation of one μtensor shape.

.. math::

    E(s) = -\\Big(\\sum_{u_i \\in V} \\frac{l(u_i)}{l(V)} \\ln \\frac{l(u_i)}{l(V)}\\Big)
           \\Big/ (\\alpha \\cdot \\mathrm{makespan}), \\qquad l(V) = \\sum_{u_i \\in V} l(u_i)

The entropy of the μops' latency shares is largest when the μops are balanced; dividing by the
makespan prefers fast partitions. α normalises the score: the paper sets it to the mean μop
latency ("we also find it is effective by setting [α] as the mean latency of all μops", §III-B),
so ``α = l(V) / |V|``. Latencies are each μop's fastest core's (the instance's ``min_duration``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from npusched.arch.model import Arch
from npusched.methods import solve
from npusched.partition.api import partition_network
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule
from npusched.verify import check
from npusched.workload.network import Network

OBJECTIVES = ("entropy", "makespan")


def entropy_score(latency: np.ndarray, makespan: float) -> float:
    """Klotski eq. 3 with ``α`` = the mean μop latency (module docstring)."""
    lat = np.asarray(latency, dtype=np.float64)
    total = lat.sum()
    if total <= 0 or makespan <= 0:
        return 0.0
    share = lat[lat > 0] / total
    alpha = total / lat.size
    return float(-(share * np.log(share)).sum() / (alpha * makespan))


@dataclass
class Evaluation:
    """One point of the search: the shape, its score (to maximise), makespan and schedule."""

    s: tuple[int, int, int, int]
    score: float
    entropy: float
    makespan: int
    uops: int
    seconds: float
    instance: SchedulingInstance
    schedule: Schedule


def evaluate(
    net: Network,
    arch: Arch,
    s: tuple[int, int, int, int],
    objective: str = "entropy",
    method: str = "list",
    time_limit: float = 10.0,
    threads: int = 1,
    seed: int = 0,
) -> Evaluation:
    """Algorithm 1, lines 3–5: partition ``net`` with ``s``, schedule and map the μops with
    ``method`` (the list scheduler with NoC delays by default; ``twostage`` or ``joint`` on small
    cases), verify the schedule, and score it: eq. 3 (``entropy``) or ``−makespan``."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose from {', '.join(OBJECTIVES)}")
    t0 = time.perf_counter()
    inst = partition_network(net, arch, "klotski", s=s)
    res = solve(inst, method, time_limit=time_limit, threads=threads, seed=seed)
    if not isinstance(res.solution, Schedule):
        raise RuntimeError(f"s = {s}: {method} returned no schedule ({res.status.value})")
    rep = check(inst, res.solution)
    if not rep.ok or rep.makespan is None:
        raise RuntimeError(
            f"s = {s}: {method}'s schedule failed verification: {rep.violations[:3]}"
        )
    e = entropy_score(inst.min_duration, rep.makespan)
    score = e if objective == "entropy" else -float(rep.makespan)
    seconds = time.perf_counter() - t0
    return Evaluation(s, score, e, rep.makespan, inst.n, seconds, inst, res.solution)
