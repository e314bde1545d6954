"""TSO's exhaustive search (Algorithms 1 and 3) for one layer, on the vectorised tile space of
:mod:`npusched.heuristics.tiling.space`.

The best candidate of a layer (Algorithm 1, lines 9-19) minimises the model's time; ties go to
the first in TSO's order (slicings, then schedules, in :data:`~npusched.problem.tiling.TLE_SLICINGS`
and :data:`~npusched.problem.tiling.TLT_SCHEDULES` order, then :math:`T_R`, :math:`T_C`, :math:`T_N`
ascending). *TSO-noburst* (Table I) picks the tiles with the volume model and is then timed with
the burst model, as on the NMP board. The network-wide search (one task per convolution,
Algorithm 1 lines 2-5) is :func:`npusched.methods.tiling.tile_network`, which runs
``solve(TsoLayer, "tso-enum")`` per layer.
"""

from __future__ import annotations

from typing import Any

from npusched.arch.model import Arch
from npusched.heuristics.tiling.space import (
    ComboBest,
    TileSpace,
    combo_bests,
    layer_space,
    tso_combo_bests,
    tso_layer_space,
)
from npusched.problem.tiling import TileChoice, TsoLayer, evaluate_geom, model_name
from npusched.workload.layers import Layer, Shape
from npusched.workload.network import Network

#: The former name of :class:`~npusched.problem.tiling.TileChoice`.
LayerChoice = TileChoice


def pick(
    bests: list[ComboBest], model: str, fix_tle: str | None = None, fix_tlt: str | None = None
) -> tuple[ComboBest, bool]:
    """Algorithm 1, lines 9-19: the combination whose best candidate has the smallest objective
    (first on ties), among those allowed by ``fix_tle``/``fix_tlt``; if none of those is
    feasible, among all (the ``bool`` says so).

    Raises
    ------
    ValueError
        No candidate of the layer fits at all.
    """
    key = model_name(model)
    allowed = [
        b
        for b in bests
        if (fix_tle is None or b.tle == fix_tle) and (fix_tlt is None or b.tlt == fix_tlt)
    ]
    for pool, fallback in ((allowed, False), (bests, True)):
        best: ComboBest | None = None
        for b in pool:
            r = getattr(b, key)
            if r is not None and (best is None or r[0] < getattr(best, key)[0]):
                best = b
        if best is not None:
            return best, fallback
    raise ValueError("no tiling of the layer fits the TLT memories")


def choose(problem: TsoLayer, bests: list[ComboBest]) -> TileChoice:
    """The :class:`~npusched.problem.tiling.TileChoice` of ``problem`` from its
    :func:`~npusched.heuristics.tiling.space.tso_combo_bests` (:func:`pick`, then the
    burst-model :func:`~npusched.problem.tiling.evaluate_geom` of the winner)."""
    b, fallback = pick(bests, problem.model, problem.fix_tle, problem.fix_tlt)
    r = b.burst if problem.model == "burst" else b.noburst
    assert r is not None
    T_R, T_C, T_N, T_M = r[2]
    bd = evaluate_geom(problem.geom, problem.nmp, b.tle, b.tlt, T_R, T_C, T_N, T_M, "burst")
    return TileChoice(
        name=problem.name,
        tle=b.tle,
        tlt=b.tlt,
        T_R=T_R,
        T_C=T_C,
        T_N=T_N,
        T_M=T_M,
        time=bd,
        objective_us=problem.nmp.us(r[0]),
        model=problem.model,
        n_candidates=sum(x.n_grid for x in bests),
        n_feasible=sum(x.n_feasible for x in bests),
        fallback=fallback,
    )


def search_tso(problem: TsoLayer) -> TileChoice:
    """TSO's best tiling of ``problem`` (Algorithm 1, lines 7-19, Algorithm 3 exhaustive): what
    ``solve(problem, "tso-enum")`` returns as its solution."""
    return choose(problem, tso_combo_bests(problem))


def choice_from_bests(
    layer: Layer, in_shape: Shape, arch: Arch, bests: list[ComboBest], *args: Any, **kwargs: Any
) -> TileChoice:
    """The :class:`~npusched.problem.tiling.TileChoice` of :func:`search_tso_layer` from
    :func:`~npusched.heuristics.tiling.space.combo_bests`' result (``model``, ``fix_tle``,
    ``fix_tlt`` as :func:`search_tso_layer`)."""
    return choose(TsoLayer.from_layer(layer, in_shape, arch, *args, **kwargs), bests)


def search_tso_layer(
    layer: Layer, in_shape: Shape, arch: Arch, *args: Any, **kwargs: Any
) -> TileChoice:
    """TSO's best tiling of one layer (Algorithm 1, lines 7-19, with Algorithm 3 exhaustive).

    Parameters
    ----------
    layer, in_shape, arch
        A ``conv`` or ``fc`` layer, its input shape and the NMP.
    *args, **kwargs
        ``model``: ``"burst"`` (TSO-burst) or ``"noburst"`` (TSO-noburst: tiles chosen by the
        volume model, then timed with the burst model); ``fix_tle``, ``fix_tlt``: fix the
        slicing and/or the schedule (TSO §VI "Fixed TLE/TLT Partitioning"); when that
        leaves no feasible candidate the free search is used and ``fallback`` is set.

    Returns
    -------
    TileChoice
        The candidate, its burst-model :class:`~npusched.problem.tiling.Breakdown`, the grid size.
    """
    return search_tso(TsoLayer.from_layer(layer, in_shape, arch, *args, **kwargs))


def conv_layers(net: Network) -> list[tuple[Layer, Shape]]:
    """The ``conv`` and ``fc`` layers of ``net`` with their input shapes.

    Raises
    ------
    ValueError
        The network has none.
    """
    out = [(ly, net.in_shapes(ly)[0]) for ly in net.layers if ly.op in ("conv", "fc")]
    if not out:
        raise ValueError(f"network {net.name!r} has no conv or fc layers for TSO to tile")
    return out


def layer_work(layer: Layer, shape: Shape) -> int:
    """Rough cost of a layer's search, to start the big ones first."""
    k, r, c = layer.output_shape([shape])
    return r * c * max(1, shape[0] // max(1, layer.groups))


__all__ = [
    "ComboBest",
    "LayerChoice",
    "TileSpace",
    "choice_from_bests",
    "choose",
    "combo_bests",
    "conv_layers",
    "layer_space",
    "layer_work",
    "pick",
    "search_tso_layer",
    "search_tso",
    "tso_layer_space",
]
