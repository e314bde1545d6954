"""``npusched generate``: write a random instance (a layered DAG on a mesh, or an MSPCD task
graph with a known optimum)."""

from __future__ import annotations

import argparse
from typing import Any

from npusched.cli.args import (
    CONTENTION,
    finite_float,
    flag,
    mesh,
    output_file,
    positive_float,
    positive_int,
)
from npusched.cli.convert import contended


def run(args: argparse.Namespace) -> int:
    """Run ``npusched generate layered``: a random layered DAG of ``--layers`` × ``--width``
    μops on a ``--mesh`` with ``--hop-latency`` and ``--link-bandwidth``
    (:func:`~npusched.bench.generate.layered_dag`, repeatable for a ``--seed``), in its routed
    form with ``--contention``, written to ``--output``, and one line with its size.

    Returns
    -------
    int
        The exit code: 0 (failures raise).
    """
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


PROCS = (2, 4, 6, 8, 9, 12, 16)
"""The processor counts of the MSPCD networks: hypercubes 2, 4, 8, 16; meshes 6, 9, 12."""


def density(text: str) -> float:
    """``--density``: a percentage in ``[0, 100]``."""
    v = finite_float(text)
    if not 0 <= v <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100 (%), got {text}")
    return v


def procs(text: str) -> int:
    """``--procs``: one of the MSPCD networks' processor counts (:data:`PROCS`)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v not in PROCS:
        known = ", ".join(map(str, PROCS))
        raise argparse.ArgumentTypeError(
            f"MSPCD defines no network of {v} processors; choose from {known} (hypercubes 2, 4, "
            "8, 16; meshes 2x3, 3x3, 3x4)"
        )
    return v


def seed(text: str) -> int:
    """``--seed``: a non-negative integer (numpy's generators take no other)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {v}")
    return v


def run_known_optimum(args: argparse.Namespace) -> int:
    """Run ``npusched generate known-optimum``: an MSPCD task graph of ``--n`` tasks on
    ``--procs`` processors built around a schedule without idle time
    (:func:`~npusched.bench.generate.known_optimum`), its optimum ``--work-per-proc`` written as
    the instance's reference, to ``--output``; one line with its size and optimum.

    Returns
    -------
    int
        The exit code: 0 (failures raise).

    Raises
    ------
    ValueError
        Fewer tasks than processors, or a work per processor below ``⌈n / procs⌉`` or above
        2^40.
    """
    from npusched.bench.generate import default_work_per_proc, known_optimum
    from npusched.common.limits import MAX_VALUE
    from npusched.io import write_instance

    if args.n < args.procs:  # checked here to name the option; known_optimum checks it too
        raise ValueError(
            f"--n {args.n} is less than --procs {args.procs}: a schedule without idle time "
            "needs at least one task per processor"
        )
    work = default_work_per_proc(args.n) if args.work_per_proc is None else args.work_per_proc
    if not -(-args.n // args.procs) <= work <= MAX_VALUE:
        raise ValueError(
            f"--work-per-proc {work} must be at least ⌈n / procs⌉ = {-(-args.n // args.procs)} "
            "(every task takes at least 1) and at most 2^40"
        )
    inst, _ = known_optimum(args.n, args.density, args.procs, work_per_proc=work, seed=args.seed)
    write_instance(inst, args.output)
    print(
        f"wrote {args.output}: {inst.n} tasks, {inst.graph.num_edges} edges "
        f"({args.density:g} % of {inst.source['admissible_pairs']} admissible pairs), "
        f"{args.procs} processors ({inst.accelerator.topology}), optimum {work}"
    )
    return 0


def add_parser(sub: Any) -> None:
    """Add the ``generate`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    the ``layered`` and ``known-optimum`` generators."""
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
    known = gsub.add_parser(
        "known-optimum",
        help="MSPCD task graph built around a schedule without idle time: optimum = work / p",
        description="A Davidović–Crainic (2006) MSPCD task graph: a random schedule without idle "
        "time on p processors (each ends at --work-per-proc), then only the edges it honours "
        "with its delays c·hops; the optimum is the work per processor, written as the "
        "instance's reference.",
    )
    known.add_argument("--n", type=positive_int, required=True, help="number of tasks (>= p)")
    known.add_argument(
        "--density", type=density, required=True,
        help="percentage of the admissible pairs (those the hidden schedule can honour) made edges",
    )  # fmt: skip
    known.add_argument(
        "--procs", type=procs, required=True, metavar="P",
        help="processors: 2, 4, 8, 16 (hypercubes) or 6, 9, 12 (meshes 2x3, 3x3, 3x4)",
    )  # fmt: skip
    known.add_argument("--seed", type=seed, default=0, help="repeatable for a seed (default 0)")
    known.add_argument(
        "--work-per-proc", type=positive_int, metavar="W",
        help="each processor's total work = the optimum (default 400 + 4n: 600 at n = 50, "
        "as the benchmark)",
    )  # fmt: skip
    known.add_argument("-o", "--output", type=output_file, required=True)
    known.set_defaults(func=run_known_optimum)
