"""Plots rendered to PNG: Gantt chart, memory trace, anytime curve, mesh traffic heat map,
roofline and time breakdown of tile choices, Pareto front of allocations, per-layer costs and
where a routed schedule's time goes."""

from npusched.plot.anytime import anytime
from npusched.plot.costmodel import layer_costs, machine_time
from npusched.plot.gantt import gantt
from npusched.plot.memory import memory_trace
from npusched.plot.mesh import link_traffic, mesh_heatmap
from npusched.plot.pareto import pareto_front
from npusched.plot.tiling import roofline, time_breakdown

__all__ = [
    "anytime",
    "layer_costs",
    "machine_time",
    "gantt",
    "link_traffic",
    "memory_trace",
    "mesh_heatmap",
    "pareto_front",
    "roofline",
    "time_breakdown",
]
