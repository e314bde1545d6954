"""Instance JSON (``npusched/instance/v1``): schema-validated reader and writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from npusched.common.errors import InputError
from npusched.common.jsonio import load_schema, read_json, validate, write_json
from npusched.io.columnar import COMPACT_ABOVE, graph_columns, graph_from_columns
from npusched.io.routed_json import routed_from_dict, routed_to_dict
from npusched.problem import Accelerator, Core, Reference, SchedulingInstance, UopGraph
from npusched.problem.scheduling.routed import RoutedInstance

FORMAT = "npusched/instance/v1"


def schema() -> dict[str, Any]:
    """The published JSON Schema (also at ``instances/schema/instance.schema.json``)."""
    return load_schema("instance.schema.json")


def instance_to_dict(
    inst: SchedulingInstance | RoutedInstance, compact: bool | None = None
) -> dict[str, Any]:
    """The instance as a JSON document; ``compact`` chooses the columnar form of the graph
    (:mod:`npusched.io.columnar`; default: above :data:`COMPACT_ABOVE` μops). Routed instances
    take the same form (:mod:`npusched.io.routed_json`)."""
    if compact is None:
        compact = inst.n > COMPACT_ABOVE
    if isinstance(inst, RoutedInstance):
        return routed_to_dict(inst, instance_to_dict(inst.base, compact))
    g, acc = inst.graph, inst.accelerator
    cores = []
    for c in acc.cores:
        d: dict[str, Any] = {"id": c.id, "name": c.name}
        if c.speed != 1.0:
            d["speed"] = c.speed
        if c.coord is not None:
            d["coord"] = list(c.coord)
        cores.append(d)
    uops: Any = []
    for i, uid in enumerate(() if compact else g.ids):
        u: dict[str, Any] = {"id": uid, "latency": int(g.latency[i])}
        if inst.latency_table is not None:
            u["latency_per_core"] = inst.latency_table[i].tolist()
        uops.append(u)
    out: dict[str, Any] = {
        "format": FORMAT,
        "name": inst.name,
        "source": inst.source,
        "cores": cores,
    }
    if acc.mesh is not None:
        out["mesh"] = {"rows": acc.mesh[0], "cols": acc.mesh[1]}
        if acc.hop_latency:
            out["mesh"]["hop_latency"] = acc.hop_latency
        if acc.link_bandwidth is not None:
            out["mesh"]["link_bandwidth"] = acc.link_bandwidth
    if acc.hypercube is not None:
        out["hypercube"] = {"dim": acc.hypercube}
    if acc.delay_model != "bandwidth":
        out["mesh" if acc.mesh is not None else "hypercube"]["delay_model"] = acc.delay_model
    if compact:
        out["uops"], out["edges"] = graph_columns(inst)
    else:
        out["uops"] = uops
        out["edges"] = [
            {"src": g.ids[s], "dst": g.ids[t], "bytes": int(b)}
            for s, t, b in zip(g.src.tolist(), g.dst.tolist(), g.bytes.tolist(), strict=True)
        ]
    ref = {k: v for k, v in vars(inst.reference).items() if v not in (None, "")}
    if ref:
        out["reference"] = ref
    return out


def _accelerator(data: dict[str, Any], path: str) -> Accelerator:
    """The cores and their network (mesh or hypercube, delay model) of an instance document."""
    cores = []
    for k, c in enumerate(data["cores"]):
        try:
            cores.append(
                Core(
                    c["id"],
                    c.get("name", f"core{c['id']}"),
                    c.get("speed", 1.0),
                    tuple(c["coord"]) if "coord" in c else None,
                )
            )
        except ValueError as err:
            raise InputError(path, f"cores/{k}", str(err)) from None
    mesh = (data["mesh"]["rows"], data["mesh"]["cols"]) if "mesh" in data else None
    mesh_data = data.get("mesh", {})
    cube = data.get("hypercube", {})
    try:
        return Accelerator(
            tuple(cores),
            mesh,
            mesh_data.get("hop_latency", 0),
            mesh_data.get("link_bandwidth"),
            cube.get("dim"),
            mesh_data.get("delay_model", cube.get("delay_model", "bandwidth")),
        )
    except ValueError as err:
        raise InputError(path, "cores", str(err)) from None


def _columnar_from_dict(data: dict[str, Any], path: str) -> SchedulingInstance | RoutedInstance:
    """A columnar instance (:mod:`npusched.io.columnar`): the graph checked with numpy."""
    if not (isinstance(data["uops"], dict) and isinstance(data["edges"], dict)):
        raise InputError(path, "edges", "uops and edges must both be rows or both be columns")
    acc = _accelerator(data, path)
    graph, table = graph_from_columns(data, path, acc.m)
    try:
        ref = Reference(**data.get("reference", {}))
        inst = SchedulingInstance(graph, acc, table, data["name"], ref, data.get("source", {}))
    except ValueError as err:
        raise InputError(path, _field_of(err), str(err)) from None
    if "topology" in data:
        return routed_from_dict(data, inst, path)
    cols = data["uops"]
    cores = any(k in cols for k in ("allowed_count", "allowed_cores", "preferred_core"))
    _not_routed(data, path, cores, "uops.output" if "output" in cols else None)
    return inst


def _field_of(err: ValueError) -> str:
    """The field an instance's own check (graph, durations, delays) refers to."""
    text = str(err)
    if "link_bandwidth" in text:
        return "mesh/link_bandwidth"
    if "speed" in text:
        return "cores"
    return "edges" if any(w in text for w in ("cycle", "edge", "self-loop")) else "(instance)"


def instance_from_dict(data: Any, path: str = "<memory>") -> SchedulingInstance | RoutedInstance:
    """Validate ``data`` against the schema, then build the instance (a routed one when it has a
    ``topology``); errors name the field."""
    validate(data, "instance.schema.json", path)
    if isinstance(data["uops"], dict) or isinstance(data["edges"], dict):
        return _columnar_from_dict(data, path)
    ids = [u["id"] for u in data["uops"]]
    index: dict[Any, int] = {}
    for k, uid in enumerate(ids):
        if uid in index:
            raise InputError(path, f"uops/{k}/id", f"duplicate μop id {uid!r}")
        index[uid] = k
    src, dst, byt = [], [], []
    for k, e in enumerate(data["edges"]):
        for end in ("src", "dst"):
            if e[end] not in index:
                raise InputError(path, f"edges/{k}/{end}", f"no μop has id {e[end]!r}")
        src.append(index[e["src"]])
        dst.append(index[e["dst"]])
        byt.append(e.get("bytes", 0))
    acc = _accelerator(data, path)
    table = None
    per_core = [u.get("latency_per_core") for u in data["uops"]]
    if any(p is not None for p in per_core):
        for k, p in enumerate(per_core):
            if p is None or len(p) != acc.m:
                raise InputError(
                    path,
                    f"uops/{k}/latency_per_core",
                    f"needs one latency per core ({acc.m}) when any μop has one",
                )
        table = np.asarray(per_core, dtype=np.int64)
    try:
        graph = UopGraph(
            np.array([u["latency"] for u in data["uops"]]),
            np.array(src, np.int64),
            np.array(dst, np.int64),
            np.array(byt, np.int64),
            tuple(ids),
        )
        ref = Reference(**data.get("reference", {}))
        inst = SchedulingInstance(graph, acc, table, data["name"], ref, data.get("source", {}))
    except ValueError as err:
        raise InputError(path, _field_of(err), str(err)) from None
    if "topology" in data:
        return routed_from_dict(data, inst, path)
    rows = data["uops"]
    cores = any("allowed_cores" in u or "preferred_core" in u for u in rows)
    given = [k for k, u in enumerate(rows) if "output" in u]
    _not_routed(data, path, cores, f"uops/{given[0]}/output" if given else None)
    return inst


def _not_routed(data: dict[str, Any], path: str, cores: bool, output: str | None) -> None:
    """A document without a topology has no routed fields: DRAM tensors, a data unit, allowed
    or preferred cores (``cores``), or μop outputs (``output``: the field of the first)."""
    if any(k in data for k in ("dram_tensors", "data_unit")) or cores:
        raise InputError(path, "topology", "DRAM tensors and allowed cores need a topology")
    if output:  # it would change what edges carry: an instance without links must not drop it
        raise InputError(path, output, "μop outputs need a topology")


def read_instance(path: str | Path) -> SchedulingInstance | RoutedInstance:
    """Read and validate an instance JSON file."""
    return instance_from_dict(read_json(path), str(path))


def write_instance(
    inst: SchedulingInstance | RoutedInstance, path: str | Path, compact: bool | None = None
) -> None:
    """Write ``inst`` (``.json`` or ``.json.gz``); a columnar document (``compact``, default
    above :data:`COMPACT_ABOVE` μops) is written on one line, which is several times faster."""
    doc = instance_to_dict(inst, compact)
    write_json(path, doc, indent=None if isinstance(doc["uops"], dict) else 1)
