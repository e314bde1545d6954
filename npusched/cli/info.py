"""``npusched info``: size, MACs, bytes, critical path and work of an instance."""

from __future__ import annotations

import argparse
from typing import Any

from npusched.cli.args import FREE, NO_MEMORY, flag, positive_int


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


def add_parser(sub: Any) -> None:
    """Add the ``info`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    a table or one JSON object."""
    i = sub.add_parser("info", help="size, MACs, bytes, critical path and work of an instance")
    i.add_argument("instance", help="instance .json, Stream export, or .stg with --cores")
    i.add_argument("--cores", type=positive_int, help="number of cores for an .stg file")
    flag(i, "--free-allocation", FREE)
    flag(i, "--no-memory", NO_MEMORY)
    flag(i, "--json", "print one JSON object")
    i.set_defaults(func=run)
