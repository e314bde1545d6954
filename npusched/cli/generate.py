"""``npusched generate``: write a random instance."""

from __future__ import annotations

import argparse
from typing import Any

from npusched.cli.args import CONTENTION, flag, mesh, output_file, positive_float, positive_int
from npusched.cli.convert import contended


def run(args: argparse.Namespace) -> int:
    from npusched.bench.generate import layered_dag
    from npusched.io import write_instance

    rows, cols = args.mesh
    inst = layered_dag(
        args.layers,
        args.width,
        (rows, cols),
        hop_latency=args.hop_latency,
        link_bandwidth=args.link_bandwidth,
        seed=args.seed,
    )
    write_instance(contended(inst, args.contention), args.output)
    what = " with link contention" if args.contention else ""
    print(
        f"wrote {args.output}: {inst.n} μops, {inst.graph.num_edges} edges, "
        f"{rows}x{cols} mesh{what}"
    )
    return 0


def add_parser(sub: Any) -> None:
    """Add the ``generate`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    the ``layered`` generator."""
    gen = sub.add_parser("generate", help="write a random instance")
    gsub = gen.add_subparsers(dest="kind", required=True)
    lay = gsub.add_parser("layered", help="layered DAG on a mesh with NoC delays")
    lay.add_argument("--layers", type=positive_int, default=6)
    lay.add_argument("--width", type=positive_int, default=4)
    lay.add_argument("--mesh", type=mesh, default=(3, 3), help="ROWSxCOLS (default 3x3)")
    lay.add_argument("--hop-latency", type=int, default=1, help="cycles per hop (default 1)")
    lay.add_argument("--link-bandwidth", type=positive_float, default=8.0, help="bytes/cycle")
    lay.add_argument("--seed", type=int, default=0)
    flag(lay, "--contention", CONTENTION)
    lay.add_argument("-o", "--output", type=output_file, required=True)
    lay.set_defaults(func=run)
