"""Integer transfer lengths for the CP-SAT models: a copy's cycles at a float bandwidth, stated
exactly as a fraction or a table (:meth:`~npusched.problem.scheduling.routed.Topology.cycles`'
rule, without the hops), for
:meth:`~npusched.formulations.scheduling.routed.RoutedModel._length`."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np


def carried_cycles(bw: float, v: Any) -> Any:
    """``⌈v / bw⌉`` cycles for data ``v`` (an array), by
    :meth:`~npusched.problem.scheduling.routed.Topology.cycles`' rule (without hops)."""
    v = np.asarray(v, dtype=np.int64)
    return np.where(v > 0, np.ceil(v / bw - 1e-9), 0).astype(np.int64)


def largest_carried(bw: float, ks: Any) -> Any:
    """The largest data that ``k`` cycles carry (:func:`carried_cycles` ``≤ k``), per ``k``."""
    ks = np.asarray(ks, dtype=np.int64)
    v = np.floor(ks * bw).astype(np.int64) + 2
    for _ in range(4):  # from a little above, down to the exact threshold
        v = np.where(carried_cycles(bw, v) > ks, v - 1, v)
    return v


def exact_rate(bw: float, most: int) -> Fraction | None:
    """A fraction ``p / q`` with ``⌈v q / p⌉ = ⌈v / bw⌉`` (:func:`carried_cycles`) for every
    integer ``0 ≤ v ≤ most``, small enough for the solver (``p, q ≤ 2^31``), or ``None``. Both
    sides are step functions of ``v``, so they agree where their thresholds do: the largest
    data each count of cycles carries. The float's nearest simple fraction comes first
    (512/3 for ``512 / 3``)."""
    ks = np.arange(int(carried_cycles(bw, most)) + 1)
    want = np.minimum(largest_carried(bw, ks), most)
    for den in (2**10, 2**16, 2**20, 2**26, 2**31):
        f = Fraction(bw).limit_denominator(den)
        if f.numerator > 2**31 or f.numerator == 0:
            continue
        got = np.minimum(ks * f.numerator // f.denominator, most)
        if np.array_equal(got, want):
            return f
    return None
