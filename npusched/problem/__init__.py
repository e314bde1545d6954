"""The nouns of npusched: accelerators, μop graphs, instances, schedules."""

from npusched.problem.scheduling.accelerator import Accelerator, Core
from npusched.problem.scheduling.dag import UopGraph
from npusched.problem.scheduling.instance import Reference, SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule, assign_cores

__all__ = [
    "Accelerator",
    "Core",
    "Reference",
    "SchedulingInstance",
    "Schedule",
    "UopGraph",
    "assign_cores",
]
