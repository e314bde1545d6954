"""Reader for instances exported from the Stream framework (``stream_instance/v1``; see
``../shared/benchmarks/README.md``) into a
:class:`~npusched.problem.scheduling.routed.RoutedInstance`.

What is taken from the export:

- **μops** = Stream's computation nodes (CNs), ids = CN ``idx``; latency per core = Stream's
  ``cost_per_core[core].latency`` (the cost model's ``latency_total2`` of the run).
- **Cores**: the compute cores (``is_offchip`` false); the off-chip core becomes the DRAM core
  of the topology.
- **Links and routes** exactly as exported (a bus is the set of links sharing a ``bus_id``).
- **Edges** with their bits. ``intra_layer_order`` edges carry 0 bits and only order CNs.
- **DRAM tensors**: every constant operand with a positive size. Weights (``W``) are shared by the
  CNs of one layer and one ``group`` (Stream's weight-sharing group); other constant operands
  (first-layer inputs ``I``) are one tensor per CN, since the export does not say which CNs read
  the same input region (conservative: it can only add DRAM traffic).
- **Allocation**: Stream's own (``stream_solution.allocation``, else ``chosen_core``) or, with
  ``free_allocation``, any core in each CN's ``possible_cores``.
- Stream's makespan is kept in ``source["stream_makespan"]`` for comparison, the cores' top-level
  memory sizes in ``source["memory_bits"]``; with ``memory`` (the default) they are the cores'
  ``capacity`` (enforced by the scheduling methods and checked by verify). Each CN's ``layer_id`` is
  its μop's ``layer``; a CN whose cost on its core lists ``too_large_operands`` is ``streamed``
  (its operands stay in DRAM; in both exports such CNs list all of theirs). Without ``memory``
  the routed model does not limit memory (see
  :func:`npusched.verify.scheduling.routed.memory_peaks`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from npusched.common.errors import InputError
from npusched.common.jsonio import read_json, validate
from npusched.problem import Accelerator, Core, SchedulingInstance, UopGraph
from npusched.problem.scheduling.routed import DramTensor, Link, RoutedInstance, Topology


def _topology(data: dict[str, Any], path: str) -> Topology:
    links = []
    for k, ln in enumerate(data["links"]):
        recv = None if ln["receiver"] == "Any" else int(ln["receiver"])
        try:
            links.append(
                Link(
                    int(ln["id"]),
                    int(ln["sender"]),
                    recv,
                    float(ln["bandwidth_bits_per_cycle"]),
                    int(ln.get("bus_id", -1)),
                    bool(ln.get("is_offchip_link", False)),
                    str(ln.get("name", "")),
                )
            )
        except ValueError as err:
            raise InputError(path, f"links/{k}", str(err)) from None
    routes = {}
    for key, route in data["routes"].items():
        a, _, b = key.partition("->")
        if not (a.isdecimal() and b.isdecimal() and len(a + b) <= 18):
            where = f"routes/{key[:30]}{'…' if len(key) > 30 else ''}"
            raise InputError(path, where, "a route's key is 'SENDER->RECEIVER', two core ids")
        routes[(int(a), int(b))] = tuple(route)
    try:
        return Topology(tuple(links), routes, data["offchip_core_id"])
    except ValueError as err:
        raise InputError(path, "routes", str(err)) from None


def stream_from_dict(
    data: Any, path: str = "<memory>", free_allocation: bool = False, memory: bool = True
) -> RoutedInstance:
    """Build the routed instance of a Stream export (see the module docstring)."""
    validate(data, "stream_export.schema.json", path)
    compute = [c for c in data["cores"] if not c["is_offchip"]]
    core_ids = [int(c["id"]) for c in compute]
    col = {cid: k for k, cid in enumerate(core_ids)}
    cns = data["cns"]
    idx = [int(c["idx"]) for c in cns]
    row = {cid: k for k, cid in enumerate(idx)}
    if len(row) != len(idx):
        raise InputError(path, "cns", "duplicate CN idx")
    n, m = len(cns), len(core_ids)
    table = np.zeros((n, m), dtype=np.int64)
    allowed = np.zeros((n, m), dtype=bool)
    alloc = data.get("stream_solution", {}).get("allocation", {})
    preferred = np.zeros(n, dtype=np.int64)
    for i, cn in enumerate(cns):
        where = f"cns/{i}"
        for c in cn["possible_cores"]:
            if c not in col:
                raise InputError(path, f"{where}/possible_cores", f"{c} is not a compute core")
            cost = cn["cost_per_core"].get(str(c))
            if cost is None:
                raise InputError(path, f"{where}/cost_per_core", f"no latency on core {c}")
            table[i, col[c]] = cost["latency"]
            allowed[i, col[c]] = True
        table[i, ~allowed[i]] = table[i, allowed[i]].max()
        chosen = alloc.get(cn["key"], cn.get("chosen_core"))
        if chosen is None or chosen not in cn["possible_cores"]:
            raise InputError(
                path, where, f"no Stream allocation among possible_cores (got {chosen})"
            )
        preferred[i] = col[chosen]
    if not free_allocation:
        allowed[:] = False
        allowed[np.arange(n), preferred] = True
    src, dst, bits = [], [], []
    for k, e in enumerate(data["edges"]):
        for end in ("src", "dst"):
            if e[end] not in row:
                raise InputError(path, f"edges/{k}/{end}", f"no CN has idx {e[end]}")
        src.append(row[e["src"]])
        dst.append(row[e["dst"]])
        bits.append(e["bits"])
    dram = _dram_tensors(cns)
    sol = data.get("stream_solution", {})
    source = {
        "format": "stream_instance/v1",
        "file": Path(path).name,
        "allocation": "free (possible_cores)" if free_allocation else "Stream's",
        "stream_makespan": sol.get("makespan"),
        "memory_bits": {
            str(c["id"]): sum(int(m.get("size_bits", 0)) for m in c.get("top_memories", []))
            for c in compute
        },
        "stream": data.get("source", {}),
    }
    try:
        acc = Accelerator(tuple(Core(int(c["id"]), c.get("name", "")) for c in compute))
        latency = table[np.arange(n), np.argmax(allowed, axis=1)]
        graph = UopGraph(
            latency, np.array(src, np.int64), np.array(dst, np.int64), np.array(bits), tuple(idx)
        )
        name = Path(path).stem + ("_free" if free_allocation else "")
        base = SchedulingInstance(graph, acc, table, name, source=source)
    except ValueError as err:
        field = "edges" if any(w in str(err) for w in ("cycle", "self-loop")) else "(instance)"
        raise InputError(path, field, str(err)) from None
    topology = _topology(data, path)
    try:
        inst = RoutedInstance(base, topology, allowed, dram, "bits", preferred)
    except ValueError as err:
        raise InputError(path, "(instance)", str(err)) from None
    inst = _with_layers(inst, cns, [core_ids[k] for k in preferred.tolist()])
    return _with_memory(inst, data["cores"], path) if memory else inst


def _with_layers(inst: RoutedInstance, cns: list[dict[str, Any]], on: list[int]) -> RoutedInstance:
    """``inst`` with each CN's ``layer_id`` and whether its operands stay in DRAM on core
    ``on[i]`` (``too_large_operands``)."""
    layer = np.array([int(cn.get("layer_id", 0)) for cn in cns], dtype=np.int64)
    too_large = [
        cn["cost_per_core"][str(c)].get("too_large_operands") for cn, c in zip(cns, on, strict=True)
    ]
    streamed = np.array([bool(x) for x in too_large], dtype=bool)
    return replace(inst, layer=layer, streamed=streamed)


def _with_memory(inst: RoutedInstance, cores: list[dict[str, Any]], path: str) -> RoutedInstance:
    """``inst`` with each compute core's top-level memories as its capacity."""
    sizes = []
    for k, c in enumerate(cores):
        if c["is_offchip"]:
            continue
        size = sum(int(m.get("size_bits", 0)) for m in c.get("top_memories", []))
        if size <= 0:
            raise InputError(
                path, f"cores/{k}/top_memories",
                f"compute core {c['id']} has no memory size: a capacity needs a positive "
                "size_bits on every compute core (or pass --no-memory)",
            )  # fmt: skip
        sizes.append(size)
    try:
        return replace(inst, capacity=np.array(sizes, dtype=np.int64))
    except ValueError as err:
        raise InputError(path, "cores/top_memories", str(err)) from None


def _dram_tensors(cns: list[dict[str, Any]]) -> tuple[DramTensor, ...]:
    """Constant operands: ``W`` shared per (layer, group), others one tensor per CN."""
    tensors: dict[tuple[Any, ...], tuple[int, list[int]]] = {}
    for i, cn in enumerate(cns):
        for op, spec in sorted(cn["operands"].items()):
            size = int(spec["size_bits"])
            if not spec["constant"] or size <= 0:
                continue
            key: tuple[Any, ...] = (
                (cn["layer_id"], op, "group", cn.get("group", 0))
                if op == "W"
                else (cn["layer_id"], op, "cn", cn["idx"])
            )
            size0, users = tensors.setdefault(key, (size, []))
            if size0 != size:  # not one tensor after all: keep it per CN
                key = (cn["layer_id"], op, "cn", cn["idx"])
                size0, users = tensors.setdefault(key, (size, []))
            users.append(i)
    return tuple(
        DramTensor(f"L{k[0]}.{k[1]}.{k[2]}{k[3]}", size, np.array(users))
        for k, (size, users) in tensors.items()
    )


def allocation_groups(data: dict[str, Any]) -> np.ndarray:
    """Each CN's Stream ``group`` (its weight-sharing group within its layer; Stream allocates
    a layer's groups to cores), in the order of the export's ``cns``."""
    return np.array([int(cn.get("group", 0)) for cn in data["cns"]], dtype=np.int64)


def cn_energy(data: dict[str, Any]) -> np.ndarray | None:
    """Each CN's ``energy_total`` on each compute core (``inf`` where it may not run), in the
    order of the export's ``cns`` and its compute cores; ``None`` when a CN lacks it on one of
    its possible cores."""
    cores = [int(c["id"]) for c in data["cores"] if not c["is_offchip"]]
    table = np.full((len(data["cns"]), len(cores)), np.inf)
    for i, cn in enumerate(data["cns"]):
        for k, c in enumerate(cores):
            cost = cn["cost_per_core"].get(str(c))
            if c in cn["possible_cores"]:
                value = None if cost is None else cost.get("energy_total")
                if not isinstance(value, int | float) or not np.isfinite(value) or value < 0:
                    return None
                table[i, k] = float(value)
    return table


def read_stream(
    path: str | Path, free_allocation: bool = False, memory: bool = True
) -> RoutedInstance:
    """Read a Stream export file."""
    return stream_from_dict(read_json(path), str(path), free_allocation, memory)
