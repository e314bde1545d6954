"""Exact models, one module per decision; each constraint family is one method."""

from npusched.formulations.cpsat_intervals import IntervalModel
from npusched.formulations.linear import LinearModel
from npusched.formulations.timeindexed import TimeIndexedModel

__all__ = ["IntervalModel", "LinearModel", "TimeIndexedModel"]
