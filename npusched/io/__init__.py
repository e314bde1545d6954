"""Readers and writers: instance JSON, Kasahara STG, solution JSON."""

from pathlib import Path

from npusched.io.errors import InputError
from npusched.io.instance_json import read_instance, schema, write_instance
from npusched.io.solution_json import read_solution, solution_to_dict, write_solution
from npusched.io.stg import read_stg
from npusched.problem import SchedulingInstance


def load_instance(path: str | Path, cores: int | None = None) -> SchedulingInstance:
    """Read an instance by suffix: ``.json`` (instance format) or ``.stg`` (needs ``cores``)."""
    path = Path(path)
    if path.suffix == ".stg":
        if cores is None:
            raise InputError(path, "--cores", "an .stg file needs the number of cores")
        return read_stg(path, cores)
    return read_instance(path)


__all__ = [
    "InputError",
    "load_instance",
    "read_instance",
    "read_solution",
    "read_stg",
    "schema",
    "solution_to_dict",
    "write_instance",
    "write_solution",
]
