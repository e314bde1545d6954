"""The TSO tiling problem of one layer (:class:`TsoLayer`, what ``solve(problem, "tso-enum" |
"tso-exact")`` takes) and its solution (:class:`TileChoice`, the chosen candidate).

Sousa et al., "Tensor Slicing and Optimization for Multicore NPUs" (seed
``004_442fbcc29e97fffd.txt``), Algorithm 1 lines 7-19 for one convolution.
"""

from __future__ import annotations

from dataclasses import dataclass

from npusched.arch.model import Arch
from npusched.problem.tiling.evaluate import Breakdown
from npusched.problem.tiling.geometry import (
    TLE_SLICINGS,
    TLT_SCHEDULES,
    ConvGeom,
    NmpParams,
    check_model,
    conv_geometry,
    nmp_params,
)
from npusched.workload.layers import Layer, Shape


def check_fix(fix_tle: str | None, fix_tlt: str | None) -> None:
    """Raise ``ValueError`` for a fixed slicing or schedule that TSO does not have."""
    if fix_tle is not None and fix_tle not in TLE_SLICINGS:
        raise ValueError(f"unknown TLE slicing {fix_tle!r}; choose from {', '.join(TLE_SLICINGS)}")
    if fix_tlt is not None and fix_tlt not in TLT_SCHEDULES:
        raise ValueError(
            f"unknown TLT schedule {fix_tlt!r}; choose from {', '.join(TLT_SCHEDULES)}"
        )


def model_name(model: str) -> str:
    """``"burst"`` or ``"noburst"`` for a DRAM model name (``"volume"`` → ``"noburst"``)."""
    return "burst" if check_model(model) == "burst" else "noburst"


@dataclass(frozen=True)
class TsoLayer:
    """One convolution to tile on an NMP (TSO Algorithm 1, lines 7-19).

    Parameters
    ----------
    geom
        The layer in TSO's notation (:func:`~npusched.problem.tiling.conv_geometry`).
    nmp
        The NMP (:func:`~npusched.problem.tiling.nmp_params`).
    model
        DRAM model that picks the tiles: ``"burst"`` (TSO-burst) or ``"noburst"`` (volume;
        ``"volume"`` is accepted and stored as ``"noburst"``).
    fix_tle, fix_tlt
        Fix the TLE slicing and/or the TLT schedule (TSO §VI "Fixed TLE/TLT Partitioning").
    arch
        Name of the architecture (for reports).

    Raises
    ------
    ValueError
        Unknown model, slicing or schedule.
    """

    geom: ConvGeom
    nmp: NmpParams
    model: str = "burst"
    fix_tle: str | None = None
    fix_tlt: str | None = None
    arch: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "model", model_name(self.model))
        check_fix(self.fix_tle, self.fix_tlt)

    @classmethod
    def from_layer(
        cls,
        layer: Layer,
        in_shape: Shape,
        arch: Arch,
        model: str = "burst",
        fix_tle: str | None = None,
        fix_tlt: str | None = None,
    ) -> TsoLayer:
        """The problem of a ``conv``/``fc`` ``layer`` with input ``in_shape`` on ``arch``."""
        return cls(
            conv_geometry(layer, in_shape), nmp_params(arch), model, fix_tle, fix_tlt, arch.name
        )

    @property
    def name(self) -> str:
        """The layer's name."""
        return self.geom.name

    def combos(self) -> list[tuple[str, str]]:
        """The (slicing, schedule) pairs the fixed ones allow, in TSO's order."""
        return [
            (p, q)
            for p in TLE_SLICINGS
            for q in TLT_SCHEDULES
            if (self.fix_tle is None or p == self.fix_tle)
            and (self.fix_tlt is None or q == self.fix_tlt)
        ]


@dataclass(frozen=True)
class TileChoice:
    """The tiling chosen for one layer: the solution of a :class:`TsoLayer`.

    Parameters
    ----------
    name
        Layer name.
    tle, tlt, T_R, T_C, T_N, T_M
        The chosen candidate.
    time
        Its burst-model :class:`~npusched.problem.tiling.Breakdown` (what the NMP would take).
    objective_us
        What was minimised: ``time.total_us`` for ``"burst"``, the volume-model time for
        ``"noburst"``.
    model
        ``"burst"`` or ``"noburst"``.
    n_candidates
        Grid size searched (infeasible included; 0 for an exact model).
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

    @property
    def tiles(self) -> tuple[int, int, int, int]:
        """``(T_R, T_C, T_N, T_M)``."""
        return (self.T_R, self.T_C, self.T_N, self.T_M)

    @property
    def choice(self) -> tuple[str, str, int, int, int, int]:
        """``(tle, tlt, T_R, T_C, T_N, T_M)``: the arguments of ``evaluate`` after the shape."""
        return (self.tle, self.tlt, *self.tiles)
