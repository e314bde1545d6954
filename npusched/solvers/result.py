"""One result type for every method and backend."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

from npusched.problem.flexer.layer import FlexerSchedule
from npusched.problem.flexer.residency import ResidencyPlan
from npusched.problem.placement import Placement
from npusched.problem.scheduling.routed import RoutedSchedule
from npusched.problem.scheduling.schedule import Schedule
from npusched.problem.tiling.layer import TileChoice

Solution = (
    Schedule | RoutedSchedule | Placement | TileChoice | FlexerSchedule | ResidencyPlan | list[int]
)
"""What a method decides: a schedule (plain or routed), a placement, one layer's TSO tile choice, a
Flexer layer schedule, an offline residency plan, or the tensor ids a spill selection evicts."""


class Status(enum.StrEnum):
    """What the solver returned (never assumed)."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIME_LIMIT_NO_SOLUTION = "time_limit_no_solution"
    ERROR = "error"


@dataclass(frozen=True)
class TracePoint:
    """Incumbent and best bound at ``time`` seconds after the solver started."""

    time: float
    incumbent: float | None
    bound: float | None


@dataclass
class Result:
    """Outcome of :func:`npusched.solve`.

    ``objective`` is the value the solver reported for its model; ``solution.makespan(instance)``
    recomputes it independently. ``bound`` is the proven lower bound the solver returned (for the
    list heuristic, the trivial critical-path/load bound), or ``None``.
    """

    status: Status
    method: str
    backend: str
    objective: float | None = None
    bound: float | None = None
    runtime_s: float = 0.0
    solution: Solution | None = None
    trace: list[TracePoint] = field(default_factory=list)
    threads: int = 1
    seed: int = 0
    time_limit: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    message: str = ""

    @property
    def gap(self) -> float | None:
        """Relative gap ``(objective − bound) / objective``; 0 when both are 0."""
        if self.objective is None or self.bound is None:
            return None
        if self.objective == 0:
            return 0.0 if self.bound == 0 else math.inf
        return max(0.0, (self.objective - self.bound) / abs(self.objective))

    def summary(self) -> str:
        """One line for the terminal: method/backend, status, objective, bound, gap (per cent) and
        runtime, e.g. ``cpsat/cpsat: optimal objective=94 bound=94 gap=0.00% time=0.07s``
        (``-`` for a missing value; integral values printed without a decimal point)."""

        def fmt(v: float | None) -> str:
            if v is None:
                return "-"
            return str(int(v)) if float(v).is_integer() else f"{v:.6g}"

        gap = "-" if self.gap is None else f"{100 * self.gap:.2f}%"
        return (
            f"{self.method}/{self.backend}: {self.status.value} objective={fmt(self.objective)} "
            f"bound={fmt(self.bound)} gap={gap} time={self.runtime_s:.2f}s"
        )
