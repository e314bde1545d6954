"""Solution JSON (DESIGN.md's contract). Placements use the same fields: ``kind`` "placement",
op ids = task (facility) index, ``core`` = mesh cell index, ``start = end = 0``, ``makespan`` 0 and
``noc_cost`` the recomputed cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from npusched.common.errors import InputError
from npusched.common.jsonio import JsonRows, read_json, write_json
from npusched.common.limits import MAX_TIME, MAX_VALUE
from npusched.io.columnar import COMPACT_ABOVE
from npusched.problem import Schedule, SchedulingInstance
from npusched.problem.placement import Placement, PlacementInstance
from npusched.problem.scheduling.routed import (
    MOVE_KINDS,
    Moves,
    Residency,
    RoutedInstance,
    RoutedSchedule,
    move_direction_ok,
    required_transfers,
)
from npusched.verify import check
from npusched.verify.scheduling.memory import move_bits, move_routes
from npusched.verify.scheduling.routed import residency


class Result(Protocol):
    """What the writer reads of :class:`npusched.solvers.Result` (io sits below the solvers)."""

    method: str
    backend: str
    status: Any
    objective: float | None
    bound: float | None
    runtime_s: float
    solution: Any
    threads: int
    seed: int
    time_limit: float | None
    trace: list[Any]
    stats: dict[str, Any]
    message: str

    @property
    def gap(self) -> float | None:
        """Relative gap ``(objective − bound) / objective``, ``None`` without an objective or
        a bound (:attr:`npusched.solvers.result.Result.gap`); written as the solution's
        ``gap``."""
        ...


def _placement_ops(inst: PlacementInstance, placement: Placement) -> list[dict[str, Any]]:
    return [
        {"id": t, "core": int(inst.cell_array[k]), "start": 0, "end": 0}
        for t, k in enumerate(placement.loc.tolist())
    ]


def _id_column(ids: tuple[Any, ...]) -> np.ndarray:
    """μop ids as an integer array, or (for string ids) as their JSON texts."""
    if all(isinstance(i, int) for i in ids):
        return np.asarray(ids, dtype=np.int64)
    return np.array([json.dumps(i) for i in ids], dtype=object)


def _op_rows(
    inst: SchedulingInstance | RoutedInstance, sched: Schedule | RoutedSchedule
) -> JsonRows:
    """One record per op: its id, core id, start and end."""
    core_ids = np.array([c.id for c in inst.accelerator.cores], dtype=np.int64)
    end = sched.end(inst)  # type: ignore[arg-type]
    return JsonRows(
        {"id": _id_column(inst.graph.ids), "core": core_ids[sched.core], "start": sched.start,
         "end": end}
    )  # fmt: skip


def _transfers(inst: SchedulingInstance, sched: Schedule) -> JsonRows:
    """One record per edge between different mesh cores: its XY route and its transfer window
    (from the producer's end, for the NoC delay of :meth:`Accelerator.comm_delay`); built with
    numpy, one route per pair of cells."""
    acc, g = inst.accelerator, inst.graph
    cells = acc.cells()
    if acc.mesh is None or cells is None:
        return JsonRows({})
    from npusched.problem.scheduling.noc import Mesh
    from npusched.verify.scheduling.schedule import edge_delays

    mesh = Mesh(*acc.mesh)
    cell = np.asarray(cells, dtype=np.int64)[sched.core]
    a, b = cell[g.src], cell[g.dst]
    cross = np.flatnonzero(a != b)
    pair, where = np.unique(a[cross] * mesh.size + b[cross], return_inverse=True)
    routes = [json.dumps(mesh.route(int(c // mesh.size), int(c % mesh.size))) for c in pair]
    ready = sched.end(inst)[g.src[cross]]
    ids = _id_column(g.ids)
    return JsonRows(
        {
            "src": ids[g.src[cross]],
            "dst": ids[g.dst[cross]],
            "bytes": g.bytes[cross],
            "links": [routes[k] for k in where.tolist()],
            "start": ready,
            "end": ready + edge_delays(inst, sched)[cross],
        }
    )


def _routed_transfers(inst: RoutedInstance, sched: RoutedSchedule) -> list[dict[str, Any]]:
    """One record per transfer: ``{"src": <op id>, "dst_core": <core>, ...}`` for a producer's
    output, ``{"src": "dram", "dst": <first op served>, "dst_core", "tensor", ...}`` for a DRAM
    tensor; ``serves`` lists the ops on ``dst_core`` that wait for it."""
    tr = required_transfers(inst, sched.core)
    ids, cores, links = inst.graph.ids, inst.accelerator.cores, inst.topology.links
    unit = "bits" if inst.data_unit == "bits" else "bytes"
    out = []
    for t in range(tr.size):
        if sched.tstart[t] < 0 and sched.tend[t] < 0:
            continue  # replaced by a re-fetch (a move below)
        s = int(tr.src[t])
        serves = [ids[j] for j in tr.serves[t].tolist()]
        rec: dict[str, Any] = (
            {"src": "dram", "dst": serves[0], "tensor": inst.dram[-1 - s].name}
            if s < 0
            else {"src": ids[s]}
        )
        rec |= {
            "dst_core": cores[int(tr.dst_core[t])].id,
            unit: int(tr.data[t]),
            "links": [links[x].id for x in tr.route[t]],
            "start": int(sched.tstart[t]),
            "end": int(sched.tend[t]),
            "serves": serves,
        }
        out.append(rec)
    return out + _move_rows(inst, sched)


def _move_rows(inst: RoutedInstance, sched: RoutedSchedule) -> list[dict[str, Any]]:
    """Moves as transfer records with ``"kind": "evict"`` (``src_core`` to the DRAM core),
    ``"refetch"`` (``"src": "dram"`` to ``dst_core``) or ``"forward"`` (a DRAM tensor from
    ``src_core`` to ``dst_core``), ``tensor`` as in the memory records."""
    mv = sched.moves
    if mv is None:
        return []
    cores, links, dram = inst.accelerator.cores, inst.topology.links, inst.topology.dram
    unit = "bits" if inst.data_unit == "bits" else "bytes"
    bits = move_bits(inst, sched)
    rows = []
    for k, route in enumerate(move_routes(inst, sched)):
        s, a, b = int(mv.tensor[k]), int(mv.src_core[k]), int(mv.dst_core[k])
        rows.append({
            "kind": MOVE_KINDS[int(mv.kind[k])],
            "src": "dram" if a < 0 else "core",
            "tensor": _tensor_ref(inst, s),
            "src_core": dram if a < 0 else cores[a].id,
            "dst_core": dram if b < 0 else cores[b].id,
            unit: int(bits[k]),
            "links": [links[x].id for x in route],
            "start": int(mv.tstart[k]),
            "end": int(mv.tend[k]),
        })  # fmt: skip
    return rows


def _tensor_ref(inst: RoutedInstance, s: int) -> Any:
    """A tensor as files name it: the producer's op id, or the DRAM tensor's name."""
    return inst.dram[-1 - s].name if s < 0 else inst.graph.ids[s]


def _memory_rows(inst: RoutedInstance, sched: RoutedSchedule) -> list[dict[str, Any]]:
    """Data resident on cores (:func:`~npusched.verify.scheduling.routed.residency`):
    ``{"core", "tensor", "bits" | "bytes", "alloc", "free"}``, tensor = producer op id or the DRAM
    tensor's name."""
    res = residency(inst, sched)
    cores = inst.accelerator.cores
    unit = "bits" if inst.data_unit == "bits" else "bytes"
    return [
        {
            "core": cores[c].id,
            "tensor": _tensor_ref(inst, s),
            unit: b,
            "alloc": a,
            "free": f,
        }
        for c, s, b, a, f in zip(
            res.core.tolist(),
            res.tensor.tolist(),
            res.bits.tolist(),
            res.alloc.tolist(),
            res.free.tolist(),
            strict=True,
        )  # fmt: skip
    ]


def solution_to_dict(
    inst: SchedulingInstance | PlacementInstance | RoutedInstance,
    result: Result,
    instance_ref: str,
) -> dict[str, Any]:
    """The contract's fields, plus verification, gap and the anytime trace."""
    out: dict[str, Any] = {
        "kind": "placement" if isinstance(inst, PlacementInstance) else "dag_schedule",
        "instance": instance_ref,
        "method": result.method,
        "backend": result.backend,
        "status": result.status.value,
        "objective": result.objective,
        "bound": result.bound,
        "runtime_s": result.runtime_s,
        "makespan": None,
        "noc_cost": None,
        "ops": [],
        "transfers": [],
    }
    sched = result.solution
    if isinstance(sched, Placement) and isinstance(inst, PlacementInstance):
        report = check(inst, sched)
        out["makespan"], out["noc_cost"] = 0, report.noc_cost
        out["ops"] = _placement_ops(inst, sched)
        out["verified"] = report.ok
        out["violations"] = report.violations[:100]
    elif isinstance(sched, Schedule | RoutedSchedule) and not isinstance(inst, PlacementInstance):
        report = check(inst, sched)
        out["makespan"] = report.makespan
        out["noc_cost"] = report.noc_cost
        if report.noc_bytes_hops is not None:
            out["noc_bytes_hops"] = report.noc_bytes_hops
        big = inst.n > COMPACT_ABOVE  # rows streamed by write_json, else plain lists
        transfers: Any = (
            _routed_transfers(inst, sched)
            if isinstance(inst, RoutedInstance) and isinstance(sched, RoutedSchedule)
            else _transfers(inst, sched)  # type: ignore[arg-type]
        )
        ops = _op_rows(inst, sched)
        out["ops"] = ops if big else [ops[k] for k in range(len(ops))]
        out["transfers"] = (
            transfers
            if big or isinstance(transfers, list)
            else [transfers[k] for k in range(len(transfers))]
        )
        if isinstance(inst, RoutedInstance) and isinstance(sched, RoutedSchedule):
            out["memory"] = _memory_rows(inst, sched)
        out["verified"] = report.ok
        out["violations"] = report.violations[:100]
    out["gap"] = result.gap
    out["threads"], out["seed"], out["time_limit_s"] = (
        result.threads,
        result.seed,
        result.time_limit,
    )
    out["trace"] = [[p.time, p.incumbent, p.bound] for p in result.trace]
    out["stats"] = result.stats
    if result.message:
        out["message"] = result.message
    return out


def write_solution(
    path: str | Path,
    inst: SchedulingInstance | PlacementInstance | RoutedInstance,
    result: Result,
    instance_ref: str,
) -> None:
    """Write the solution JSON (DESIGN's contract; ``.json.gz`` compressed); a solution of more
    than :data:`~npusched.io.columnar.COMPACT_ABOVE` μops is written on one line (the same JSON,
    encoded several times faster)."""
    big = getattr(inst, "n", 0) > COMPACT_ABOVE
    write_json(path, solution_to_dict(inst, result, instance_ref), indent=None if big else 1)


def read_solution(
    path: str | Path, inst: SchedulingInstance | PlacementInstance | RoutedInstance
) -> tuple[Schedule | RoutedSchedule | Placement, dict[str, Any]]:
    """Read a solution JSON written for ``inst``: the schedule or placement (by the source's op
    and core ids) and the raw record. Errors name the file, field and reason."""
    data = read_json(path)
    ops = data.get("ops") if isinstance(data, dict) else None
    if not isinstance(ops, list):
        raise InputError(path, "ops", "missing or not a list")
    index: dict[Any, int]
    if isinstance(inst, PlacementInstance):
        index = {t: t for t in range(inst.n)}
        core_index = {int(cell): k for k, cell in enumerate(inst.cell_array)}
        ids: tuple[Any, ...] = tuple(range(inst.n))
    else:
        index = {uid: i for i, uid in enumerate(inst.graph.ids)}
        core_index = inst.accelerator.index_of
        ids = inst.graph.ids
    start = np.full(inst.n, -1, dtype=np.int64)
    core = np.full(inst.n, -1, dtype=np.int64)
    for k, op in enumerate(ops):
        if not isinstance(op, dict) or any(key not in op for key in ("id", "core", "start")):
            raise InputError(path, f"ops/{k}", "needs an 'id', a 'core' and a 'start'")
        i = _lookup(path, f"ops/{k}/id", index, op["id"], "no μop of the instance has id")
        c = _lookup(path, f"ops/{k}/core", core_index, op["core"], "no core of the instance has id")
        s = _time(path, f"ops/{k}/start", op["start"])
        if "end" in op:
            _time(path, f"ops/{k}/end", op["end"])
        if start[i] >= 0:
            raise InputError(path, f"ops/{k}/id", f"μop {op['id']!r} appears twice")
        start[i], core[i] = s, c
    missing = [ids[i] for i in np.flatnonzero(start < 0)[:5]]
    if missing:
        raise InputError(path, "ops", f"no entry for μops {missing}")
    if isinstance(inst, PlacementInstance):
        return Placement(core), data
    if isinstance(inst, RoutedInstance):
        return _read_routed(path, inst, data, start, core), data
    return Schedule(start, core), data


def _lookup(path: str | Path, field: str, table: dict[Any, int], key: Any, reason: str) -> int:
    """``table[key]``, or an InputError ``reason KEY`` naming ``field``."""
    try:
        return table[key]
    except (KeyError, TypeError):  # TypeError: an unhashable key (a list, an object)
        raise InputError(path, field, f"{reason} {key!r}") from None


def _time(path: str | Path, field: str, value: Any) -> int:
    """A schedule time read from a file: an integer in ``0..MAX_TIME``, or an InputError."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(path, field, f"must be an integer, got {value!r}")
    if not 0 <= value <= MAX_TIME:
        raise InputError(path, field, f"{value} is outside 0..2^62 - 2^40 - 1")
    return value


def _read_routed(
    path: str | Path, inst: RoutedInstance, data: dict[str, Any], start: Any, core: Any
) -> RoutedSchedule:
    """Match the file's transfer records to the transfers the allocation needs. Records the
    allocation does not need, or given twice, are input errors; missing ones stay at -1, which
    verify reports."""
    tr = required_transfers(inst, core)
    slot = {tr.key(t): t for t in range(tr.size)}
    index = {uid: i for i, uid in enumerate(inst.graph.ids)}
    col = inst.accelerator.index_of
    tensor_of = {t.name: k for k, t in enumerate(inst.dram)}
    tstart = np.full(tr.size, -1, dtype=np.int64)
    tend = np.full(tr.size, -1, dtype=np.int64)
    recs = data.get("transfers", [])
    if not isinstance(recs, list):
        raise InputError(path, "transfers", "not a list")
    moves: list[list[int]] = []
    tensors = _Tensors(inst)
    for k, rec in enumerate(recs):
        where = f"transfers/{k}"
        if isinstance(rec, dict) and rec.get("kind", "transfer") != "transfer":
            moves.append(_read_move(path, where, inst, tensors, rec))
            continue
        if not isinstance(rec, dict) or any(
            f not in rec for f in ("src", "dst_core", "start", "end")
        ):
            raise InputError(
                path, where, "needs 'src' (an op id, or \"dram\" with a 'tensor' name), "
                "'dst_core', 'start' and 'end'",
            )  # fmt: skip
        if rec["src"] == "dram":
            name = rec.get("tensor")
            src = -1 - _lookup(
                path, f"{where}/tensor", tensor_of, name, "no DRAM tensor of the instance is named"
            )
        else:
            src = _lookup(path, f"{where}/src", index, rec["src"], "no μop of the instance has id")
        key = (src, _lookup(path, f"{where}/dst_core", col, rec["dst_core"], "no core has id"))
        ts, te = (
            _time(path, f"{where}/start", rec["start"]),
            _time(path, f"{where}/end", rec["end"]),
        )
        if key not in slot:
            raise InputError(path, where, "this allocation does not need such a transfer")
        t = slot[key]
        if tstart[t] >= 0:
            raise InputError(path, where, "the same transfer appears twice")
        tstart[t], tend[t] = ts, te
    memory = _read_memory(path, inst, data["memory"]) if "memory" in data else None
    mv = Moves(*np.array(moves, dtype=np.int64).reshape(-1, 6).T) if moves else None
    return RoutedSchedule(start, core, tstart, tend, memory, mv)


class _Tensors:
    """Tensors as files name them: a DRAM tensor's name, else a producer's op id (indices as in
    :class:`~npusched.problem.scheduling.routed_schedule.Residency`)."""

    def __init__(self, inst: RoutedInstance) -> None:
        self.index: dict[Any, int] = {uid: i for i, uid in enumerate(inst.graph.ids)}
        self.dram = {t.name: -1 - k for k, t in enumerate(inst.dram)}

    def __call__(self, path: str | Path, where: str, ref: Any) -> int:
        if isinstance(ref, str) and ref in self.dram:
            return self.dram[ref]
        return _lookup(
            path, where, self.index, ref, "no μop or DRAM tensor of the instance is named"
        )


def _core_or_dram(path: str | Path, where: str, inst: RoutedInstance, ref: Any) -> int:
    if ref is not None and ref == inst.topology.dram:
        return -1
    return _lookup(path, where, inst.accelerator.index_of, ref, "no core has id")


def _read_move(
    path: str | Path, where: str, inst: RoutedInstance, tensors: _Tensors, rec: dict[str, Any]
) -> list[int]:
    """One eviction move record (:func:`_move_rows`)."""
    need = ("kind", "tensor", "src_core", "dst_core", "start", "end")
    if any(f not in rec for f in need):
        raise InputError(path, where, f"an eviction move needs {', '.join(map(repr, need))}")
    if rec["kind"] not in MOVE_KINDS:
        raise InputError(path, f"{where}/kind", f"must be transfer, evict, refetch or "
                         f"forward, got {rec['kind']!r}")  # fmt: skip
    row = [
        MOVE_KINDS.index(rec["kind"]),
        tensors(path, f"{where}/tensor", rec["tensor"]),
        _core_or_dram(path, f"{where}/src_core", inst, rec["src_core"]),
        _core_or_dram(path, f"{where}/dst_core", inst, rec["dst_core"]),
        _time(path, f"{where}/start", rec["start"]),
        _time(path, f"{where}/end", rec["end"]),
    ]
    if not move_direction_ok(*row[:4]):
        raise InputError(path, where, "an evict goes from a core to DRAM with an op's output, "
                         "a refetch from DRAM to a core, a forward from a core to another "
                         "with a DRAM tensor")  # fmt: skip
    try:
        inst.route(row[2], row[3])
    except ValueError as err:
        raise InputError(path, where, str(err)) from None
    return row


def _read_memory(path: str | Path, inst: RoutedInstance, recs: Any) -> Residency:
    """The file's memory records (:func:`_memory_rows`), checked for form only."""
    if not isinstance(recs, list):
        raise InputError(path, "memory", "not a list")
    unit = "bits" if inst.data_unit == "bits" else "bytes"
    rows, tensors, col = [], _Tensors(inst), inst.accelerator.index_of
    for k, rec in enumerate(recs):
        where = f"memory/{k}"
        if not isinstance(rec, dict) or any(f not in rec for f in ("core", "tensor", unit,
                                                                    "alloc", "free")):  # fmt: skip
            raise InputError(path, where, f"needs 'core', 'tensor', '{unit}', 'alloc', 'free'")
        size = rec[unit]
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_VALUE:
            raise InputError(
                path, f"{where}/{unit}", f"must be an integer in 0..2^40, got {size!r}"
            )
        rows.append([
            _lookup(path, f"{where}/core", col, rec["core"], "no core has id"),
            tensors(path, f"{where}/tensor", rec["tensor"]),
            size,
            _time(path, f"{where}/alloc", rec["alloc"]),
            _time(path, f"{where}/free", rec["free"]),
        ])  # fmt: skip
    return Residency(*np.array(rows, dtype=np.int64).reshape(-1, 5).T)


def end_violations(
    inst: SchedulingInstance | RoutedInstance, schedule: Schedule | RoutedSchedule, data: Any
) -> list[str]:
    """Ops whose ``end`` in the file is not their start plus their duration on their core."""
    ends = schedule.end(inst)  # type: ignore[arg-type]
    index = {uid: i for i, uid in enumerate(inst.graph.ids)}
    bad = []
    for op in data.get("ops", []):
        i = index[op["id"]]
        start, took = int(schedule.start[i]), int(ends[i] - schedule.start[i])
        if "end" in op and op["end"] != start + took:
            said = op["end"]
            bad.append(
                f"μop {op['id']}: ends at {said} in the file; starts at {start}, takes {took}"
            )
    return bad
