"""TSO's scalar estimate of one candidate (:func:`evaluate`, ``CalcTime`` of Algorithm 3): the
reference every vectorised search, exact model and the verifier agree with. The terms come from
:mod:`npusched.problem.tiling.equations`; the model is described in :mod:`npusched.problem.tiling`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from npusched.arch.model import Arch
from npusched.problem.tiling.equations import (
    coupled_channels,
    cycle_terms,
    fits,
    loop_counts,
    tle_slicing,
    transfer_counts,
)
from npusched.problem.tiling.geometry import (
    TLT_SCHEDULES,
    ConvGeom,
    NmpParams,
    TleSlice,
    check_model,
    conv_geometry,
    nmp_params,
)
from npusched.workload.layers import Layer, Shape


@dataclass(frozen=True)
class Breakdown:
    """Estimated time of one candidate (eq. 6 without :math:`T_{SW}`).

    Parameters
    ----------
    tle, tlt, T_R, T_C, T_N, T_M
        The candidate.
    feasible
        Whether the tiles fit (eq. 2) and the schedule's rules hold; times are ``inf`` if not.
    alpha_in, alpha_w, alpha_out
        Transfers of IN, W and OUT tiles over the whole layer (eq. 3-5, see the module notes).
    in_cycles, w_cycles, out_cycles
        Cycles of one IN, W, OUT transfer (Algorithm 4).
    mac_cycles, dram_cycles
        :math:`T_{MAC}` (eq. 7-8) and :math:`T_{DRAM}` (eq. 9).
    load_us, store_us, mac_us, total_us
        IN + W loads, OUT stores, MAC, and their sum in µs.
    reason
        Why the candidate is infeasible ("" if feasible).
    """

    tle: str
    tlt: str
    T_R: int
    T_C: int
    T_N: int
    T_M: int
    feasible: bool
    alpha_in: int
    alpha_w: int
    alpha_out: int
    in_cycles: int
    w_cycles: int
    out_cycles: int
    mac_cycles: int
    dram_cycles: int
    load_us: float
    store_us: float
    mac_us: float
    total_us: float
    reason: str = ""


def alphas(
    geom: ConvGeom, sl: TleSlice, tlt: str, T_R: int, T_C: int, T_N: int, T_M: int
) -> tuple[int, int, int]:
    """:math:`(\\alpha_{in}, \\alpha_w, \\alpha_{out})` of eq. 3-5 for a candidate
    (:func:`~npusched.problem.tiling.equations.loop_counts` then
    :func:`~npusched.problem.tiling.equations.transfer_counts`)."""
    n_r, n_c, n_n, n_m = loop_counts(geom, sl, tlt, T_R, T_C, T_N, T_M)
    return transfer_counts(geom, sl, tlt, n_r * n_c, n_n, n_m)


def evaluate(
    layer: Layer, in_shape: Shape, arch: Arch, *candidate: Any, **kwargs: Any
) -> Breakdown:
    """TSO's estimate (``CalcTime``, Algorithm 3 line 11) of one candidate: the scalar reference
    every vectorised search is checked against.

    .. math:: T_{CONV} = T_{MAC} + T_{DRAM} \\quad \\text{(eq. 6, } T_{SW} \\text{ left out)}

    Parameters
    ----------
    layer, in_shape
        A ``conv`` or ``fc`` layer and its input ``(C, H, W)``.
    arch
        The NMP (e.g. ``load_arch("tso-nmp-16")``).
    *candidate, **kwargs
        ``tle, tlt, T_R, T_C, T_N, T_M[, model]`` (``model`` also by keyword), as
        :func:`evaluate_geom` takes them after the geometry:
    tle, tlt
        TLE slicing (:data:`TLE_SLICINGS`) and TLT schedule (:data:`TLT_SCHEDULES`).
    T_R, T_C, T_N, T_M
        OUT tile rows and columns, IN tile channels, W tile filters:
        :math:`1 \\le T_R \\le TLE_R`, :math:`1 \\le T_C \\le C`, :math:`1 \\le T_M \\le F`,
        :math:`1 \\le T_N \\le N` (channel-coupled layers: :math:`T_N = \\lceil T_M/m_g \\rceil`
        or the candidate is infeasible).
    model
        ``"burst"`` (TSO-burst) or ``"noburst"`` (TSO-noburst, volume; ``"volume"`` also works).

    Returns
    -------
    Breakdown
        Counts, per-transfer cycles and times; ``feasible=False`` (times ``inf``, ``reason``
        set) when a tile does not fit its buffer (eq. 2) or IS does not hold all :math:`F`
        filters.

    Raises
    ------
    ValueError
        Unknown slicing, schedule or model, a tile size outside the ranges above, or an
        architecture or layer TSO cannot model.
    """
    return evaluate_geom(conv_geometry(layer, in_shape), nmp_params(arch), *candidate, **kwargs)


def check_tiles(
    geom: ConvGeom, sl: TleSlice, tlt: str, T_R: int, T_C: int, T_N: int, T_M: int
) -> None:
    """Raise ``ValueError`` when a tile size is outside its range
    (:math:`1 \\le T_R \\le TLE_R`, :math:`1 \\le T_C \\le C`, :math:`1 \\le T_N \\le N_f`, or
    :math:`\\lceil F/m_g \\rceil` when channel-coupled, :math:`1 \\le T_M \\le F`)."""
    n_max = coupled_channels(geom, sl.F) if geom.coupled else geom.Nf
    for name, v, hi in (
        ("T_R", T_R, sl.TLE_R),
        ("T_C", T_C, geom.C),
        ("T_N", T_N, n_max),
        ("T_M", T_M, sl.F),
    ):
        if not 1 <= v <= hi:
            raise ValueError(f"{geom.name} {sl.tle}/{tlt}: {name}={v} outside [1, {hi}]")


def infeasibility(
    geom: ConvGeom,
    nmp: NmpParams,
    sl: TleSlice,
    tlt: str,
    T_N: int,
    T_M: int,
    nbytes: tuple[int, int, int],
) -> list[str]:
    """Why a candidate is infeasible: a tile over its scratchpad (eq. 2), IS without all
    :math:`F` filters (§IV-D), or a channel-coupled :math:`T_N \\ne \\lceil T_M/m_g \\rceil`;
    empty when feasible."""
    reasons = []
    if geom.coupled and coupled_channels(geom, T_M) != T_N:
        reasons.append(f"channel-coupled: T_N must be ceil(T_M/{geom.mg})")
    if tlt == "IS" and T_M != sl.F:
        reasons.append(f"IS holds all F={sl.F} filters of a TLT")
    caps = (nmp.mb0, nmp.mb1, nmp.mb2)
    for what, buf, nb, cap, ok in zip(
        ("IN", "W", "OUT"), ("MB0", "MB1", "MB2"), nbytes, caps, fits(nmp, *nbytes), strict=True
    ):
        if not ok:
            reasons.append(f"{what} tile {nb} B > {buf} {cap} B")
    return reasons


def evaluate_geom(
    geom: ConvGeom,
    nmp: NmpParams,
    tle: str,
    tlt: str,
    T_R: int,
    T_C: int,
    T_N: int,
    T_M: int,
    model: str = "burst",
) -> Breakdown:
    """:func:`evaluate` on a prepared :class:`ConvGeom` and :class:`NmpParams` (no re-parsing)."""
    mdl = check_model(model)
    if tlt not in TLT_SCHEDULES:
        raise ValueError(f"unknown TLT schedule {tlt!r}; choose from {', '.join(TLT_SCHEDULES)}")
    sl = tle_slicing(tle, geom, nmp)
    check_tiles(geom, sl, tlt, T_R, T_C, T_N, T_M)
    terms = cycle_terms(geom, nmp, sl, tlt, T_R, T_C, T_N, T_M)
    reasons = infeasibility(geom, nmp, sl, tlt, T_N, T_M, terms.bytes)
    t_in, t_w, t_out = terms.transfers(mdl)
    load, store = terms.dram(mdl)
    ok = not reasons
    a_in, a_w, a_out = terms.alphas
    return Breakdown(
        tle=tle,
        tlt=tlt,
        T_R=T_R,
        T_C=T_C,
        T_N=T_N,
        T_M=T_M,
        feasible=ok,
        alpha_in=a_in,
        alpha_w=a_w,
        alpha_out=a_out,
        in_cycles=t_in,
        w_cycles=t_w,
        out_cycles=t_out,
        mac_cycles=terms.mac,
        dram_cycles=load + store,
        load_us=nmp.us(load) if ok else math.inf,
        store_us=nmp.us(store) if ok else math.inf,
        mac_us=nmp.us(terms.mac) if ok else math.inf,
        total_us=nmp.us(terms.mac + load + store) if ok else math.inf,
        reason="; ".join(reasons),
    )
