"""Readers and writers: instance JSON, Kasahara STG, QAPLIB, solution JSON."""

from pathlib import Path

from npusched.common.errors import InputError
from npusched.common.jsonio import read_json
from npusched.io.instance_json import instance_from_dict, read_instance, schema, write_instance
from npusched.io.mspcd import read_mspcd
from npusched.io.placement_json import (
    placement_from_dict,
    placement_schema,
    read_qaplib,
    write_placement,
)
from npusched.io.solution_json import read_solution, solution_to_dict, write_solution
from npusched.io.stg import read_stg
from npusched.io.stream import read_stream, stream_from_dict
from npusched.problem import SchedulingInstance
from npusched.problem.placement import PlacementInstance
from npusched.problem.scheduling.routed import RoutedInstance


def load_instance(
    path: str | Path,
    cores: int | None = None,
    free_allocation: bool = False,
    memory: bool | None = None,
) -> SchedulingInstance | PlacementInstance | RoutedInstance:
    """Read an instance by its suffix and format: ``.stg`` (needs ``cores``), QAPLIB ``.dat``,
    MSPCD ``.td`` (``cores`` overrides the file name's processor count), or
    ``.json`` (``npusched/instance/v1``, ``npusched/placement/v1`` or a Stream export
    ``stream_instance/v1``, with Stream's allocation unless ``free_allocation``, and its cores'
    memories as capacities unless ``memory`` is ``False``; ``None``: the format's default, on
    for Stream exports)."""
    path = Path(path)
    if path.suffix == ".stg":
        if cores is None:
            raise InputError(path, "--cores", "an .stg file needs the number of cores")
        return read_stg(path, cores)
    if path.suffix == ".dat":
        return read_qaplib(path)
    if path.suffix == ".td":
        return read_mspcd(path, cores)
    data = read_json(path)
    if isinstance(data, dict) and data.get("format") == "npusched/placement/v1":
        return placement_from_dict(data, str(path))
    if isinstance(data, dict) and data.get("schema") == "stream_instance/v1":
        return stream_from_dict(data, str(path), free_allocation, memory is not False)
    for name, given in (("--free-allocation", free_allocation), ("--no-memory", memory is False)):
        if given:
            raise InputError(path, name, "applies to Stream exports only")
    return instance_from_dict(data, str(path))


__all__ = [
    "InputError",
    "load_instance",
    "placement_schema",
    "read_instance",
    "read_mspcd",
    "read_qaplib",
    "read_solution",
    "read_stg",
    "read_stream",
    "schema",
    "solution_to_dict",
    "write_instance",
    "write_placement",
    "write_solution",
]
