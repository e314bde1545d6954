"""Instance JSON (``npusched/instance/v1``): schema-validated reader and writer."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np

from npusched.io.atomic import read_json, write_json
from npusched.io.errors import InputError
from npusched.problem import Accelerator, Core, Reference, SchedulingInstance, UopGraph

FORMAT = "npusched/instance/v1"


@cache
def schema() -> dict[str, Any]:
    """The published JSON Schema (also at ``instances/schema/instance.schema.json``)."""
    text = resources.files("npusched.io").joinpath("schema/instance.schema.json").read_text()
    return json.loads(text)


def _where(error: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in error.absolute_path) or "(top level)"


def instance_to_dict(inst: SchedulingInstance) -> dict[str, Any]:
    g, acc = inst.graph, inst.accelerator
    cores = []
    for c in acc.cores:
        d: dict[str, Any] = {"id": c.id, "name": c.name}
        if c.speed != 1.0:
            d["speed"] = c.speed
        if c.coord is not None:
            d["coord"] = list(c.coord)
        cores.append(d)
    uops = []
    for i, uid in enumerate(g.ids):
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
    out["uops"] = uops
    out["edges"] = [
        {"src": g.ids[s], "dst": g.ids[t], "bytes": int(b)}
        for s, t, b in zip(g.src.tolist(), g.dst.tolist(), g.bytes.tolist(), strict=True)
    ]
    ref = {k: v for k, v in vars(inst.reference).items() if v not in (None, "")}
    if ref:
        out["reference"] = ref
    return out


def instance_from_dict(data: Any, path: str = "<memory>") -> SchedulingInstance:
    """Validate ``data`` against the schema, then build the instance; errors name the field."""
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise InputError(path, _where(e), e.message)
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
    table = None
    per_core = [u.get("latency_per_core") for u in data["uops"]]
    if any(p is not None for p in per_core):
        for k, p in enumerate(per_core):
            if p is None or len(p) != len(cores):
                raise InputError(
                    path,
                    f"uops/{k}/latency_per_core",
                    f"needs one latency per core ({len(cores)}) when any μop has one",
                )
        table = np.asarray(per_core, dtype=np.int64)
    try:
        mesh_data = data.get("mesh", {})
        acc = Accelerator(
            tuple(cores),
            mesh,
            mesh_data.get("hop_latency", 0),
            mesh_data.get("link_bandwidth"),
        )
        graph = UopGraph(
            np.array([u["latency"] for u in data["uops"]]),
            np.array(src, np.int64),
            np.array(dst, np.int64),
            np.array(byt, np.int64),
            tuple(ids),
        )
        ref = Reference(**data.get("reference", {}))
        return SchedulingInstance(graph, acc, table, data["name"], ref, data.get("source", {}))
    except ValueError as err:
        field = "edges" if "cycle" in str(err) or "edge" in str(err) else "(instance)"
        raise InputError(path, field, str(err)) from None


def read_instance(path: str | Path) -> SchedulingInstance:
    """Read and validate an instance JSON file."""
    return instance_from_dict(read_json(path), str(path))


def write_instance(inst: SchedulingInstance, path: str | Path) -> None:
    write_json(path, instance_to_dict(inst))
