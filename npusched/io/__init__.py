"""Readers and writers: instance JSON, Kasahara STG, QAPLIB, solution JSON."""

from pathlib import Path

from npusched.io.atomic import read_json
from npusched.io.errors import InputError
from npusched.io.instance_json import instance_from_dict, read_instance, schema, write_instance
from npusched.io.placement_json import (
    placement_from_dict,
    placement_schema,
    read_qaplib,
    write_placement,
)
from npusched.io.solution_json import read_solution, solution_to_dict, write_solution
from npusched.io.stg import read_stg
from npusched.problem import SchedulingInstance
from npusched.problem.placement import PlacementInstance


def load_instance(
    path: str | Path, cores: int | None = None
) -> SchedulingInstance | PlacementInstance:
    """Read an instance by its suffix and format: ``.stg`` (needs ``cores``), QAPLIB ``.dat``, or
    ``.json`` (``npusched/instance/v1`` or ``npusched/placement/v1``, by its ``format`` field)."""
    path = Path(path)
    if path.suffix == ".stg":
        if cores is None:
            raise InputError(path, "--cores", "an .stg file needs the number of cores")
        return read_stg(path, cores)
    if path.suffix == ".dat":
        return read_qaplib(path)
    data = read_json(path)
    if isinstance(data, dict) and data.get("format") == "npusched/placement/v1":
        return placement_from_dict(data, str(path))
    return instance_from_dict(data, str(path))


__all__ = [
    "InputError",
    "load_instance",
    "placement_schema",
    "read_instance",
    "read_qaplib",
    "read_solution",
    "read_stg",
    "schema",
    "solution_to_dict",
    "write_instance",
    "write_placement",
    "write_solution",
]
