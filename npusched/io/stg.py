"""Kasahara Standard Task Graph (``.stg``) reader.

Format: the number of tasks ``n``; then ``n + 2`` lines ``id time #preds preds...`` where task ``0``
and task ``n + 1`` are zero-time dummies (entry and exit); then ``#`` comment lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from npusched.common.errors import InputError
from npusched.common.jsonio import read_text
from npusched.common.limits import MAX_VALUE
from npusched.problem import Accelerator, Reference, SchedulingInstance, UopGraph


def _find_reference(path: Path, m: int) -> Reference:
    """Look for ``optima.json`` in the file's folder and its parents, keyed by ``dir/stem``."""
    for parent in path.resolve().parents:
        table = parent / "optima.json"
        if table.is_file():
            key = str(path.resolve().relative_to(parent).with_suffix(""))
            entry = json.loads(table.read_text()).get(key, {}).get(f"m{m}")
            if not entry:
                return Reference()
            src = f"{table} [{key}][m{m}]"
            if entry.get("status") == "optimal":
                return Reference(optimum=int(entry["value"]), source=src)
            return Reference(
                lower_bound=entry.get("lower_bound"),
                upper_bound=entry.get("upper_bound"),
                source=src,
            )
    return Reference()


def read_stg(
    path: str | Path, cores: int, reference: bool = True, mesh: tuple[int, int] | None = None
) -> SchedulingInstance:
    """Read an STG file as an instance on ``cores`` identical cores.

    The two dummy tasks are dropped with their edges; task ids ``1..n`` are kept as μop ids. With
    ``reference=True`` the published optimum (or open bounds) is taken from an ``optima.json`` found
    beside the file or in a parent folder. With ``mesh=(rows, cols)`` the cores sit on that mesh
    (``rows · cols`` must equal ``cores``).
    """
    path = Path(path)
    lines = [ln.split() for ln in read_text(path).splitlines()]
    rows = [ln for ln in lines if ln and not ln[0].startswith("#")]
    try:
        n = int(rows[0][0])
    except (IndexError, ValueError):
        raise InputError(path, "line 1", "expected the number of tasks") from None
    if n < 1:
        raise InputError(path, "line 1", f"the number of tasks must be at least 1, got {n}")
    if len(rows) < n + 3:
        raise InputError(path, "tasks", f"expected {n + 2} task lines, found {len(rows) - 1}")
    latency = np.zeros(n, dtype=np.int64)
    src: list[int] = []
    dst: list[int] = []
    for k, row in enumerate(rows[1 : n + 3]):
        try:
            tid, time_, npred = int(row[0]), int(row[1]), int(row[2])
            preds = [int(p) for p in row[3 : 3 + npred]]
        except (IndexError, ValueError):
            raise InputError(
                path, f"task line {k + 1}", "expected 'id time #preds preds...'"
            ) from None
        if tid != k or len(preds) != npred:
            raise InputError(path, f"task {tid}", f"expected task {k} with {npred} predecessors")
        if not 0 <= time_ <= MAX_VALUE:
            raise InputError(path, f"task {tid}", f"time {time_} is outside 0..2^40")
        if tid in (0, n + 1):
            continue
        latency[tid - 1] = time_
        for p in preds:
            if not 0 <= p <= n:
                raise InputError(path, f"task {tid}", f"predecessor {p} out of range")
            if p != 0:
                src.append(p - 1)
                dst.append(tid - 1)
    try:
        graph = UopGraph(
            latency,
            np.array(src, np.int64),
            np.array(dst, np.int64),
            np.zeros(len(src), np.int64),
            tuple(range(1, n + 1)),
        )
    except ValueError as err:  # a cycle or a self-loop among the predecessor lists
        raise InputError(path, "predecessors", str(err)) from None
    ref = _find_reference(path, cores) if reference else Reference()
    if mesh is not None and mesh[0] * mesh[1] != cores:
        raise ValueError(f"a {mesh[0]}x{mesh[1]} mesh has {mesh[0] * mesh[1]} cores, not {cores}")
    acc = Accelerator.identical(cores) if mesh is None else Accelerator.mesh_grid(*mesh)
    return SchedulingInstance(
        graph,
        acc,
        None,
        f"{path.stem}_m{cores}",
        ref,
        {"format": "stg", "file": path.name, "cores": cores},
    )
