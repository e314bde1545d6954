"""Solver backends (CP-SAT, HiGHS via highspy, CBC and HiGHS via PuLP) and the Result type."""

from npusched.solvers.result import Result, Status, TracePoint

__all__ = ["Result", "Status", "TracePoint"]
