"""Instance JSON (``npusched/instance/v1``): schema-validated reader and writer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from npusched.common.errors import InputError
from npusched.common.jsonio import load_schema, read_json, validate, write_json
from npusched.io.columnar import COMPACT_ABOVE, graph_columns, graph_from_columns
from npusched.problem import Accelerator, Core, Reference, SchedulingInstance, UopGraph
from npusched.problem.scheduling.routed import (
    DramTensor,
    Link,
    RoutedInstance,
    Topology,
    over_output,
)

FORMAT = "npusched/instance/v1"


def schema() -> dict[str, Any]:
    """The published JSON Schema (also at ``instances/schema/instance.schema.json``)."""
    return load_schema("instance.schema.json")


def instance_to_dict(
    inst: SchedulingInstance | RoutedInstance, compact: bool | None = None
) -> dict[str, Any]:
    """The instance as a JSON document; ``compact`` chooses the columnar form of the graph
    (:mod:`npusched.io.columnar`; default: above :data:`COMPACT_ABOVE` μops). Routed instances
    use the row form."""
    if isinstance(inst, RoutedInstance):
        return _routed_to_dict(inst)
    if compact is None:
        compact = inst.n > COMPACT_ABOVE
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


def _routed_to_dict(inst: RoutedInstance) -> dict[str, Any]:
    out = instance_to_dict(inst.base)
    ids, cores = inst.graph.ids, inst.accelerator.cores
    for i, u in enumerate(out["uops"]):
        if not inst.mask[i].all():
            u["allowed_cores"] = [cores[k].id for k in np.flatnonzero(inst.mask[i])]
        if inst.preferred is not None:
            u["preferred_core"] = cores[int(inst.preferred[i])].id
        if inst.layer is not None:
            u["layer"] = int(inst.layer[i])
        if inst.streamed is not None and inst.streamed[i]:
            u["streamed"] = True
        if inst.output is not None:
            u["output"] = int(inst.output[i])
    topo = inst.topology
    out["data_unit"] = inst.data_unit
    out["topology"] = {
        "dram_core": topo.dram,
        "hop_latency": topo.hop_latency,
        "links": [
            {
                "id": ln.id,
                "sender": ln.sender,
                "receiver": ln.receiver,
                "bandwidth": ln.bandwidth,
                "bus_id": ln.bus_id,
                "offchip": ln.offchip,
                "name": ln.name,
            }
            for ln in topo.links
        ],
        "routes": [
            {"src": a, "dst": b, "links": [topo.links[x].id for x in r]}
            for (a, b), r in sorted(topo.routes.items())
        ],
    }
    if inst.capacity is not None:
        out["memory_capacity"] = {
            str(c.id): int(v) for c, v in zip(cores, inst.capacity.tolist(), strict=True)
        }
    out["dram_tensors"] = [
        {"name": t.name, "data": t.data, "consumers": [ids[i] for i in t.consumers.tolist()]}
        for t in inst.dram
    ]
    return out


def _routed_from_dict(data: dict[str, Any], base: SchedulingInstance, path: str) -> RoutedInstance:
    index = {uid: i for i, uid in enumerate(base.graph.ids)}
    col = base.accelerator.index_of
    n, m = base.n, base.m
    allowed = np.ones((n, m), dtype=bool)
    preferred = None
    for i, u in enumerate(data["uops"]):
        for name in ("allowed_cores", "preferred_core"):
            bad = [c for c in np.atleast_1d(u.get(name, [])).tolist() if c not in col]
            if bad:
                raise InputError(path, f"uops/{i}/{name}", f"core {bad[0]} does not exist")
        if "allowed_cores" in u:
            allowed[i] = False
            allowed[i, [col[c] for c in u["allowed_cores"]]] = True
    if all("preferred_core" in u for u in data["uops"]):
        preferred = np.array([col[u["preferred_core"]] for u in data["uops"]], dtype=np.int64)
    topo_data = data["topology"]
    links = tuple(
        Link(
            ln["id"],
            ln["sender"],
            ln.get("receiver"),
            ln["bandwidth"],
            ln.get("bus_id", -1),
            ln.get("offchip", False),
            ln.get("name", ""),
        )
        for ln in topo_data["links"]
    )
    routes = {(r["src"], r["dst"]): tuple(r["links"]) for r in topo_data["routes"]}
    tensors = []
    for k, t in enumerate(data.get("dram_tensors", [])):
        missing = [c for c in t["consumers"] if c not in index]
        if missing:
            raise InputError(path, f"dram_tensors/{k}/consumers", f"no μop has id {missing[0]!r}")
        tensors.append(
            DramTensor(t["name"], t["data"], np.array([index[c] for c in t["consumers"]]))
        )
    try:
        topo = Topology(links, routes, topo_data.get("dram_core"), topo_data.get("hop_latency", 0))
        inst = RoutedInstance(
            base, topo, allowed, tuple(tensors), data.get("data_unit", "bytes"), preferred
        )
    except ValueError as err:
        raise InputError(path, "topology", str(err)) from None
    return _memory_from_dict(_output_from_dict(inst, data, path), data, path)


def _output_from_dict(inst: RoutedInstance, data: dict[str, Any], path: str) -> RoutedInstance:
    """The μops' ``output`` (the data each produces; its edges carry what their consumers read
    of it): every μop's or none's, and no edge carrying more than its producer's."""
    uops = data["uops"]
    given = ["output" in u for u in uops]
    if not any(given):
        return inst
    if not all(given):
        k = given.index(False)
        raise InputError(path, f"uops/{k}/output", "needs every μop's output when any μop has one")
    output = np.array([u["output"] for u in uops], dtype=np.int64)  # the schema: ints >= 0
    e = over_output(inst.graph, output)
    if e is not None:
        g = inst.graph
        p = int(g.src[e])
        raise InputError(
            path, f"uops/{p}/output",
            f"μop {g.ids[p]} outputs {int(output[p])}, but its edge to μop {g.ids[g.dst[e]]} "
            f"(edges/{e}) carries {int(g.bytes[e])}: an edge carries what its consumer reads "
            "of the output",
        )  # fmt: skip
    try:
        return replace(inst, output=output)
    except ValueError as err:
        raise InputError(path, "uops/output", str(err)) from None


def _memory_from_dict(inst: RoutedInstance, data: dict[str, Any], path: str) -> RoutedInstance:
    """The memory fields of a routed instance: ``memory_capacity``, μops' ``layer`` and
    ``streamed``."""
    uops = data["uops"]
    layer = [u.get("layer") for u in uops]
    streamed = np.array([u.get("streamed", False) for u in uops], dtype=bool)
    cap = data.get("memory_capacity")
    capacity = None
    if cap is not None:
        ids = [str(c.id) for c in inst.accelerator.cores]
        unknown = sorted(set(cap) - set(ids))
        if unknown or len(cap) != len(ids):
            why = f"core {unknown[0]} does not exist" if unknown else "needs every core's size"
            raise InputError(path, "memory_capacity", why)
        capacity = np.array([cap[k] for k in ids], dtype=np.int64)
    try:
        return replace(
            inst,
            layer=None if None in layer else np.array(layer, dtype=np.int64),
            streamed=streamed if streamed.any() else None,
            capacity=capacity,
        )
    except ValueError as err:
        raise InputError(path, "memory_capacity", str(err)) from None


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


def _columnar_from_dict(data: dict[str, Any], path: str) -> SchedulingInstance:
    """A columnar instance (:mod:`npusched.io.columnar`): the graph checked with numpy."""
    if not (isinstance(data["uops"], dict) and isinstance(data["edges"], dict)):
        raise InputError(path, "edges", "uops and edges must both be rows or both be columns")
    if any(k in data for k in ("topology", "dram_tensors", "data_unit")):
        raise InputError(path, "topology", "routed instances use the row form of uops and edges")
    acc = _accelerator(data, path)
    graph, table = graph_from_columns(data, path, acc.m)
    try:
        ref = Reference(**data.get("reference", {}))
        return SchedulingInstance(graph, acc, table, data["name"], ref, data.get("source", {}))
    except ValueError as err:
        raise InputError(path, _field_of(err), str(err)) from None


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
        return _routed_from_dict(data, inst, path)
    if any(k in data for k in ("dram_tensors", "data_unit")) or any(
        "allowed_cores" in u or "preferred_core" in u for u in data["uops"]
    ):
        raise InputError(path, "topology", "DRAM tensors and allowed cores need a topology")
    given = [k for k, u in enumerate(data["uops"]) if "output" in u]
    if given:  # it would change what edges carry: an instance without links must not drop it
        raise InputError(path, f"uops/{given[0]}/output", "μop outputs need a topology")
    return inst


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
