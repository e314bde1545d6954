"""Placement methods (Klotski Problem 3 in QAP form, eq. 9-14): the heuristics ``snake``,
``greedy``, ``anneal``, ``tabu``, the MIP ``qap`` and the branch and bound ``qap-bnb``.

The exact methods start from a warm start: tabu search with the call's seed unless one is given.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from npusched.formulations.placement.qap import PlacementModel
from npusched.heuristics.placement import (
    anneal_placement,
    greedy_placement,
    snake_placement,
    tabu_placement,
)
from npusched.methods.linear import linear_result, run_model
from npusched.methods.registry import Context, Method, NoParams, bounded, register
from npusched.problem.placement import Placement, PlacementInstance
from npusched.solvers.result import Result, Status
from npusched.verify import verify_placement

HEURISTICS: dict[str, Callable[[PlacementInstance, int, float | None], Placement]] = {
    "snake": lambda inst, seed, deadline: snake_placement(inst),
    "greedy": lambda inst, seed, deadline: greedy_placement(inst),
    "anneal": lambda inst, seed, deadline: anneal_placement(inst, seed=seed, deadline=deadline),
    "tabu": lambda inst, seed, deadline: tabu_placement(inst, seed=seed, deadline=deadline),
}
"""The placement heuristics by name: ``(instance, seed, deadline) -> Placement``; tabu search
and annealing stop at the deadline, the others are fast."""


def _qap_form(problem: PlacementInstance) -> str | None:
    return None if problem.all_distinct else "it needs every task on its own cell: the QAP form"


def _warm_start(problem: PlacementInstance, params: Any, ctx: Context) -> Context:
    """The given placement, checked, or tabu search's with the call's seed (within a quarter of
    the time limit).

    Raises
    ------
    ValueError
        The given warm start is not a feasible placement of ``problem``.
    """
    warm = ctx.warm_start
    if warm is None:  # tabu search gets at most a quarter of the time
        left = ctx.remaining()
        share = None if left is None else time.perf_counter() + left / 4
        warm = tabu_placement(problem, seed=ctx.seed, deadline=share)
    elif not isinstance(warm, Placement) or verify_placement(problem, warm):
        raise ValueError("a placement warm start must be a feasible Placement")
    return dataclasses.replace(ctx, warm_start=warm)


def _heuristic(name: str) -> Callable[[PlacementInstance, str, NoParams, Context], Result]:
    def run(inst: PlacementInstance, backend: str, params: NoParams, ctx: Context) -> Result:
        placement = HEURISTICS[name](inst, ctx.seed, ctx.deadline)
        return Result(Status.FEASIBLE, name, "none", inst.cost(placement.loc), solution=placement)

    return run


def _run_qap(inst: PlacementInstance, backend: str, params: NoParams, ctx: Context) -> Result:
    """The placement MIP within the time limit, model building included (:func:`bounded`)."""
    return bounded("qap", backend, ctx, lambda c: _qap_answer(inst, backend, c))


def _qap_answer(inst: PlacementInstance, backend: str, ctx: Context) -> Result:
    model = PlacementModel(inst)
    raw, decoded = run_model(model, backend, ctx.warm_start, ctx)
    stats = {"variables": model.model.num_vars, "rows": model.model.row_counts()}
    return linear_result("qap", backend, raw, decoded, stats)


def _run_qap_bnb(inst: PlacementInstance, backend: str, params: NoParams, ctx: Context) -> Result:
    from npusched.formulations.placement.bnb import solve_qap_bnb

    return solve_qap_bnb(inst, time_limit=ctx.remaining(), warm_start=ctx.warm_start)


for _name in HEURISTICS:
    register(Method(_name, PlacementInstance, ("none",), _heuristic(_name), f"{_name} placement"))
register(
    Method(
        "qap",
        PlacementInstance,
        ("cpsat", "highs", "cbc", "pulp-highs"),
        _run_qap,
        "placement MIP: separable Manhattan linearisation, Gilmore-Lawler cuts, mesh symmetry",
        prepare=_warm_start,
        default_for=(PlacementInstance,),
    )
)
register(
    Method(
        "qap-bnb",
        PlacementInstance,
        ("none",),
        _run_qap_bnb,
        "placement in QAP form by Gilmore-Lawler branch and bound (exact; proves nug12-nug16b)",
        applies=_qap_form,
        prepare=_warm_start,
    )
)
