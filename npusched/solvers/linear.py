"""A backend-neutral integer linear model: variables, rows grouped by constraint family, objective.

Formulations build one of these; the backends in :mod:`npusched.solvers` translate it (CSR arrays to
highspy, an ``LpProblem`` for PuLP, integer linear constraints for CP-SAT).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

INF = float("inf")


@dataclass
class LinearModel:
    """``min c·x + c0`` s.t. ``row_lb ≤ A x ≤ row_ub``, ``lb ≤ x ≤ ub``, ``x_j ∈ ℤ``
    where integral."""

    name: str
    lb: list[float] = field(default_factory=list)
    ub: list[float] = field(default_factory=list)
    integral: list[bool] = field(default_factory=list)
    var_names: list[str] = field(default_factory=list)
    cost: dict[int, float] = field(default_factory=dict)
    offset: float = 0.0
    rows: list[tuple[NDArray[np.int64], NDArray[np.float64], float, float]] = field(
        default_factory=list
    )
    families: dict[str, tuple[int, int]] = field(default_factory=dict)
    highs_options: dict[str, str | int | float | bool] = field(default_factory=dict)
    """HiGHS options the formulation asks for (other backends ignore them)."""
    _family: str = "unnamed"

    @property
    def num_vars(self) -> int:
        """Number of variables (columns) added so far."""
        return len(self.lb)

    @property
    def num_rows(self) -> int:
        """Number of rows (linear constraints) added so far, over all families."""
        return len(self.rows)

    def add_var(self, name: str, lb: float = 0.0, ub: float = INF, integral: bool = True) -> int:
        """Add a variable ``lb ≤ x_j ≤ ub`` (integral unless ``integral`` is false) with no cost.

        Parameters
        ----------
        name
            Its name, for the backends' models and :meth:`violations`.
        lb, ub
            Its bounds (``±INF``: unbounded).
        integral
            Whether it must take integer values.

        Returns
        -------
        int
            Its index ``j`` (columns are numbered in the order they are added).
        """
        self.lb.append(lb)
        self.ub.append(ub)
        self.integral.append(integral)
        self.var_names.append(name)
        return self.num_vars - 1

    def family(self, name: str) -> LinearModel:
        """Rows added after this call belong to constraint family ``name`` (for statistics)."""
        self._family = name
        first = self.families.get(name, (self.num_rows, self.num_rows))[0]
        self.families[name] = (first, self.num_rows)
        return self

    def add_row(self, idx: ArrayLike, coef: ArrayLike, lb: float = -INF, ub: float = INF) -> None:
        """Add ``lb ≤ Σ coef·x[idx] ≤ ub``."""
        i = np.asarray(idx, dtype=np.int64)
        c = np.asarray(coef, dtype=np.float64)
        if i.shape != c.shape:
            raise ValueError("row index and coefficient arrays differ in length")
        if self._family not in self.families:
            self.family(self._family)
        self.rows.append((i, c, lb, ub))
        first, _ = self.families[self._family]
        self.families[self._family] = (first, self.num_rows)

    def row_counts(self) -> dict[str, int]:
        """Number of rows of each constraint family."""
        return {name: end - start for name, (start, end) in self.families.items()}

    def csr(self) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
        """Row-wise sparse matrix ``(start, index, value)``."""
        lengths = np.fromiter((r[0].size for r in self.rows), dtype=np.int64, count=self.num_rows)
        start = np.zeros(self.num_rows + 1, dtype=np.int64)
        np.cumsum(lengths, out=start[1:])
        if not self.rows:
            return start, np.zeros(0, np.int64), np.zeros(0)
        index = np.concatenate([r[0] for r in self.rows])
        value = np.concatenate([r[1] for r in self.rows])
        return start, index, value

    def row_bounds(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The rows' bounds as two arrays of length :attr:`num_rows`: ``(row_lb, row_ub)``, ``±inf``
        where a row is one-sided."""
        return (
            np.fromiter((r[2] for r in self.rows), float, self.num_rows),
            np.fromiter((r[3] for r in self.rows), float, self.num_rows),
        )

    def satisfies(self, x: ArrayLike, tol: float = 1e-9, rel: float = 0.0) -> bool:
        """``x`` is within every variable's bounds, integral where required, and every row's
        (each within ``tol`` plus ``rel`` times the row's largest finite bound)."""
        v = np.asarray(x, dtype=float)
        if v.shape != (self.num_vars,):
            return False
        if (v < np.asarray(self.lb) - tol).any() or (v > np.asarray(self.ub) + tol).any():
            return False
        integral = np.asarray(self.integral, dtype=bool)
        if (np.abs(v[integral] - np.round(v[integral])) > tol).any():
            return False
        lo, hi = self.row_bounds()
        start, index, value = self.csr()
        terms = np.concatenate([[0.0], np.cumsum(value * v[index])])
        activity = terms[start[1:]] - terms[start[:-1]]
        scale = np.maximum(
            np.where(np.isfinite(lo), np.abs(lo), 0), np.where(np.isfinite(hi), np.abs(hi), 0)
        )
        slack = tol + rel * scale
        return bool(((activity >= lo - slack) & (activity <= hi + slack)).all())

    def cost_vector(self) -> NDArray[np.float64]:
        """The objective's coefficients ``c`` as a dense array of length :attr:`num_vars` (zero for
        the variables not in :attr:`cost`; the constant :attr:`offset` not included)."""
        c = np.zeros(self.num_vars)
        for j, v in self.cost.items():
            c[j] = v
        return c

    def objective_value(self, x: ArrayLike) -> float:
        """The objective ``c·x + c0`` at ``x`` (one value per variable), offset included."""
        return float(self.cost_vector() @ np.asarray(x, dtype=float) + self.offset)

    def violations(self, x: ArrayLike, tol: float = 1e-6) -> list[str]:
        """Rows and bounds that ``x`` violates (to check warm starts and solver output)."""
        xv = np.asarray(x, dtype=float)
        out = []
        lo, hi = np.asarray(self.lb), np.asarray(self.ub)
        for j in np.flatnonzero((xv < lo - tol) | (xv > hi + tol)):
            out.append(f"{self.var_names[j]} = {xv[j]} outside [{lo[j]}, {hi[j]}]")
        for r, (i, c, rl, ru) in enumerate(self.rows):
            a = float(c @ xv[i])
            if a < rl - tol or a > ru + tol:
                fam = next((f for f, (s, e) in self.families.items() if s <= r < e), "?")
                out.append(f"row {r} ({fam}): {a} outside [{rl}, {ru}]")
        return out
