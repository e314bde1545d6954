"""TSO's tile space of one layer (Algorithm 3) timed with numpy: every candidate at once.

For each TLE slicing :math:`p` and TLT schedule :math:`q` the candidates
:math:`(T_R, T_C, T_N)` of Algorithm 3 (lines 4-6) are built as flat arrays, :math:`T_M` follows
from ``GetFilters`` (line 7, :func:`npusched.problem.tiling.equations.filters_of`), and every
candidate is timed at once with the equation functions of :mod:`npusched.problem.tiling.equations`
(eq. 1-9, called on arrays); no Python loop runs per candidate. Candidates whose IN tile cannot
fit MB0 (eq. 2), i.e. :math:`T_N > \\lfloor MB0 / (T_H T_L e) \\rfloor`, or whose
:math:`T_R T_C` cannot fit one filter's OUT in MB2, are never built: the grid is ragged, each
:math:`(T_R, T_C)` pair carries the :math:`T_N \\in [1, n_{max}(T_R, T_C)]` that fit, so the
search stays exhaustive and exact while touching about a tenth of the grid. For channel-coupled
layers (depthwise) the third axis is :math:`T_M \\in [1, F]` and
:math:`T_N = \\lceil T_M/m_g \\rceil`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from npusched.arch.model import Arch
from npusched.problem.tiling import (
    TLE_SLICINGS,
    TLT_SCHEDULES,
    ConvGeom,
    NmpParams,
    TleSlice,
    TsoLayer,
    cycle_terms,
    tle_slicing,
)
from npusched.problem.tiling.equations import (
    coupled_channels,
    filter_capacity,
    filters_of,
    in_channel_capacity,
    in_tile,
    out_filter_capacity,
    vmin,
    w_filter_capacity,
)
from npusched.workload.layers import Layer, Shape

I64 = np.int64


@dataclass(frozen=True)
class TileSpace:
    """Every feasible candidate of a layer with its time: the space an exact model must match.

    Parameters
    ----------
    tle, tlt
        Indices into :data:`~npusched.problem.tiling.TLE_SLICINGS` and
        :data:`~npusched.problem.tiling.TLT_SCHEDULES` (``int8`` arrays).
    T_R, T_C, T_N, T_M
        Tile sizes (``int64`` arrays).
    time_us
        The search objective: the burst-model time for ``model="burst"``, the volume-model time
        for ``"noburst"`` (``float64``).
    burst_us
        The burst-model time (equals ``time_us`` for ``"burst"``).
    n_candidates
        Size of the whole grid :math:`\\sum_{p,q} TLE_R \\cdot C \\cdot N` (infeasible included).
    model
        ``"burst"`` or ``"noburst"``.
    """

    tle: np.ndarray
    tlt: np.ndarray
    T_R: np.ndarray
    T_C: np.ndarray
    T_N: np.ndarray
    T_M: np.ndarray
    time_us: np.ndarray
    burst_us: np.ndarray
    n_candidates: int
    model: str

    def __len__(self) -> int:
        return int(self.time_us.size)

    def best(self) -> int:
        """Index of the search's choice (first minimum of ``time_us``)."""
        return int(np.argmin(self.time_us))


# ---- the vectorised model ---------------------------------------------------------------------


@dataclass
class _Pairs:
    """The :math:`(T_R, T_C)` pairs of one slicing with at least one fitting third coordinate,
    and the ragged expansion to candidates (``rep`` = pair of each candidate, ``v`` = its
    :math:`T_N`, or :math:`T_M` when channel-coupled)."""

    sl: TleSlice
    tr: np.ndarray
    tc: np.ndarray
    rep: np.ndarray
    v: np.ndarray
    n_grid: int


def _pairs(geom: ConvGeom, nmp: NmpParams, sl: TleSlice) -> _Pairs:
    """The ragged grid of one slicing: :math:`T_R, T_C` and the third coordinates that fit
    (eq. 2 for MB0 and MB2; for channel-coupled layers also MB1)."""
    tr1 = np.arange(1, sl.TLE_R + 1, dtype=I64)
    tc1 = np.arange(1, geom.C + 1, dtype=I64)
    th1, tl1 = in_tile(geom, tr1, tc1)
    ocap = out_filter_capacity(nmp, tr1[:, None], tc1[None, :])
    in_cap = in_channel_capacity(nmp, th1[:, None], tl1[None, :])
    if geom.coupled:  # T_M <= F that fits MB2, MB1, and MB0 with ceil(T_M/m_g) channels
        vmax = vmin(in_cap * geom.mg, sl.F, ocap, w_filter_capacity(geom, nmp, geom.Nf))
        n_axis = sl.F
    else:
        vmax = np.where(ocap >= 1, np.minimum(in_cap, geom.Nf), 0)
        n_axis = geom.Nf
    ir, ic = np.nonzero(vmax >= 1)
    cnt = vmax[ir, ic]
    total = int(cnt.sum())
    rep = np.repeat(np.arange(ir.size, dtype=I64), cnt)
    starts = np.cumsum(cnt) - cnt
    v = np.arange(total, dtype=I64) - np.repeat(starts, cnt) + 1
    return _Pairs(sl, tr1[ir], tc1[ic], rep, v, sl.TLE_R * geom.C * n_axis)


@dataclass
class _Cands:
    """Feasible candidates of one (slicing, schedule) with their cycles."""

    tle: str
    tlt: str
    T_R: np.ndarray
    T_C: np.ndarray
    T_N: np.ndarray
    T_M: np.ndarray
    burst: np.ndarray  # cycles, burst model
    volume: np.ndarray  # cycles, volume model
    n_grid: int


def _combo(geom: ConvGeom, nmp: NmpParams, pr: _Pairs, tlt: str) -> _Cands:
    """Time every candidate of one (slicing, schedule): ``GetFilters``, then eq. 1-9 on arrays
    (:func:`~npusched.problem.tiling.equations.cycle_terms`)."""
    sl, rep, v = pr.sl, pr.rep, pr.v
    tr, tc = pr.tr[rep], pr.tc[rep]
    if geom.coupled:
        T_M, T_N = v, coupled_channels(geom, v)
        ok = v == sl.F if tlt == "IS" else np.ones(v.shape, dtype=bool)
    else:
        T_N = v
        T_M = filters_of(sl.F, tlt, filter_capacity(geom, nmp, sl, tlt, tr, tc, v))
        ok = T_M >= 1
    if not ok.all():
        idx = np.nonzero(ok)[0]
        tr, tc, T_M, T_N = tr[idx], tc[idx], T_M[idx], T_N[idx]
    terms = cycle_terms(geom, nmp, sl, tlt, tr, tc, T_N, T_M)
    burst, volume = terms.total("burst"), terms.total("volume")
    return _Cands(sl.tle, tlt, tr, tc, T_N, T_M, burst, volume, pr.n_grid)


def combos(
    geom: ConvGeom,
    nmp: NmpParams,
    tles: Iterable[str] = TLE_SLICINGS,
    tlts: Iterable[str] = TLT_SCHEDULES,
) -> Iterable[_Cands]:
    """The candidates of each (slicing, schedule) pair, in TSO's order."""
    tlts = tuple(tlts)
    for p in tles:
        pr = _pairs(geom, nmp, tle_slicing(p, geom, nmp))
        for q in tlts:
            yield _combo(geom, nmp, pr, q)


@dataclass(frozen=True)
class ComboBest:
    """The best candidate of one (slicing, schedule) under each DRAM model.

    ``burst``/``noburst``: ``(objective_cycles, burst_cycles, (T_R, T_C, T_N, T_M))`` or
    ``None`` when the combination has no feasible candidate.
    """

    tle: str
    tlt: str
    n_grid: int
    n_feasible: int
    burst: tuple[int, int, tuple[int, int, int, int]] | None
    noburst: tuple[int, int, tuple[int, int, int, int]] | None


def _best_of(c: _Cands, obj: np.ndarray) -> tuple[int, int, tuple[int, int, int, int]] | None:
    if obj.size == 0:
        return None
    k = int(np.argmin(obj))
    tile = (int(c.T_R[k]), int(c.T_C[k]), int(c.T_N[k]), int(c.T_M[k]))
    return int(obj[k]), int(c.burst[k]), tile


def tso_combo_bests(problem: TsoLayer) -> list[ComboBest]:
    """The best tiles of each of the 9 (slicing, schedule) pairs of ``problem``'s layer under
    both DRAM models, in TSO's order (its fixed slicing/schedule are not applied here)."""
    return [
        ComboBest(
            c.tle, c.tlt, c.n_grid, int(c.burst.size), _best_of(c, c.burst), _best_of(c, c.volume)
        )
        for c in combos(problem.geom, problem.nmp)
    ]


def combo_bests(layer: Layer, in_shape: Shape, arch: Arch) -> list[ComboBest]:
    """The best tiles of each of the 9 (slicing, schedule) pairs under both DRAM models, in
    TSO's order: everything Table I needs from one pass over the layer's tile space."""
    return tso_combo_bests(TsoLayer.from_layer(layer, in_shape, arch))


def tso_layer_space(problem: TsoLayer) -> TileSpace:
    """Every feasible candidate of TSO's tile space for ``problem`` (restricted to its fixed
    slicing/schedule, no fallback), with its time under ``problem.model``; see
    :func:`layer_space`."""
    geom, nmp = problem.geom, problem.nmp
    tles = TLE_SLICINGS if problem.fix_tle is None else (problem.fix_tle,)
    tlts = TLT_SCHEDULES if problem.fix_tlt is None else (problem.fix_tlt,)
    parts = list(combos(geom, nmp, tles, tlts))

    def cat(f: Any, dtype: Any = I64) -> np.ndarray:
        return np.concatenate([np.asarray(f(c), dtype=dtype) for c in parts])

    mhz = nmp.freq_hz / 1e6
    burst = cat(lambda c: c.burst, np.float64) / mhz
    obj = burst if problem.model == "burst" else cat(lambda c: c.volume, np.float64) / mhz
    return TileSpace(
        tle=cat(lambda c: np.full(c.burst.size, TLE_SLICINGS.index(c.tle)), np.int8),
        tlt=cat(lambda c: np.full(c.burst.size, TLT_SCHEDULES.index(c.tlt)), np.int8),
        T_R=cat(lambda c: c.T_R),
        T_C=cat(lambda c: c.T_C),
        T_N=cat(lambda c: c.T_N),
        T_M=cat(lambda c: c.T_M),
        time_us=obj,
        burst_us=burst,
        n_candidates=sum(c.n_grid for c in parts),
        model=problem.model,
    )


def layer_space(layer: Layer, in_shape: Shape, arch: Arch, *args: Any, **kwargs: Any) -> TileSpace:
    """Every feasible candidate of TSO's tile space for one layer, with its time.

    The space is Algorithm 3's: for each slicing :math:`p` and schedule :math:`q`,
    :math:`T_R \\in [1, TLE_R]`, :math:`T_C \\in [1, C]`, :math:`T_N \\in [1, N]` and
    :math:`T_M` = :func:`~npusched.problem.tiling.get_filters` (channel-coupled layers:
    :math:`T_M \\in [1, F]`, :math:`T_N = \\lceil T_M/m_g \\rceil`); infeasible candidates
    (eq. 2) are left out. Each entry equals ``evaluate(...).total_us`` of the same candidate
    (with ``model``).

    Parameters
    ----------
    layer, in_shape
        A ``conv`` or ``fc`` layer and its input shape.
    arch
        The NMP.
    *args, **kwargs
        ``model`` (``"burst"`` or ``"noburst"``: which time ``time_us`` holds), ``fix_tle``,
        ``fix_tlt`` (restrict to one slicing and/or schedule, no fallback here), as
        :meth:`TsoLayer.from_layer <npusched.problem.tiling.TsoLayer.from_layer>`.

    Returns
    -------
    TileSpace
        Candidates in TSO's order; ``argmin(time_us)`` (first) is
        :func:`~npusched.heuristics.tiling.search.search_tso_layer`'s choice when it has no
        fallback.
    """
    return tso_layer_space(TsoLayer.from_layer(layer, in_shape, arch, *args, **kwargs))


__all__ = [
    "ComboBest",
    "TileSpace",
    "combo_bests",
    "combos",
    "layer_space",
    "tso_combo_bests",
    "tso_layer_space",
]
