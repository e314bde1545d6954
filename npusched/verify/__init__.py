"""Independent feasibility checks. Every solution from every method goes through here."""

from typing import Any

from npusched.problem.placement import Placement, PlacementInstance
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.problem.scheduling.schedule import Schedule
from npusched.verify.placement import verify_placement
from npusched.verify.scheduling.routed import verify_routed
from npusched.verify.scheduling.schedule import VerificationError, VerifyReport, verify


def check(problem: Any, solution: object, claimed: float | None = None) -> VerifyReport:
    """Verify a scheduling or placement solution against its problem: a schedule (makespan), a
    schedule with routed transfers, or a placement (NoC cost). TSO tilings and Flexer schedules have
    their own reports (:func:`verify_tiling`, :func:`verify_flexer`)."""
    if isinstance(problem, RoutedInstance) or isinstance(solution, RoutedSchedule):
        if not isinstance(problem, RoutedInstance) or not isinstance(solution, RoutedSchedule):
            return VerifyReport(None, ["routed schedules and routed instances go together"])
        return verify_routed(problem, solution, claimed)
    if isinstance(solution, Placement):
        if not isinstance(problem, PlacementInstance):
            return VerifyReport(None, ["a placement was given for a scheduling instance"])
        bad = verify_placement(problem, solution, claimed)
        return VerifyReport(None, bad, None if bad else problem.cost(solution.loc))
    if not isinstance(solution, Schedule):
        kind = type(solution).__name__
        return VerifyReport(None, [f"check() verifies schedules and placements, not {kind}"])
    return verify(problem, solution, claimed)


__all__ = [
    "VerificationError",
    "VerifyReport",
    "check",
    "verify",
    "verify_placement",
    "verify_routed",
]
