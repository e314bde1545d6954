"""TSO's equations, each stated once (Sousa et al., seed ``004_442fbcc29e97fffd.txt``).

Every function here works on Python ints *and* on numpy integer arrays (one entry per
candidate), so the scalar reference :func:`npusched.problem.tiling.evaluate`, the vectorised
search :mod:`npusched.heuristics.tiling.space`, the exact models
(:mod:`npusched.formulations.tiling`, which take their coefficients from these functions) and the
verifier :mod:`npusched.verify.tiling` all compute the same numbers with the same code. Ceilings
are ``//``-based (:func:`cdiv`), minima and case splits go through :func:`vmin` and
:func:`vwhere`, which stay plain Python on scalars.

===================================  ==========================================================
TSO                                  function
===================================  ==========================================================
eq. 1 (IN tile)                      :func:`in_tile`
eq. 2 (scratchpad capacities)        :func:`tile_bytes`, :func:`fits`, :func:`in_channel_capacity`,
                                     :func:`filter_capacity`
eq. 3-5 (transfer counts)            :func:`loop_counts`, :func:`transfer_counts`
eq. 7 (MAC time of a tile)           :func:`tile_mac_cycles`
eq. 8 (MAC time of the layer)        :func:`mac_cycles`
eq. 9 (DRAM time)                    :func:`dram_cycles`
Algorithm 2 (``TLESlicing``)         :func:`tle_slicing`
Algorithm 3 line 7 (GetFilters)      :func:`get_filters`, :func:`balanced_filters`
Algorithm 4 (``CalBurstCount``)      :func:`plane_bursts`, :func:`weight_bursts`
Algorithm 4 (``CalcDataTransfer``)   :func:`ceil_bw`, :func:`transfer_cycles`
===================================  ==========================================================

:func:`cycle_terms` chains them for one candidate (or an array of candidates).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from npusched.arch.model import unroll_dims
from npusched.costmodel.noc import ceil_div
from npusched.problem.tiling.geometry import (
    TLE_SLICINGS,
    ConvGeom,
    NmpParams,
    TleSlice,
    check_model,
)

#: An int or an int array (one entry per candidate).
Int = Any


# ---- int-or-array helpers ---------------------------------------------------------------------


def _any_array(*xs: Any) -> bool:
    return any(isinstance(x, np.ndarray) for x in xs)


def cdiv(a: Int, b: Int) -> Int:
    """:math:`\\lceil a/b \\rceil` of non-negative integers (ints or int arrays)."""
    return -(-a // b)


def vmin(*xs: Int) -> Int:
    """Elementwise minimum (``min`` on scalars, ``np.minimum`` when an array is involved)."""
    if _any_array(*xs):
        return functools.reduce(np.minimum, xs)
    return min(xs)


def vwhere(cond: Any, a: Int, b: Int) -> Int:
    """``a if cond else b``, elementwise when an argument is an array."""
    if _any_array(cond, a, b):
        return np.where(cond, a, b)
    return a if cond else b


# ---- Algorithm 2 ------------------------------------------------------------------------------


def tle_slicing(tle: str, geom: ConvGeom, nmp: NmpParams) -> TleSlice:
    """Algorithm 2 (``TLESlicing``) with :math:`E` TLEs:

    .. math::

        KS: TLE_W = \\lceil M/E \\rceil,\\ TLE_R = R; \\quad
        KS\\&OFM: TLE_W = \\lceil M/(E/2) \\rceil,\\ TLE_R = \\lceil R/(E/2) \\rceil; \\quad
        OFM: TLE_W = M,\\ TLE_R = \\lceil R/E \\rceil.
    """
    E = nmp.E
    if tle == "KS":
        gw, gr = E, 1
    elif tle == "KS&OFM":
        gw = max(1, E // 2)
        gr = max(1, E // gw)
    elif tle == "OFM":
        gw, gr = 1, E
    else:
        raise ValueError(f"unknown TLE slicing {tle!r}; choose from {', '.join(TLE_SLICINGS)}")
    filters, rows = geom.filters, geom.R
    tle_w, tle_r = cdiv(filters, gw), cdiv(rows, gr)
    e_a = min(gw, cdiv(filters, tle_w)) * min(gr, cdiv(rows, tle_r))
    return TleSlice(tle, tle_r, tle_w, e_a, min(nmp.P, tle_w), cdiv(tle_w, nmp.P))


# ---- eq. 1 and eq. 2 --------------------------------------------------------------------------


def in_tile(geom: ConvGeom, T_R: Int, T_C: Int) -> tuple[Int, Int]:
    """:math:`(T_H, T_L)`, the IN tile of an OUT tile (eq. 1, clipped to the input).

    .. math::

        T_H = \\min((T_R - 1) S_y + d_y (K_y - 1) + 1, H),\\quad
        T_L = \\min((T_C - 1) S_x + d_x (K_x - 1) + 1, L)
    """
    T_H = vmin((T_R - 1) * geom.Sy + geom.Dy * (geom.Ky - 1) + 1, geom.H)
    T_L = vmin((T_C - 1) * geom.Sx + geom.Dx * (geom.Kx - 1) + 1, geom.L)
    return T_H, T_L


def coupled_channels(geom: ConvGeom, T_M: Int) -> Int:
    """Channels of the IN tile of a channel-coupled layer: :math:`\\lceil T_M/m_g \\rceil`
    (module notes of :mod:`npusched.problem.tiling`, deviation 6)."""
    return cdiv(T_M, geom.mg)


def w_channels(geom: ConvGeom, tlt: str, T_N: Int) -> Int:
    """:math:`T_N^W`, the channels of a W tile (eq. 2): :math:`N_f` for WS (a W tile "includes
    all its N channels", §IV-D) and for channel-coupled layers, :math:`T_N` otherwise."""
    return geom.Nf if (tlt == "WS" or geom.coupled) else T_N


def tile_bytes(
    geom: ConvGeom, nmp: NmpParams, tlt: str, T_R: Int, T_C: Int, T_N: Int, T_M: Int
) -> tuple[Int, Int, Int]:
    """Bytes of the IN, W and OUT tiles: the left-hand sides of eq. 2.

    .. math::

        |IN| = T_N T_H T_L e,\\quad |W| = T_M T_N^W K_y K_x e,\\quad |OUT| = T_M T_R T_C e
    """
    T_H, T_L = in_tile(geom, T_R, T_C)
    e = nmp.e
    in_b = T_N * T_H * T_L * e
    w_b = T_M * w_channels(geom, tlt, T_N) * (geom.Ky * geom.Kx * e)
    out_b = T_M * T_R * T_C * e
    return in_b, w_b, out_b


def fits(nmp: NmpParams, in_b: Int, w_b: Int, out_b: Int) -> tuple[Int, Int, Int]:
    """Eq. 2: whether each tile fits its scratchpad.

    .. math:: |IN| \\le MB0,\\qquad |W| \\le MB1,\\qquad |OUT| \\le MB2
    """
    return in_b <= nmp.mb0, w_b <= nmp.mb1, out_b <= nmp.mb2


def in_channel_capacity(nmp: NmpParams, T_H: Int, T_L: Int) -> Int:
    """Eq. 2 for MB0 solved for the channels: :math:`\\lfloor MB0 / (T_H T_L e) \\rfloor`."""
    return nmp.mb0 // (T_H * T_L * nmp.e)


def out_filter_capacity(nmp: NmpParams, T_R: Int, T_C: Int) -> Int:
    """Eq. 2 for MB2 solved for the filters: :math:`\\lfloor MB2 / (T_R T_C e) \\rfloor`."""
    return nmp.mb2 // (T_R * T_C * nmp.e)


def w_filter_capacity(geom: ConvGeom, nmp: NmpParams, w_ch: Int) -> Int:
    """Eq. 2 for MB1 solved for the filters: :math:`\\lfloor MB1 / (T_N^W K_y K_x e)
    \\rfloor`."""
    return nmp.mb1 // (w_ch * (geom.Ky * geom.Kx * nmp.e))


def filter_capacity(
    geom: ConvGeom, nmp: NmpParams, sl: TleSlice, tlt: str, T_R: Int, T_C: Int, T_N: Int
) -> Int:
    """:math:`T_M^*`, the most filters a TLT's W and OUT tiles hold (eq. 2, ``GetFilters``).

    .. math::

        T_M^{*} = \\min\\left(F, \\left\\lfloor \\frac{MB1}{T_N^W K_y K_x e} \\right\\rfloor,
                  \\left\\lfloor \\frac{MB2}{T_R T_C e} \\right\\rfloor\\right)
    """
    w_cap = w_filter_capacity(geom, nmp, w_channels(geom, tlt, T_N))
    return vmin(w_cap, out_filter_capacity(nmp, T_R, T_C), sl.F)


# ---- Algorithm 3, GetFilters ------------------------------------------------------------------


def balanced_filters(F: int, t_max: Int) -> Int:
    """:math:`\\lceil F / \\lceil F / t \\rceil \\rceil`: the smallest :math:`T_M` with as few
    filter tiles as :math:`t` (0 when ``t_max < 1``)."""
    t = vmin(vwhere(t_max < 1, 1, t_max), F)
    return vwhere(t_max < 1, 0, cdiv(F, cdiv(F, t)))


def filters_of(F: int, tlt: str, t_max: Int) -> Int:
    """``GetFilters`` from :math:`T_M^*` (:func:`filter_capacity`): IS needs all :math:`F`
    filters (:math:`F` or 0), OS and WS take :func:`balanced_filters`."""
    if tlt == "IS":
        return vwhere(t_max == F, F, 0)
    return balanced_filters(F, t_max)


def get_filters(
    geom: ConvGeom, nmp: NmpParams, sl: TleSlice, tlt: str, T_R: Int, T_C: Int, T_N: Int
) -> Int:
    """``GetFilters`` (Algorithm 3, line 7): the filters :math:`T_M` a TLT's W tile holds, or 0
    when none fits.

    .. math::

        T_M = \\begin{cases} F & IS,\\ T_M^* = F \\\\
              \\lceil F / \\lceil F / T_M^* \\rceil \\rceil & OS, WS,\\ T_M^* \\ge 1 \\\\
              0 & \\text{otherwise} \\end{cases}

    with :math:`T_M^*` of :func:`filter_capacity` (eq. 2). Channel-coupled layers have no
    ``GetFilters`` (their :math:`T_M` is searched and :math:`T_N` follows from it); this returns
    0 for them.
    """
    if geom.coupled:
        return 0
    return filters_of(sl.F, tlt, filter_capacity(geom, nmp, sl, tlt, T_R, T_C, T_N))


# ---- eq. 3-5, 7, 8 ----------------------------------------------------------------------------


def loop_counts(
    geom: ConvGeom, sl: TleSlice, tlt: str, T_R: Int, T_C: Int, T_N: Int, T_M: Int
) -> tuple[Int, Int, Int, Int]:
    """:math:`(n_r, n_c, n_n, n_m)`, the tiles per TLT along each loop (eq. 3-5 and 8).

    .. math::

        n_r = \\lceil TLE_R / T_R \\rceil,\\ n_c = \\lceil C / T_C \\rceil,\\
        n_n = \\lceil N_f / T_N \\rceil,\\ n_m = \\lceil F / T_M \\rceil

    (:math:`n_n = 1` when channel-coupled, :math:`n_m = 1` for IS).
    """
    n_r, n_c = cdiv(sl.TLE_R, T_R), cdiv(geom.C, T_C)
    n_n = 1 if geom.coupled else cdiv(geom.Nf, T_N)
    n_m = 1 if tlt == "IS" else cdiv(sl.F, T_M)
    return n_r, n_c, n_n, n_m


def transfer_counts(
    geom: ConvGeom, sl: TleSlice, tlt: str, n_rc: Int, n_n: Int, n_m: Int
) -> tuple[Int, Int, Int]:
    """:math:`(\\alpha_{in}, \\alpha_w, \\alpha_{out})` of eq. 3 (IS), 4 (OS), 5 (WS) with
    multicast IN tiles (module notes, deviations 1, 2 and 6), :math:`n_{rc} = n_r n_c`.

    .. math::

        \\alpha_{in} = r E_a m_c n_{rc} n_n n_m,\\quad
        \\alpha_w = r E_a P_a \\begin{cases} n_m & WS \\\\ n_{rc} n_n n_m & IS, OS \\end{cases},
        \\quad \\alpha_{out} = r E_a P_a n_{rc} n_m

    (:math:`r` groups run in turn, :math:`m_c = P_a` without multicast when channel-coupled,
    else 1; :math:`n_m = 1` for IS).
    """
    steps = n_rc * n_n * n_m  # tiles one TLT runs
    mc = sl.P_a if geom.coupled else 1  # no multicast when the TLTs need different channels
    ep = sl.E_a * sl.P_a * geom.reps
    a_in = (sl.E_a * mc * geom.reps) * steps
    a_w = ep * (n_m if tlt == "WS" else steps)  # eq. 5: each W tile once
    a_out = ep * (n_rc * n_m)
    return a_in, a_w, a_out


def _product(*factors: Int) -> Int:
    return math.prod(factors)


def tile_mac_cycles(
    geom: ConvGeom,
    nmp: NmpParams,
    tiles: tuple[Int, Int, Int, Int],
    mul: Callable[..., Any] = _product,
    ceil: Callable[[Any, int], Any] = cdiv,
) -> Any:
    """:math:`Tile_{MAC}` in cycles (eq. 7) of ``tiles`` :math:`= (T_R, T_C, T_N, T_M)` for any
    ``pe_unroll``, as :func:`npusched.costmodel.compute_cycles`.

    .. math::

        Tile_{MAC} = \\prod_{g \\in U} \\left\\lceil \\frac{\\prod_{d \\in g} L_d}{u_g}
        \\right\\rceil \\prod_{d \\notin \\cup U} L_d
        \\;=\\; T_N T_M \\left\\lceil \\frac{T_R T_C K_y K_x}{\\#MACs} \\right\\rceil
        \\text{ on the NMP}

    with loops :math:`K = T_M`, :math:`C = T_N` (1 when channel-coupled), :math:`OY = T_R`,
    :math:`OX = T_C`, :math:`FY = K_y`, :math:`FX = K_x`. ``mul`` (product of its arguments) and
    ``ceil`` (:math:`\\lceil x/u \\rceil`) default to integer arithmetic; the CP-SAT model passes
    its exact constraints instead.
    """
    T_R, T_C, T_N, T_M = tiles
    ch = 1 if geom.coupled else T_N
    loops: dict[str, Any] = {"K": T_M, "C": ch, "OY": T_R, "OX": T_C, "FY": geom.Ky, "FX": geom.Kx}
    factors: list[Any] = []
    spatial: set[str] = set()
    for key, u in nmp.unroll:
        dims = unroll_dims(key)
        spatial |= set(dims)
        factors.append(ceil(mul(*(loops.get(d, 1) for d in dims)), u))
    factors += [n for d, n in loops.items() if d not in spatial]
    return mul(*factors)


def mac_cycles(geom: ConvGeom, n_rc: Int, n_n: Int, n_m: Int, tile_mac: Int) -> Int:
    """:math:`T_{MAC}` (eq. 8 as the critical path: the tiles one TLT runs, module notes,
    deviation 3).

    .. math:: T_{MAC} = r\\, n_r n_c n_n n_m\\, Tile_{MAC}
    """
    return (geom.reps * n_rc * n_n * n_m) * tile_mac


# ---- Algorithm 4 and eq. 9 --------------------------------------------------------------------


def plane_bursts(
    channels: Int, rows: Int, cols: Int, height: int, width: int, e: int, burst: int
) -> Int:
    """Bursts to move a ``channels × rows × cols`` tile of an NCHW tensor with ``height × width``
    planes (``CalBurstCount`` of Algorithm 4).

    .. math::

        n_{burst} = \\begin{cases}
            \\lceil T_N T_H T_L e / B \\rceil & T_H = H,\\ T_L = L \\text{ (whole planes)} \\\\
            T_N \\lceil T_H L e / B \\rceil & T_L = L \\\\
            T_N T_H \\lceil T_L e / B \\rceil & \\text{otherwise}
        \\end{cases}

    The last two cases are :func:`npusched.costmodel.tile_burst_count` (TSO §IV-E and the
    InceptionV3 example of §VI); the first extends its argument (consecutive rows are contiguous)
    to consecutive planes, which NCHW also stores back to back.
    """
    full_w = cols >= width
    per_channel = vwhere(full_w, cdiv(rows * width * e, burst), rows * cdiv(cols * e, burst))
    whole = full_w & (rows >= height)
    return vwhere(whole, cdiv(channels * rows * cols * e, burst), channels * per_channel)


def weight_bursts(filters: Int, w_ch: Int, geom: ConvGeom, e: int, burst: int) -> Int:
    """Bursts of a W tile (Algorithm 4): ``filters`` rows of :math:`T_N^W K_y K_x` elements of
    the :math:`M × (N_f K_y K_x)` filter matrix, one run when a row is a whole filter.

    .. math::

        b_W = \\begin{cases} \\lceil T_M T_N^W K_y K_x e / B \\rceil & T_N^W = N_f \\\\
              T_M \\lceil T_N^W K_y K_x e / B \\rceil & \\text{otherwise} \\end{cases}
    """
    row_b = w_ch * (geom.Ky * geom.Kx * e)
    return vwhere(w_ch >= geom.Nf, cdiv(filters * row_b, burst), filters * cdiv(row_b, burst))


def ceil_bw(nbytes: Int, bw: float) -> Int:
    """:math:`\\lceil bytes / BW \\rceil` (``CalcDataTransfer``'s volume part, Algorithm 4), as
    :func:`npusched.costmodel.ceil_div`: exact for an integral bandwidth, else a float ceiling
    tolerant of :math:`10^{-9}` round-off."""
    if not isinstance(nbytes, np.ndarray):
        return ceil_div(nbytes, bw)
    if float(bw).is_integer():
        return cdiv(nbytes, int(bw))
    return np.maximum(0, np.ceil(nbytes / bw - 1e-9)).astype(np.int64)


def transfer_cycles(nbytes: Int, nbursts: Int, nmp: NmpParams, model: str) -> Int:
    """``CalcDataTransfer`` (Algorithm 4): :math:`\\lceil bytes/BW \\rceil + n_{burst} CAS`
    (TSO-burst) or :math:`\\lceil bytes/BW \\rceil` (TSO-noburst)."""
    if check_model(model) == "volume":
        return ceil_bw(nbytes, nmp.bw)
    return ceil_bw(nbytes, nmp.bw) + nbursts * nmp.cas


def dram_cycles(alphas: tuple[Int, Int, Int], times: tuple[Int, Int, Int]) -> tuple[Int, Int]:
    """Eq. 9 split into loads and stores:
    :math:`T_{DRAM} = \\alpha_{in} t(IN) + \\alpha_w t(W) + \\alpha_{out} t(OUT)`.

    Returns ``(α_in t(IN) + α_w t(W), α_out t(OUT))``.
    """
    (a_in, a_w, a_out), (t_in, t_w, t_out) = alphas, times
    return a_in * t_in + a_w * t_w, a_out * t_out


# ---- one candidate, every term ----------------------------------------------------------------


@dataclass(frozen=True)
class CycleTerms:
    """Every term of TSO's estimate of one candidate (or of arrays of candidates): bytes (eq. 2),
    counts (eq. 3-5), bursts and volume cycles of one transfer (Algorithm 4) and :math:`T_{MAC}`
    (eq. 7-8). :meth:`transfers`, :meth:`dram` and :meth:`total` apply a DRAM model."""

    bytes: tuple[Int, Int, Int]
    alphas: tuple[Int, Int, Int]
    bursts: tuple[Int, Int, Int]
    mac: Int
    nmp: NmpParams

    def transfers(self, model: str) -> tuple[Int, Int, Int]:
        """Cycles of one IN, W, OUT transfer (:func:`transfer_cycles`)."""
        b_in, b_w, b_out = self.bytes
        n_in, n_w, n_out = self.bursts
        return (
            transfer_cycles(b_in, n_in, self.nmp, model),
            transfer_cycles(b_w, n_w, self.nmp, model),
            transfer_cycles(b_out, n_out, self.nmp, model),
        )

    def dram(self, model: str) -> tuple[Int, Int]:
        """``(load, store)`` cycles of eq. 9 (:func:`dram_cycles`)."""
        return dram_cycles(self.alphas, self.transfers(model))

    def total(self, model: str) -> Int:
        """:math:`T_{CONV} = T_{MAC} + T_{DRAM}` in cycles (eq. 6 without :math:`T_{SW}`)."""
        load, store = self.dram(model)
        return self.mac + load + store


def cycle_terms(
    geom: ConvGeom, nmp: NmpParams, sl: TleSlice, tlt: str, T_R: Int, T_C: Int, T_N: Int, T_M: Int
) -> CycleTerms:
    """Eq. 1-5 and 7-9 and Algorithm 4 for the candidate(s) :math:`(T_R, T_C, T_N, T_M)` of the
    slice ``sl`` under schedule ``tlt`` (no feasibility check: see :func:`fits`)."""
    e, B = nmp.e, nmp.burst
    T_H, T_L = in_tile(geom, T_R, T_C)
    nbytes = tile_bytes(geom, nmp, tlt, T_R, T_C, T_N, T_M)
    n_r, n_c, n_n, n_m = loop_counts(geom, sl, tlt, T_R, T_C, T_N, T_M)
    n_rc = n_r * n_c
    bursts = (
        plane_bursts(T_N, T_H, T_L, geom.H, geom.L, e, B),
        weight_bursts(T_M, w_channels(geom, tlt, T_N), geom, e, B),
        plane_bursts(T_M, T_R, T_C, geom.R, geom.C, e, B),
    )
    mac = mac_cycles(geom, n_rc, n_n, n_m, tile_mac_cycles(geom, nmp, (T_R, T_C, T_N, T_M)))
    return CycleTerms(nbytes, transfer_counts(geom, sl, tlt, n_rc, n_n, n_m), bursts, mac, nmp)
