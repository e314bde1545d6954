"""Plots rendered to PNG: Gantt chart and anytime curve."""

from npusched.plot.anytime import anytime
from npusched.plot.gantt import gantt

__all__ = ["anytime", "gantt"]
