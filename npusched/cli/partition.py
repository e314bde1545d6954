"""``npusched partition``: cut a network into μops / CNs on an architecture."""

from __future__ import annotations

import argparse
from typing import Any

from npusched.cli.args import (
    cost_model_of,
    dims_of,
    dims_option,
    flag,
    machine_options,
    output_file,
    positive_float,
    positive_int,
)


def ints(text: str, n: int, what: str) -> tuple[int, ...]:
    """The ``n`` comma-separated positive integers of option ``what`` (``--s 8,8,16,16``).

    Raises
    ------
    ValueError
        ``text`` is not ``n`` integers of at least 1; the message names ``what``.
    """
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != n or min(values) < 1:
        raise ValueError(f"{what} needs {n} positive integers separated by commas, got {text!r}")
    return values


def precision_of(text: str) -> str | int:
    """``--precision``: ``arch``, ``workload`` or a positive number of bits."""
    if text in ("arch", "workload"):
        return text
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"--precision takes arch, workload or a number of bits, got {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    """Run ``npusched partition``: cut ``--network`` on ``--arch`` by ``--scheme`` (Klotski's
    μtensor ``--s``, Stream's CN loops ``--cn``, Flexer's ``--tiles`` and ``--loop-order``) with
    the ``--machine`` and ``--cost`` model (:func:`~npusched.partition.api.partition_network`),
    write the instance to ``--output``, and print its size (and the tile shapes whose cost fell
    back to the analytic model).

    Returns
    -------
    int
        The exit code: 0 (failures raise).

    Raises
    ------
    InputError
        An unknown zoo network or a network file that cannot be read.
    ValueError
        An unknown architecture, malformed ``--s``, ``--cn`` or ``--tiles``, options the scheme
        lacks, or a partition that does not fit the cores' memories.
    """
    from npusched.arch import load_arch
    from npusched.partition.api import partition_network, priced_arch, resolve_network

    net = resolve_network(args.network, dims_of(args))
    arch = priced_arch(net, load_arch(args.arch), precision_of(args.precision))
    if args.cn == "search":
        return _search(args, net, arch)
    cn = None
    if args.cn:
        cn = {}
        for part in args.cn.split(","):
            key, _, value = part.partition("=")
            cn[key.strip().upper()] = int(ints(value, 1, "--cn")[0])
    inst = partition_network(
        net,
        arch,
        args.scheme,
        s=ints(args.s, 4, "--s") if args.s else None,  # type: ignore[arg-type]
        cn=cn,
        tiles=ints(args.tiles, 4, "--tiles") if args.tiles else None,  # type: ignore[arg-type]
        loop_order=args.loop_order,
        align=not args.no_align,
        machine=args.machine,
        cost=cost_model_of(args, arch),
    )
    _wrote(args, inst, net, arch)
    return 0


def _wrote(args: argparse.Namespace, inst: Any, net: Any, arch: Any) -> None:
    """Write the instance to ``--output`` and say what it holds."""
    from npusched.io import write_instance

    write_instance(inst, args.output)
    print(
        f"wrote {args.output}: {inst.n} μops, {inst.graph.num_edges} edges on {inst.m} cores "
        f"({net.name}, {arch.name}, {args.scheme}; {args.machine} machine, "
        f"{inst.source['cost']} costs, {arch.precision_bits}-bit elements)"
    )
    if fallbacks := inst.source.get("cost_fallbacks"):
        print(f"  {len(fallbacks)} tile shapes took the analytic latency instead: "
              f"{fallbacks[0]}{' ...' if len(fallbacks) > 1 else ''}")  # fmt: skip


def _search(args: argparse.Namespace, net: Any, arch: Any) -> int:
    """``--cn search``: the cut of the stream scheme whose memory-aware list is shortest
    (:func:`~npusched.search.cuts.search_cut`) within ``--time-limit``; its instance is
    written, and every cut tried printed."""
    from tabulate import tabulate

    from npusched.search.cuts import cut_name, search_cut, tried_table

    if args.scheme != "stream" or args.machine != "routed":
        raise ValueError("--cn search searches the stream scheme's cuts on the routed machine")
    found = search_cut(net, arch, time_limit=args.time_limit, threads=args.threads,
                       cost=cost_model_of(args, arch), progress=True)  # fmt: skip
    rows = tried_table(found)
    cols = ["cut", "uops", "makespan", "seconds", "kept", "note"]
    print(tabulate([[r[c] for c in cols] for r in rows], headers=cols))
    print(f"kept {cut_name(found.cn)}: the list's {found.result.objective:,.0f} cycles, "
          f"{len(rows)} cuts in {found.seconds:.1f} s"
          f"{'' if found.complete else ' (stopped at --time-limit)'}")  # fmt: skip
    found.instance.source["cut_search"] = rows
    _wrote(args, found.instance, net, arch)
    return 0


def add_parser(sub: Any) -> None:
    """Add the ``partition`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    Klotski's, Stream's and Flexer's schemes."""
    pa = sub.add_parser("partition", help="cut a network into μops / CNs on an architecture")
    pa.add_argument("--network", required=True, help="zoo name, network .json or .onnx")
    dims_option(pa)
    pa.add_argument("--arch", required=True, help="architecture name or .json")
    pa.add_argument("--scheme", required=True, choices=["klotski", "stream", "flexer"])
    pa.add_argument("--s", help="klotski: μtensor H,W,IC,OC")
    flag(pa, "--no-align", "klotski: do not round IC/OC up to the PE array")
    pa.add_argument("--cn", help="stream: CN loops, e.g. OY=1 or K=16,OY=4 (default OY=1; "
                    "without K, K halved in a layer whose CN fits no core; a tensor program's "
                    "M, N, B and K, its reduction in partial-sum chains), or search: the cut "
                    "whose memory-aware list is shortest")
    pa.add_argument("--time-limit", type=positive_float, default=60.0,
                    help="--cn search: seconds the search may take (default 60; the default "
                    "cut always runs)")
    pa.add_argument("--threads", type=positive_int, default=1,
                    help="--cn search: processes of the list's allocations (default 1)")
    pa.add_argument("--tiles", help="flexer: tile sizes OC,OH,OW,IC")
    pa.add_argument("--loop-order", default="K,OY,OX,C", help="flexer: loop order, outermost first")
    pa.add_argument("--precision", default="arch", metavar="arch|workload|BITS",
                    help="element width of every tensor: the arch's (default), the workload's "
                    "(an ONNX file's element type, as Stream prices it) or a number of bits")
    machine_options(pa)
    pa.add_argument("-o", "--output", type=output_file, required=True)
    pa.set_defaults(func=run)
