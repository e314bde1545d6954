"""``npusched info``: what a file or name describes. An instance: its size, MACs, bytes, critical
path and work; an accelerator (a shipped arch name, an ``npusched/arch/v1`` file or a Stream
accelerator YAML): its cores, links and memories; a network (a zoo name or an ONNX file): its
operators, MACs, parameters and bytes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from npusched.cli.args import FREE, NO_MEMORY, dims_of, dims_option, flag, positive_int


def instance_info(inst) -> dict:
    """Size and workload figures of a scheduling (or routed) instance."""
    g = inst.graph
    d = inst.min_duration
    cp = int((g.heads(d) + d).max())
    work = int(d.sum())
    return {
        "name": inst.name,
        "uops": inst.n,
        "edges": g.num_edges,
        "cores": inst.m,
        "total_macs": inst.source.get("macs"),
        "total_edge_bytes": int(g.bytes.sum()),
        "critical_path": cp,
        "work": work,
        "work_per_core": work / inst.m,
        "lower_bound": inst.lower_bound(),
    }


def arch_info(arch: Any) -> dict[str, Any]:
    """Cores, links, buses, routers and DRAM of an :class:`~npusched.arch.Arch`, and the links
    and contended resources of its machine (:func:`~npusched.problem.scheduling.machine.
    machine_topology`)."""
    from npusched.problem.scheduling.machine import capacities, machine_topology

    topo = machine_topology(arch)
    cap = capacities(arch)
    cores = [{"id": c.id, "name": c.name, "kind": c.kind, "pe_unroll": dict(c.pe_unroll),
              "unrolling": c.unrolling, "pes": c.num_pes, "memory_bytes": int(b),
              "sram_read_bytes_per_cycle": c.sram_read_bytes_per_cycle,
              "sram_write_bytes_per_cycle": c.sram_write_bytes_per_cycle}
             for c, b in zip(arch.cores, cap, strict=True)]  # fmt: skip
    links: dict[int, dict[str, Any]] = {}  # one row per resource: a link, or a bus's links
    for ln, r in zip(topo.links, topo.resource_of.tolist(), strict=True):
        row = links.setdefault(r, {"resource": r, "links": [], "bytes_per_cycle": ln.bandwidth,
                                   "lanes": ln.lanes})
        row["links"].append(ln.name)
    for row in links.values():
        if len(row["links"]) > 2:
            row["links"] = f"{len(row['links'])} links: {row['links'][0]}, ..."
    d = arch.dram
    return {
        "name": arch.name,
        "cores": cores,
        "precision_bits": arch.precision_bits,
        "noc": arch.noc.topology,
        "links": len(topo.links),
        "resources": list(links.values()),
        "routers": list(arch.noc.routers),
        "forwarding": arch.noc.forwarding,
        "dram": None if d is None else {"kind": d.kind, "node": topo.dram,
                                        "bytes_per_cycle": arch.dram_bytes_per_cycle()},
        "assumptions": list(arch.assumptions),
    }


def network_info(net: Any, bits: int = 8) -> dict[str, Any]:
    """Operators (count, MACs, parameters, output elements per kind) and the totals of a
    :class:`~npusched.workload.network.Network` or a
    :class:`~npusched.workload.tensor.TensorProgram`; bytes at ``bits`` per element."""
    if hasattr(net, "ops"):
        return _program_info(net, bits)
    ops: dict[str, dict[str, int]] = {}
    for layer in net.layers:
        shapes = net.in_shapes(layer)
        row = ops.setdefault(layer.op, {"count": 0, "macs": 0, "params": 0, "outputs": 0})
        row["count"] += 1
        row["macs"] += layer.macs(shapes)
        row["params"] += layer.params(shapes)
        row["outputs"] += int(np.prod(net.shapes[layer.name]))
    outputs = sum(r["outputs"] for r in ops.values())
    return {
        "name": net.name,
        "layers": len(net.layers),
        "operators": ops,
        "total_macs": net.macs(),
        "total_params": net.params(),
        "param_bytes": net.params() * bits // 8,
        "activation_bytes": outputs * bits // 8,
    }


def _program_info(prog: Any, bits: int) -> dict[str, Any]:
    """:func:`network_info` of a tensor program: per operator kind (and function), its count,
    MACs, other element operations, parameters and bytes moved."""
    ops: dict[str, dict[str, int]] = {}
    for op in prog.ops:
        key = f"{op.kind} {op.fn}".strip() + (" (view)" if prog.is_view(op) else "")
        row = ops.setdefault(key, {"count": 0, "macs": 0, "operations": 0, "params": 0,
                                   "bytes": 0})  # fmt: skip
        for k, v in (("count", 1), ("macs", prog.macs(op)), ("operations", prog.operations(op)),
                     ("params", prog.params(op)), ("bytes", prog.bytes(op, bits))):  # fmt: skip
            row[k] += v
    acts = sum(t.elements for t in prog.tensors.values() if t.role in ("input", "activation"))
    return {
        "name": prog.name,
        "layers": len(prog.ops),
        "operators": ops,
        "total_macs": prog.macs(),
        "total_params": prog.params(),
        "param_bytes": prog.params() * bits // 8,
        "activation_bytes": acts * bits // 8,
        "cache_bytes": sum(t.elements for t in prog.tensors.values() if t.role == "cache")
        * bits // 8,
    }


def what(spec: str) -> str:
    """Whether ``spec`` names an ``arch``, a ``network`` or an ``instance``: by its suffix
    (``.yaml``/``.yml``: a Stream accelerator; ``.onnx``: a network), a shipped name, or a JSON
    file's ``format``."""
    from npusched.arch import list_archs
    from npusched.workload.zoo import list_networks

    suffix = Path(spec).suffix
    if suffix in (".yaml", ".yml"):
        return "arch"
    if suffix == ".onnx":
        return "network"
    if not suffix and spec in list_archs():
        return "arch"
    if not suffix and spec in list_networks():
        return "network"
    if suffix == ".json" and Path(spec).is_file():
        with open(spec, "rb") as f:
            head = f.read(4096).decode("utf-8", "replace")
        if '"npusched/arch/v1"' in head:
            return "arch"
        if '"npusched/network/v1"' in head:
            return "network"
    return "instance"


def run(args: argparse.Namespace) -> int:
    """Run ``npusched info``: read the instance (an ``.stg`` file on ``--cores``) and print
    :func:`instance_info` as a table, or with ``--json`` as one JSON object.

    Returns
    -------
    int
        The exit code: 0 (failures raise).

    Raises
    ------
    InputError
        The instance cannot be read.
    ValueError
        A placement instance, which has no graph to describe.
    """
    import json

    from npusched.cli.args import load
    from npusched.problem.placement import PlacementInstance

    kind = what(args.instance)
    if kind != "instance":
        return _describe(args, kind)
    inst = load(args.instance, args.cores, args.free_allocation, args.no_memory)
    if isinstance(inst, PlacementInstance):
        raise ValueError("info describes scheduling instances; this is a placement instance")
    info = instance_info(inst)
    if args.json:
        print(json.dumps(info))
    else:
        from tabulate import tabulate

        print(tabulate([(k.replace("_", " "), v) for k, v in info.items()]))
    return 0


def _describe(args: argparse.Namespace, kind: str) -> int:
    """``info`` on an accelerator or a network: one JSON object, or tables."""
    import json

    from tabulate import tabulate

    if kind == "arch":
        from npusched.arch import load_arch

        info = arch_info(load_arch(args.instance))
    else:
        from npusched.partition.api import resolve_network

        info = network_info(resolve_network(args.instance, dims_of(args)), args.bits)
    if args.json:
        print(json.dumps(info))
        return 0
    if kind == "arch":
        print(f"{info['name']}: {len(info['cores'])} cores, {info['links']} links on "
              f"{len(info['resources'])} resources ({info['noc']}), {info['precision_bits']}-bit")
        print(tabulate(info["cores"], headers="keys"))
        print(tabulate(info["resources"], headers="keys"))
        if info["dram"]:
            print("dram:", ", ".join(f"{k} {v}" for k, v in info["dram"].items()))
        if info["forwarding"]:
            print("forwarding: a core may send a DRAM tensor it holds to another core")
        for a in info["assumptions"]:
            print("assumed:", a)
        return 0
    rows = [{"operator": op, **row} for op, row in info["operators"].items()]
    print(f"{info['name']}: {info['layers']} layers")
    print(tabulate(rows, headers="keys", intfmt=","))
    print(tabulate([(k.replace("_", " "), v) for k, v in info.items()
                    if k.startswith(("total", "param_", "activation", "cache"))],
                   intfmt=","))  # fmt: skip
    return 0


def add_parser(sub: Any) -> None:
    """Add the ``info`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    a table or one JSON object."""
    i = sub.add_parser("info", help="an instance's size, MACs, bytes, critical path and work; an "
                       "accelerator's cores, links and memories; a network's operators")
    i.add_argument("instance", help="instance .json, Stream export, or .stg with --cores; an "
                   "accelerator (shipped name, arch .json, Stream .yaml); a network (zoo name, "
                   ".onnx)")
    i.add_argument("--bits", type=positive_int, default=8,
                   help="bits per element of a network's bytes (default 8)")
    dims_option(i)
    i.add_argument("--cores", type=positive_int, help="number of cores for an .stg file")
    flag(i, "--free-allocation", FREE)
    flag(i, "--no-memory", NO_MEMORY)
    flag(i, "--json", "print one JSON object")
    i.set_defaults(func=run)
