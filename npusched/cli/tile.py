"""``npusched tile``: TSO's tiling search (Sousa et al., Algorithm 1) for a network on an NMP.

::

    npusched tile --network inceptionv3 --arch tso-nmp-16 [--model burst|noburst]
                  [--fix-tle KS|KS&OFM|OFM] [--fix-tlt IS|OS|WS] [--exact] [--json] [--workers N]

:func:`add_parser` adds the verb to the main CLI's sub-parsers; errors are raised as
:class:`~npusched.common.errors.InputError` / ``ValueError`` for the main CLI's handler (exit
code 2).
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from npusched.cli.args import dims_of, dims_option, each_network, positive_float, positive_int
from npusched.problem.tiling import MODELS, TLE_SLICINGS, TLT_SCHEDULES


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``tile`` to ``subparsers`` (the result of ``ArgumentParser.add_subparsers``).

    Returns
    -------
    argparse.ArgumentParser
        The ``tile`` parser; its ``func`` default is :func:`run`.
    """
    t = subparsers.add_parser(
        "tile",
        help="TSO tiling search of a network's convolutions on an NMP (TLE/TLT, tile sizes)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    t.add_argument("--network", required=True,
                   help="zoo name, network .json or .onnx (a tensor program: each GEMM)")
    dims_option(t)
    t.add_argument("--arch", required=True, help="architecture name (e.g. tso-nmp-16) or .json")
    t.add_argument(
        "--model",
        default="burst",
        choices=MODELS,
        help="DRAM model that picks the tiles: burst (TSO-burst, default) or noburst (volume; "
        "reported times use the burst model, as TSO's Table I)",
    )
    t.add_argument("--fix-tle", choices=TLE_SLICINGS, help="fix the TLE slicing (Algorithm 2)")
    t.add_argument("--fix-tlt", choices=TLT_SCHEDULES, help="fix the TLT schedule (Sec. IV-D)")
    t.add_argument(
        "--exact",
        action="store_true",
        help="also solve each layer exactly (npusched.formulations.tiling.exact), warm-started "
        "from TSO's choice",
    )
    t.add_argument(
        "--time-limit", type=positive_float, default=10.0, help="--exact: seconds per layer"
    )
    t.add_argument("--threads", type=positive_int, default=1, help="--exact: solver threads")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.add_argument(
        "--workers",
        type=positive_int,
        help="parallel layer searches (default: all cores; 1 = in this process)",
    )
    t.set_defaults(func=run)
    return t


def run(args: argparse.Namespace) -> int:
    """Run ``npusched tile``: search, optionally solve exactly, print a table or JSON.

    Raises
    ------
    InputError
        Unknown zoo network or bad network file.
    ValueError
        Unknown architecture, an architecture TSO cannot model, a network without convolutions,
        or ``--exact`` without the exact module.
    """
    from npusched.partition.api import resolve_network

    net = resolve_network(args.network, dims_of(args))
    return each_network(net, _run_one, args)


def _run_one(args: argparse.Namespace, net: Any) -> int:
    """``npusched tile`` on one CNN network."""
    from tabulate import tabulate

    from npusched.arch import load_arch
    from npusched.heuristics.tiling.search import conv_layers
    from npusched.methods.tiling import tile_network

    arch = load_arch(args.arch)
    conv_layers(net)  # a network without convolutions fails before any pool starts
    res = tile_network(
        net,
        arch,
        args.model,
        fix_tle=args.fix_tle,
        fix_tlt=args.fix_tlt,
        workers=args.workers,
    )
    out = res.to_json()
    if args.exact:
        _add_exact(out["layers"], res.layers, net, arch, args)
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    cols = ["name", "tle", "tlt", "T_R", "T_C", "T_N", "T_M", "time_us"]
    if args.exact:
        cols += ["exact_time_us", "exact_status"]
    print(tabulate([[r.get(c) for c in cols] for r in out["layers"]], headers=cols))
    fixed = "".join(
        f", {k} fixed to {v}" for k, v in (("TLE", args.fix_tle), ("TLT", args.fix_tlt)) if v
    )
    print(
        f"\n{res.network} on {res.arch}, TSO-{res.model}{fixed}: {len(res.layers)} layers, "
        f"total {res.total_time_us:.1f} us (load {res.load_us:.1f}, store {res.store_us:.1f}, "
        f"MAC {res.mac_us:.1f}); search {res.search_seconds:.3f} s"
        + (f"; {res.n_fallback} layers fell back to the free search" if res.n_fallback else "")
    )
    return 0


def _add_exact(rows: list[dict[str, Any]], choices: Any, net: Any, arch: Any, args: Any) -> None:
    """``--exact``: ``solve(TsoLayer, "tso-exact")`` per layer (all 9 pairs, warm-started from
    the search's choice); its time (µs, under the search's model) and status as two columns."""
    from npusched import methods
    from npusched.heuristics.tiling.search import conv_layers
    from npusched.problem.tiling import TsoLayer

    for row, lc, (ly, sh) in zip(rows, choices, conv_layers(net), strict=True):
        problem = TsoLayer.from_layer(ly, sh, arch, lc.model)
        ex = methods.solve(
            problem,
            "tso-exact",
            "cpsat",
            time_limit=args.time_limit,
            threads=args.threads,
            warm_start=lc,
        )
        us = ex.stats.get("objective_us")
        row["exact_time_us"] = math.inf if us is None else us
        row["exact_status"] = ex.status.value
