"""The nouns of npusched: accelerators, μop graphs, instances, schedules."""

from npusched.problem.accelerator import Accelerator, Core
from npusched.problem.dag import UopGraph
from npusched.problem.instance import Reference, SchedulingInstance
from npusched.problem.schedule import Schedule, assign_cores

__all__ = [
    "Accelerator",
    "Core",
    "Reference",
    "SchedulingInstance",
    "Schedule",
    "UopGraph",
    "assign_cores",
]
