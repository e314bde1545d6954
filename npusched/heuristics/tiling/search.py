"""TSO's exhaustive search (Algorithms 1 and 3) vectorised with numpy.

For each TLE slicing :math:`p` and TLT schedule :math:`q` the candidates
:math:`(T_R, T_C, T_N)` of Algorithm 3 (lines 4-6) are built as flat arrays, :math:`T_M` follows
from ``GetFilters`` (line 7, :func:`npusched.problem.tiling.get_filters`), and every candidate is
timed
at once with the formulas of :mod:`npusched.problem.tiling` (eq. 1-9); no Python loop runs per
candidate. Candidates whose IN tile cannot fit MB0 (eq. 2), i.e.
:math:`T_N > \\lfloor MB0 / (T_H T_L e) \\rfloor`, or whose :math:`T_R T_C` cannot fit one
filter's OUT in MB2, are never built: the grid is ragged, each :math:`(T_R, T_C)` pair carries the
:math:`T_N \\in [1, n_{max}(T_R, T_C)]` that fit, so the search stays exhaustive and exact while
touching about a tenth of the grid. For channel-coupled layers (depthwise) the third axis is
:math:`T_M \\in [1, F]` and :math:`T_N = \\lceil T_M/m_g \\rceil`.

The best candidate of a layer (Algorithm 1, lines 9-19) minimises the model's time; ties go to
the first in TSO's order (slicings, then schedules, in :data:`~npusched.problem.tiling.TLE_SLICINGS`
and :data:`~npusched.problem.tiling.TLT_SCHEDULES` order, then :math:`T_R`, :math:`T_C`, :math:`T_N`
ascending). *TSO-noburst* (Table I) picks the tiles with the volume model and is then timed with
the burst model, as on the NMP board.

Layers run in parallel through a ``concurrent.futures`` executor, as TSO runs one OpenMP task per
convolution (Algorithm 1, lines 2-5).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np

from npusched.arch.model import Arch, unroll_dims
from npusched.common.parallel import map_layers
from npusched.problem.tiling import (
    TLE_SLICINGS,
    TLT_SCHEDULES,
    Breakdown,
    ConvGeom,
    NmpParams,
    TleSlice,
    check_model,
    conv_geometry,
    evaluate_geom,
    nmp_params,
    tle_slicing,
)
from npusched.workload.layers import Layer, Shape
from npusched.workload.network import Network

I64 = np.int64


def _cdiv(a: Any, b: Any) -> Any:
    """Ceiling division of non-negative integers (scalars or int arrays)."""
    return -(-a // b)


def _ceil_bw(nbytes: np.ndarray, bw: float) -> np.ndarray:
    """:math:`\\lceil bytes / BW \\rceil` per element, exactly as
    :func:`npusched.costmodel.ceil_div` (integer path for an integral bandwidth)."""
    if float(bw).is_integer():
        return _cdiv(nbytes, int(bw))
    return np.maximum(0, np.ceil(nbytes / bw - 1e-9)).astype(I64)


# ---- results ----------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class LayerChoice:
    """The tiling TSO picks for one layer.

    Parameters
    ----------
    name
        Layer name.
    tle, tlt, T_R, T_C, T_N, T_M
        The chosen candidate.
    time
        Its burst-model :class:`~npusched.problem.tiling.Breakdown` (what the NMP would take).
    objective_us
        What the search minimised: ``time.total_us`` for ``"burst"``, the volume-model time for
        ``"noburst"``.
    model
        ``"burst"`` or ``"noburst"``.
    n_candidates
        Grid size searched (infeasible included).
    n_feasible
        Feasible candidates among them.
    fallback
        The fixed slicing/schedule had no feasible candidate, so the free search was used.
    """

    name: str
    tle: str
    tlt: str
    T_R: int
    T_C: int
    T_N: int
    T_M: int
    time: Breakdown
    objective_us: float
    model: str
    n_candidates: int
    n_feasible: int
    fallback: bool = False

    @property
    def time_us(self) -> float:
        """Burst-model time of the choice in µs."""
        return self.time.total_us


@dataclass(frozen=True)
class NetworkChoice:
    """TSO's choices for every ``conv``/``fc`` layer of a network (Algorithm 1's ``map``)."""

    network: str
    arch: str
    model: str
    layers: tuple[LayerChoice, ...]
    search_seconds: float
    fix_tle: str | None = None
    fix_tlt: str | None = None

    @property
    def total_time_us(self) -> float:
        """Sum of the layers' burst-model times (µs)."""
        return math.fsum(lc.time_us for lc in self.layers)

    @property
    def load_us(self) -> float:
        return math.fsum(lc.time.load_us for lc in self.layers)

    @property
    def store_us(self) -> float:
        return math.fsum(lc.time.store_us for lc in self.layers)

    @property
    def mac_us(self) -> float:
        return math.fsum(lc.time.mac_us for lc in self.layers)

    @property
    def n_fallback(self) -> int:
        return sum(lc.fallback for lc in self.layers)

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` object."""
        return {
            "network": self.network,
            "arch": self.arch,
            "model": self.model,
            "total_time_us": self.total_time_us,
            "search_seconds": self.search_seconds,
            "layers": [
                {
                    "name": lc.name,
                    "tle": lc.tle,
                    "tlt": lc.tlt,
                    "T_R": lc.T_R,
                    "T_C": lc.T_C,
                    "T_N": lc.T_N,
                    "T_M": lc.T_M,
                    "time_us": lc.time_us,
                }
                for lc in self.layers
            ],
        }


# ---- the vectorised model ---------------------------------------------------------------------


@dataclass
class _Pairs:
    """The :math:`(T_R, T_C)` pairs of one slicing with at least one fitting third coordinate,
    and the ragged expansion to candidates (``rep`` = pair of each candidate, ``v`` = its
    :math:`T_N`, or :math:`T_M` when channel-coupled)."""

    sl: TleSlice
    tr: np.ndarray
    tc: np.ndarray
    hw: np.ndarray  # T_H * T_L
    full_in: np.ndarray
    bpc_in: np.ndarray  # IN bursts per channel when not whole planes
    full_out: np.ndarray
    bpc_out: np.ndarray
    nrc: np.ndarray  # n_r * n_c
    ocap: np.ndarray  # max filters by MB2
    rep: np.ndarray
    v: np.ndarray
    n_grid: int


def _pairs(geom: ConvGeom, nmp: NmpParams, sl: TleSlice) -> _Pairs:
    e, B = nmp.e, nmp.burst
    tr1 = np.arange(1, sl.TLE_R + 1, dtype=I64)
    tc1 = np.arange(1, geom.C + 1, dtype=I64)
    th1 = np.minimum((tr1 - 1) * geom.Sy + geom.Dy * (geom.Ky - 1) + 1, geom.H)  # eq. 1
    tl1 = np.minimum((tc1 - 1) * geom.Sx + geom.Dx * (geom.Kx - 1) + 1, geom.L)
    hw = th1[:, None] * tl1[None, :]
    ocap = nmp.mb2 // (tr1[:, None] * tc1[None, :] * e)  # eq. 2, MB2: filters that fit
    in_cap = nmp.mb0 // (hw * e)  # eq. 2, MB0: IN channels that fit
    if geom.coupled:
        vmax = np.minimum(np.minimum(in_cap * geom.mg, sl.F), ocap)
        vmax = np.minimum(vmax, nmp.mb1 // (geom.Ky * geom.Kx * e))
        n_axis = sl.F
    else:
        vmax = np.where(ocap >= 1, np.minimum(in_cap, geom.Nf), 0)
        n_axis = geom.Nf
    ir, ic = np.nonzero(vmax >= 1)
    cnt = vmax[ir, ic]
    tr, tc = tr1[ir], tc1[ic]
    th, tl = th1[ir], tl1[ic]
    total = int(cnt.sum())
    rep = np.repeat(np.arange(ir.size, dtype=I64), cnt)
    starts = np.cumsum(cnt) - cnt
    v = np.arange(total, dtype=I64) - np.repeat(starts, cnt) + 1
    full_w_in = tl == geom.L
    bpc_in = np.where(full_w_in, _cdiv(th * geom.L * e, B), th * _cdiv(tl * e, B))
    full_w_out = tc == geom.C
    bpc_out = np.where(full_w_out, _cdiv(tr * geom.C * e, B), tr * _cdiv(tc * e, B))
    return _Pairs(
        sl=sl,
        tr=tr,
        tc=tc,
        hw=th * tl,
        full_in=(th == geom.H) & full_w_in,
        bpc_in=bpc_in,
        full_out=(tr == geom.R) & full_w_out,
        bpc_out=bpc_out,
        nrc=_cdiv(sl.TLE_R, tr) * _cdiv(geom.C, tc),
        ocap=ocap[ir, ic],
        rep=rep,
        v=v,
        n_grid=sl.TLE_R * geom.C * n_axis,
    )


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


def _tile_mac(
    nmp: NmpParams, T_M: np.ndarray, ch: Any, T_R: np.ndarray, T_C: np.ndarray, geom: ConvGeom
) -> np.ndarray:
    """Eq. 7 in cycles, vectorised :func:`npusched.costmodel.compute_cycles`."""
    loops: dict[str, Any] = {"K": T_M, "C": ch, "OY": T_R, "OX": T_C, "FY": geom.Ky, "FX": geom.Kx}
    steps: Any = 1
    spatial: set[str] = set()
    for key, u in nmp.unroll:
        dims = unroll_dims(key)
        spatial |= set(dims)
        prod: Any = 1
        for d in dims:
            prod = prod * loops.get(d, 1)
        steps = steps * _cdiv(prod, u)
    for d, n in loops.items():
        if d not in spatial:
            steps = steps * n
    return np.broadcast_to(np.asarray(steps, dtype=I64), T_M.shape)


def _combo(geom: ConvGeom, nmp: NmpParams, pr: _Pairs, tlt: str) -> _Cands:
    """Time every candidate of one (slicing, schedule): eq. 2-9 on arrays."""
    sl, e, B, kk = pr.sl, nmp.e, nmp.burst, geom.Ky * geom.Kx
    F = sl.F
    rep, v = pr.rep, pr.v
    # ---- T_M (GetFilters) and feasibility, eq. 2
    if geom.coupled:
        T_M = v
        ok = v == F if tlt == "IS" else np.ones(v.shape, dtype=bool)
        T_N = _cdiv(v, geom.mg)
    else:
        T_N = v
        if tlt == "WS":
            wcap: Any = nmp.mb1 // (geom.Nf * kk * e)
        else:
            wcap = nmp.mb1 // (v * kk * e)
        tmax = np.minimum(np.minimum(wcap, pr.ocap[rep]), F)
        if tlt == "IS":
            T_M = np.where(tmax == F, F, 0)
        else:
            t = np.arange(F + 1, dtype=I64)
            bal = np.zeros(F + 1, dtype=I64)
            bal[1:] = _cdiv(F, _cdiv(F, t[1:]))
            T_M = bal[np.maximum(tmax, 0)]
        ok = T_M >= 1
    if not ok.all():
        idx = np.nonzero(ok)[0]
        rep, T_M, T_N = rep[idx], T_M[idx], T_N[idx]
    # ---- counts, eq. 3-5
    nrc = pr.nrc[rep]
    n_n: Any = 1 if geom.coupled else _cdiv(geom.Nf, T_N)
    n_m: Any = 1 if tlt == "IS" else _cdiv(F, T_M)
    mc = sl.P_a if geom.coupled else 1
    steps = nrc * n_n * n_m  # tiles one TLT runs
    a_in = (sl.E_a * mc * geom.reps) * steps
    a_w = (sl.E_a * sl.P_a * geom.reps) * (n_m if tlt == "WS" else steps)
    a_out = (sl.E_a * sl.P_a * geom.reps) * (nrc * n_m)
    # ---- one transfer of each tile, Algorithm 4
    in_bytes = T_N * pr.hw[rep] * e
    nb_in = np.where(pr.full_in[rep], _cdiv(in_bytes, B), T_N * pr.bpc_in[rep])
    w_ch: Any = geom.Nf if (tlt == "WS" or geom.coupled) else T_N
    w_bytes = T_M * w_ch * (kk * e)
    row_b = w_ch * (kk * e)
    nb_w = np.where(w_ch == geom.Nf, _cdiv(w_bytes, B), T_M * _cdiv(row_b, B))
    tr, tc = pr.tr[rep], pr.tc[rep]
    out_bytes = T_M * tr * tc * e
    nb_out = np.where(pr.full_out[rep], _cdiv(out_bytes, B), T_M * pr.bpc_out[rep])
    vol = (
        a_in * _ceil_bw(in_bytes, nmp.bw)
        + a_w * _ceil_bw(w_bytes, nmp.bw)
        + a_out * _ceil_bw(out_bytes, nmp.bw)
    )  # eq. 9, volume part
    cas = nmp.cas * (a_in * nb_in + a_w * nb_w + a_out * nb_out)
    # ---- T_MAC, eq. 7-8
    mac_ch: Any = 1 if geom.coupled else T_N
    t_mac = (geom.reps * steps) * _tile_mac(nmp, T_M, mac_ch, tr, tc, geom)
    volume = t_mac + vol
    return _Cands(sl.tle, tlt, tr, tc, T_N, T_M, volume + cas, volume, pr.n_grid)


def _combos(
    geom: ConvGeom,
    nmp: NmpParams,
    tles: Iterable[str] = TLE_SLICINGS,
    tlts: Iterable[str] = TLT_SCHEDULES,
) -> Iterable[_Cands]:
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


def combo_bests(layer: Layer, in_shape: Shape, arch: Arch) -> list[ComboBest]:
    """The best tiles of each of the 9 (slicing, schedule) pairs under both DRAM models, in
    TSO's order: everything Table I needs from one pass over the layer's tile space."""
    geom, nmp = conv_geometry(layer, in_shape), nmp_params(arch)
    return [
        ComboBest(
            c.tle, c.tlt, c.n_grid, int(c.burst.size), _best_of(c, c.burst), _best_of(c, c.volume)
        )
        for c in _combos(geom, nmp)
    ]


def _check_fix(fix_tle: str | None, fix_tlt: str | None) -> None:
    if fix_tle is not None and fix_tle not in TLE_SLICINGS:
        raise ValueError(f"unknown TLE slicing {fix_tle!r}; choose from {', '.join(TLE_SLICINGS)}")
    if fix_tlt is not None and fix_tlt not in TLT_SCHEDULES:
        raise ValueError(
            f"unknown TLT schedule {fix_tlt!r}; choose from {', '.join(TLT_SCHEDULES)}"
        )


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
    key = "burst" if check_model(model) == "burst" else "noburst"
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


# ---- public API -------------------------------------------------------------------------------


def layer_space(
    layer: Layer,
    in_shape: Shape,
    arch: Arch,
    model: str = "burst",
    fix_tle: str | None = None,
    fix_tlt: str | None = None,
) -> TileSpace:
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
    model
        ``"burst"`` or ``"noburst"``: which time ``time_us`` holds.
    fix_tle, fix_tlt
        Restrict to one slicing and/or schedule (no fallback here).

    Returns
    -------
    TileSpace
        Candidates in TSO's order; ``argmin(time_us)`` (first) is :func:`search_layer`'s choice
        when it has no fallback.
    """
    mdl = check_model(model)
    _check_fix(fix_tle, fix_tlt)
    geom, nmp = conv_geometry(layer, in_shape), nmp_params(arch)
    tles = TLE_SLICINGS if fix_tle is None else (fix_tle,)
    tlts = TLT_SCHEDULES if fix_tlt is None else (fix_tlt,)
    parts = list(_combos(geom, nmp, tles, tlts))

    def cat(f: Any, dtype: Any = I64) -> np.ndarray:
        return np.concatenate([np.asarray(f(c), dtype=dtype) for c in parts])

    burst = cat(lambda c: c.burst, np.float64) / (nmp.freq_hz / 1e6)
    obj = burst if mdl == "burst" else cat(lambda c: c.volume, np.float64) / (nmp.freq_hz / 1e6)
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
        model="burst" if mdl == "burst" else "noburst",
    )


def choice_from_bests(
    layer: Layer,
    in_shape: Shape,
    arch: Arch,
    bests: list[ComboBest],
    model: str = "burst",
    fix_tle: str | None = None,
    fix_tlt: str | None = None,
) -> LayerChoice:
    """The :class:`LayerChoice` of :func:`search_layer` from :func:`combo_bests`' result."""
    mdl = "burst" if check_model(model) == "burst" else "noburst"
    _check_fix(fix_tle, fix_tlt)
    b, fallback = pick(bests, mdl, fix_tle, fix_tlt)
    r = b.burst if mdl == "burst" else b.noburst
    assert r is not None
    T_R, T_C, T_N, T_M = r[2]
    geom, nmp = conv_geometry(layer, in_shape), nmp_params(arch)
    bd = evaluate_geom(geom, nmp, b.tle, b.tlt, T_R, T_C, T_N, T_M, "burst")
    return LayerChoice(
        name=layer.name,
        tle=b.tle,
        tlt=b.tlt,
        T_R=T_R,
        T_C=T_C,
        T_N=T_N,
        T_M=T_M,
        time=bd,
        objective_us=nmp.us(r[0]),
        model=mdl,
        n_candidates=sum(x.n_grid for x in bests),
        n_feasible=sum(x.n_feasible for x in bests),
        fallback=fallback,
    )


def search_layer(
    layer: Layer,
    in_shape: Shape,
    arch: Arch,
    model: str = "burst",
    fix_tle: str | None = None,
    fix_tlt: str | None = None,
) -> LayerChoice:
    """TSO's best tiling of one layer (Algorithm 1, lines 7-19, with Algorithm 3 exhaustive).

    Parameters
    ----------
    layer, in_shape
        A ``conv`` or ``fc`` layer and its input shape.
    arch
        The NMP.
    model
        ``"burst"`` (TSO-burst) or ``"noburst"`` (TSO-noburst: tiles chosen by the volume model,
        then timed with the burst model).
    fix_tle, fix_tlt
        Fix the slicing and/or the schedule (TSO §VI "Fixed TLE/TLT Partitioning"); when that
        leaves no feasible candidate the free search is used and ``fallback`` is set.

    Returns
    -------
    LayerChoice
        The candidate, its burst-model :class:`~npusched.problem.tiling.Breakdown`, the grid size.
    """
    _check_fix(fix_tle, fix_tlt)
    return choice_from_bests(
        layer, in_shape, arch, combo_bests(layer, in_shape, arch), model, fix_tle, fix_tlt
    )


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


def _work(layer: Layer, shape: Shape) -> int:
    """Rough cost of a layer's search, to start the big ones first."""
    k, r, c = layer.output_shape([shape])
    return r * c * max(1, shape[0] // max(1, layer.groups))


def search_network(
    net: Network,
    arch: Arch,
    model: str = "burst",
    fix_tle: str | None = None,
    fix_tlt: str | None = None,
    executor: Executor | None = None,
    workers: int | None = None,
) -> NetworkChoice:
    """TSO (Algorithm 1) over every ``conv``/``fc`` layer of ``net``, one task per layer.

    Parameters
    ----------
    net
        The network.
    arch
        The NMP.
    model, fix_tle, fix_tlt
        As :func:`search_layer`.
    executor
        Any ``concurrent.futures.Executor``; default a process pool with ``workers`` processes
        (all cores when ``None``); ``workers=1`` runs in this process.
    workers
        Pool size when ``executor`` is ``None``.

    Returns
    -------
    NetworkChoice
        Layers in network order, the wall-clock search time (pool start included).

    Raises
    ------
    ValueError
        Unknown model or fixed strategy, or a network without convolutions.
    """
    mdl = "burst" if check_model(model) == "burst" else "noburst"
    _check_fix(fix_tle, fix_tlt)
    layers = conv_layers(net)
    t0 = time.perf_counter()
    items = [(ly, sh, arch, mdl, fix_tle, fix_tlt) for ly, sh in layers]
    choices = map_layers(
        search_layer, items, executor, workers, [_work(ly, sh) for ly, sh in layers]
    )
    return NetworkChoice(
        network=net.name,
        arch=arch.name,
        model=mdl,
        layers=tuple(choices),
        search_seconds=time.perf_counter() - t0,
        fix_tle=fix_tle,
        fix_tlt=fix_tlt,
    )


__all__ = [
    "ComboBest",
    "LayerChoice",
    "NetworkChoice",
    "TileSpace",
    "choice_from_bests",
    "combo_bests",
    "conv_layers",
    "layer_space",
    "pick",
    "search_layer",
    "search_network",
]
