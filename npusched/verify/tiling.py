"""Check a TSO tiling against its layer (Sousa et al., seed ``004_442fbcc29e97fffd.txt``).

:func:`verify_tiling` re-derives everything a :class:`~npusched.problem.tiling.TileChoice` claims
from the equation functions of :mod:`npusched.problem.tiling.equations` (the same ones the
enumeration and the exact models use): the slicing and schedule exist and honour the fixed ones,
the tile sizes are in range (Algorithm 3), IS holds all :math:`F` filters (§IV-D), a
channel-coupled layer's IN tile has :math:`\\lceil T_M/m_g \\rceil` channels, the three tiles fit
their scratchpads (eq. 2), and the cycles (eq. 3-5, 7-9, Algorithm 4) equal the claimed ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npusched.problem.tiling import TLE_SLICINGS, TLT_SCHEDULES, TileChoice, TsoLayer
from npusched.problem.tiling.equations import (
    coupled_channels,
    cycle_terms,
    fits,
    get_filters,
    tle_slicing,
)
from npusched.verify.scheduling.schedule import Checked


@dataclass
class TilingReport(Checked):
    """Outcome of :func:`verify_tiling`.

    Attributes
    ----------
    cycles
        Cycles of the choice under the problem's DRAM model (what was minimised), recomputed;
        ``None`` when the choice is not a candidate of the layer.
    burst_cycles
        The same under the burst model (what ``choice.time`` reports).
    violations
        One message per violation.
    """

    cycles: int | None = None
    burst_cycles: int | None = None
    violations: list[str] = field(default_factory=list)


def _structure(problem: TsoLayer, c: TileChoice, tso_space: bool) -> list[str]:
    """Names, fixed strategies, tile ranges, IS, channel coupling and ``GetFilters``."""
    if c.tle not in TLE_SLICINGS or c.tlt not in TLT_SCHEDULES:
        return [f"unknown slicing/schedule {c.tle}/{c.tlt}"]
    g, sl = problem.geom, tle_slicing(c.tle, problem.geom, problem.nmp)
    out = []
    if not c.fallback:
        for what, fixed, got in (("TLE", problem.fix_tle, c.tle), ("TLT", problem.fix_tlt, c.tlt)):
            if fixed is not None and got != fixed:
                out.append(f"{what} fixed to {fixed}, chose {got}")
    n_max = coupled_channels(g, sl.F) if g.coupled else g.Nf
    for name, v, hi in (("T_R", c.T_R, sl.TLE_R), ("T_C", c.T_C, g.C), ("T_N", c.T_N, n_max)):
        if not 1 <= v <= hi:
            out.append(f"{name}={v} outside [1, {hi}]")
    if not 1 <= c.T_M <= sl.F:
        out.append(f"T_M={c.T_M} outside [1, {sl.F}]")
    if c.tlt == "IS" and c.T_M != sl.F:
        out.append(f"IS holds all F={sl.F} filters, T_M={c.T_M}")
    if g.coupled and coupled_channels(g, c.T_M) != c.T_N:
        out.append(f"channel-coupled: T_N={c.T_N} != ceil(T_M/{g.mg})")
    if tso_space and not g.coupled and not out:
        gf = get_filters(g, problem.nmp, sl, c.tlt, c.T_R, c.T_C, c.T_N)
        if gf != c.T_M:
            out.append(f"T_M={c.T_M} is not GetFilters' {gf} (Algorithm 3, line 7)")
    return out


def verify_tiling(
    problem: TsoLayer,
    choice: TileChoice,
    claimed_cycles: float | None = None,
    tso_space: bool = False,
) -> TilingReport:
    """Check ``choice`` against ``problem``.

    Parameters
    ----------
    problem
        The layer.
    choice
        The tiling to check (its ``time`` and ``objective_us`` are checked too).
    claimed_cycles
        The objective a method reported, in cycles under ``problem.model`` (e.g.
        ``Result.objective``), or ``None`` to skip that check.
    tso_space
        Also require :math:`T_M` = ``GetFilters`` (Algorithm 3's space, what ``tso-enum`` and
        ``tso-exact`` with ``space="tso"`` search).

    Returns
    -------
    TilingReport
        ``ok`` when nothing is violated; ``raise_if_failed()`` raises otherwise.
    """
    report = TilingReport()
    if choice.name != problem.name:
        report.violations.append(f"choice is for layer {choice.name}, not {problem.name}")
    report.violations += _structure(problem, choice, tso_space)
    if report.violations:
        return report
    nmp = problem.nmp
    sl = tle_slicing(choice.tle, problem.geom, nmp)
    terms = cycle_terms(problem.geom, nmp, sl, choice.tlt, *choice.tiles)
    for what, buf, nb, ok in zip(
        ("IN", "W", "OUT"), ("MB0", "MB1", "MB2"), terms.bytes, fits(nmp, *terms.bytes), strict=True
    ):
        if not ok:
            report.violations.append(f"{what} tile of {nb} B does not fit {buf} (eq. 2)")
    report.cycles = int(terms.total(problem.model))
    report.burst_cycles = int(terms.total("burst"))
    _check_times(report, problem, choice, claimed_cycles)
    return report


def _check_times(
    report: TilingReport, problem: TsoLayer, c: TileChoice, claimed: float | None
) -> None:
    """The recomputed cycles against the claimed objective, ``objective_us`` and ``time``."""
    us = problem.nmp.us
    assert report.cycles is not None and report.burst_cycles is not None
    if claimed is not None and abs(claimed - report.cycles) > 1e-6:
        report.violations.append(f"claimed {claimed} cycles, recomputed {report.cycles}")
    if c.objective_us != us(report.cycles):
        report.violations.append(
            f"objective_us {c.objective_us} != recomputed {us(report.cycles)} (eq. 6-9)"
        )
    bd = c.time
    if (bd.tle, bd.tlt, bd.T_R, bd.T_C, bd.T_N, bd.T_M) != c.choice:
        report.violations.append("the breakdown is of another candidate")
    if not bd.feasible or bd.mac_cycles + bd.dram_cycles != report.burst_cycles:
        report.violations.append(
            f"breakdown {bd.mac_cycles + bd.dram_cycles} cycles, recomputed burst-model "
            f"{report.burst_cycles}"
        )
    if bd.total_us != us(report.burst_cycles):
        report.violations.append(f"time_us {bd.total_us} != {us(report.burst_cycles)}")


__all__ = ["TilingReport", "verify_tiling"]
