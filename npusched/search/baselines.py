"""Klotski's two baselines (§IV-B) beside an orchestration, and the hardware utilisation ratio
(HUR) of Tables I–III.

Both run on either machine (:mod:`npusched.partition.api`): on the routed one their plans (the
allocation and order below) are executed by the memory-aware list
(:mod:`npusched.heuristics.scheduling.plans`), and baseline 1's layers wait only for the layers
they read (so Inception's branches run side by side, as the paper's baseline-1 cycles that differ
slightly with the mesh size suggest).

- **Baseline 1** (Tangram's layer-wise zig-zag, method ``zigzag``): "baseline 1 does not partition
  a DNN model and straightly schedule[s] and map[s] the model layer-wise" (§IV-C). A whole layer
  does not fit one core's memory here (VGG16's conv1_1 needs 13 MB against klotski-NxN's 6 MB),
  so each layer runs on its one core as the *coarsest* feasible partition's μtensors, one after
  another (temporal tiling on one accelerator): the design space's point of fewest μops on
  which the plan fits the cores (:func:`layerwise`). Its
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

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from npusched.arch.model import Arch
from npusched.methods import solve
from npusched.partition.api import partition_network
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.machine_view import MachineView
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.problem.scheduling.schedule import Schedule
from npusched.search.space import DesignSpace, Shape4
from npusched.solvers.common import run_within
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


Instance = SchedulingInstance | RoutedInstance


def utilisation(inst: Instance, sched: Schedule | RoutedSchedule) -> float:
    """``U = Σ_i l_i / (m · makespan)``: each μop's latency on its core over the mesh's cycles."""
    busy = int(inst.duration[np.arange(inst.n), sched.core].sum())
    return busy / (inst.m * max(1, sched.makespan(inst)))  # type: ignore[arg-type]


def run_baseline(inst: Instance, method: str, s: Shape4) -> Baseline:
    """``method``'s schedule of ``inst``, verified, with its utilisation and runtime; a
    ``ValueError`` when the method finds none (a plan whose data cannot fit its cores)."""
    t0 = time.perf_counter()
    res = solve(inst, method)
    seconds = time.perf_counter() - t0
    sched = res.solution
    if not isinstance(sched, Schedule | RoutedSchedule):
        raise ValueError(f"{method} on {inst.name}: no schedule ({res.message})")
    rep = check(inst, sched)
    if not rep.ok or rep.makespan is None:
        raise RuntimeError(f"{method} on {inst.name}: not verified: {rep.violations[:3]}")
    return Baseline(method, s, inst.n, rep.makespan, utilisation(inst, sched), seconds)


def coarsest(space: DesignSpace) -> Shape4:
    """The design space's point of fewest μops (first on ties)."""
    return space.points[int(np.argmin(space.uops))]


def layerwise(
    net: Network, arch: Arch | MachineView, space: DesignSpace, machine: str = "routed",
    cost: Any = "analytic",
) -> Baseline:
    """Baseline 1 on the coarsest partition it can run: the design space's points by μop count
    (first on ties), the first whose layer-wise plan fits the cores. On the routed machine a
    layer's one core receives whole producer tiles (its μops read all of them), which the
    coarsest μops' inputs may overflow; the design space's memory rule counts one μop's own
    input box only."""
    for k in np.argsort(space.uops, kind="stable").tolist():
        s = space.points[k]
        try:
            inst = partition_network(net, arch, "klotski", s=s, machine=machine, cost=cost)
            return run_baseline(inst, "zigzag", s)
        except ValueError:
            continue
    raise ValueError(f"{net.name} on {arch.name}: baseline 1's plan fits no partition")


def annealed(
    net: Network, arch: Arch | MachineView, space: DesignSpace, budget: int = 50, seed: int = 0,
    machine: str = "routed", cost: Any = "analytic", deadline: float | None = None,
) -> Baseline:  # fmt: skip
    """Baseline 2 as the paper runs it: the atomic dataflow on its own partition, found by
    simulated annealing over the design space with ``budget`` evaluations
    (:func:`~npusched.search.anneal.anneal`, which stops at ``deadline`` once a plan has a
    schedule), each the atomic dataflow's plan, verified; its runtime is the whole search's."""
    from npusched.search.anneal import anneal
    from npusched.search.evaluate import evaluate

    t0 = time.perf_counter()
    run = functools.partial(evaluate, net, arch, objective="makespan", method="atomic",
                            seed=seed, machine=machine, cost=cost)  # fmt: skip
    found = anneal(space, run, budget, seed, deadline=deadline)
    s = found.best.s
    inst = partition_network(net, arch, "klotski", s=s, machine=machine, cost=cost)
    out = run_baseline(inst, "atomic", s)
    return dataclasses.replace(out, seconds=time.perf_counter() - t0)


def baselines(
    net: Network, arch: Arch | MachineView, space: DesignSpace, best: Instance, best_s: Shape4,
    machine: str = "routed", cost: Any = "analytic", budget: int = 50, seed: int = 0,
    deadline: float | None = None,
) -> dict[str, Baseline]:  # fmt: skip
    """Baseline 1 on the coarsest partition its plan fits, baseline 2 on the search's best
    partition (``best``: Klotski's ablation, §IV-D), and baseline 2 on its own partition
    (:func:`annealed`, with ``budget``), on ``machine`` with the ``cost`` model. With a
    ``deadline`` (``time.perf_counter()``) each runs in a process stopped there, the
    annealing told to end a fifth of its time before, and those not done are left out."""
    runs: dict[str, Callable[[float | None], Baseline]] = {
        "baseline1": lambda _: layerwise(net, arch, space, machine, cost),
        "baseline2_same_partition": lambda _: run_baseline(best, "atomic", best_s),
        "baseline2": lambda end: annealed(net, arch, space, budget, seed, machine, cost, end),
    }
    if deadline is None:
        return {name: run(None) for name, run in runs.items()}
    out = {}
    for name, run in runs.items():
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        end = time.perf_counter() + 0.8 * left
        how, found = run_within(functools.partial(run, end), left)
        if how == "done":
            out[name] = found
    return out
