"""Klotski's two baselines (§IV-B) beside an orchestration, and the hardware utilisation ratio
(HUR) of Tables I–III.

- **Baseline 1** (Tangram's layer-wise zig-zag, method ``zigzag``): "baseline 1 does not partition
  a DNN model and straightly schedule[s] and map[s] the model layer-wise" (§IV-C). A whole layer
  does not fit one core's memory here (VGG16's conv1_1 needs 13 MB against klotski-NxN's 6 MB),
  so each layer runs on its one core as the *coarsest* feasible partition's μtensors, one after
  another (temporal tiling on one accelerator): the design space's point of fewest μops. Its
  cycles thus barely change with the mesh size (only the hops between successive layers' cores),
  as the paper's baseline-1 cycles do not.
- **Baseline 2** (the atomic dataflow without rounds, method ``atomic``;
  :mod:`npusched.heuristics.scheduling.atomic` states the original's rules and each deviation)
  on the best partition of the search: Klotski's ablation (§IV-D) runs it on Klotski's partition,
  and the atomic dataflow's own simulated-annealing partition is not rerun. Its runtime is the
  time of its schedule alone.
- **HUR** (Tables I–III, footnote 1): a schedule's utilisation ``U = Σ_i l_i / (m · makespan)``
  (busy core-cycles over available ones) divided by baseline 1's.

Every schedule here is verified (:func:`npusched.verify.check`); a violation raises.
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
from npusched.search.space import DesignSpace, Shape4
from npusched.verify import check
from npusched.workload.network import Network


@dataclass
class Baseline:
    """One baseline's verified result: cycles, utilisation, runtime and its partition."""

    method: str
    s: Shape4
    uops: int
    cycles: int
    utilisation: float
    seconds: float


def utilisation(inst: SchedulingInstance, sched: Schedule) -> float:
    """``U = Σ_i l_i / (m · makespan)``: each μop's latency on its core over the mesh's cycles."""
    busy = int(inst.duration[np.arange(inst.n), sched.core].sum())
    return busy / (inst.m * max(1, sched.makespan(inst)))


def run_baseline(inst: SchedulingInstance, method: str, s: Shape4) -> Baseline:
    """``method``'s schedule of ``inst``, verified, with its utilisation and runtime."""
    t0 = time.perf_counter()
    res = solve(inst, method)
    seconds = time.perf_counter() - t0
    sched = res.solution
    assert isinstance(sched, Schedule)
    rep = check(inst, sched)
    if not rep.ok or rep.makespan is None:
        raise RuntimeError(f"{method} on {inst.name}: not verified: {rep.violations[:3]}")
    return Baseline(method, s, inst.n, rep.makespan, utilisation(inst, sched), seconds)


def coarsest(space: DesignSpace) -> Shape4:
    """The design space's point of fewest μops (first on ties): baseline 1's partition."""
    return space.points[int(np.argmin(space.uops))]


def baselines(
    net: Network, arch: Arch, space: DesignSpace, best: SchedulingInstance, best_s: Shape4
) -> dict[str, Baseline]:
    """Baseline 1 on the coarsest partition and baseline 2 on the search's best (``best``)."""
    s1 = coarsest(space)
    layerwise = partition_network(net, arch, "klotski", s=s1)
    return {
        "baseline1": run_baseline(layerwise, "zigzag", s1),
        "baseline2": run_baseline(best, "atomic", best_s),
    }
