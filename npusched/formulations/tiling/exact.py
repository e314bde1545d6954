"""Exact models of TSO's tile choice for one convolution (Sousa et al., "Tensor Slicing and
Optimization for Multicore NPUs", seed ``004_442fbcc29e97fffd.txt``, §IV).

Two certified forms of the search of :mod:`npusched.heuristics.tiling.search`:

(a) :class:`TsoTileModel` -- a CP-SAT model of one (TLE slicing, TLT schedule) pair with *integer*
    tile sizes :math:`T_R \\in [1, TLE_R]`, :math:`T_C \\in [1, C]`, :math:`T_N \\in [1, N]`,
    :math:`T_M \\in [1, F]`, and the objective of :func:`npusched.problem.tiling.evaluate` encoded
    exactly: every ``ceil`` is an ``add_division_equality`` on a shifted numerator
    (:math:`\\lceil a/b \\rceil = \\lfloor (a + b - 1)/b \\rfloor`, CP-SAT divides positive
    values by truncation, i.e. floor), every product an ``add_multiplication_equality``, every
    ``min`` an ``add_min_equality`` and every case of Algorithm 4's burst count a Boolean that is
    reified on the tile size that decides it. :func:`solve_layer_cpsat` solves the 9 pairs of a
    layer one after another and takes the best, warm-started from the enumeration's choice
    (:func:`npusched.heuristics.tiling.search.search_layer`): CP-SAT completes it from a hint, then
    proves
    every pair infeasible under the cutoff *objective ≤ incumbent − 1* (or finds a cheaper
    tiling).

(b) :class:`CandidateChoiceMIP` -- one binary per candidate enumerated by
    :func:`npusched.heuristics.tiling.search.layer_space`, exactly one chosen, minimising
    :math:`\\sum_k t_k x_k`, solved by HiGHS through :func:`npusched.solvers.dispatch.solve_linear`.
    It is
    trivially exact *relative to the enumerated space* (its LP relaxation is already integral);
    (a) is exact over the integer tile domains and so checks the enumeration itself. Large
    spaces are passed as that LP (:data:`MIP_MAX_BINARIES`: HiGHS's MIP presolve is quadratic
    on this model).

Objective scaling
-----------------
:func:`~npusched.problem.tiling.evaluate` computes every term in integer accelerator cycles
(:math:`\\lceil bytes/BW \\rceil + n_{burst} CAS` per transfer, eq. 7 in cycles) and reports
``total_us = cycles / (f / 10^6)``. Both models minimise those integer cycles, so the objective
is exact with no rounding: the CP-SAT optimum in cycles equals ``evaluate``'s cycles of the same
tiles, and µs are obtained with the same division ``evaluate`` uses (:meth:`NmpParams.us`).
``BW`` in bytes per cycle is taken as the exact fraction :math:`p/q` (17 for ``tso-nmp-16``:
17 GB/s at 1 GHz), so :math:`\\lceil bytes/BW \\rceil = \\lceil q \\cdot bytes / p \\rceil`.

Tile space
----------
By default (``space="tso"``) the models search Algorithm 3's space, where :math:`T_M` is not free
but ``GetFilters`` of :math:`(T_R, T_C, T_N)` (:func:`npusched.problem.tiling.get_filters`): the
largest filter count that fits MB1 and MB2, evened out to
:math:`\\lceil F / \\lceil F/T_M^* \\rceil \\rceil`; IS must hold all :math:`F` filters. This is
what the enumeration searches, so the two optima must be equal. ``space="free"`` lets
:math:`T_M` take any value in :math:`[1, F]` that fits (the domain ``evaluate`` accepts), a
superset whose optimum can be lower.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from npusched.arch.model import Arch, unroll_dims
from npusched.heuristics.tiling.search import LayerChoice, TileSpace, layer_space, search_layer
from npusched.problem.tiling import (
    TLE_SLICINGS,
    TLT_SCHEDULES,
    Breakdown,
    ConvGeom,
    NmpParams,
    check_model,
    conv_geometry,
    evaluate_geom,
    nmp_params,
    tle_slicing,
)
from npusched.solvers.cpsat import run_cpsat
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Result, Status
from npusched.workload.layers import Layer, Shape

SPACES = ("tso", "free")

#: A value of the model: a CP-SAT variable or a constant folded at build time.
Val = cp_model.IntVar | int
#: A Boolean of the model, or a constant decided by the bounds.
Flag = cp_model.IntVar | bool

_LIMIT = 2**62


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def bandwidth_fraction(bw: float) -> Fraction:
    """DRAM bytes per cycle as an exact fraction :math:`p/q` (``q ≤ 1000``, e.g. 17 or 64/5).

    Then :math:`\\lceil q \\cdot bytes / p \\rceil` equals ``evaluate``'s float
    :math:`\\lceil bytes/BW - 10^{-9} \\rceil` for every tile: a non-integral quotient is at
    least :math:`1/p` above an integer, far more than the float error.

    Raises
    ------
    ValueError
        ``bw`` is not positive or is not such a fraction (then ``evaluate``'s float ceiling
        could not be reproduced exactly).
    """
    if not bw > 0:
        raise ValueError(f"DRAM bandwidth must be positive, got {bw}")
    frac = Fraction(bw).limit_denominator(1000)
    if abs(float(frac) - bw) > 1e-12 * bw:
        raise ValueError(f"DRAM bandwidth {bw} bytes/cycle is not a small fraction")
    return frac


def cycles_of(bd: Breakdown) -> int:
    """Integer cycles of a feasible :class:`~npusched.problem.tiling.Breakdown` (``total_us`` is
    this number divided by the clock in MHz)."""
    return int(bd.mac_cycles + bd.dram_cycles)


# ---- (a) CP-SAT over integer tile sizes -------------------------------------------------------


class TsoTileModel:
    """CP-SAT model of TSO's estimated time (eq. 6-9, Algorithm 4) for one layer, one TLE
    slicing ``tle`` and one TLT schedule ``tlt``, over integer tile sizes.

    Variables: :math:`T_R, T_C, T_N, T_M` and every intermediate quantity of
    :func:`~npusched.problem.tiling.evaluate` (IN tile rows/columns, element counts, loop counts
    :math:`n_r, n_c, n_n, n_m`, burst counts, transfer and MAC cycles), each defined by an exact
    equality; bounds of the intermediates are propagated at build time (interval arithmetic on
    non-negative integers) so every domain is finite. Constants of the slice
    (:math:`TLE_R, F, E_a, P_a`, Algorithm 2) are folded in.

    Parameters
    ----------
    geom, nmp
        The layer (:func:`~npusched.problem.tiling.conv_geometry`) and the NMP
        (:func:`~npusched.problem.tiling.nmp_params`).
    tle, tlt
        The TLE slicing and TLT schedule.
    model
        ``"burst"`` (TSO-burst) or ``"noburst"`` (volume).
    space
        ``"tso"``: :math:`T_M` by ``GetFilters`` (Algorithm 3's space); ``"free"``: any
        :math:`T_M` that fits.

    Attributes
    ----------
    md
        The ``CpModel``; it minimises :attr:`objective` (cycles).
    base
        ``(T_R, T_C, T_N, T_M)``.
    """

    def __init__(
        self,
        geom: ConvGeom,
        nmp: NmpParams,
        tle: str,
        tlt: str,
        model: str = "burst",
        space: str = "tso",
    ) -> None:
        if tlt not in TLT_SCHEDULES:
            raise ValueError(f"unknown TLT schedule {tlt!r}; choose from {TLT_SCHEDULES}")
        if space not in SPACES:
            raise ValueError(f"unknown tile space {space!r}; choose from {SPACES}")
        self.geom, self.nmp, self.tle, self.tlt = geom, nmp, tle, tlt
        self.sl = tle_slicing(tle, geom, nmp)
        self.burst = check_model(model) == "burst"
        self.space = space
        self.bw = bandwidth_fraction(nmp.bw)
        self.md = cp_model.CpModel()
        self._bd: dict[int, tuple[int, int]] = {}
        self._cache: dict[tuple[Any, ...], cp_model.IntVar] = {}
        self._variables()
        for add in (
            self._filters,
            self._in_tile,
            self._capacity,
            self._counts,
            self._bursts,
            self._transfers,
            self._mac,
        ):
            add()
        self._objective()

    # ---- building blocks (exact, bounds tracked) ----------------------------------------------

    def _int(self, lo: int, hi: int, name: str) -> cp_model.IntVar:
        if lo > hi:
            raise ValueError(f"{name}: empty domain [{lo}, {hi}]")
        if hi >= _LIMIT:
            raise ValueError(f"{name}: bound {hi} too large for CP-SAT")
        v = self.md.new_int_var(lo, hi, name)
        self._bd[v.index] = (lo, hi)
        return v

    def _lohi(self, x: Val) -> tuple[int, int]:
        if isinstance(x, int):
            return x, x
        return self._bd[x.index]

    def _lin(self, name: str, terms: list[tuple[int, Val]], const: int = 0) -> Val:
        """``Σ c·x + const`` (``c ≥ 0``) as a variable, or an int when all terms are constant."""
        if all(isinstance(x, int) for _, x in terms):
            return const + sum(c * self._lohi(x)[0] for c, x in terms)
        lo = const + sum(c * self._lohi(x)[0] for c, x in terms)
        hi = const + sum(c * self._lohi(x)[1] for c, x in terms)
        v = self._int(lo, hi, name)
        self.md.add(v == sum(c * x for c, x in terms) + const)
        return v

    def _mul(self, name: str, a: Val, b: Val) -> Val:
        """``a · b`` (``add_multiplication_equality``; shared when the same pair recurs)."""
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if isinstance(a, int) or isinstance(b, int):
            c, x = (a, b) if isinstance(a, int) else (b, a)
            k = self._lohi(c)[0]
            return x if k == 1 else self._lin(name, [(k, x)])
        key = ("mul", *sorted((a.index, b.index)))
        if key not in self._cache:
            (la, ha), (lb, hb) = self._lohi(a), self._lohi(b)
            v = self._int(la * lb, ha * hb, name)
            self.md.add_multiplication_equality(v, [a, b])
            self._cache[key] = v
        return self._cache[key]

    def _prod(self, name: str, *factors: Val) -> Val:
        """Product of several values, constants folded, variables multiplied pairwise."""
        const = math.prod(self._lohi(f)[0] for f in factors if isinstance(f, int))
        vs = sorted((f for f in factors if not isinstance(f, int)), key=lambda v: v.index)
        if not vs:
            return const
        acc: Val = vs[0]
        for k, v in enumerate(vs[1:]):
            acc = self._mul(f"{name}.{k}" if k < len(vs) - 2 else name, acc, v)
        return self._mul(name, const, acc)

    def _ceil_by(self, name: str, x: Val, b: int, coef: int = 1) -> Val:
        """:math:`\\lceil c x / b \\rceil = \\lfloor (c x + b - 1) / b \\rfloor` for a constant
        ``b ≥ 1``."""
        if isinstance(x, int):
            return _cdiv(coef * x, b)
        if b == 1:
            return self._mul(name, coef, x)
        lo, hi = self._lohi(x)
        v = self._int(_cdiv(coef * lo, b), _cdiv(coef * hi, b), name)
        self.md.add_division_equality(v, coef * x + (b - 1), b)
        return v

    def _ceil_of(self, name: str, a: int, x: Val) -> Val:
        """:math:`\\lceil a / x \\rceil = \\lfloor (x + a - 1) / x \\rfloor` for a variable
        ``x ≥ 1``."""
        if isinstance(x, int):
            return _cdiv(a, x)
        lo, hi = self._lohi(x)
        assert lo >= 1
        v = self._int(_cdiv(a, hi), _cdiv(a, lo), name)
        self.md.add_division_equality(v, x + (a - 1), x)
        return v

    def _floor_of(self, name: str, a: int, x: Val, coef: int = 1) -> Val:
        """:math:`\\lfloor a / (c x) \\rfloor` for a variable ``x ≥ 1``."""
        if isinstance(x, int):
            return a // (coef * x)
        lo, hi = self._lohi(x)
        v = self._int(a // (coef * hi), a // (coef * lo), name)
        self.md.add_division_equality(v, a, coef * x)
        return v

    def _min(self, name: str, items: list[Val], lo: int | None = None) -> Val:
        """``min(items)`` (``add_min_equality``); ``lo`` restricts the result's domain."""
        if all(isinstance(x, int) for x in items):
            m = min(self._lohi(x)[0] for x in items)
            if lo is not None and m < lo:
                self.md.add_bool_or([])  # infeasible: no value can be chosen
            return m
        bounds = [self._lohi(x) for x in items]
        mlo, mhi = min(b[0] for b in bounds), min(b[1] for b in bounds)
        if lo is not None and lo > mhi:
            self.md.add_bool_or([])  # infeasible: the minimum never reaches lo
            return lo
        v = self._int(max(mlo, lo if lo is not None else mlo), mhi, name)
        self.md.add_min_equality(v, items)
        return v

    def _at_least(self, name: str, x: Val, t: int) -> Flag:
        """Boolean :math:`[x \\ge t]`, reified both ways, or a constant decided by the bounds."""
        lo, hi = self._lohi(x)
        if lo >= t:
            return True
        if hi < t:
            return False
        b = self.md.new_bool_var(name)
        self.md.add(x >= t).only_enforce_if(b)
        self.md.add(x <= t - 1).only_enforce_if(~b)
        return b

    def _and(self, name: str, a: Flag, b: Flag) -> Flag:
        if isinstance(a, bool) or isinstance(b, bool):
            if a is False or b is False:
                return False
            return b if a is True else a
        v = self.md.new_bool_var(name)
        self.md.add_implication(v, a)
        self.md.add_implication(v, b)
        self.md.add_bool_or([~a, ~b, v])
        return v

    def _select(
        self, name: str, flag: Flag, if_true: Callable[[], Val], if_false: Callable[[], Val]
    ) -> Val:
        """``if_true()`` when ``flag`` else ``if_false()``: two reified equalities (branches are
        built only when the flag is not decided by the bounds)."""
        if flag is True:
            return if_true()
        if flag is False:
            return if_false()
        t, f = if_true(), if_false()
        (lt, ht), (lf, hf) = self._lohi(t), self._lohi(f)
        v = self._int(min(lt, lf), max(ht, hf), name)
        self.md.add(v == t).only_enforce_if(flag)
        self.md.add(v == f).only_enforce_if(~flag)
        return v

    # ---- variables ----------------------------------------------------------------------------

    def _variables(self) -> None:
        """Tile sizes over the domains of Algorithm 3 (lines 4-7).

        .. math::

            1 \\le T_R \\le TLE_R,\\quad 1 \\le T_C \\le C,\\quad 1 \\le T_N \\le N_f,\\quad
            1 \\le T_M \\le F

        (channel-coupled layers: :math:`1 \\le T_N \\le \\lceil F/m_g \\rceil`).
        """
        g, sl = self.geom, self.sl
        self.T_R = self._int(1, sl.TLE_R, "T_R")
        self.T_C = self._int(1, g.C, "T_C")
        n_hi = _cdiv(sl.F, g.mg) if g.coupled else g.Nf
        self.T_N = self._int(1, n_hi, "T_N")
        self.T_M = self._int(1, sl.F, "T_M")
        self.base = (self.T_R, self.T_C, self.T_N, self.T_M)
        self.rc = self._mul("T_R*T_C", self.T_R, self.T_C)

    # ---- constraint families ------------------------------------------------------------------

    def _filters(self) -> None:
        """``GetFilters`` (Algorithm 3, line 7): :math:`T_M` is the largest filter count that fits
        MB1 and MB2 (eq. 2), evened out; IS holds all :math:`F` filters.

        .. math::

            T_M^* = \\min\\left(F, \\left\\lfloor \\frac{MB1}{T_N^W K_y K_x e} \\right\\rfloor,
                    \\left\\lfloor \\frac{MB2}{T_R T_C e} \\right\\rfloor\\right),\\qquad
            T_M = \\begin{cases} F,\\ T_M^* = F & IS \\\\
                  \\lceil F / \\lceil F / T_M^* \\rceil \\rceil,\\ T_M^* \\ge 1 & OS, WS
                  \\end{cases}

        with :math:`T_N^W = N_f` for WS, :math:`T_N` otherwise. Channel-coupled layers
        (depthwise): :math:`T_M` is free and :math:`T_N = \\lceil T_M / m_g \\rceil`. With
        ``space="free"`` only the IS rule :math:`T_M = F` is kept (capacities: eq. 2 family).
        """
        g, nmp, sl, md = self.geom, self.nmp, self.sl, self.md
        F = sl.F
        if self.tlt == "IS":
            md.add(self.T_M == F)
        if g.coupled:
            md.add_division_equality(self.T_N, self.T_M + (g.mg - 1), g.mg)
            return
        if self.space == "free":
            return
        kk_e = g.Ky * g.Kx * nmp.e
        wcap: Val
        if self.tlt == "WS":
            wcap = nmp.mb1 // (g.Nf * kk_e)
        else:
            wcap = self._floor_of("wcap", nmp.mb1, self.T_N, kk_e)
        ocap = self._floor_of("ocap", nmp.mb2, self.rc, nmp.e)
        tmax = self._min("T_M*", [F, wcap, ocap], lo=F if self.tlt == "IS" else 1)
        if self.tlt != "IS":
            k = self._ceil_of("ceil(F/T_M*)", F, tmax)
            evened = self._ceil_of("ceil(F/k)", F, k)
            md.add(evened == self.T_M)

    def _in_tile(self) -> None:
        """IN tile rows and columns (eq. 1, clipped to the input) and element counts of the
        IN, W and OUT tiles.

        .. math::

            T_H = \\min(S_y T_R + d_y (K_y - 1) + 1 - S_y,\\ H),\\quad
            T_L = \\min(S_x T_C + d_x (K_x - 1) + 1 - S_x,\\ L)

        .. math::

            |IN| = T_N T_H T_L,\\quad |W| = T_M T_N^W K_y K_x,\\quad |OUT| = T_M T_R T_C
        """
        g = self.geom
        raw_h = self._lin("T_H.raw", [(g.Sy, self.T_R)], g.Dy * (g.Ky - 1) + 1 - g.Sy)
        raw_l = self._lin("T_L.raw", [(g.Sx, self.T_C)], g.Dx * (g.Kx - 1) + 1 - g.Sx)
        self.T_H = self._min("T_H", [raw_h, g.H])
        self.T_L = self._min("T_L", [raw_l, g.L])
        self.hw = self._mul("T_H*T_L", self.T_H, self.T_L)
        self.in_el = self._mul("|IN|", self.T_N, self.hw)
        kk = g.Ky * g.Kx
        self.w_ch_fixed = self.tlt == "WS" or g.coupled
        if self.w_ch_fixed:
            self.w_el = self._mul("|W|", g.Nf * kk, self.T_M)
        else:
            self.mn = self._mul("T_M*T_N", self.T_M, self.T_N)
            self.w_el = self._mul("|W|", kk, self.mn)
        self.out_el = self._mul("|OUT|", self.T_M, self.rc)

    def _capacity(self) -> None:
        """Tiles fit their scratchpads (eq. 2, :math:`e` bytes per element).

        .. math:: e\\,|IN| \\le MB0,\\qquad e\\,|W| \\le MB1,\\qquad e\\,|OUT| \\le MB2
        """
        nmp = self.nmp
        for el, cap in ((self.in_el, nmp.mb0), (self.w_el, nmp.mb1), (self.out_el, nmp.mb2)):
            lo, hi = self._lohi(el)
            if nmp.e * lo > cap:
                self.md.add_bool_or([])  # not even the smallest tile fits
            elif not isinstance(el, int):
                self.md.add(nmp.e * el <= cap)
                self._bd[el.index] = (lo, min(hi, cap // nmp.e))

    def _counts(self) -> None:
        """Tiles per TLT along each loop (eq. 3-5 and 8).

        .. math::

            n_r = \\lceil TLE_R / T_R \\rceil,\\ n_c = \\lceil C / T_C \\rceil,\\
            n_n = \\lceil N_f / T_N \\rceil,\\ n_m = \\lceil F / T_M \\rceil

        (:math:`n_n = 1` when channel-coupled, :math:`n_m = 1` for IS), and the products
        :math:`n_{rc} = n_r n_c`, :math:`n_{rcm} = n_{rc} n_m`.
        """
        g, sl = self.geom, self.sl
        self.n_r = self._ceil_of("n_r", sl.TLE_R, self.T_R)
        self.n_c = self._ceil_of("n_c", g.C, self.T_C)
        self.n_n: Val = 1 if g.coupled else self._ceil_of("n_n", g.Nf, self.T_N)
        self.n_m: Val = 1 if self.tlt == "IS" else self._ceil_of("n_m", sl.F, self.T_M)
        nrc = self._mul("n_r*n_c", self.n_r, self.n_c)
        self.nrcm = self._mul("n_r*n_c*n_m", nrc, self.n_m)

    def _plane_bursts(
        self, name: str, ch: Val, rows: Val, cols: Val, height: int, width: int, el: Val
    ) -> Val:
        e, B = self.nmp.e, self.nmp.burst
        full_w = self._at_least(f"{name}.full_w", cols, width)
        full_h = self._at_least(f"{name}.full_h", rows, height)

        def per_channel() -> Val:
            return self._select(
                f"{name}.per_ch",
                full_w,
                lambda: self._ceil_by(f"{name}.row_run", rows, B, width * e),
                lambda: self._mul(
                    f"{name}.rows*bursts_row",
                    rows,
                    self._ceil_by(f"{name}.bursts_row", cols, B, e),
                ),
            )

        return self._select(
            name,
            self._and(f"{name}.whole", full_w, full_h),
            lambda: self._ceil_by(f"{name}.run", el, B, e),
            lambda: self._mul(f"{name}.split", ch, per_channel()),
        )

    def _bursts(self) -> None:
        """Bursts of one transfer of each tile (``CalBurstCount``, Algorithm 4 line 5), as
        :func:`npusched.problem.tiling.plane_bursts` and
        :func:`~npusched.problem.tiling.weight_bursts`.

        .. math::

            b_{IN} = \\begin{cases}
                \\lceil e T_N T_H T_L / B \\rceil & T_H = H \\wedge T_L = L \\\\
                T_N \\lceil e T_H L / B \\rceil & T_L = L \\\\
                T_N T_H \\lceil e T_L / B \\rceil & \\text{otherwise}
            \\end{cases}\\qquad
            b_W = \\begin{cases}
                \\lceil e |W| / B \\rceil & T_N^W = N_f \\\\
                T_M \\lceil e T_N K_y K_x / B \\rceil & \\text{otherwise}
            \\end{cases}

        and :math:`b_{OUT}` as :math:`b_{IN}` with :math:`(T_M, T_R, T_C, R, C)`. Each case test
        (:math:`T_L = L` is :math:`T_L \\ge L`, ...) is a Boolean reified both ways on the tile
        size; each case value is tied to :math:`b` by an equality enforced under its Boolean.
        Skipped (all zero) for TSO-noburst.
        """
        g, nmp = self.geom, self.nmp
        if not self.burst:
            self.b_in: Val = 0
            self.b_w: Val = 0
            self.b_out: Val = 0
            return
        self.b_in = self._plane_bursts("b_IN", self.T_N, self.T_H, self.T_L, g.H, g.L, self.in_el)
        self.b_out = self._plane_bursts(
            "b_OUT", self.T_M, self.T_R, self.T_C, g.R, g.C, self.out_el
        )
        e, B, kk = nmp.e, nmp.burst, g.Ky * g.Kx
        full = True if self.w_ch_fixed else self._at_least("b_W.full", self.T_N, g.Nf)
        self.b_w = self._select(
            "b_W",
            full,
            lambda: self._ceil_by("b_W.run", self.w_el, B, e),
            lambda: self._mul(
                "b_W.split", self.T_M, self._ceil_by("b_W.per_filter", self.T_N, B, kk * e)
            ),
        )

    def _transfers(self) -> None:
        """Cycles of one transfer of each tile (``CalcDataTransfer``, Algorithm 4), with the
        bandwidth :math:`BW = p/q` bytes per cycle.

        .. math::

            t_X = \\left\\lceil \\frac{q\\, e\\, |X|}{p} \\right\\rceil + CAS \\cdot b_X
            \\qquad X \\in \\{IN, W, OUT\\}

        (:math:`CAS \\cdot b_X` only for TSO-burst).
        """
        p, q = self.bw.numerator, self.bw.denominator
        e, cas = self.nmp.e, self.nmp.cas
        out = []
        for name, el, b in (
            ("t_IN", self.in_el, self.b_in),
            ("t_W", self.w_el, self.b_w),
            ("t_OUT", self.out_el, self.b_out),
        ):
            vol = self._ceil_by(f"{name}.volume", el, p, q * e)
            out.append(self._lin(name, [(1, vol), (cas, b)]))
        self.t_in, self.t_w, self.t_out = out

    def _mac(self) -> None:
        """Cycles of one tile on the MAC unit (eq. 7), for any ``pe_unroll`` as
        :func:`npusched.costmodel.compute_cycles`.

        .. math::

            Tile_{MAC} = \\prod_{g \\in U} \\left\\lceil \\frac{\\prod_{d \\in g} L_d}{u_g}
            \\right\\rceil \\prod_{d \\notin \\cup U} L_d
            \\;=\\; T_N T_M \\left\\lceil \\frac{T_R T_C K_y K_x}{\\#MACs} \\right\\rceil
            \\text{ on the NMP}

        with loops :math:`K = T_M`, :math:`C = T_N` (1 when channel-coupled), :math:`OY = T_R`,
        :math:`OX = T_C`, :math:`FY = K_y`, :math:`FX = K_x`.
        """
        g = self.geom
        loops: dict[str, Val] = {
            "K": self.T_M,
            "C": 1 if g.coupled else self.T_N,
            "OY": self.T_R,
            "OX": self.T_C,
            "FY": g.Ky,
            "FX": g.Kx,
        }
        factors: list[Val] = []
        spatial: set[str] = set()
        for key, u in self.nmp.unroll:
            dims = unroll_dims(key)
            spatial |= set(dims)
            ext = self._prod(f"prod({key})", *(loops.get(d, 1) for d in dims))
            factors.append(self._ceil_by(f"ceil({key}/{u})", ext, u))
        factors += [n for d, n in loops.items() if d not in spatial]
        self.tile_mac = self._prod("Tile_MAC", *factors)

    def _objective(self) -> None:
        """TSO's estimate (eq. 6 without :math:`T_{SW}`) in cycles: eq. 8 (critical path) plus
        eq. 9 with the counts of eq. 3-5 (:func:`npusched.problem.tiling.alphas`), factored so that
        products share their factors.

        .. math::

            T = r\\Big[n_{rcm}\\big(n_n (Tile_{MAC} + E_a m_c t_{IN}
                + [q \\ne WS] E_a P_a t_W) + E_a P_a t_{OUT}\\big)
                + [q = WS]\\, E_a P_a n_m t_W\\Big]

        which expands to :math:`T_{MAC} + \\alpha_{in} t_{IN} + \\alpha_w t_W + \\alpha_{out}
        t_{OUT}` with :math:`T_{MAC} = r\\, n_{rcm} n_n Tile_{MAC}`,
        :math:`\\alpha_{in} = r E_a m_c n_{rcm} n_n`, :math:`\\alpha_w = r E_a P_a n_{rcm} n_n`
        (WS: :math:`r E_a P_a n_m`), :math:`\\alpha_{out} = r E_a P_a n_{rcm}` (:math:`r` groups
        run in turn, :math:`m_c = P_a` without multicast when channel-coupled, else 1).
        """
        g, sl = self.geom, self.sl
        ep = sl.E_a * sl.P_a
        mc = sl.P_a if g.coupled else 1
        ws = self.tlt == "WS"
        terms: list[tuple[int, Val]] = [(1, self.tile_mac), (sl.E_a * mc, self.t_in)]
        if not ws:
            terms.append((ep, self.t_w))
        per_step = self._lin("per_step", terms)
        per_tile = self._lin(
            "per_out_tile", [(1, self._mul("n_n*per_step", self.n_n, per_step)), (ep, self.t_out)]
        )
        inner: list[tuple[int, Val]] = [(1, self._mul("n_rcm*per_out_tile", self.nrcm, per_tile))]
        if ws:
            inner.append((ep, self._mul("n_m*t_W", self.n_m, self.t_w)))
        self.inner = self._lin("T/r", inner)
        self.reps = g.reps
        lo, hi = self._lohi(self.inner)
        if hi * self.reps >= _LIMIT:
            raise ValueError(f"{g.name}: objective bound {hi * self.reps} too large")
        self.objective = self.reps * self.inner
        self.md.minimize(self.objective)

    # ---- hints and decoding -------------------------------------------------------------------

    def complete(
        self, tiles: tuple[int, int, int, int], time_limit: float = 10.0
    ) -> tuple[list[int], int] | None:
        """Every variable's value for the given ``(T_R, T_C, T_N, T_M)`` and the objective
        (cycles), by solving a copy with the tile sizes fixed (every other variable is a function
        of them); ``None`` when the tiles are infeasible in this model."""
        fixed = self.md.clone()
        for var, val in zip(self.base, tiles, strict=True):
            lo, hi = self._lohi(var)
            if not lo <= val <= hi:
                return None
            fixed.add(fixed.get_int_var_from_proto_index(var.index) == int(val))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.max_time_in_seconds = time_limit
        code = solver.solve(fixed)
        if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        return list(solver.response_proto.solution), int(round(solver.objective_value))

    def hint(self, values: list[int]) -> None:
        """Hint every variable (a full solution from :meth:`complete`)."""
        self.md.clear_hints()
        h = self.md.proto.solution_hint
        h.vars.extend(range(len(values)))
        h.values.extend(int(v) for v in values)

    def cutoff(self, upper: int) -> None:
        """Only solutions of at most ``upper`` cycles."""
        self.md.add(self.objective <= upper)

    def decode(self, solver: cp_model.CpSolver) -> tuple[int, int, int, int]:
        return (
            int(solver.value(self.T_R)),
            int(solver.value(self.T_C)),
            int(solver.value(self.T_N)),
            int(solver.value(self.T_M)),
        )


@dataclass
class ComboOutcome:
    """One (slicing, schedule) run of :func:`solve_layer_cpsat`.

    ``bound`` is the proven lower bound (cycles) on the pair's optimum: the optimum when
    ``status`` is optimal; ``cutoff + 1`` when infeasible under a cutoff (no tiling of at most
    ``cutoff`` cycles); ``None`` (no tiling at all) when infeasible without a cutoff.
    """

    tle: str
    tlt: str
    status: Status
    objective: int | None
    bound: float | None
    cutoff: int | None
    runtime: float
    tiles: tuple[int, int, int, int] | None
    hinted: bool
    num_vars: int
    num_constraints: int


@dataclass
class ExactTiling:
    """Outcome of an exact tiling model for one layer.

    ``result.objective``/``result.bound`` are in µs (cycles divided by the clock in MHz, as
    ``evaluate``); ``objective_cycles``/``bound_cycles`` are the integers the solver worked with.
    ``breakdown`` is :func:`~npusched.problem.tiling.evaluate` of the decoded tiles (same model).
    """

    result: Result
    tle: str | None = None
    tlt: str | None = None
    tiles: tuple[int, int, int, int] | None = None
    objective_cycles: int | None = None
    bound_cycles: float | None = None
    breakdown: Breakdown | None = None
    combos: list[ComboOutcome] = field(default_factory=list)

    @property
    def choice(self) -> tuple[str, str, int, int, int, int] | None:
        if self.tiles is None or self.tle is None or self.tlt is None:
            return None
        return (self.tle, self.tlt, *self.tiles)


def _warm_choice(
    layer: Layer, in_shape: Shape, arch: Arch, model: str, warm: LayerChoice | bool | None
) -> LayerChoice | None:
    if warm is None or warm is False:
        return None
    if warm is True:
        try:
            return search_layer(layer, in_shape, arch, model)
        except ValueError:  # nothing fits: no warm start
            return None
    return warm


def solve_layer_cpsat(
    layer: Layer,
    in_shape: Shape,
    arch: Arch,
    model: str = "burst",
    warm: LayerChoice | bool | None = True,
    time_limit: float = 10.0,
    threads: int = 2,
    seed: int = 0,
    space: str = "tso",
    use_cutoff: bool = True,
    combos: list[tuple[str, str]] | None = None,
    warm_mode: str = "cutoff",
) -> ExactTiling:
    """Minimise TSO's estimate of one layer over integer tile sizes with CP-SAT.

    The 9 (slicing, schedule) pairs (or ``combos``) are solved one after another, the warm
    start's pair last. The warm start is first given to CP-SAT as a hint with the tile sizes
    fixed (:meth:`TsoTileModel.complete`): CP-SAT completes it to a full solution of its pair's
    model, which certifies it feasible, and its objective there must equal ``evaluate``'s
    cycles. It is the incumbent. With ``use_cutoff`` every pair then gets the constraint
    *objective ≤ incumbent − 1*, so that CP-SAT proving the pair INFEASIBLE proves it holds
    nothing cheaper (a cheaper solution found there becomes the incumbent). With
    ``warm_mode="hint"`` the warm start's own pair is instead solved without a cutoff, hinted
    with the full solution, and must prove its optimum by raising its bound; measured on YOLOv2
    conv3 and conv5 (KS/WS, 2 workers) that takes 1.5-2.9 s against 0.2-0.4 s for the
    infeasibility proof of ``"cutoff"``, where the cutoff is known to CP-SAT's presolve. Each
    run gets an equal share of the time left.

    Status: ``optimal`` only when CP-SAT returned OPTIMAL or INFEASIBLE for every pair (then the
    incumbent is the optimum over all of them); ``feasible`` when a solution is known but some
    pair was stopped by the time limit; ``infeasible`` when every pair is infeasible without a
    cutoff; ``time_limit_no_solution`` otherwise. The bound is the minimum over the pairs of their
    proven bounds (:class:`ComboOutcome`) and the incumbent.

    Parameters
    ----------
    layer, in_shape, arch
        The layer, its input shape, the NMP.
    model
        ``"burst"`` or ``"noburst"``: the estimate minimised.
    warm
        A :class:`~npusched.heuristics.tiling.search.LayerChoice` to start from, ``True`` to compute
        it
        with :func:`~npusched.heuristics.tiling.search.search_layer`, or ``None``/``False`` for
        none.
    time_limit, threads, seed
        CP-SAT's budget for the whole layer, workers, seed.
    space
        ``"tso"`` (Algorithm 3's :math:`T_M`) or ``"free"``.
    use_cutoff
        Tighten the pairs by the incumbent (off: every pair solved to its own optimum, the warm
        start's pair hinted).
    combos
        ``(tle, tlt)`` pairs to solve (default: all 9).
    warm_mode
        ``"cutoff"`` or ``"hint"``: how the warm start's pair is solved (above).

    Raises
    ------
    RuntimeError
        The model's objective at the warm start differs from ``evaluate`` (a modelling bug).
    """
    if warm_mode not in ("cutoff", "hint"):
        raise ValueError(f"unknown warm_mode {warm_mode!r}; choose from cutoff, hint")
    t0 = time.perf_counter()
    geom, nmp = conv_geometry(layer, in_shape), nmp_params(arch)
    mdl = "burst" if check_model(model) == "burst" else "noburst"
    pairs = (
        list(combos)
        if combos is not None
        else [(p, q) for p in TLE_SLICINGS for q in TLT_SCHEDULES]
    )
    wc = _warm_choice(layer, in_shape, arch, mdl, warm)
    best: int | None = None
    best_choice: tuple[str, str, tuple[int, int, int, int]] | None = None
    warm_pair: tuple[str, str] | None = None
    warm_tiles: tuple[int, int, int, int] | None = None
    warm_cycles: int | None = None
    if wc is not None:
        warm_tiles = (wc.T_R, wc.T_C, wc.T_N, wc.T_M)
        bd = evaluate_geom(geom, nmp, wc.tle, wc.tlt, *warm_tiles, mdl)
        if bd.feasible and (wc.tle, wc.tlt) in pairs:
            warm_pair, warm_cycles = (wc.tle, wc.tlt), cycles_of(bd)
            pairs.remove(warm_pair)
            pairs.append(warm_pair)  # last: it holds the incumbent, the others only cut it
    outcomes: list[ComboOutcome] = []
    warm_values: list[int] = []
    for k, (p, q) in enumerate(pairs):
        left = time_limit - (time.perf_counter() - t0)
        share = max(0.05, left / (len(pairs) - k))
        tm = TsoTileModel(geom, nmp, p, q, mdl, space)
        hinted, cut = False, None
        if warm_pair is not None and k == 0:
            # the warm start must be a solution of its own pair's model, at evaluate's cycles
            check = tm if (p, q) == warm_pair else TsoTileModel(geom, nmp, *warm_pair, mdl, space)
            assert warm_tiles is not None and warm_cycles is not None
            full = check.complete(warm_tiles)
            if full is None or full[1] != warm_cycles:
                got = None if full is None else full[1]
                raise RuntimeError(
                    f"{layer.name} {warm_pair[0]}/{warm_pair[1]} {warm_tiles}: model gives "
                    f"{got} cycles, evaluate {warm_cycles}"
                )
            warm_values = full[0]
            best, best_choice = warm_cycles, (*warm_pair, warm_tiles)
        if (p, q) == warm_pair and best == warm_cycles and (warm_mode == "hint" or not use_cutoff):
            tm.hint(warm_values)
            hinted = True
        elif use_cutoff and best is not None:
            cut = best - 1
            tm.cutoff(cut)
        t1 = time.perf_counter()
        status, solver, _ = run_cpsat(tm.md, time_limit=share, threads=threads, seed=seed)
        found = status in (Status.OPTIMAL, Status.FEASIBLE)
        obj = int(round(solver.objective_value)) if found else None
        tiles = tm.decode(solver) if found else None
        bound: float | None
        if status == Status.OPTIMAL:
            bound = obj
        elif status == Status.INFEASIBLE:
            bound = None if cut is None else cut + 1
        else:
            sb = solver.best_objective_bound
            bound = math.ceil(sb - 1e-6) if math.isfinite(sb) else 0.0
            if cut is not None:
                bound = min(bound, cut + 1)
        outcomes.append(
            ComboOutcome(
                p,
                q,
                status,
                obj,
                bound,
                cut,
                time.perf_counter() - t1,
                tiles,
                hinted,
                len(tm.md.proto.variables),
                len(tm.md.proto.constraints),
            )
        )
        if obj is not None and tiles is not None and (best is None or obj < best):
            best, best_choice = obj, (p, q, tiles)
    bounds = [o.bound for o in outcomes if o.bound is not None]
    lower = min(bounds) if bounds else math.inf
    if best is not None:
        lower = min(lower, best)
    errors = [o for o in outcomes if o.status == Status.ERROR]
    if errors:
        status = Status.ERROR
    elif best is None:
        proven = all(o.status == Status.INFEASIBLE and o.cutoff is None for o in outcomes)
        status = Status.INFEASIBLE if proven else Status.TIME_LIMIT_NO_SOLUTION
    else:
        proven = all(o.status in (Status.OPTIMAL, Status.INFEASIBLE) for o in outcomes)
        status = Status.OPTIMAL if proven else Status.FEASIBLE
    bd_best: Breakdown | None = None
    if best_choice is not None:
        bd_best = evaluate_geom(geom, nmp, best_choice[0], best_choice[1], *best_choice[2], mdl)
    us = nmp.us
    result = Result(
        status=status,
        method="tso-exact",
        backend="cpsat",
        objective=None if best is None else us(best),
        bound=None if not math.isfinite(lower) else us(lower),
        runtime_s=time.perf_counter() - t0,
        threads=threads,
        seed=seed,
        time_limit=time_limit,
        stats={
            "layer": layer.name,
            "model": mdl,
            "space": space,
            "objective_cycles": best,
            "bound_cycles": lower if math.isfinite(lower) else None,
            "warm_cycles": warm_cycles,
            "choice": None if best_choice is None else [*best_choice[:2], *best_choice[2]],
            "pairs": [
                {
                    "tle": o.tle,
                    "tlt": o.tlt,
                    "status": o.status.value,
                    "objective_cycles": o.objective,
                    "bound_cycles": o.bound,
                    "cutoff": o.cutoff,
                    "runtime": o.runtime,
                    "vars": o.num_vars,
                    "constraints": o.num_constraints,
                }
                for o in outcomes
            ],
        },
        message="; ".join(f"{o.tle}/{o.tlt}: CP-SAT error" for o in errors),
    )
    return ExactTiling(
        result=result,
        tle=None if best_choice is None else best_choice[0],
        tlt=None if best_choice is None else best_choice[1],
        tiles=None if best_choice is None else best_choice[2],
        objective_cycles=best,
        bound_cycles=lower if math.isfinite(lower) else None,
        breakdown=bd_best,
        combos=outcomes,
    )


def solve_layer_exact(
    layer: Layer,
    in_shape: Shape,
    arch: Arch,
    model: str = "burst",
    warm: LayerChoice | bool | None = True,
    time_limit: float = 10.0,
    threads: int = 2,
    combos: list[tuple[str, str]] | None = None,
) -> tuple[float, str]:
    """``(time in µs, status)`` of :func:`solve_layer_cpsat` (``npusched tile --exact``): the
    best tiling's estimate under ``model`` (``inf`` when none was found; for ``"noburst"`` the
    volume-model time, as ``LayerChoice.objective_us``) and ``"optimal"``, ``"feasible"``,
    ``"infeasible"``, ``"time_limit_no_solution"`` or ``"error"``. ``combos`` restricts the
    (slicing, schedule) pairs (e.g. to honour a fixed slicing); default all 9."""
    ex = solve_layer_cpsat(layer, in_shape, arch, model, warm, time_limit, threads, combos=combos)
    r = ex.result
    return (math.inf if r.objective is None else r.objective), r.status.value


# ---- (b) the MIP over the enumerated candidates -----------------------------------------------

#: Above this many candidates :func:`solve_layer_mip` (``form="auto"``) passes the choice as an
#: LP. HiGHS 1.14's MIP presolve is quadratic in the binaries of this one-row model (measured,
#: random costs: 8 000 binaries 1.3 s, 72 628 (ResNet-50 layer4.2.conv3) no answer in 60 s, and
#: it overruns its time limit there), while its LP solves 32 000 columns in 0.06 s.
MIP_MAX_BINARIES = 5000


class CandidateChoiceMIP:
    """Pick one enumerated candidate: one binary per entry of a
    :class:`~npusched.heuristics.tiling.search.TileSpace`, costs in integer cycles.

    Exact only relative to the enumerated space (whatever :func:`layer_space` leaves out is not
    seen). The constraint matrix is one row of ones, so every vertex of the LP relaxation is a
    unit vector: with ``integral=False`` the same model is an LP whose basic optimal solution
    (HiGHS's simplex returns one) is an optimal binary choice.
    """

    def __init__(self, space: TileSpace, freq_hz: float, integral: bool = True) -> None:
        self.space = space
        self.lm = LinearModel(f"tso_candidates_{len(space)}")
        mhz = freq_hz / 1e6
        cyc = np.rint(space.time_us * mhz)
        if not np.allclose(cyc, space.time_us * mhz, rtol=0, atol=1e-6 * np.maximum(1, cyc)):
            raise ValueError("candidate times are not whole cycles")
        self.cycles = cyc.astype(np.int64)
        n = len(space)
        self.x = np.arange(n, dtype=np.int64)
        self.lm.lb.extend([0.0] * n)
        self.lm.ub.extend([1.0] * n)
        self.lm.integral.extend([integral] * n)
        self.lm.var_names.extend(f"x[{k}]" for k in range(n))
        self._choose_one()
        self.lm.cost = {int(k): float(c) for k, c in zip(self.x, self.cycles, strict=True)}

    def _choose_one(self) -> None:
        """Exactly one candidate.

        .. math:: \\sum_k x_k = 1,\\qquad x_k \\in \\{0, 1\\}

        Objective :math:`\\min \\sum_k t_k x_k` with :math:`t_k` the candidate's cycles.
        """
        self.lm.family("choose-one")
        self.lm.add_row(self.x, np.ones(self.x.size), 1, 1)

    def decode(self, x: np.ndarray) -> int | None:
        """Index of the chosen candidate, or ``None`` when ``x`` is not a unit vector."""
        k = int(np.argmax(x))
        if abs(x[k] - 1) > 1e-9 or np.abs(np.delete(x, k)).max(initial=0.0) > 1e-9:
            return None
        return k


def solve_layer_mip(
    layer: Layer,
    in_shape: Shape,
    arch: Arch,
    model: str = "burst",
    time_limit: float | None = 60.0,
    threads: int = 1,
    seed: int = 0,
    backend: str = "highs",
    form: str = "auto",
) -> ExactTiling:
    """Solve :class:`CandidateChoiceMIP` on the layer's :func:`layer_space` with
    :func:`npusched.solvers.dispatch.solve_linear` (HiGHS by default); status and bound as returned.

    ``form``: ``"mip"`` (binaries), ``"lp"`` (the same model with :math:`0 \\le x \\le 1`
    continuous, integral at a basic optimum, checked), or ``"auto"``: ``"mip"`` up to
    :data:`MIP_MAX_BINARIES` candidates. ``result.stats["form"]`` says which ran; a non-unit LP
    answer is reported as ``error``.
    """
    from npusched.solvers.dispatch import solve_linear

    if form not in ("auto", "mip", "lp"):
        raise ValueError(f"unknown form {form!r}; choose from auto, mip, lp")
    t0 = time.perf_counter()
    mdl = "burst" if check_model(model) == "burst" else "noburst"
    nmp = nmp_params(arch)
    space = layer_space(layer, in_shape, arch, mdl)
    if form == "auto":
        form = "mip" if len(space) <= MIP_MAX_BINARIES else "lp"
    if len(space) == 0:
        res = Result(Status.INFEASIBLE, "tso-candidates", backend, runtime_s=time.perf_counter() - t0)
        res.stats = {"layer": layer.name, "model": mdl, "candidates": 0, "form": form}
        return ExactTiling(result=res)
    mip = CandidateChoiceMIP(space, nmp.freq_hz, integral=form == "mip")
    raw = solve_linear(mip.lm, backend, time_limit=time_limit, threads=threads, seed=seed)
    k = None if raw.x is None else mip.decode(raw.x)
    status, message = raw.status, raw.message
    if raw.x is not None and k is None:
        status, message = Status.ERROR, "the solver's answer is not a single candidate"
    bound = raw.bound
    if form == "lp":
        # HiGHS has no MIP dual bound for an LP (the backend reads mip_dual_bound, which is 0
        # there); an optimal LP's dual objective equals its primal objective
        bound = raw.objective if status == Status.OPTIMAL else None
    us = nmp.us
    ex = ExactTiling(
        result=Result(
            status=status,
            method="tso-candidates",
            backend=backend,
            objective=None if raw.objective is None else us(raw.objective),
            bound=None if bound is None else us(bound),
            runtime_s=time.perf_counter() - t0,
            trace=raw.trace,
            threads=threads,
            seed=seed,
            time_limit=time_limit,
            stats={
                "layer": layer.name,
                "model": mdl,
                "candidates": len(space),
                "form": form,
                "objective_cycles": raw.objective,
                "bound_cycles": bound,
            },
            message=message,
        )
    )
    if k is not None:
        tle, tlt = TLE_SLICINGS[int(space.tle[k])], TLT_SCHEDULES[int(space.tlt[k])]
        tiles = (int(space.T_R[k]), int(space.T_C[k]), int(space.T_N[k]), int(space.T_M[k]))
        ex.tle, ex.tlt, ex.tiles = tle, tlt, tiles
        ex.objective_cycles = int(mip.cycles[k])
        ex.bound_cycles = bound
        ex.breakdown = evaluate_geom(conv_geometry(layer, in_shape), nmp, tle, tlt, *tiles, mdl)
    return ex


__all__ = [
    "MIP_MAX_BINARIES",
    "SPACES",
    "CandidateChoiceMIP",
    "ComboOutcome",
    "ExactTiling",
    "TsoTileModel",
    "bandwidth_fraction",
    "cycles_of",
    "solve_layer_cpsat",
    "solve_layer_exact",
    "solve_layer_mip",
]
