"""Exact CP-SAT building blocks for TSO's integer arithmetic (:class:`CpBuilder`): every
``ceil``, ``floor``, product, ``min`` and case split of :mod:`npusched.problem.tiling.equations`
as an exact CP-SAT constraint, with the bounds of every intermediate tracked at build time.

``ceil`` is an ``add_division_equality`` on a shifted numerator
(:math:`\\lceil a/b \\rceil = \\lfloor (a + b - 1)/b \\rfloor`; CP-SAT divides positive values by
truncation, i.e. floor), a product an ``add_multiplication_equality``, a ``min`` an
``add_min_equality``, a case split a Boolean reified on the value that decides it. Constants are
folded: a block given only ints returns an int.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

from npusched.problem.tiling.equations import cdiv

#: A value of the model: a CP-SAT variable or a constant folded at build time.
Val = cp_model.IntVar | int
#: A Boolean of the model, or a constant decided by the bounds.
Flag = cp_model.IntVar | bool

#: Largest bound a variable may take (CP-SAT works on 64-bit integers).
LIMIT = 2**62


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


class CpBuilder:
    """A ``CpModel`` (``model``) with exact integer building blocks whose results carry
    their bounds (interval arithmetic on non-negative integers), so every domain is finite."""

    def __init__(self) -> None:
        self.model = cp_model.CpModel()
        self._bd: dict[int, tuple[int, int]] = {}
        self._cache: dict[tuple[Any, ...], cp_model.IntVar] = {}

    def _int(self, lo: int, hi: int, name: str) -> cp_model.IntVar:
        if lo > hi:
            raise ValueError(f"{name}: empty domain [{lo}, {hi}]")
        if hi >= LIMIT:
            raise ValueError(f"{name}: bound {hi} too large for CP-SAT")
        v = self.model.new_int_var(lo, hi, name)
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
        self.model.add(v == sum(c * x for c, x in terms) + const)
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
            self.model.add_multiplication_equality(v, [a, b])
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
            return cdiv(coef * x, b)
        if b == 1:
            return self._mul(name, coef, x)
        lo, hi = self._lohi(x)
        v = self._int(cdiv(coef * lo, b), cdiv(coef * hi, b), name)
        self.model.add_division_equality(v, coef * x + (b - 1), b)
        return v

    def _ceil_of(self, name: str, a: int, x: Val) -> Val:
        """:math:`\\lceil a / x \\rceil = \\lfloor (x + a - 1) / x \\rfloor` for a variable
        ``x ≥ 1``."""
        if isinstance(x, int):
            return cdiv(a, x)
        lo, hi = self._lohi(x)
        assert lo >= 1
        v = self._int(cdiv(a, hi), cdiv(a, lo), name)
        self.model.add_division_equality(v, x + (a - 1), x)
        return v

    def _floor_of(self, name: str, a: int, x: Val, coef: int = 1) -> Val:
        """:math:`\\lfloor a / (c x) \\rfloor` for a variable ``x ≥ 1``."""
        if isinstance(x, int):
            return a // (coef * x)
        lo, hi = self._lohi(x)
        v = self._int(a // (coef * hi), a // (coef * lo), name)
        self.model.add_division_equality(v, a, coef * x)
        return v

    def _min(self, name: str, items: list[Val], lo: int | None = None) -> Val:
        """``min(items)`` (``add_min_equality``); ``lo`` restricts the result's domain."""
        if all(isinstance(x, int) for x in items):
            m = min(self._lohi(x)[0] for x in items)
            if lo is not None and m < lo:
                self.model.add_bool_or([])  # infeasible: no value can be chosen
            return m
        bounds = [self._lohi(x) for x in items]
        mlo, mhi = min(b[0] for b in bounds), min(b[1] for b in bounds)
        if lo is not None and lo > mhi:
            self.model.add_bool_or([])  # infeasible: the minimum never reaches lo
            return lo
        v = self._int(max(mlo, lo if lo is not None else mlo), mhi, name)
        self.model.add_min_equality(v, items)
        return v

    def _at_least(self, name: str, x: Val, t: int) -> Flag:
        """Boolean :math:`[x \\ge t]`, reified both ways, or a constant decided by the bounds."""
        lo, hi = self._lohi(x)
        if lo >= t:
            return True
        if hi < t:
            return False
        b = self.model.new_bool_var(name)
        self.model.add(x >= t).only_enforce_if(b)
        self.model.add(x <= t - 1).only_enforce_if(~b)
        return b

    def _and(self, name: str, a: Flag, b: Flag) -> Flag:
        if isinstance(a, bool) or isinstance(b, bool):
            if a is False or b is False:
                return False
            return b if a is True else a
        v = self.model.new_bool_var(name)
        self.model.add_implication(v, a)
        self.model.add_implication(v, b)
        self.model.add_bool_or([~a, ~b, v])
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
        self.model.add(v == t).only_enforce_if(flag)
        self.model.add(v == f).only_enforce_if(~flag)
        return v

    # ---- variables ----------------------------------------------------------------------------
