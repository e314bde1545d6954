"""Exact models, one module per decision; each constraint family is one method."""

from npusched.formulations.scheduling.intervals import IntervalModel
from npusched.formulations.scheduling.timeindexed import TimeIndexedModel
from npusched.solvers.linear import LinearModel

__all__ = ["IntervalModel", "LinearModel", "TimeIndexedModel"]
