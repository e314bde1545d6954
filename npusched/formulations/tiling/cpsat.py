"""CP-SAT model of TSO's tile choice for one convolution, one TLE slicing and one TLT schedule,
over integer tile sizes (Sousa et al., seed ``004_442fbcc29e97fffd.txt``, §IV).

:class:`TsoTileModel` encodes the objective of :func:`npusched.problem.tiling.evaluate` exactly
with the blocks of :class:`~npusched.formulations.tiling.builder.CpBuilder`; the constants it
needs (the slice of Algorithm 2, the WS filter capacity, the coefficients of eq. 3-5 and 8) are
computed by calling the equation functions of :mod:`npusched.problem.tiling.equations`, and the
capacity constraints are :func:`~npusched.problem.tiling.equations.fits` applied to the model's
expressions. The objective is in integer cycles, so the optimum equals ``evaluate``'s cycles of
the same tiles (``BW`` in bytes per cycle taken as the exact fraction :math:`p/q`,
:func:`~npusched.formulations.tiling.builder.bandwidth_fraction`).

Tile space: ``space="tso"`` (default) searches Algorithm 3's space, where :math:`T_M` is
``GetFilters`` of :math:`(T_R, T_C, T_N)`; ``space="free"`` lets :math:`T_M` take any value in
:math:`[1, F]` that fits (the domain ``evaluate`` accepts), a superset whose optimum can be lower.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from npusched.formulations.tiling.builder import LIMIT, CpBuilder, Val, bandwidth_fraction
from npusched.problem.tiling import (
    TLT_SCHEDULES,
    Breakdown,
    ConvGeom,
    NmpParams,
    check_model,
    tle_slicing,
)
from npusched.problem.tiling.equations import (
    coupled_channels,
    fits,
    mac_cycles,
    tile_mac_cycles,
    transfer_counts,
    w_filter_capacity,
)

SPACES = ("tso", "free")


def cycles_of(bd: Breakdown) -> int:
    """Integer cycles of a feasible :class:`~npusched.problem.tiling.Breakdown` (``total_us`` is
    this number divided by the clock in MHz): what the models minimise."""
    return int(bd.mac_cycles + bd.dram_cycles)


class TsoTileModel(CpBuilder):
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
    model
        The ``CpModel``; it minimises ``objective``.
    objective
        TSO's estimate in integer cycles (:meth:`_objective`), the linear expression that
        :meth:`cutoff` bounds.
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
        super().__init__()
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
        n_hi = coupled_channels(g, sl.F) if g.coupled else g.Nf
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
        g, nmp, sl, md = self.geom, self.nmp, self.sl, self.model
        F = sl.F
        if self.tlt == "IS":
            md.add(self.T_M == F)
        if g.coupled:
            md.add_division_equality(self.T_N, self.T_M + (g.mg - 1), g.mg)
            return
        if self.space == "free":
            return
        wcap: Val
        if self.tlt == "WS":
            wcap = w_filter_capacity(g, nmp, g.Nf)
        else:
            wcap = self._floor_of("wcap", nmp.mb1, self.T_N, g.Ky * g.Kx * nmp.e)
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
        els = (self.in_el, self.w_el, self.out_el)
        caps = (nmp.mb0, nmp.mb1, nmp.mb2)
        for el, cap, ok in zip(els, caps, fits(nmp, *(nmp.e * x for x in els)), strict=True):
            lo, hi = self._lohi(el)
            if nmp.e * lo > cap:
                self.model.add_bool_or([])  # not even the smallest tile fits
            elif not isinstance(el, int):
                self.model.add(ok)
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
        """Cycles of one tile on the MAC unit (eq. 7):
        :func:`~npusched.problem.tiling.equations.tile_mac_cycles` with the model's exact
        products and ceilings.

        .. math::

            Tile_{MAC} = T_N T_M \\left\\lceil T_R T_C K_y K_x / \\#MACs \\right\\rceil
            \\text{ on the NMP (any ``pe_unroll`` in general)}
        """
        self.tile_mac = tile_mac_cycles(
            self.geom,
            self.nmp,
            (self.T_R, self.T_C, self.T_N, self.T_M),
            mul=lambda *f: self._prod("Tile_MAC.prod", *f),
            ceil=lambda x, u: self._ceil_by(f"Tile_MAC.ceil/{u}", x, u),
        )

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
        # coefficients of eq. 3-5 and 8 per group: the equations at unit loop counts
        self.reps = mac_cycles(g, 1, 1, 1, 1)
        c_in, c_w, c_out = (a // self.reps for a in transfer_counts(g, sl, self.tlt, 1, 1, 1))
        ws = self.tlt == "WS"
        terms: list[tuple[int, Val]] = [(1, self.tile_mac), (c_in, self.t_in)]
        if not ws:
            terms.append((c_w, self.t_w))
        per_step = self._lin("per_step", terms)
        per_tile = self._lin(
            "per_out_tile",
            [(1, self._mul("n_n*per_step", self.n_n, per_step)), (c_out, self.t_out)],
        )
        inner: list[tuple[int, Val]] = [(1, self._mul("n_rcm*per_out_tile", self.nrcm, per_tile))]
        if ws:
            inner.append((c_w, self._mul("n_m*t_W", self.n_m, self.t_w)))
        self.inner = self._lin("T/r", inner)
        lo, hi = self._lohi(self.inner)
        if hi * self.reps >= LIMIT:
            raise ValueError(f"{g.name}: objective bound {hi * self.reps} too large")
        self.objective = self.reps * self.inner
        self.model.minimize(self.objective)

    # ---- hints and decoding -------------------------------------------------------------------

    def complete(
        self, tiles: tuple[int, int, int, int], time_limit: float = 10.0
    ) -> tuple[list[int], int] | None:
        """Every variable's value for the given ``(T_R, T_C, T_N, T_M)`` and the objective
        (cycles), by solving a copy with the tile sizes fixed (every other variable is a function
        of them); ``None`` when the tiles are infeasible in this model."""
        fixed = self.model.clone()
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
        self.model.clear_hints()
        h = self.model.proto.solution_hint
        h.vars.extend(range(len(values)))
        h.values.extend(int(v) for v in values)

    def cutoff(self, upper: int) -> None:
        """Only solutions of at most ``upper`` cycles."""
        self.model.add(self.objective <= upper)

    def decode(self, solver: cp_model.CpSolver) -> tuple[int, int, int, int]:
        """The tile sizes ``(T_R, T_C, T_N, T_M)`` of the solution in a ``CpSolver`` that solved
        ``model`` (optimal or feasible), as ints."""
        return (
            int(solver.value(self.T_R)),
            int(solver.value(self.T_C)),
            int(solver.value(self.T_N)),
            int(solver.value(self.T_M)),
        )
