"""TSO's tiling of one convolution on a multicore NPU (Sousa et al., "Tensor Slicing and
Optimization for Multicore NPUs", seed ``004_442fbcc29e97fffd.txt``).

* :mod:`npusched.tiling.tso` -- the scalar model: TLE slicing (Algorithm 2), TLT schedules
  IS/OS/WS (eq. 3-5), capacities (eq. 1-2), T_MAC (eq. 7-8), T_DRAM (eq. 9, Algorithm 4):
  :func:`~npusched.tiling.tso.evaluate`.
* :mod:`npusched.tiling.search` -- the exhaustive search (Algorithms 1 and 3) vectorised with
  numpy: :func:`~npusched.tiling.search.layer_space`,
  :func:`~npusched.tiling.search.search_layer`, :func:`~npusched.tiling.search.search_network`.
"""

from npusched.tiling.search import (
    LayerChoice,
    NetworkChoice,
    TileSpace,
    layer_space,
    search_layer,
    search_network,
)
from npusched.tiling.tso import (
    TLE_SLICINGS,
    TLT_SCHEDULES,
    Breakdown,
    ConvGeom,
    NmpParams,
    TleSlice,
    conv_geometry,
    evaluate,
    get_filters,
    nmp_params,
    tle_slicing,
)

__all__ = [
    "TLE_SLICINGS",
    "TLT_SCHEDULES",
    "Breakdown",
    "ConvGeom",
    "LayerChoice",
    "NetworkChoice",
    "NmpParams",
    "TileSpace",
    "TleSlice",
    "conv_geometry",
    "evaluate",
    "get_filters",
    "layer_space",
    "nmp_params",
    "search_layer",
    "search_network",
    "tle_slicing",
]
