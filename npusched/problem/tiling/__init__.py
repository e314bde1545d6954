"""TSO's cost model of one convolution on the NMP: the equations (:mod:`.equations`), the scalar
reference :func:`evaluate` (:mod:`.evaluate`) and the problem of one layer (:mod:`.layer`).

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
  (:func:`~npusched.problem.tiling.equations.transfer_cycles`);
  bursts are counted row by row in NCHW
  (:func:`~npusched.problem.tiling.equations.plane_bursts`), a row that spans the full width
  continues into the next, and a tile that spans whole planes is one run.
* :math:`T_{DRAM} = \\alpha_{in} t(IN) + \\alpha_w t(W) + \\alpha_{out} t(OUT)` (eq. 9,
  :func:`~npusched.problem.tiling.equations.dram_cycles`).
* :math:`Tile_{MAC} = T_N T_M \\lceil T_R T_C K_y K_x / \\#MACs \\rceil` (eq. 7,
  :func:`~npusched.problem.tiling.equations.tile_mac_cycles` with the core's ``pe_unroll``), and
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

from npusched.problem.tiling.equations import (
    CycleTerms,
    balanced_filters,
    cycle_terms,
    get_filters,
    plane_bursts,
    tle_slicing,
    transfer_cycles,
    weight_bursts,
)
from npusched.problem.tiling.evaluate import Breakdown, alphas, evaluate, evaluate_geom
from npusched.problem.tiling.geometry import (
    MODELS,
    TLE_SLICINGS,
    TLT_SCHEDULES,
    ConvGeom,
    Model,
    NmpParams,
    TleSlice,
    check_model,
    conv_geometry,
    nmp_params,
)
from npusched.problem.tiling.layer import TileChoice, TsoLayer, check_fix, model_name

__all__ = [
    "MODELS",
    "TLE_SLICINGS",
    "TLT_SCHEDULES",
    "Breakdown",
    "ConvGeom",
    "CycleTerms",
    "Model",
    "NmpParams",
    "TileChoice",
    "TleSlice",
    "TsoLayer",
    "alphas",
    "balanced_filters",
    "check_fix",
    "check_model",
    "conv_geometry",
    "cycle_terms",
    "evaluate",
    "evaluate_geom",
    "get_filters",
    "model_name",
    "nmp_params",
    "plane_bursts",
    "tle_slicing",
    "transfer_cycles",
    "weight_bursts",
]
