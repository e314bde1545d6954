"""``npusched convert``: a benchmark file (Kasahara .stg, QAPLIB .dat, Stream export) to an
instance JSON."""

from __future__ import annotations

import argparse
from typing import Any

from npusched.cli.args import (
    CONTENTION,
    FREE,
    NO_MEMORY,
    flag,
    mesh,
    output_file,
    positive_float,
    positive_int,
)


def run_qaplib(args: argparse.Namespace) -> int:
    """Run ``npusched convert qaplib``: a QAPLIB ``.dat`` file (Nugent's grid instances) to a
    placement instance JSON at ``--output``, and one line naming its size and reference optimum.

    Returns
    -------
    int
        The exit code: 0 (failures raise).

    Raises
    ------
    InputError
        The file cannot be read as QAPLIB.
    """
    from npusched.io import read_qaplib, write_placement

    inst = read_qaplib(args.file)
    write_placement(inst, args.output)
    ref = inst.reference.optimum
    print(
        f"wrote {args.output}: {inst.n} tasks on a {inst.mesh.rows}x{inst.mesh.cols} mesh"
        + (f", reference optimum {ref}" if ref is not None else "")
    )
    return 0


def run_stream(args: argparse.Namespace) -> int:
    """Run ``npusched convert stream``: a Stream export to a routed instance JSON at
    ``--output`` (Stream's allocation fixed unless ``--free-allocation``; each compute core's top
    memory a capacity unless ``--no-memory``), and one line with its size and Stream's makespan.

    Returns
    -------
    int
        The exit code: 0 (failures raise).

    Raises
    ------
    InputError
        The file cannot be read as a Stream export.
    """
    from npusched.io import read_stream, write_instance

    inst = read_stream(args.file, args.free_allocation, not args.no_memory)
    write_instance(inst, args.output)
    print(
        f"wrote {args.output}: {inst.n} CNs, {inst.graph.num_edges} edges, {inst.m} compute "
        f"cores, {len(inst.topology.links)} links, {len(inst.dram)} DRAM tensors, "
        f"{inst.source['allocation']} allocation; Stream's makespan "
        f"{inst.source.get('stream_makespan')}"
    )
    return 0


def run_mspcd(args: argparse.Namespace) -> int:
    """Run ``npusched convert mspcd``: a Davidović–Crainic ``.td`` graph on ``--procs``
    processors (default: from the file name) to an instance JSON at ``--output``, and one line
    with its size, network and reference optimum.

    Returns
    -------
    int
        The exit code: 0 (failures raise).

    Raises
    ------
    InputError
        The file cannot be read as MSPCD, or no processor count is given or in the file name,
        or it is not one of the networks'.
    """
    from npusched.io import read_mspcd, write_instance

    inst = read_mspcd(args.file, args.procs)
    write_instance(inst, args.output)
    acc = inst.accelerator
    net = (
        f"{acc.mesh[0]}x{acc.mesh[1]} mesh"
        if acc.mesh
        else f"{acc.hypercube}-dimensional hypercube"
    )
    print(
        f"wrote {args.output}: {inst.n} tasks, {inst.graph.num_edges} edges, {inst.m} processors "
        f"on a {net}, delays c x hops"
        + (f", reference optimum {inst.reference.optimum}" if inst.reference.optimum else "")
    )
    return 0


def contended(inst, contention: bool):
    """The instance itself, or with ``--contention`` its routed form (transfers hold the links
    of their XY route, one at a time per link)."""
    if not contention:
        return inst
    from npusched.problem.scheduling.routed import RoutedInstance

    return RoutedInstance.from_mesh(inst)


def run_stg(args: argparse.Namespace) -> int:
    """Run ``npusched convert stg``: a Kasahara ``.stg`` graph on ``--cores`` identical cores or
    a ``--mesh``, with ``--hop-latency``, ``--link-bandwidth`` and ``--edge-bytes`` as the NoC's
    delays and ``--contention`` for the routed form, to an instance JSON at ``--output``, and one
    line with its size and reference optimum.

    Returns
    -------
    int
        The exit code: 0 (failures raise).

    Raises
    ------
    InputError
        The file cannot be read as STG.
    ValueError
        NoC options without ``--mesh``, or ``--contention`` without ``--mesh`` and
        ``--link-bandwidth``.
    """
    from npusched.io import read_stg, write_instance

    if args.mesh:
        inst = read_stg(args.file, args.mesh[0] * args.mesh[1], mesh=args.mesh)
    else:
        inst = read_stg(args.file, args.cores)
    noc = {"hop_latency": args.hop_latency, "link_bandwidth": args.link_bandwidth}
    if args.edge_bytes or any(noc.values()):
        import numpy as np

        from npusched.problem import Accelerator, SchedulingInstance, UopGraph

        if not args.mesh:
            raise ValueError("--hop-latency, --link-bandwidth and --edge-bytes need --mesh")
        g = inst.graph
        graph = UopGraph(g.latency, g.src, g.dst, np.full(g.num_edges, args.edge_bytes), g.ids)
        rows, cols = args.mesh
        acc = Accelerator.mesh_grid(rows, cols, args.hop_latency, args.link_bandwidth)
        # the published optimum assumes free transfers: it is no reference for this variant
        source = {**inst.source, **noc, "edge_bytes": args.edge_bytes}
        inst = SchedulingInstance(graph, acc, name=inst.name, source=source)
    if args.contention and not (args.mesh and args.link_bandwidth):
        raise ValueError("--contention needs --mesh and --link-bandwidth")
    inst = contended(inst, args.contention)
    write_instance(inst, args.output)
    print(
        f"wrote {args.output}: {inst.n} μops, {inst.graph.num_edges} edges, {inst.m} cores"
        + (f", reference optimum {inst.reference.optimum}" if inst.reference.optimum else "")
    )
    return 0


def add_parser(sub: Any) -> None:
    """Add the ``convert`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    the ``stg``, ``qaplib`` and ``stream`` formats."""
    c = sub.add_parser("convert", help="convert a benchmark file to an instance JSON")
    csub = c.add_subparsers(dest="format", required=True)
    stg = csub.add_parser("stg", help="Kasahara .stg task graph")
    stg.add_argument("file")
    cores = stg.add_mutually_exclusive_group(required=True)
    cores.add_argument("--cores", type=positive_int, help="identical cores without a mesh")
    cores.add_argument("--mesh", type=mesh, help="identical cores on a ROWSxCOLS mesh, e.g. 3x3")
    stg.add_argument("--hop-latency", type=int, default=0, help="cycles per hop (with --mesh)")
    stg.add_argument("--link-bandwidth", type=positive_float, help="bytes/cycle (with --mesh)")
    stg.add_argument("--edge-bytes", type=int, default=0, help="bytes on every edge (STG has none)")
    flag(stg, "--contention", CONTENTION)
    stg.add_argument("-o", "--output", type=output_file, required=True)
    stg.set_defaults(func=run_stg)
    qap = csub.add_parser("qaplib", help="QAPLIB .dat on a grid (Nugent): a placement instance")
    qap.add_argument("file")
    qap.add_argument("-o", "--output", type=output_file, required=True)
    qap.set_defaults(func=run_qaplib)
    td = csub.add_parser("mspcd", help="Davidović–Crainic MSPCD .td graph (delays c x hops)")
    td.add_argument("file")
    td.add_argument(
        "--procs",
        type=positive_int,
        help="processors (2, 4, 8, 16: hypercube; 6, 9, 12: mesh); default from the file name",
    )
    td.add_argument("-o", "--output", type=output_file, required=True)
    td.set_defaults(func=run_mspcd)
    stream = csub.add_parser("stream", help="Stream framework export (stream_instance/v1)")
    stream.add_argument("file")
    flag(stream, "--free-allocation", FREE)
    flag(stream, "--no-memory", NO_MEMORY)
    stream.add_argument("-o", "--output", type=output_file, required=True)
    stream.set_defaults(func=run_stream)
