"""Run many (instance × method) jobs and tabulate them."""

from npusched.bench.compare import Job, compare, run_job

__all__ = ["Job", "compare", "run_job"]
