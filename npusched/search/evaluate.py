"""The evaluation of one μtensor shape (Algorithm 1, lines 3–5) and Klotski's two stages.

- :func:`evaluate`: partition the network with ``s``, schedule and map its μops with the inner
  method, verify the schedule (:func:`npusched.verify.check`) and score it (eq. 3,
  :mod:`npusched.search.objective`). A shape whose method finds no verified schedule is recorded
  as infeasible instead of stopping the search.
- :func:`two_stages`: Klotski §III-D on one partition — the slot ILP (eq. 16–18) for the
  makespan, then the mapping MIP (eq. 9–14) with those slots fixed (the ``twostage`` method),
  run on a **time-quantised** copy of the instance and executed back on the real NoC.

**The time quantum.** The ``timeindexed`` and ``twostage`` methods use the instance's latencies
as slot counts, i.e. one slot per cycle; the slot ILP has one binary per μop and slot of its
window, so a network partition (latencies of 1 to 10⁴ cycles, makespans of 10⁶–10⁸) would need
10⁹ binaries and is refused. Klotski sets a slot's length to the shortest μop latency (§III-C,
after eq. 15). :func:`time_quantum` starts there and doubles the slot ``q`` until the model is
small enough: at most ``max_nonzeros`` coefficients, Σ over μops of window width × (latency + 1)
in slots (eq. 18's resource rows hold each ``X_ij`` once per slot the μop runs in; HiGHS's
presolve alone took 29 s on LeNet's 50 μops at 2-cycle slots: 40 k binaries, 10 M
coefficients). Latencies become ``⌈l / q⌉`` slots — **rounded up**, so every
plan of the quantised model runs without overlap when its μops take their real (shorter)
latencies — and transfer delays are left out, as in eq. 18. The plan (each μop's core and its
order on the core) is then executed in cycles on the real NoC by
:func:`~npusched.heuristics.scheduling.mesh_baselines.retime` and verified. The quantised model's
bound is in slots of rounded-up latencies and is no lower bound in cycles, so it is not reported
as one; the reported bound comes from ``joint`` (cycles) or the trivial bound.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from npusched.arch.model import Arch
from npusched.costmodel import CostModel
from npusched.heuristics.scheduling.mesh_baselines import retime
from npusched.heuristics.scheduling.plans import execute, plan_rank
from npusched.methods import solve
from npusched.partition.api import partition_network
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.machine_view import MachineView
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.problem.scheduling.schedule import Schedule
from npusched.problem.scheduling.windows import asap_alap
from npusched.search.objective import entropy_score, gp_target, score
from npusched.solvers.result import Result, Status
from npusched.verify import check
from npusched.workload.network import Network

INNER = ("list", "atomic", "best", "twostage", "joint")
Instance = SchedulingInstance | RoutedInstance
Plan = Schedule | RoutedSchedule
MAX_NONZEROS = 1_000_000
"""Default size of the quantised slot ILP (coefficients): HiGHS presolves it in seconds."""


@dataclass
class Evaluation:
    """One point of the search: the shape, eq. 3's value, the makespan and the (verified)
    schedule; ``feasible`` is false, with a ``note``, when the method found none."""

    s: tuple[int, int, int, int]
    objective: str
    entropy: float | None
    makespan: int | None
    uops: int
    seconds: float
    schedule: Plan | None = None
    feasible: bool = True
    note: str = ""

    @property
    def score(self) -> float:
        """What the search maximises (−∞ for an infeasible point)."""
        if not self.feasible or self.entropy is None or self.makespan is None:
            return -math.inf
        return score(self.objective, self.entropy, self.makespan)

    @property
    def target(self) -> float | None:
        """The GP's value for this point (None when infeasible)."""
        if not self.feasible or self.entropy is None or self.makespan is None:
            return None
        return gp_target(self.objective, self.entropy, self.makespan)


def evaluate(
    net: Network,
    arch: Arch | MachineView,
    s: tuple[int, int, int, int],
    objective: str = "entropy",
    method: str = "list",
    time_limit: float = 10.0,
    threads: int = 1,
    seed: int = 0,
    machine: str = "routed",
    cost: str | CostModel = "analytic",
) -> Evaluation:
    """Algorithm 1, lines 3–5: partition ``net`` with ``s`` on ``machine`` (``routed``: links,
    DRAM and memories; ``compute-only``), schedule and map the μops with ``method`` (``list``:
    on the routed machine the memory-aware list on the priority list's allocation, on the
    compute-only one the list scheduler with NoC delays; ``atomic``: Klotski's baseline 2, the
    atomic dataflow's plan; ``best``: the shorter of those two; ``twostage``: :func:`two_stages`;
    ``joint``: CP-SAT warm-started from the list schedule, each under ``time_limit`` seconds),
    verify the schedule, and score it. A shape whose μop cannot hold its data on the routed
    machine is infeasible."""
    score(objective, 0.0, 0.0)  # refuses an unknown objective
    if method not in INNER:
        raise ValueError(f"unknown inner method {method!r}; choose from {', '.join(INNER)}")
    t0 = time.perf_counter()
    try:
        inst = partition_network(net, arch, "klotski", s=s, machine=machine, cost=cost)
    except ValueError as err:  # its data does not fit a core of the routed machine
        return Evaluation(s, objective, None, None, 0, time.perf_counter() - t0,
                          feasible=False, note=str(err))  # fmt: skip
    sched, note = _schedule(inst, method, time_limit, threads, seed)
    rep = None if sched is None else check(inst, sched)
    if sched is None or rep is None or not rep.ok or rep.makespan is None:
        why = (
            note or f"{method}'s schedule failed verification: {rep.violations[:3] if rep else ''}"
        )
        return Evaluation(s, objective, None, None, inst.n, time.perf_counter() - t0,
                          feasible=False, note=why)  # fmt: skip
    e = entropy_score(inst.min_duration, rep.makespan)
    return Evaluation(s, objective, e, rep.makespan, inst.n, time.perf_counter() - t0,
                      schedule=sched)  # fmt: skip


def _schedule(
    inst: Instance, method: str, limit: float, threads: int, seed: int
) -> tuple[Plan | None, str]:
    """The inner method's schedule, or None and why."""
    try:
        if method == "twostage":
            res, _ = two_stages(inst, limit, threads, seed)
        elif method == "best":  # the shorter of the two heuristics' schedules
            res = best_of(inst, [solve(inst, m, seed=seed) for m in ("list", "atomic")])
        else:
            res = solve(inst, method, time_limit=limit, threads=threads, seed=seed)
    except ValueError as err:  # a model's size guard, a method that does not apply
        return None, f"{method}: {err}"
    if not isinstance(res.solution, Schedule | RoutedSchedule):
        return None, f"{method} returned no schedule ({res.status.value})"
    return res.solution, ""


def quantised(inst: SchedulingInstance, q: int) -> SchedulingInstance:
    """``inst`` in slots of ``q`` cycles: latencies ``⌈l / q⌉``, no transfer delays (eq. 18)."""
    acc = dataclasses.replace(
        inst.accelerator, hop_latency=0, link_bandwidth=None, delay_model="bandwidth"
    )
    table = -(-inst.duration // q)
    return dataclasses.replace(inst, accelerator=acc, latency_table=table, name=f"{inst.name}_q{q}")


def time_quantum(
    inst: SchedulingInstance, plan: Schedule, max_nonzeros: int = MAX_NONZEROS
) -> tuple[int, SchedulingInstance, Schedule]:
    """The slot length (module docstring): the shortest positive latency, doubled until the slot
    ILP over the windows of ``plan``'s quantised makespan has at most ``max_nonzeros``
    coefficients; with the quantised instance and ``plan`` run on it (its warm start and
    horizon)."""
    lat = inst.min_duration
    q = max(1, int(lat[lat > 0].min())) if (lat > 0).any() else 1
    while True:
        qinst = quantised(inst, q)
        qplan = retime(qinst, plan)
        width = asap_alap(qinst, qplan.makespan(qinst)).width
        size = int((width.astype(object) * (qinst.min_duration + 1).astype(object)).sum())
        if size <= max_nonzeros or q > 2 * int(lat.max(initial=1)):
            return q, qinst, qplan
        q *= 2


def two_stages(
    inst: Instance,
    time_limit: float,
    threads: int = 1,
    seed: int = 0,
    warm: Plan | None = None,
    max_nonzeros: int = MAX_NONZEROS,
) -> tuple[Result, dict[str, Any]]:
    """Klotski's two stages on the quantised instance, executed back in cycles (module
    docstring); ``warm`` (default: the list schedule) fixes the horizon and is the warm start.
    The result's bound is the trivial one in cycles; the summary names the quantum. On the
    routed machine the stages plan on its compute-only view and the plan (cores, order) is
    executed by the memory-aware list (:func:`~npusched.heuristics.scheduling.plans.execute`)."""
    if isinstance(inst, RoutedInstance):
        return _routed_two_stages(inst, time_limit, threads, seed, warm, max_nonzeros)
    assert warm is None or isinstance(warm, Schedule)
    t0 = time.perf_counter()
    if warm is None:
        listed = solve(inst, "list", threads=threads, seed=seed).solution
        assert isinstance(listed, Schedule)
        warm = listed
    q, qinst, qplan = time_quantum(inst, warm, max_nonzeros)
    info: dict[str, Any] = {"quantum_cycles": q, "rounding": "up"}
    remaining = max(0.0, time_limit - (time.perf_counter() - t0))
    res = solve(qinst, "twostage", time_limit=remaining, threads=threads, seed=seed,
                warm_start=qplan)  # fmt: skip
    info.update(slots_makespan=res.objective, slots_bound=res.bound, stats=res.stats)
    plan = res.solution if isinstance(res.solution, Schedule) else qplan
    sched = retime(inst, plan)
    if sched.makespan(inst) > warm.makespan(inst):
        sched, info["kept"] = warm, "the warm start (shorter than the executed plan)"
    runtime = time.perf_counter() - t0
    out = Result(Status.FEASIBLE, "twostage", res.backend, float(sched.makespan(inst)),
                 float(inst.lower_bound()), runtime_s=runtime, solution=sched, threads=threads,
                 seed=seed, time_limit=time_limit, stats=info)  # fmt: skip
    return out, info


def _routed_two_stages(
    inst: RoutedInstance,
    time_limit: float,
    threads: int,
    seed: int,
    warm: Plan | None,
    max_nonzeros: int,
) -> tuple[Result, dict[str, Any]]:
    """:func:`two_stages` on the compute-only view of ``inst``, its plan executed on ``inst``;
    ``warm`` (default: the list's schedule on ``inst``) is kept when it is shorter."""
    t0 = time.perf_counter()
    if warm is None:
        listed = solve(inst, "list", threads=threads, seed=seed).solution
        warm = listed if isinstance(listed, RoutedSchedule) else None
    res, info = two_stages(inst.base, time_limit, threads, seed, None, max_nonzeros)
    plan = res.solution
    assert isinstance(plan, Schedule)
    sched = execute(inst, plan.core, plan_rank(plan.start, inst.graph.topo))
    if isinstance(warm, RoutedSchedule) and warm.makespan(inst) < sched.makespan(inst):
        sched, info["kept"] = warm, "the warm start (shorter than the executed plan)"
    out = Result(Status.FEASIBLE, "twostage", res.backend, float(sched.makespan(inst)),
                 float(inst.lower_bound()), runtime_s=time.perf_counter() - t0, solution=sched,
                 threads=threads, seed=seed, time_limit=time_limit, stats=info)  # fmt: skip
    return out, info


def best_of(inst: Instance, results: list[Result]) -> Result:
    """The result with the shortest verified schedule (first on ties); ``np`` order is stable."""
    spans = [
        r.solution.makespan(inst)  # type: ignore[arg-type]
        if isinstance(r.solution, Schedule | RoutedSchedule)
        else np.inf
        for r in results
    ]
    return results[int(np.argmin(spans))]
