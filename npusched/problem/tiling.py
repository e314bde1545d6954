"""TSO's cost model of one convolution on the NMP: the scalar reference.

Sousa et al., "Tensor Slicing and Optimization for Multicore NPUs" (seed
``004_442fbcc29e97fffd.txt``; below "TSO"). The NMP (§III) has :math:`E` TLEs of :math:`P` TLTs
(``tso-nmp-16``: 4 × 8); each TLT has scratchpads MB0 (IN), MB1 (W), MB2 (OUT) and a MAC unit;
all TLTs share one DRAM; a *multicast* load brings the same data to every TLT of one TLE; MAC
and DRAM transfers do not overlap (§III: "NMP does not enable MAC/LOAD overlap").

Notation (TSO §II, Fig. 2): a convolution reads :math:`N` input maps of :math:`H × L` and writes
:math:`M` output maps of :math:`R × C` with :math:`K × K` kernels and stride :math:`S`.

Candidate and tile space
------------------------
A candidate is :math:`\\langle p, q, T_R, T_C, T_N, T_M \\rangle` (§IV-E): a TLE slicing
:math:`p \\in` :data:`TLE_SLICINGS` (Algorithm 2, :func:`tle_slicing`), a TLT schedule
:math:`q \\in` :data:`TLT_SCHEDULES` (§IV-D) and the tile sizes. TSO's Algorithm 3 enumerates
:math:`T_R \\in [1, TLE_R]`, :math:`T_C \\in [1, C]`, :math:`T_N \\in [1, N]` and takes
:math:`T_M` from ``GetFilters`` (:func:`get_filters`); that is the *tile space* searched by
:mod:`npusched.heuristics.tiling.search`. :func:`evaluate` accepts any :math:`T_M \\in [1, F]` (it
is the
model; the search space is the part Algorithm 3 visits).

Model (all times in accelerator cycles, reported in µs)
-------------------------------------------------------
* IN tile (eq. 1), clipped to the input:
  :math:`T_H = \\min((T_R - 1) S_y + d_y (K_y - 1) + 1, H)`,
  :math:`T_L = \\min((T_C - 1) S_x + d_x (K_x - 1) + 1, L)`.
* Capacity (eq. 2): :math:`T_N T_H T_L e \\le MB0`, :math:`T_M T_N^W K_y K_x e \\le MB1`,
  :math:`T_M T_R T_C e \\le MB2` (:math:`e` bytes per element; :math:`T_N^W = T_N` for IS/OS,
  :math:`N` for WS, whose W tile "includes all its N channels", §IV-D).
* Counts (eq. 3-5), with :math:`n_r = \\lceil TLE_R/T_R \\rceil`, :math:`n_c = \\lceil C/T_C
  \\rceil`, :math:`n_n = \\lceil N/T_N \\rceil`, :math:`n_m = \\lceil F/T_M \\rceil` (:math:`F`
  filters per TLT, :func:`tle_slicing`), :math:`E_a` TLEs and :math:`P_a` TLTs per TLE with work:

  * IS (eq. 3): :math:`\\alpha_{in} = E_a n_r n_c n_n`, :math:`\\alpha_w = E_a P_a n_r n_c n_n`,
    :math:`\\alpha_{out} = E_a P_a n_r n_c`;
  * OS (eq. 4): :math:`\\alpha_{in} = E_a n_r n_c n_n n_m`,
    :math:`\\alpha_w = E_a P_a n_r n_c n_n n_m`, :math:`\\alpha_{out} = E_a P_a n_r n_c n_m`;
  * WS (eq. 5): :math:`\\alpha_{in} = E_a n_r n_c n_n n_m`, :math:`\\alpha_w = E_a P_a n_m`,
    :math:`\\alpha_{out} = E_a P_a n_r n_c n_m`.

  IS holds all :math:`F` filters of a TLT (:math:`T_M = F`, :math:`n_m = 1`).
* One transfer of a tile (Algorithm 4): TSO-burst :math:`\\lceil bytes/BW \\rceil + n_{burst}
  \\cdot CAS`, TSO-noburst :math:`\\lceil bytes/BW \\rceil`
  (:func:`npusched.costmodel.dram_cycles_burst`, :func:`~npusched.costmodel.dram_cycles_volume`);
  bursts are counted row by row in NCHW (:func:`npusched.costmodel.tile_burst_count`), a row that
  spans the full width continues into the next, and a tile that spans whole planes is one run.
* :math:`T_{DRAM} = \\alpha_{in} t(IN) + \\alpha_w t(W) + \\alpha_{out} t(OUT)` (eq. 9,
  :func:`npusched.costmodel.t_dram`).
* :math:`Tile_{MAC} = T_N T_M \\lceil T_R T_C K_y K_x / \\#MACs \\rceil` (eq. 7,
  :func:`npusched.costmodel.compute_cycles` with the core's ``pe_unroll``), and
  :math:`T_{MAC} = n_r n_c n_n n_m \\, Tile_{MAC}`: the tiles one TLT runs (eq. 8, see below).
* :math:`T_{CONV} = T_{MAC} + T_{DRAM}` (eq. 6 without :math:`T_{SW}`, which TSO leaves out).

Deviations from the paper, and why
----------------------------------
1. *Multicast in every schedule.* The TLTs of a TLE share the IN tile (one multicast load, §III)
   and each holds its own :math:`T_M` filters, so per TLE a step covers :math:`P T_M` filters and
   the IN tile is reloaded :math:`\\lceil TLE_W / (P T_M) \\rceil = \\lceil F/T_M \\rceil = n_m`
   times (eq. 4-5 write :math:`\\lceil TLE_W/T_M \\rceil`, which would reload it for every TLT's
   W tile). W and OUT tiles differ per TLT, so their counts carry :math:`P_a` (eq. 3-5 count them
   per TLE, or over the whole OFM for :math:`\\alpha_{out}`). Then every byte of the OFM is stored
   once, :math:`\\alpha_{out} \\cdot |OUT| \\approx MRC`, as eq. 4-5 intend. A consequence: IS is
   OS with one filter tile (:math:`T_M = F`), so fixing OS is never slower than fixing IS.
2. *Active TLEs and TLTs.* :math:`\\#TLEs` in eq. 3-5 becomes :math:`E_a` (a TLE with no rows or
   filters, e.g. OFM slicing of a 1-row fc output, loads nothing) and the TLTs of a TLE with
   :math:`TLE_W < P` filters are :math:`P_a = \\min(P, TLE_W)`.
3. *eq. 8 as the critical path.* Eq. 8 divides all tiles by :math:`\\#TLTs`; we count the tiles
   one TLT runs, :math:`n_r n_c n_n n_m`, which equals eq. 8 when the slicing divides evenly and
   otherwise charges the imbalance (the layer ends when the busiest TLT does).
4. *Edges and padding.* As in eq. 9 every transfer moves a full tile (edge tiles are charged in
   full); the IN tile is clipped to the input (zero padding is not read from DRAM); rectangular
   kernels, strides and dilations generalise eq. 1.
5. *KS&OFM for any* :math:`E`: filters in :math:`\\max(1, \\lfloor E/2 \\rfloor)` groups and
   rows in :math:`\\lfloor E / groups \\rfloor` (Algorithm 2's :math:`E/2 × E/2` for
   :math:`E = 4`).
6. *Layers TSO does not discuss.* fc is a :math:`1 × 1` convolution over the flattened input
   (:math:`N = CHW`, :math:`H = L = R = C = 1`). A grouped convolution with one input channel per
   filter (depthwise, or YOLOv2's reorg) is *channel-coupled*: the IN tile holds the
   :math:`T_N = \\lceil T_M / m_g \\rceil` channels of its :math:`T_M` filters (:math:`m_g`
   filters per group), :math:`n_n = 1`, and since the TLTs need different channels there is no
   multicast (:math:`\\alpha_{in}` gets a factor :math:`P_a`). Other grouped convolutions run
   their groups one after another (every count and time × groups).
7. *WS needs a whole filter in MB1* (:math:`N K_y K_x e \\le MB1`); a layer where it does not fit
   has no WS candidate (the search then reports a fallback).
8. ``GetFilters`` picks the largest :math:`T_M` that fits, evened out to
   :math:`\\lceil F / \\lceil F/T_M \\rceil \\rceil` (same :math:`n_m`, smaller tiles: never
   slower), see :func:`get_filters`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from npusched.arch.model import Arch
from npusched.costmodel.compute import compute_cycles, conv_loops
from npusched.costmodel.dram import (
    burst_count,
    dram_cycles_burst,
    dram_cycles_volume,
    t_dram,
    tile_burst_count,
)
from npusched.workload.layers import Layer, Shape

#: TLE slicings of Algorithm 2 (§IV-B), in TSO's order.
TLE_SLICINGS = ("KS", "KS&OFM", "OFM")
#: TLT schedules of §IV-D, in TSO's order.
TLT_SCHEDULES = ("IS", "OS", "WS")
#: DRAM models of Algorithm 4: ``"burst"`` (TSO-burst), ``"noburst"`` (TSO-noburst, volume);
#: ``"volume"`` is accepted as a synonym of ``"noburst"``.
MODELS = ("burst", "noburst")

Model = Literal["burst", "noburst", "volume"]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def check_model(model: str) -> str:
    """``"burst"`` or ``"volume"`` for a model name (``"noburst"`` → ``"volume"``)."""
    if model == "burst":
        return "burst"
    if model in ("noburst", "volume"):
        return "volume"
    raise ValueError(f"unknown DRAM model {model!r}; choose from burst, noburst")


# ---- the convolution --------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvGeom:
    """A convolution in TSO's notation (§II, Fig. 2).

    Parameters
    ----------
    name
        Layer name.
    N, H, L
        Input channels, rows, columns (the whole input, all groups).
    M, R, C
        Filters (output channels), output rows, output columns.
    Ky, Kx, Sy, Sx, Dy, Dx
        Kernel, stride and dilation per axis.
    Nf
        Channels each filter reads (:math:`N` / groups).
    mg
        Filters per group (:math:`M` / groups).
    coupled
        Channel-coupled grouped convolution (``Nf == 1`` and groups > 1, e.g. depthwise).
    reps
        Groups run one after another (grouped with ``Nf > 1``), else 1.
    """

    name: str
    N: int
    H: int
    L: int
    M: int
    R: int
    C: int
    Ky: int
    Kx: int
    Sy: int
    Sx: int
    Dy: int
    Dx: int
    Nf: int
    mg: int
    coupled: bool
    reps: int

    @property
    def filters(self) -> int:
        """Filters split over the TLEs: :math:`M`, or one group's for ``reps > 1``."""
        return self.mg if self.reps > 1 else self.M

    @property
    def n_loop(self) -> int:
        """Channel-loop extent :math:`N` of eq. 3-5 (1 when channel-coupled)."""
        return 1 if self.coupled else self.Nf

    def tile_rows(self, T_R: int) -> int:
        """:math:`T_H` of eq. 1, clipped to the input."""
        return min((T_R - 1) * self.Sy + self.Dy * (self.Ky - 1) + 1, self.H)

    def tile_cols(self, T_C: int) -> int:
        """:math:`T_L` of eq. 1, clipped to the input."""
        return min((T_C - 1) * self.Sx + self.Dx * (self.Kx - 1) + 1, self.L)

    def in_channels(self, T_N: int, T_M: int) -> int:
        """Channels of the IN tile: :math:`T_N`, or :math:`\\lceil T_M/m_g \\rceil` when coupled."""
        return _cdiv(T_M, self.mg) if self.coupled else T_N


def conv_geometry(layer: Layer, in_shape: Shape) -> ConvGeom:
    """TSO's view of a ``conv`` or ``fc`` layer with input ``(C, H, W)`` = ``in_shape``.

    Raises
    ------
    ValueError
        For other ops, or shapes the layer rejects.
    """
    if layer.op not in ("conv", "fc"):
        raise ValueError(f"layer {layer.name}: TSO tiles conv and fc layers, not {layer.op}")
    c, h, w = (int(v) for v in in_shape)
    m, r, cc = layer.output_shape([(c, h, w)])
    if layer.op == "fc":
        n = c * h * w
        return ConvGeom(layer.name, n, 1, 1, m, 1, 1, 1, 1, 1, 1, 1, 1, n, m, False, 1)
    g = layer.groups
    nf, mg = c // g, m // g
    coupled = g > 1 and nf == 1
    reps = g if (g > 1 and nf > 1) else 1
    (ky, kx), (sy, sx), (dy, dx) = layer.kernel, layer.stride, layer.dilation
    return ConvGeom(layer.name, c, h, w, m, r, cc, ky, kx, sy, sx, dy, dx, nf, mg, coupled, reps)


# ---- the machine ------------------------------------------------------------------------------


@dataclass(frozen=True)
class NmpParams:
    """The NMP numbers TSO's model uses (§III), read from an :class:`~npusched.arch.Arch`.

    Parameters
    ----------
    E, P
        TLEs and TLTs per TLE (cores grouped by ``CoreSpec.cluster``).
    mb0, mb1, mb2
        Bytes of MB0 (IN), MB1 (W), MB2 (OUT) of a TLT.
    e
        Bytes per element (``type`` in eq. 2).
    bw
        DRAM bytes per cycle (``BW`` of Algorithm 4).
    cas
        CAS latency in cycles.
    burst
        Burst bytes (``BURST``).
    freq_hz
        Clock (``Freq`` of eq. 7).
    unroll
        The MAC unit's ``pe_unroll`` as pairs (``(("OY*OX*FY*FX", 8),)``: ``#MACs`` of eq. 7).
    """

    E: int
    P: int
    mb0: int
    mb1: int
    mb2: int
    e: int
    bw: float
    cas: int
    burst: int
    freq_hz: float
    unroll: tuple[tuple[str, int], ...]

    def us(self, cycles: float) -> float:
        """Cycles → µs."""
        return cycles / (self.freq_hz / 1e6)


def nmp_params(arch: Arch) -> NmpParams:
    """:class:`NmpParams` of ``arch``.

    Raises
    ------
    ValueError
        The cores differ, the TLEs have different sizes, a buffer ``MB0``/``MB1``/``MB2``, the
        DRAM burst size or the clock is missing, or elements are not whole bytes.
    """
    c0 = arch.cores[0]
    for c in arch.cores:
        if c.pe_unroll != c0.pe_unroll or c.buffers != c0.buffers:
            raise ValueError(f"{arch.name}: TSO needs identical TLTs (core {c.id} differs)")
    sizes: dict[int | None, int] = {}
    for c in arch.cores:
        sizes[c.cluster] = sizes.get(c.cluster, 0) + 1
    if len(set(sizes.values())) != 1:
        raise ValueError(f"{arch.name}: TLEs (core clusters) of different sizes {sizes}")
    missing = [b for b in ("MB0", "MB1", "MB2") if b not in c0.buffers]
    if missing:
        raise ValueError(f"{arch.name}: TLTs need buffers MB0, MB1, MB2; missing {missing}")
    if arch.dram is None or arch.dram.burst_bytes is None:
        raise ValueError(f"{arch.name}: TSO needs a DRAM with a burst size")
    if arch.frequency_hz is None:
        raise ValueError(f"{arch.name}: TSO needs the clock frequency")
    e = arch.precision_bits // 8
    if e * 8 != arch.precision_bits:
        raise ValueError(f"{arch.name}: {arch.precision_bits}-bit elements are not whole bytes")
    return NmpParams(
        E=len(sizes),
        P=next(iter(sizes.values())),
        mb0=c0.buffers["MB0"],
        mb1=c0.buffers["MB1"],
        mb2=c0.buffers["MB2"],
        e=e,
        bw=arch.dram_bytes_per_cycle(),
        cas=arch.dram_cas_cycles(),
        burst=arch.dram.burst_bytes,
        freq_hz=float(arch.frequency_hz),
        unroll=tuple(sorted(c0.pe_unroll.items())),
    )


# ---- Algorithm 2 and GetFilters ---------------------------------------------------------------


@dataclass(frozen=True)
class TleSlice:
    """A TLE slice (Algorithm 2) and how its filters spread over the TLTs (Algorithm 3, line 7).

    Parameters
    ----------
    tle
        The slicing (:data:`TLE_SLICINGS`).
    TLE_R, TLE_W
        Output rows and filters of one TLE.
    E_a
        TLEs with work.
    P_a
        TLTs per TLE with filters, :math:`\\min(P, TLE_W)`.
    F
        Filters of the busiest TLT, :math:`\\lceil TLE_W / P \\rceil` ("the remaining filters are
        spread among the TLTs which have the lowest IDs").
    """

    tle: str
    TLE_R: int
    TLE_W: int
    E_a: int
    P_a: int
    F: int


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
    tle_w, tle_r = _cdiv(filters, gw), _cdiv(rows, gr)
    e_a = min(gw, _cdiv(filters, tle_w)) * min(gr, _cdiv(rows, tle_r))
    return TleSlice(tle, tle_r, tle_w, e_a, min(nmp.P, tle_w), _cdiv(tle_w, nmp.P))


def balanced_filters(F: int, t_max: int) -> int:
    """:math:`\\lceil F / \\lceil F / t \\rceil \\rceil`: the smallest :math:`T_M` with as few
    filter tiles as :math:`t` (0 when ``t_max < 1``)."""
    if t_max < 1:
        return 0
    return _cdiv(F, _cdiv(F, min(t_max, F)))


def get_filters(
    geom: ConvGeom, nmp: NmpParams, sl: TleSlice, tlt: str, T_R: int, T_C: int, T_N: int
) -> int:
    """``GetFilters`` (Algorithm 3, line 7): the filters :math:`T_M` a TLT's W tile holds, or 0
    when none fits.

    .. math::

        T_M^{*} = \\min\\left(F, \\left\\lfloor \\frac{MB1}{T_N^W K_y K_x e} \\right\\rfloor,
                  \\left\\lfloor \\frac{MB2}{T_R T_C e} \\right\\rfloor\\right)

    (eq. 2), evened out to :func:`balanced_filters`; IS needs :math:`T_M^{*} = F` (all the TLT's
    filters, §IV-D) and returns :math:`F` or 0. Channel-coupled layers have no ``GetFilters``
    (their :math:`T_M` is searched and :math:`T_N` follows from it); this returns 0 for them.
    """
    if geom.coupled:
        return 0
    kk_e = geom.Ky * geom.Kx * nmp.e
    w_ch = geom.Nf if tlt == "WS" else T_N
    t_max = min(sl.F, nmp.mb1 // (w_ch * kk_e), nmp.mb2 // (T_R * T_C * nmp.e))
    if tlt == "IS":
        return sl.F if t_max == sl.F else 0
    return balanced_filters(sl.F, t_max)


# ---- Algorithm 4 ------------------------------------------------------------------------------


def plane_bursts(
    channels: int, rows: int, cols: int, height: int, width: int, e: int, burst: int
) -> int:
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
    if rows >= height and cols >= width:
        return burst_count(1, channels * rows * cols * e, burst)
    return tile_burst_count(channels, rows, cols, e, burst, row_elems=width)


def weight_bursts(filters: int, w_ch: int, geom: ConvGeom, e: int, burst: int) -> int:
    """Bursts of a W tile: ``filters`` rows of :math:`T_N^W K_y K_x` elements of the
    :math:`M × (N_f K_y K_x)` filter matrix (contiguous when a row is a whole filter)."""
    kk = geom.Ky * geom.Kx
    return tile_burst_count(1, filters, w_ch * kk, e, burst, row_elems=geom.Nf * kk)


def transfer_cycles(nbytes: int, nbursts: int, nmp: NmpParams, model: str) -> int:
    """``CalcDataTransfer`` (Algorithm 4): :math:`\\lceil bytes/BW \\rceil + n_{burst} CAS`
    (TSO-burst) or :math:`\\lceil bytes/BW \\rceil` (TSO-noburst)."""
    if check_model(model) == "volume":
        return dram_cycles_volume(nbytes, nmp.bw)
    return dram_cycles_burst(nbytes, nbursts, nmp.bw, nmp.cas)


# ---- evaluate ---------------------------------------------------------------------------------


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
    """:math:`(\\alpha_{in}, \\alpha_w, \\alpha_{out})` of eq. 3 (IS), 4 (OS), 5 (WS) with
    multicast IN tiles (module notes, deviations 1, 2 and 6); × groups when they run in turn."""
    n_r, n_c = _cdiv(sl.TLE_R, T_R), _cdiv(geom.C, T_C)
    n_n = 1 if geom.coupled else _cdiv(geom.Nf, T_N)
    n_m = 1 if tlt == "IS" else _cdiv(sl.F, T_M)
    mc = sl.P_a if geom.coupled else 1  # no multicast when the TLTs need different channels
    e_a, p_a = sl.E_a, sl.P_a
    a_in = e_a * mc * n_r * n_c * n_n * n_m  # eq. 3 (n_m = 1), eq. 4, eq. 5
    # eq. 5: each W tile once; eq. 3-4: a W tile per IN tile
    a_w = e_a * p_a * n_m if tlt == "WS" else e_a * p_a * n_r * n_c * n_n * n_m
    a_out = e_a * p_a * n_r * n_c * n_m  # eq. 3 (n_m = 1), 4, 5
    return a_in * geom.reps, a_w * geom.reps, a_out * geom.reps


def evaluate(
    layer: Layer,
    in_shape: Shape,
    arch: Arch,
    tle: str,
    tlt: str,
    T_R: int,
    T_C: int,
    T_N: int,
    T_M: int,
    model: str = "burst",
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
    return evaluate_geom(
        conv_geometry(layer, in_shape), nmp_params(arch), tle, tlt, T_R, T_C, T_N, T_M, model
    )


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
    n_max = _cdiv(sl.F, geom.mg) if geom.coupled else geom.Nf
    for name, v, hi in (
        ("T_R", T_R, sl.TLE_R),
        ("T_C", T_C, geom.C),
        ("T_N", T_N, n_max),
        ("T_M", T_M, sl.F),
    ):
        if not 1 <= v <= hi:
            raise ValueError(f"{geom.name} {tle}/{tlt}: {name}={v} outside [1, {hi}]")
    e = nmp.e
    T_H, T_L = geom.tile_rows(T_R), geom.tile_cols(T_C)
    kk = geom.Ky * geom.Kx
    w_ch = geom.Nf if (tlt == "WS" or geom.coupled) else T_N
    mac_ch = 1 if geom.coupled else T_N
    in_bytes = T_N * T_H * T_L * e
    w_bytes = T_M * w_ch * kk * e
    out_bytes = T_M * T_R * T_C * e
    reasons = []
    if geom.coupled and geom.in_channels(T_N, T_M) != T_N:
        reasons.append(f"channel-coupled: T_N must be ceil(T_M/{geom.mg})")
    if tlt == "IS" and T_M != sl.F:
        reasons.append(f"IS holds all F={sl.F} filters of a TLT")
    for what, nbytes, cap, buf in (
        ("IN", in_bytes, nmp.mb0, "MB0"),
        ("W", w_bytes, nmp.mb1, "MB1"),
        ("OUT", out_bytes, nmp.mb2, "MB2"),
    ):
        if nbytes > cap:
            reasons.append(f"{what} tile {nbytes} B > {buf} {cap} B")
    a_in, a_w, a_out = alphas(geom, sl, tlt, T_R, T_C, T_N, T_M)
    t_in = transfer_cycles(
        in_bytes, plane_bursts(T_N, T_H, T_L, geom.H, geom.L, e, nmp.burst), nmp, mdl
    )
    t_w = transfer_cycles(w_bytes, weight_bursts(T_M, w_ch, geom, e, nmp.burst), nmp, mdl)
    t_out = transfer_cycles(
        out_bytes, plane_bursts(T_M, T_R, T_C, geom.R, geom.C, e, nmp.burst), nmp, mdl
    )
    tile_mac = compute_cycles(
        conv_loops(K=T_M, C=mac_ch, OY=T_R, OX=T_C, FY=geom.Ky, FX=geom.Kx), dict(nmp.unroll)
    )  # eq. 7 in cycles
    n_r, n_c = _cdiv(sl.TLE_R, T_R), _cdiv(geom.C, T_C)
    n_n = 1 if geom.coupled else _cdiv(geom.Nf, T_N)
    n_m = 1 if tlt == "IS" else _cdiv(sl.F, T_M)
    t_mac = geom.reps * n_r * n_c * n_n * n_m * tile_mac  # eq. 8 (critical path)
    load = t_dram([(a_in, t_in), (a_w, t_w)])  # eq. 9, loads
    store = t_dram([(a_out, t_out)])  # eq. 9, stores
    ok = not reasons
    inf = math.inf
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
        mac_cycles=t_mac,
        dram_cycles=load + store,
        load_us=nmp.us(load) if ok else inf,
        store_us=nmp.us(store) if ok else inf,
        mac_us=nmp.us(t_mac) if ok else inf,
        total_us=nmp.us(t_mac + load + store) if ok else inf,
        reason="; ".join(reasons),
    )
