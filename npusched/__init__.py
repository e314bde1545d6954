"""npusched: exact and heuristic scheduling of tiled DNN workloads on multi-core NPUs."""

from npusched.heuristics import asap_alap, list_schedule
from npusched.io import InputError, load_instance, read_instance, read_stg, write_instance
from npusched.methods import METHODS, solve
from npusched.problem import Accelerator, Core, Reference, Schedule, SchedulingInstance, UopGraph
from npusched.solvers import Result, Status, TracePoint
from npusched.verify import VerificationError, verify

__version__ = "0.1.0"

__all__ = [
    "METHODS",
    "Accelerator",
    "Core",
    "InputError",
    "Reference",
    "Result",
    "Schedule",
    "SchedulingInstance",
    "Status",
    "TracePoint",
    "UopGraph",
    "VerificationError",
    "asap_alap",
    "list_schedule",
    "load_instance",
    "read_instance",
    "read_stg",
    "solve",
    "verify",
    "write_instance",
]
