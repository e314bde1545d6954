"""Solve one layer's TSO tiling exactly with CP-SAT: the 9 (slicing, schedule) models of
:class:`~npusched.formulations.tiling.cpsat.TsoTileModel` one after another, warm-started from the
enumeration's choice (:func:`npusched.heuristics.tiling.search.search_tso`). CP-SAT completes the
warm start from a hint, then proves every pair infeasible under the cutoff *objective ≤
incumbent − 1* (or finds a cheaper tiling). This is the ``cpsat`` backend of ``tso-exact``
(:mod:`npusched.methods.tiling`).
"""

from __future__ import annotations

import math
import time
from typing import Any

from npusched.arch.model import Arch
from npusched.formulations.tiling.cpsat import TsoTileModel
from npusched.heuristics.tiling.search import search_tso
from npusched.problem.tiling import (
    TileChoice,
    TsoLayer,
    evaluate_geom,
)
from npusched.solvers.cpsat import run_cpsat
from npusched.solvers.result import Result, Status
from npusched.workload.layers import Layer, Shape


def tile_choice(
    problem: TsoLayer, tle: str, tlt: str, tiles: tuple[int, int, int, int], cycles: int
) -> TileChoice:
    """The :class:`~npusched.problem.tiling.TileChoice` of an exact model's answer: its
    burst-model breakdown and ``cycles`` (under ``problem.model``) in µs."""
    bd = evaluate_geom(problem.geom, problem.nmp, tle, tlt, *tiles, "burst")
    return TileChoice(
        problem.name, tle, tlt, *tiles, bd, problem.nmp.us(cycles), problem.model, 0, 0
    )


def _warm_choice(problem: TsoLayer, warm: TileChoice | bool | None) -> TileChoice | None:
    if warm is None or warm is False:
        return None
    if warm is True:
        try:
            return search_tso(TsoLayer(problem.geom, problem.nmp, problem.model))
        except ValueError:  # nothing fits: no warm start
            return None
    return warm


def _warm_cycles(
    problem: TsoLayer, wc: TileChoice | None, pairs: list[tuple[str, str]]
) -> tuple[tuple[str, str] | None, int | None]:
    """The warm start's pair and cycles (under ``problem.model``) when it is feasible and its
    pair is solved; the pair is moved last in ``pairs`` (it holds the incumbent, the others only
    cut it)."""
    if wc is None:
        return None, None
    bd = evaluate_geom(problem.geom, problem.nmp, wc.tle, wc.tlt, *wc.tiles, problem.model)
    if not bd.feasible or (wc.tle, wc.tlt) not in pairs:
        return None, None
    pair = (wc.tle, wc.tlt)
    pairs.remove(pair)
    pairs.append(pair)
    return pair, int(bd.mac_cycles + bd.dram_cycles)


def _check_warm(
    problem: TsoLayer, tm: TsoTileModel, pair: tuple[str, str], wc: TileChoice, cycles: int
) -> list[int]:
    """Every variable's value at the warm start in its pair's model, which must give
    ``evaluate``'s ``cycles``.

    Raises
    ------
    RuntimeError
        The model's objective at the warm start differs (a modelling bug).
    """
    check = (
        tm
        if (tm.tle, tm.tlt) == pair
        else TsoTileModel(problem.geom, problem.nmp, *pair, problem.model, tm.space)
    )
    full = check.complete(wc.tiles)
    if full is None or full[1] != cycles:
        got = None if full is None else full[1]
        raise RuntimeError(
            f"{problem.name} {pair[0]}/{pair[1]} {wc.tiles}: model gives "
            f"{got} cycles, evaluate {cycles}"
        )
    return full[0]


def _solve_pair(
    tm: TsoTileModel, share: float, threads: int, seed: int, cut: int | None, hinted: bool
) -> dict[str, Any]:
    """Run CP-SAT on one pair; its row of ``stats["pairs"]``. ``bound_cycles`` is the proven
    lower bound on the pair's optimum: the optimum when optimal, ``cutoff + 1`` when infeasible
    under a cutoff, ``None`` (no tiling at all) when infeasible without one."""
    t1 = time.perf_counter()
    status, solver, _ = run_cpsat(tm.model, time_limit=share, threads=threads, seed=seed)
    found = status in (Status.OPTIMAL, Status.FEASIBLE)
    obj = int(round(solver.objective_value)) if found else None
    bound: float | None
    if status == Status.OPTIMAL:
        bound = obj
    elif status == Status.INFEASIBLE:
        bound = None if cut is None else cut + 1
    else:
        sb = solver.best_objective_bound
        bound = math.ceil(sb - 1e-6) if math.isfinite(sb) else 0.0
        if cut is not None:
            bound = min(bound, cut + 1)
    return {
        "tle": tm.tle,
        "tlt": tm.tlt,
        "status": status.value,
        "objective_cycles": obj,
        "bound_cycles": bound,
        "cutoff": cut,
        "runtime": time.perf_counter() - t1,
        "vars": len(tm.model.proto.variables),
        "constraints": len(tm.model.proto.constraints),
        "hinted": hinted,
        "tiles": list(tm.decode(solver)) if found else None,
    }


def _status(rows: list[dict[str, Any]], best: int | None) -> Status:
    """``optimal`` only when every pair returned OPTIMAL or INFEASIBLE; ``feasible`` when a
    solution is known but a pair was stopped; ``infeasible`` when every pair is infeasible
    without a cutoff; ``time_limit_no_solution`` otherwise; ``error`` if CP-SAT failed."""
    st = [Status(r["status"]) for r in rows]
    if Status.ERROR in st:
        return Status.ERROR
    if best is None:
        proven = all(r["status"] == "infeasible" and r["cutoff"] is None for r in rows)
        return Status.INFEASIBLE if proven else Status.TIME_LIMIT_NO_SOLUTION
    closed = all(s in (Status.OPTIMAL, Status.INFEASIBLE) for s in st)
    return Status.OPTIMAL if closed else Status.FEASIBLE


def _result(
    problem: TsoLayer,
    rows: list[dict[str, Any]],
    best: tuple[int, str, str, tuple[int, int, int, int]] | None,
    warm_cycles: int | None,
    space: str,
) -> Result:
    """The layer's :class:`~npusched.solvers.result.Result`: objective and bound in cycles (the
    bound is the minimum of the pairs' proven bounds and the incumbent)."""
    bounds = [r["bound_cycles"] for r in rows if r["bound_cycles"] is not None]
    lower = min(bounds) if bounds else math.inf
    if best is not None:
        lower = min(lower, best[0])
    bound = lower if math.isfinite(lower) else None
    us = problem.nmp.us
    return Result(
        status=_status(rows, None if best is None else best[0]),
        method="tso-exact",
        backend="cpsat",
        objective=None if best is None else best[0],
        bound=bound,
        solution=None if best is None else tile_choice(problem, *best[1:], best[0]),
        stats={
            "layer": problem.name,
            "model": problem.model,
            "space": space,
            "objective_cycles": None if best is None else best[0],
            "bound_cycles": bound,
            "objective_us": None if best is None else us(best[0]),
            "bound_us": None if bound is None else us(bound),
            "warm_cycles": warm_cycles,
            "choice": None if best is None else [*best[1:3], *best[3]],
            "pairs": rows,
        },
        message="; ".join(
            f"{r['tle']}/{r['tlt']}: CP-SAT error" for r in rows if r["status"] == "error"
        ),
    )


def solve_tso_cpsat(
    problem: TsoLayer,
    warm: TileChoice | bool | None = True,
    time_limit: float = 10.0,
    threads: int = 2,
    seed: int = 0,
    space: str = "tso",
    use_cutoff: bool = True,
    combos: list[tuple[str, str]] | None = None,
    warm_mode: str = "cutoff",
) -> Result:
    """Minimise TSO's estimate of ``problem`` over integer tile sizes with CP-SAT.

    The (slicing, schedule) pairs (``combos``, default ``problem.combos()``) are solved one after
    another, the warm start's pair last. The warm start is first completed by CP-SAT with the
    tile sizes fixed (:meth:`TsoTileModel.complete`), which certifies it feasible; its objective
    there must equal ``evaluate``'s cycles. It is the incumbent. With ``use_cutoff`` every pair
    then gets *objective ≤ incumbent − 1*, so that CP-SAT proving the pair INFEASIBLE proves it
    holds nothing cheaper. With ``warm_mode="hint"`` the warm start's own pair is instead solved
    without a cutoff, hinted, and must prove its optimum by raising its bound (slower: 1.5-2.9 s
    against 0.2-0.4 s on YOLOv2 conv3/conv5). Each run gets an equal share of the time left.

    Returns
    -------
    Result
        ``objective``/``bound`` in cycles under ``problem.model`` (µs in ``stats``), the
        :class:`~npusched.problem.tiling.TileChoice` as ``solution``, one row per pair in
        ``stats["pairs"]``; status as :func:`_status`.

    Raises
    ------
    RuntimeError
        The model's objective at the warm start differs from ``evaluate`` (a modelling bug).
    """
    if warm_mode not in ("cutoff", "hint"):
        raise ValueError(f"unknown warm_mode {warm_mode!r}; choose from cutoff, hint")
    t0 = time.perf_counter()
    pairs = list(combos) if combos is not None else problem.combos()
    wc = _warm_choice(problem, warm)
    warm_pair, warm_cycles = _warm_cycles(problem, wc, pairs)
    best: tuple[int, str, str, tuple[int, int, int, int]] | None = None
    warm_values: list[int] = []
    rows: list[dict[str, Any]] = []
    for k, (p, q) in enumerate(pairs):
        left = time_limit - (time.perf_counter() - t0)
        share = max(0.05, left / (len(pairs) - k))
        tm = TsoTileModel(problem.geom, problem.nmp, p, q, problem.model, space)
        if warm_pair is not None and warm_cycles is not None and wc is not None and k == 0:
            warm_values = _check_warm(problem, tm, warm_pair, wc, warm_cycles)
            best = (warm_cycles, *warm_pair, wc.tiles)
        hinted, cut = False, None
        own = (p, q) == warm_pair and best is not None and best[0] == warm_cycles
        if own and (warm_mode == "hint" or not use_cutoff):
            tm.hint(warm_values)
            hinted = True
        elif use_cutoff and best is not None:
            cut = best[0] - 1
            tm.cutoff(cut)
        row = _solve_pair(tm, share, threads, seed, cut, hinted)
        rows.append(row)
        obj = row["objective_cycles"]
        if obj is not None and (best is None or obj < best[0]):
            best = (obj, p, q, tuple(row["tiles"]))
    return _result(problem, rows, best, warm_cycles, space)


def solve_layer_cpsat(
    layer: Layer, in_shape: Shape, arch: Arch, model: str = "burst", **options: Any
) -> Result:
    """:func:`solve_tso_cpsat` of a ``conv``/``fc`` ``layer`` with input ``in_shape`` on
    ``arch`` under DRAM ``model`` (all 9 pairs unless ``combos``); ``options`` are
    :func:`solve_tso_cpsat`'s (``warm``, ``time_limit``, ``threads``, ...)."""
    return solve_tso_cpsat(TsoLayer.from_layer(layer, in_shape, arch, model), **options)


def solve_layer_exact(
    layer: Layer,
    in_shape: Shape,
    arch: Arch,
    model: str = "burst",
    warm: TileChoice | bool | None = True,
    time_limit: float = 10.0,
    threads: int = 2,
    combos: list[tuple[str, str]] | None = None,
) -> tuple[float, str]:
    """``(time in µs, status)`` of :func:`solve_layer_cpsat`: the best tiling's estimate under
    ``model`` (``inf`` when none was found; for ``"noburst"`` the volume-model time, as
    ``TileChoice.objective_us``) and ``"optimal"``, ``"feasible"``, ``"infeasible"``,
    ``"time_limit_no_solution"`` or ``"error"``. ``combos`` restricts the (slicing, schedule)
    pairs; default all 9."""
    r = solve_layer_cpsat(
        layer,
        in_shape,
        arch,
        model,
        warm=warm,
        time_limit=time_limit,
        threads=threads,
        combos=combos,
    )
    us = r.stats["objective_us"]
    return (math.inf if us is None else us), r.status.value


__all__ = ["solve_layer_cpsat", "solve_layer_exact", "solve_tso_cpsat", "tile_choice"]
