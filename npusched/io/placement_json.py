"""Placement instance JSON (``npusched/placement/v1``) and the QAPLIB reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from npusched.common.errors import InputError
from npusched.common.jsonio import load_schema, read_text, validate, write_json
from npusched.common.limits import MAX_VALUE
from npusched.io.columnar import int_array
from npusched.problem.placement import PlacementInstance
from npusched.problem.scheduling.instance import Reference
from npusched.problem.scheduling.noc import Mesh

FORMAT = "npusched/placement/v1"
MAX_CELLS = 4096
"""Most mesh cells (and QAPLIB facilities) a placement instance may have: the models and the
distance matrix grow with the square of the cell count (4096 cells: a 128 MB matrix)."""


def placement_schema() -> dict[str, Any]:
    """The JSON Schema of a placement instance file (``placement.schema.json``, format
    :data:`FORMAT`), as a dictionary."""
    return load_schema("placement.schema.json")


def placement_to_dict(inst: PlacementInstance) -> dict[str, Any]:
    """The placement instance as a JSON document of format :data:`FORMAT`.

    The mesh's ``rows`` and ``cols``, the available ``cells`` (always written, all of them when the
    instance was built without a list), the ``flow`` matrix as lists, the name and ``source``, and
    ``reference`` with its empty fields left out (omitted when all are).

    Parameters
    ----------
    inst
        The instance.

    Returns
    -------
    dict
        What :func:`placement_from_dict` reads back.
    """
    out: dict[str, Any] = {
        "format": FORMAT,
        "name": inst.name,
        "source": inst.source,
        "mesh": {"rows": inst.mesh.rows, "cols": inst.mesh.cols},
        "cells": inst.cell_array.tolist(),
        "flow": inst.flow.tolist(),
    }
    ref = {k: v for k, v in vars(inst.reference).items() if v not in (None, "")}
    if ref:
        out["reference"] = ref
    return out


def placement_from_dict(data: Any, path: str = "<memory>") -> PlacementInstance:
    """Validate ``data`` against the placement schema, then build the instance.

    Parameters
    ----------
    data
        A parsed JSON document (format :data:`FORMAT`).
    path
        The file it came from, for error messages.

    Returns
    -------
    PlacementInstance
        The tasks, their flows and the mesh; ``cells`` when given, else every cell.

    Raises
    ------
    InputError
        The document does not match the schema, the mesh has more than :data:`MAX_CELLS` cells,
        ``flow`` is not a square matrix of integers in 0..2^40, has a non-zero diagonal, or its
        tasks do not fit on the cells (the message names the field).
    """
    if isinstance(data, dict) and isinstance(data.get("flow"), list) and data["flow"]:
        # the schema checks the rest; the n x n matrix is checked by numpy (one jsonschema pass
        # per entry took 13 s on 1 024 tasks)
        validate({**data, "flow": [[0]]}, "placement.schema.json", path)
    else:
        validate(data, "placement.schema.json", path)
    rows, cols = data["mesh"]["rows"], data["mesh"]["cols"]
    if rows * cols > MAX_CELLS:
        raise InputError(path, "mesh", f"{rows}x{cols} has more than {MAX_CELLS} cells")
    n = len(data["flow"])
    for t, row in enumerate(data["flow"]):
        if not isinstance(row, list):
            raise InputError(path, f"flow/{t}", f"must be a list of integers, got {row!r}")
        if len(row) != n:
            raise InputError(path, f"flow/{t}", f"has {len(row)} entries, expected {n}")
    flow = int_array(str(path), "flow", data["flow"], ndim=2)
    try:
        mesh = Mesh(data["mesh"]["rows"], data["mesh"]["cols"])
        return PlacementInstance(
            flow,
            mesh,
            np.array(data["cells"]) if "cells" in data else None,
            name=data["name"],
            reference=Reference(**data.get("reference", {})),
            source=data.get("source", {}),
        )
    except ValueError as err:
        field = next((f for f in ("cells", "flow") if f in str(err)), "(instance)")
        raise InputError(path, field, str(err)) from None


def write_placement(inst: PlacementInstance, path: str | Path) -> None:
    """Write ``inst`` as placement JSON (:func:`placement_to_dict`) to ``path`` (``.json``, or
    ``.json.gz`` compressed), replacing it only once fully written
    (:func:`~npusched.common.jsonio.write_json`)."""
    write_json(path, placement_to_dict(inst))


def _grid_of(dist: np.ndarray) -> tuple[int, int] | None:
    """``(rows, cols)`` such that ``dist`` is the Manhattan matrix of the first ``n`` cells of a
    row-major grid, or ``None``."""
    n = dist.shape[0]
    for cols in range(1, n + 1):
        rows = -(-n // cols)
        k = np.arange(n)
        rc = np.stack([k // cols, k % cols], axis=1)
        if (np.abs(rc[:, None] - rc[None]).sum(axis=2) == dist).all():
            return rows, cols
    return None


def read_qaplib(path: str | Path) -> PlacementInstance:
    """Read a QAPLIB ``.dat`` whose distance matrix is a grid's Manhattan matrix (Nugent family).

    The file holds ``n``, then two ``n × n`` matrices. Whichever of the two is the Manhattan matrix
    of the first ``n`` cells of a row-major grid gives the mesh; the other is the flow between
    facilities (tasks). The published optimum is taken from ``sln/<name>.sln`` or an
    ``optima.json`` in a parent folder when present.
    """
    path = Path(path)
    tokens = read_text(path).split()
    try:
        n = int(tokens[0])
    except (IndexError, ValueError):
        raise InputError(path, "(header)", "expected n and two n x n integer matrices") from None
    if not 1 <= n <= MAX_CELLS:
        raise InputError(path, "n", f"the number of facilities must be 1..{MAX_CELLS}, got {n}")
    try:
        numbers = [int(t) for t in tokens[1 : 1 + 2 * n * n]]
    except ValueError:
        raise InputError(path, "matrices", "expected two n x n integer matrices") from None
    if any(not 0 <= v <= MAX_VALUE for v in numbers):
        bad = next(v for v in numbers if not 0 <= v <= MAX_VALUE)
        raise InputError(path, "matrices", f"{bad} is outside 0..2^40")
    values = np.array(numbers, dtype=np.int64)
    if values.size != 2 * n * n:
        raise InputError(path, "matrices", f"expected {2 * n * n} numbers, found {values.size}")
    a, b = values[: n * n].reshape(n, n), values[n * n :].reshape(n, n)
    if (grid := _grid_of(a)) is not None:
        flow, which = b, "first"
    elif (grid := _grid_of(b)) is not None:
        flow, which = a, "second"
    else:
        raise InputError(path, "matrices", "neither matrix is a grid's Manhattan distance matrix")
    ref = Reference()
    sln = path.parent.parent / "sln" / f"{path.stem}.sln"
    if sln.is_file():
        ref = Reference(optimum=int(sln.read_text().split()[1]), source=str(sln))
    try:
        return PlacementInstance(
            flow,
            Mesh(*grid),
            np.arange(n),
            name=path.stem,
            reference=ref,
            source={"format": "qaplib", "file": path.name, "distance_matrix": which},
        )
    except ValueError as err:
        raise InputError(
            path, f"{'second' if which == 'first' else 'first'} matrix", str(err)
        ) from None
