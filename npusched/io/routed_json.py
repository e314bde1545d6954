"""The routed part of instance JSON (:mod:`npusched.io.instance_json`): topology, DRAM tensors,
memories and the per-μop fields of a :class:`~npusched.problem.scheduling.routed.RoutedInstance`,
in the row form (one object per μop) and the columnar form (one array per field, written above
:data:`~npusched.io.columnar.COMPACT_ABOVE` μops).

Columnar per-μop fields (each one entry per μop, in the order of ``uops.id``): ``allowed_count``
and ``allowed_cores`` (the allowed core ids of every μop, concatenated; absent when every μop may
use every core), ``preferred_core``, ``layer``, ``streamed`` (0/1), ``output``. Columnar DRAM
tensors: ``{"name": [...], "data": [...], "consumer_count": [...], "consumers": [ids,
concatenated]}``. The topology, the memory capacities and ``forward`` (``true`` where a core
may forward a DRAM tensor it holds; absent: ``false``) have one form.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from npusched.common.errors import InputError
from npusched.io.columnar import id_positions, int_array
from npusched.problem import SchedulingInstance
from npusched.problem.scheduling.routed import (
    DramTensor,
    Link,
    RoutedInstance,
    Topology,
    over_output,
)


@dataclass
class UopFields:
    """The routed per-μop fields of a document, as arrays (``None``: absent) and how errors
    name them (``at(field, i)``)."""

    allowed: np.ndarray | None
    preferred: np.ndarray | None
    layer: np.ndarray | None
    streamed: np.ndarray | None
    output: np.ndarray | None
    columnar: bool

    def at(self, field: str, i: int | None = None) -> str:
        """The document path of ``field`` (of μop ``i``)."""
        if i is None:
            return f"uops.{field}" if self.columnar else f"uops/{field}"
        return f"uops.{field}[{i}]" if self.columnar else f"uops/{i}/{field}"


def routed_to_dict(inst: RoutedInstance, out: dict[str, Any]) -> dict[str, Any]:
    """Add ``inst``'s routed fields to ``out``, its base instance's document (row or columnar,
    as its ``uops`` are)."""
    cores = inst.accelerator.cores
    core_ids = np.array([c.id for c in cores], dtype=np.int64)
    if isinstance(out["uops"], dict):
        _uop_columns(inst, out["uops"], core_ids)
    else:
        _uop_rows(inst, out["uops"], core_ids)
    topo = inst.topology
    out["data_unit"] = inst.data_unit
    if inst.forward:
        out["forward"] = True
    out["topology"] = {
        "dram_core": topo.dram,
        "hop_latency": topo.hop_latency,
        "links": [
            {"id": ln.id, "sender": ln.sender, "receiver": ln.receiver,
             "bandwidth": ln.bandwidth, "bus_id": ln.bus_id, "offchip": ln.offchip,
             "name": ln.name, **({"lanes": ln.lanes} if ln.lanes > 1 else {})}
            for ln in topo.links
        ],  # fmt: skip
        "routes": [
            {"src": a, "dst": b, "links": [topo.links[x].id for x in r]}
            for (a, b), r in sorted(topo.routes.items())
        ],
    }
    if inst.capacity is not None:
        out["memory_capacity"] = {
            str(c.id): int(v) for c, v in zip(cores, inst.capacity.tolist(), strict=True)
        }
    ids = np.asarray(inst.graph.ids)
    if isinstance(out["uops"], dict):
        out["dram_tensors"] = {
            "name": [t.name for t in inst.dram],
            "data": np.array([t.data for t in inst.dram], dtype=np.int64),
            "consumer_count": np.array([t.consumers.size for t in inst.dram], dtype=np.int64),
            "consumers": ids[np.concatenate([np.zeros(0, np.int64)]
                                            + [t.consumers for t in inst.dram])],
        }  # fmt: skip
    else:
        out["dram_tensors"] = [
            {"name": t.name, "data": t.data, "consumers": ids[t.consumers].tolist()}
            for t in inst.dram
        ]
    return out


def _uop_rows(inst: RoutedInstance, uops: list[dict[str, Any]], core_ids: np.ndarray) -> None:
    for i, u in enumerate(uops):
        if not inst.mask[i].all():
            u["allowed_cores"] = core_ids[np.flatnonzero(inst.mask[i])].tolist()
        if inst.preferred is not None:
            u["preferred_core"] = int(core_ids[inst.preferred[i]])
        if inst.layer is not None:
            u["layer"] = int(inst.layer[i])
        if inst.streamed is not None and inst.streamed[i]:
            u["streamed"] = True
        if inst.output is not None:
            u["output"] = int(inst.output[i])


def _uop_columns(inst: RoutedInstance, uops: dict[str, Any], core_ids: np.ndarray) -> None:
    if not inst.mask.all():
        uops["allowed_count"] = inst.mask.sum(axis=1).astype(np.int64)
        uops["allowed_cores"] = core_ids[np.nonzero(inst.mask)[1]]
    if inst.preferred is not None:
        uops["preferred_core"] = core_ids[inst.preferred]
    if inst.layer is not None:
        uops["layer"] = np.asarray(inst.layer, dtype=np.int64)
    if inst.streamed is not None and inst.streamed.any():
        uops["streamed"] = inst.streamed.astype(np.int64)
    if inst.output is not None:
        uops["output"] = np.asarray(inst.output, dtype=np.int64)


def routed_from_dict(data: dict[str, Any], base: SchedulingInstance, path: str) -> RoutedInstance:
    """The routed instance of a document whose base instance is ``base`` (row or columnar)."""
    columnar = isinstance(data["uops"], dict)
    fields = (_fields_from_columns if columnar else _fields_from_rows)(data["uops"], base, path)
    topo_data = data["topology"]
    routes = {(r["src"], r["dst"]): tuple(r["links"]) for r in topo_data["routes"]}
    tensors = _dram_tensors(data.get("dram_tensors", []), base, path)
    try:
        links = tuple(
            Link(ln["id"], ln["sender"], ln.get("receiver"), ln["bandwidth"],
                 ln.get("bus_id", -1), ln.get("offchip", False), ln.get("name", ""),
                 ln.get("lanes", 1))
            for ln in topo_data["links"]
        )  # fmt: skip
        topo = Topology(links, routes, topo_data.get("dram_core"), topo_data.get("hop_latency", 0))
        inst = RoutedInstance(
            base, topo, fields.allowed, tensors, data.get("data_unit", "bytes"),
            fields.preferred, forward=bool(data.get("forward", False)),
        )  # fmt: skip
    except ValueError as err:
        raise InputError(path, "topology", str(err)) from None
    return _memory(_output(inst, fields, path), data, fields, path)


def _core_index(base: SchedulingInstance, values: Any, field: str, path: str) -> np.ndarray:
    """Core indices of the core ids ``values`` (a checked integer array, or JSON values); an
    unknown id names ``field`` (its ``[]`` filled with the position)."""
    col = base.accelerator.index_of
    if not isinstance(values, np.ndarray):  # JSON values: any size or type, looked up as given
        flat = values if isinstance(values, list) else [values]
        for k, c in enumerate(flat):
            if isinstance(c, bool) or c not in col:
                raise InputError(path, field.replace("[]", f"[{k}]"), f"core {c!r} does not exist")
        return np.array([col[c] for c in flat], dtype=np.int64)
    ids = np.array(sorted(col), dtype=np.int64)
    pos = np.clip(np.searchsorted(ids, values), 0, ids.size - 1)
    bad = np.flatnonzero(ids[pos] != values)
    if bad.size:
        k = int(bad[0])
        at = field.replace("[]", f"[{k}]")
        raise InputError(path, at, f"core {int(values[k])} does not exist")
    return np.array([col[int(c)] for c in ids], dtype=np.int64)[pos]


def _fields_from_rows(uops: list[dict[str, Any]], base: SchedulingInstance, path: str
                      ) -> UopFields:  # fmt: skip
    n, m = base.n, base.m
    allowed = np.ones((n, m), dtype=bool)
    for i, u in enumerate(uops):
        if "preferred_core" in u:
            _core_index(base, u["preferred_core"], f"uops/{i}/preferred_core", path)
        if "allowed_cores" in u:
            allowed[i] = False
            allowed[i, _core_index(base, u["allowed_cores"], f"uops/{i}/allowed_cores", path)] = 1
    preferred = None
    if all("preferred_core" in u for u in uops):
        preferred = _core_index(base, [u["preferred_core"] for u in uops], "uops", path)
    layer = [u.get("layer") for u in uops]
    given = ["output" in u for u in uops]
    if any(given) and not all(given):
        raise InputError(path, f"uops/{given.index(False)}/output",
                         "needs every μop's output when any μop has one")  # fmt: skip
    return UopFields(
        allowed, preferred,
        None if None in layer else np.array(layer, dtype=np.int64),
        np.array([u.get("streamed", False) for u in uops], dtype=bool),
        np.array([u["output"] for u in uops], dtype=np.int64) if all(given) else None,
        columnar=False,
    )  # fmt: skip


def _fields_from_columns(uops: dict[str, Any], base: SchedulingInstance, path: str
                         ) -> UopFields:  # fmt: skip
    n, m = base.n, base.m

    def column(name: str) -> np.ndarray | None:
        if name not in uops:
            return None
        arr = int_array(path, f"uops.{name}", uops[name])
        if arr.size != n:
            raise InputError(path, f"uops.{name}", f"has {arr.size} entries, uops.id {n}")
        return arr

    allowed = np.ones((n, m), dtype=bool)
    count = column("allowed_count")
    if (count is None) != ("allowed_cores" not in uops):
        raise InputError(path, "uops.allowed_cores", "comes with uops.allowed_count")
    if count is not None:
        flat = int_array(path, "uops.allowed_cores", uops["allowed_cores"])
        if int(count.sum()) != flat.size or (count == 0).any():
            raise InputError(path, "uops.allowed_count",
                             "must count every μop's allowed cores (at least one)")  # fmt: skip
        allowed[:] = False
        allowed[np.repeat(np.arange(n), count),
                _core_index(base, flat, "uops.allowed_cores[]", path)] = True  # fmt: skip
    pref = column("preferred_core")
    streamed = column("streamed")
    return UopFields(
        allowed,
        None if pref is None else _core_index(base, pref, "uops.preferred_core[]", path),
        column("layer"),
        None if streamed is None else streamed.astype(bool),
        column("output"),
        columnar=True,
    )


def _dram_tensors(doc: Any, base: SchedulingInstance, path: str) -> tuple[DramTensor, ...]:
    """The DRAM tensors of a document (rows, or columns with concatenated consumers)."""
    ids = np.asarray(base.graph.ids)
    if isinstance(doc, dict):
        count = int_array(path, "dram_tensors.consumer_count", doc.get("consumer_count", []))
        data = int_array(path, "dram_tensors.data", doc.get("data", []))
        names = list(doc.get("name", []))
        if not (len(names) == data.size == count.size):
            raise InputError(path, "dram_tensors", "name, data and consumer_count differ in length")
        cons = id_positions(path, ids, "dram_tensors.consumers", doc.get("consumers", []))
        if int(count.sum()) != cons.size:
            raise InputError(path, "dram_tensors.consumer_count", "must count every consumer")
        parts = np.split(cons, np.cumsum(count)[:-1]) if count.size else []
        return tuple(DramTensor(str(nm), int(d), c)
                     for nm, d, c in zip(names, data.tolist(), parts, strict=True))  # fmt: skip
    index = {uid: i for i, uid in enumerate(base.graph.ids)}
    tensors = []
    for k, t in enumerate(doc):
        missing = [c for c in t["consumers"] if c not in index]
        if missing:
            raise InputError(path, f"dram_tensors/{k}/consumers", f"no μop has id {missing[0]!r}")
        tensors.append(DramTensor(t["name"], t["data"], np.array([index[c] for c in t["consumers"]],
                                                                 dtype=np.int64)))  # fmt: skip
    return tuple(tensors)


def _output(inst: RoutedInstance, fields: UopFields, path: str) -> RoutedInstance:
    """The μops' ``output`` (the data each produces; its edges carry what their consumers read
    of it): no edge carrying more than its producer's."""
    output = fields.output
    if output is None:
        return inst
    e = over_output(inst.graph, output)
    if e is not None:
        g = inst.graph
        p = int(g.src[e])
        raise InputError(
            path, fields.at("output", p),
            f"μop {g.ids[p]} outputs {int(output[p])}, but its edge to μop {g.ids[g.dst[e]]} "
            f"(edges/{e}) carries {int(g.bytes[e])}: an edge carries what its consumer reads "
            "of the output",
        )  # fmt: skip
    try:
        return replace(inst, output=output)
    except ValueError as err:
        raise InputError(path, fields.at("output"), str(err)) from None


def _memory(inst: RoutedInstance, data: dict[str, Any], fields: UopFields, path: str
            ) -> RoutedInstance:  # fmt: skip
    """The memory fields of a routed instance: ``memory_capacity``, μops' ``layer`` and
    ``streamed``."""
    cap = data.get("memory_capacity")
    capacity = None
    if cap is not None:
        ids = [str(c.id) for c in inst.accelerator.cores]
        unknown = sorted(set(cap) - set(ids))
        if unknown or len(cap) != len(ids):
            why = f"core {unknown[0]} does not exist" if unknown else "needs every core's size"
            raise InputError(path, "memory_capacity", why)
        capacity = np.array([cap[k] for k in ids], dtype=np.int64)
    streamed = fields.streamed
    try:
        return replace(
            inst, layer=fields.layer,
            streamed=streamed if streamed is not None and streamed.any() else None,
            capacity=capacity,
        )  # fmt: skip
    except ValueError as err:
        raise InputError(path, "memory_capacity", str(err)) from None
