"""Heuristics: baselines and warm starts for the exact models."""

from npusched.heuristics.scheduling.list_scheduling import PRIORITIES, graham_bound, list_schedule
from npusched.problem.scheduling.windows import Windows, asap_alap

__all__ = ["PRIORITIES", "Windows", "asap_alap", "graham_bound", "list_schedule"]
