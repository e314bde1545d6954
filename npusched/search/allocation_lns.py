"""The exact layer–core allocation model (Stream §III-D's allocation decided by CP-SAT instead of
the GA) under large-neighbourhood search.

The model is :class:`~npusched.formulations.scheduling.routed.RoutedModel` with ``units``: one
allocation literal ``y_uk`` per allocation unit ``u`` (a layer's CNs of one Stream group, as in
:class:`~npusched.search.allocation.Units`) and core ``k``, shared by the unit's CNs; the
schedule, the transfers on the links and every core's memory as a cumulative over the lifetimes,
present with their copies. Whole, it is too large: the free-allocation model of ResNet-18 finds
no solution in 300 s. So it is solved in neighbourhoods, from an allocation (the GA's best) and
its memory-aware list schedule:

1. draw ``free_units`` units that have a choice of core (seeded);
2. free their allocation (each its unit's cores) and the timing of their CNs and of a block of
   ``window`` CNs around them (by start); CNs that start before the block keep their times, those
   after it shift together by one ``δ ≤ 0``
   (:meth:`~npusched.formulations.scheduling.routed.RoutedModel.neighbourhood`); every other
   unit keeps its core;
3. solve for at most ``step`` seconds from the current schedule as hint (feasible with
   ``δ = 0`` unless that schedule evicts, which the model cannot express), keep a shorter
   schedule and its allocation;

until the time limit (without one: one pass, about ``units / free_units`` rounds). The bound is
the free instance's lower bound: a neighbourhood's bound bounds nothing globally.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from npusched.formulations.scheduling.routed import RoutedModel
from npusched.heuristics.scheduling.memory_list import MemoryDeadlock, memory_list_schedule
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.search.allocation import Units
from npusched.solvers.cpsat import run_cpsat
from npusched.solvers.result import Status


@dataclass
class LnsOutcome:
    """The best allocation found (``core`` per CN), its schedule and the search's record."""

    core: np.ndarray
    schedule: RoutedSchedule
    makespan: int
    start_makespan: int
    bound: int
    rounds: int = 0
    improvements: int = 0
    history: list[tuple[float, int]] = field(default_factory=list)  # (seconds, makespan)


def allocation_lns(
    inst: RoutedInstance,
    units: Units,
    core: np.ndarray,
    time_limit: float | None = None,
    seed: int = 0,
    free_units: int = 2,
    step: float = 5.0,
    window: int = 300,
    threads: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> LnsOutcome:
    """LNS over allocations and schedules from allocation ``core`` (see the module docstring).

    Raises
    ------
    ValueError
        ``core`` splits a unit, or its schedule cannot keep within the memories.
    """
    t0 = time.perf_counter()
    units.genome(core)  # raises when the allocation splits a unit
    fixed = inst.restricted(core)
    try:
        best = memory_list_schedule(fixed, "latency")
    except MemoryDeadlock as err:
        raise ValueError(f"the starting allocation does not fit the memories: {err}") from None
    ms = best.makespan(fixed)
    out = LnsOutcome(np.asarray(core), best, ms, ms, inst.lower_bound(), history=[(0.0, ms)])
    genes = units.genes
    rng = np.random.default_rng(seed)
    rounds = None if time_limit is not None else -(-genes.size // max(free_units, 1))
    overhead = 0.0  # the longest model build so far: a round's time beyond its solve
    while out.makespan > out.bound and (rounds is None or out.rounds < rounds):
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        seconds = step if left is None else min(step, left - overhead - 0.2)
        if seconds < 0.5:
            break
        chosen = rng.choice(genes, size=min(free_units, genes.size), replace=False)
        begun = time.perf_counter()
        cand = _round(inst, units, out, chosen, seconds, window, threads, seed + out.rounds)
        overhead = max(overhead, time.perf_counter() - begun - seconds)
        out.rounds += 1
        if cand is not None and cand.makespan(inst) < out.makespan:
            out.core, out.schedule, out.makespan = cand.core, cand, cand.makespan(inst)
            out.improvements += 1
            out.history.append((time.perf_counter() - t0, out.makespan))
        if progress is not None:
            progress(out.rounds, out.makespan)
    return out


def _round(
    inst: RoutedInstance,
    units: Units,
    out: LnsOutcome,
    chosen: np.ndarray,
    seconds: float,
    window: int,
    threads: int,
    seed: int,
) -> RoutedSchedule | None:
    """One neighbourhood: the units ``chosen`` free to move, their CNs and a block around them
    free in time; the schedule CP-SAT finds in ``seconds``, if any."""
    n, best = inst.n, out.schedule
    mask = np.zeros((n, inst.m), dtype=bool)
    mask[np.arange(n), out.core] = True
    moving = np.isin(units.unit, chosen)
    for u in chosen.tolist():
        mask[np.ix_(units.unit == u, list(units.cores[u]))] = True
    sub = replace(inst, allowed=mask, preferred=out.core)
    model = RoutedModel(sub, out.makespan, units=units.unit)
    order = np.argsort(best.start, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    centre = int(np.median(rank[moving]))
    lo = max(0, min(centre - window // 2, n - window))
    free = moving.copy()
    free[order[lo : lo + window]] = True
    status, solver, _ = run_cpsat(
        model.neighbourhood(best, free, tail="shift"),
        time_limit=seconds,
        threads=threads,
        seed=seed,
    )
    if status in (Status.OPTIMAL, Status.FEASIBLE):
        return model.decode(solver)
    return None
