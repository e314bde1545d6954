"""The columnar form of an instance's graph, for large μop graphs.

Row form (small instances)::

    "uops": [{"id": 1, "latency": 5}, ...], "edges": [{"src": 1, "dst": 2, "bytes": 8}, ...]

Columnar form (one array per field)::

    "uops": {"id": [1, ...], "latency": [5, ...], "latency_per_core": [[5, 7], ...]},
    "edges": {"src": [1, ...], "dst": [2, ...], "bytes": [8, ...]}

The schema checks only the columnar form's structure (which keys, that they hold arrays); the
arrays themselves are checked here with vectorized rules, in O(n log n) with numpy: equal
lengths, integer values (ids: all integers or all strings), non-negative latencies and bytes,
unique ids, edges between known ids. Each failure is an :class:`InputError` naming the file and
the array element (``edges.dst[17]``). Both forms load into identical instances.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from npusched.common.errors import InputError
from npusched.common.limits import MAX_VALUE
from npusched.problem import SchedulingInstance, UopGraph

COMPACT_ABOVE = 10_000
"""Writers choose the columnar form above this many μops (row form below, so small files stay
readable and unchanged)."""


def graph_columns(inst: SchedulingInstance) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(uops, edges)`` of ``inst`` in columnar form."""
    g = inst.graph
    ids = np.asarray(g.ids)  # numpy arrays: write_json streams them without Python lists
    uops: dict[str, Any] = {"id": ids, "latency": g.latency}
    if inst.latency_table is not None:
        uops["latency_per_core"] = inst.latency_table
    edges = {"src": ids[g.src], "dst": ids[g.dst], "bytes": g.bytes}
    return uops, edges


def _array(path: str, field: str, values: Any) -> np.ndarray:
    """``values`` as a numpy array; a ragged list (``[1, [2]]``) is an InputError."""
    try:
        return np.asarray(values)
    except ValueError:
        raise InputError(path, field, "must be a flat list (or rows of equal length)") from None


def int_array(path: str, field: str, values: Any, ndim: int = 1) -> np.ndarray:
    """``values`` as a non-negative int64 array of ``ndim`` dimensions, or an InputError."""
    arr = _array(path, field, values)
    if arr.size and arr.ndim == ndim and arr.dtype.kind in "OfU":  # name the first bad value
        flat = arr.reshape(-1).tolist()
        for k, v in enumerate(flat):
            at = (
                f"{field}[{k}]"
                if ndim == 1
                else f"{field}[{k // arr.shape[1]}][{k % arr.shape[1]}]"
            )
            if not isinstance(v, int) or isinstance(v, bool):
                raise InputError(path, at, f"must be an integer, got {v!r}")
            if abs(v) > MAX_VALUE:
                raise InputError(path, at, f"must be at most 2^40 = {MAX_VALUE}")
    if arr.size and (arr.ndim != ndim or not np.issubdtype(arr.dtype, np.integer)):
        raise InputError(path, field, f"must be {'a list' if ndim == 1 else 'rows'} of integers")
    if arr.size and np.abs(arr).max() > MAX_VALUE:  # before the cast: no silent wrap-around
        k = int(np.argwhere(np.abs(arr) > MAX_VALUE)[0][0])
        raise InputError(path, f"{field}[{k}]", f"must be at most 2^40 = {MAX_VALUE}")
    arr = arr.astype(np.int64)
    neg = np.argwhere(arr < 0)
    if neg.size:
        raise InputError(path, f"{field}[{int(neg[0][0])}]", "must be >= 0")
    return arr


def _ids(path: str, field: str, values: Any) -> np.ndarray:
    arr = _array(path, field, values)
    strings = arr.dtype.kind == "U" and all(isinstance(v, str) for v in values)  # numpy casts
    if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or strings):
        raise InputError(path, field, "ids must be all integers or all strings")
    return arr


def _same_length(path: str, table: dict[str, Any], name: str) -> int:
    lengths = {k: len(v) for k, v in table.items()}
    n = lengths[next(iter(lengths))]
    for key, size in lengths.items():
        if size != n:
            first = next(iter(lengths))
            raise InputError(path, f"{name}.{key}", f"has {size} entries, {name}.{first} {n}")
    return n


def id_positions(path: str, ids: np.ndarray, field: str, values: Any) -> np.ndarray:
    """Positions of the ids ``values`` in ``ids`` (sorted search); an id of another type or an
    unknown id is an InputError."""
    refs = _array(path, field, values)
    if refs.size == 0:
        return np.zeros(0, dtype=np.int64)
    if (
        refs.ndim != 1
        or (refs.dtype.kind == "U") != (ids.dtype.kind == "U")
        or refs.dtype.kind not in "iuU"
    ):
        raise InputError(path, field, "must be μop ids (of the μop ids' type)")
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    pos = np.clip(np.searchsorted(sorted_ids, refs), 0, ids.size - 1)
    missing = np.flatnonzero(sorted_ids[pos] != refs)
    if missing.size:
        k = int(missing[0])
        raise InputError(path, f"{field}[{k}]", f"no μop has id {refs[k].item()!r}")
    return order[pos].astype(np.int64)


def graph_from_columns(
    data: dict[str, Any], path: str, n_cores: int
) -> tuple[UopGraph, np.ndarray | None]:
    """The graph (and per-core latency table, if any) of a columnar instance, checked."""
    uops, edges = data["uops"], data["edges"]
    n = _same_length(path, {k: uops[k] for k in ("id", "latency")}, "uops")
    if n == 0:
        raise InputError(path, "uops.id", "an instance needs at least one μop")
    ids = _ids(path, "uops.id", uops["id"])
    latency = int_array(path, "uops.latency", uops["latency"])
    uniq, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if uniq.size != n:
        k = int(np.sort(first[counts > 1])[0])
        dup = np.flatnonzero(ids == ids[k])[1]
        raise InputError(path, f"uops.id[{int(dup)}]", f"duplicate μop id {ids[k].item()!r}")
    table = None
    if "latency_per_core" in uops:
        table = int_array(path, "uops.latency_per_core", uops["latency_per_core"], ndim=2)
        if table.shape != (n, n_cores):
            raise InputError(
                path, "uops.latency_per_core", f"must be {n} rows of {n_cores} latencies"
            )
    cols = {k: edges[k] for k in ("src", "dst", "bytes") if k in edges}
    num_edges = _same_length(path, cols, "edges") if cols else 0
    src = id_positions(path, ids, "edges.src", edges.get("src", []))
    dst = id_positions(path, ids, "edges.dst", edges.get("dst", []))
    byt = int_array(path, "edges.bytes", edges.get("bytes", np.zeros(num_edges, np.int64)))
    keys = tuple(ids.tolist())
    try:
        return UopGraph(latency, src, dst, byt, keys), table
    except ValueError as err:
        raise InputError(path, "edges", str(err)) from None
