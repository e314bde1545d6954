"""Plots rendered to PNG: Gantt chart, anytime curve, mesh traffic heat map."""

from npusched.plot.anytime import anytime
from npusched.plot.gantt import gantt
from npusched.plot.mesh import link_traffic, mesh_heatmap

__all__ = ["anytime", "gantt", "link_traffic", "mesh_heatmap"]
