"""Exact models of TSO's tile choice for one convolution (Sousa et al., "Tensor Slicing and
Optimization for Multicore NPUs", seed ``004_442fbcc29e97fffd.txt``, §IV): the names of
:mod:`~npusched.formulations.tiling.cpsat` (the CP-SAT model over integer tile sizes),
:mod:`~npusched.formulations.tiling.layer_cpsat` (solving a layer's 9 pairs with it) and
:mod:`~npusched.formulations.tiling.mip` (the one-binary-per-candidate model on HiGHS) in one
place.

Both certify the search of :mod:`npusched.heuristics.tiling.search`: the CP-SAT model is exact
over the integer tile domains, so it checks the enumeration itself; the MIP is exact relative to
the enumerated space. Both minimise integer cycles (``evaluate``'s ``total_us`` times the clock in
MHz), so the optimum is exact with no rounding. ``solve(TsoLayer, "tso-exact", backend)``
(:mod:`npusched.methods.tiling`) runs them.
"""

from __future__ import annotations

from npusched.formulations.tiling.builder import bandwidth_fraction
from npusched.formulations.tiling.cpsat import SPACES, TsoTileModel, cycles_of
from npusched.formulations.tiling.layer_cpsat import (
    solve_layer_cpsat,
    solve_layer_exact,
    solve_tso_cpsat,
)
from npusched.formulations.tiling.mip import (
    MIP_MAX_BINARIES,
    CandidateChoiceMIP,
    solve_layer_mip,
    solve_tso_mip,
)

__all__ = [
    "MIP_MAX_BINARIES",
    "SPACES",
    "CandidateChoiceMIP",
    "TsoTileModel",
    "bandwidth_fraction",
    "cycles_of",
    "solve_layer_cpsat",
    "solve_layer_exact",
    "solve_layer_mip",
    "solve_tso_cpsat",
    "solve_tso_mip",
]
