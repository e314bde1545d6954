"""``npusched flexer``: Flexer's search (Algorithm 1) over a network's layers on a multi-NPU, OoO
against the best static loop order.

::

    npusched flexer --network NAME|FILE --arch arch1..arch8|NAME|FILE [--layers a,b]
                    [--scheduler lns|beam|ooo] [--beam-width W] [--beam-depth D] [--beam-top T]
                    [--lns-seconds S]
                    [--priority default|min-transfer|min-spill]
                    [--mem-policy flexer|first-fit|small-spill] [--metric latency*bytes]
                    [--max-ops N] [--fill-drain CYCLES] [--cost analytic|zigzag|compute]
                    [--prefetch] [--time-limit S]
                    [--workers N]
                    [--no-verify] [--json]

The out-of-order search is ``flexer-lns`` by default (``--scheduler lns``), the strongest of the
OoO searches (issue 25): ``flexer-beam`` (the greedy's choice of the next operation set
replaced by a beam of ``--beam-width`` branches looking ``--beam-depth`` sets ahead, refining
the greedy's ``--beam-top`` best tilings × dataflows; :mod:`npusched.heuristics.flexer.beam`),
then each layer's best schedule re-timed by CP-SAT large-neighbourhood search for
``--lns-seconds`` (:mod:`npusched.formulations.flexer.retime`; never worse than the beam).
``--scheduler beam`` stops after the beam, ``--scheduler ooo`` is the paper's greedy
(``flexer-ooo``, Algorithm 1). The table's OoO columns and the JSON's ``ooo_latency``,
``ooo_transfer_bytes`` are the chosen scheduler's; the JSON names it (``"scheduler": "lns"``).

Each chosen schedule is rebuilt and checked by :func:`npusched.verify.flexer.verify_flexer`
unless ``--no-verify``. With ``--time-limit`` the search stops after that many seconds with the
best schedules found so far, and says so (``"complete": false`` in the JSON). Errors are raised
as :class:`~npusched.io.InputError` / ``ValueError`` for the main CLI's handler (exit code 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from npusched.arch import flexer_arch_name
from npusched.cli.args import dims_of, dims_option, each_network, positive_int
from npusched.problem.flexer.settings import MEM_POLICIES, PRIORITIES, Settings

#: ``--scheduler``: the out-of-order search, ``flexer-lns`` (the default), ``flexer-beam`` or
#: ``flexer-ooo``.
SCHEDULERS = ("lns", "beam", "ooo")
#: The beam's defaults: :class:`~npusched.problem.flexer.settings.Settings`' ``beam_*`` fields.
_BEAM: dict[str, int] = {
    f.name: f.default
    for f in dataclasses.fields(Settings)
    if f.name.startswith("beam_") and isinstance(f.default, int)
}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``flexer`` to ``subparsers``; its ``func`` default is :func:`run`."""
    from npusched.problem.flexer.settings import METRICS

    f = subparsers.add_parser(
        "flexer",
        help="Flexer: OoO scheduling of tiled layers on NPUs sharing a buffer, vs static orders",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    f.add_argument("--network", required=True, help="zoo name or network .json / .onnx")
    dims_option(f)
    f.add_argument("--arch", required=True, help="arch1..arch8 (Table 1), a name or a .json")
    f.add_argument("--layers", help="comma-separated layer names (default: every conv and fc)")
    f.add_argument(
        "--scheduler",
        choices=SCHEDULERS,
        default="lns",
        help="the out-of-order search: lns (default: flexer-lns, the beam re-timed by CP-SAT), "
        "beam (flexer-beam, lookahead over operation sets) or ooo (flexer-ooo, the paper's "
        "greedy)",
    )
    f.add_argument(
        "--lns-seconds",
        type=float,
        default=Settings.lns_seconds,
        help="lns: seconds of re-timing per layer, after the beam (default "
        f"{Settings.lns_seconds:g})",
    )
    f.add_argument(
        "--beam-width",
        type=int,
        default=_BEAM["beam_width"],
        help=f"beam: branches kept per step (default {_BEAM['beam_width']})",
    )
    f.add_argument(
        "--beam-depth",
        type=int,
        default=_BEAM["beam_depth"],
        help=f"beam: operation sets looked ahead (default {_BEAM['beam_depth']})",
    )
    f.add_argument(
        "--beam-top",
        type=int,
        default=_BEAM["beam_top"],
        help="beam: the greedy's best tiling x dataflow pairs it refines "
        f"(0: all; default {_BEAM['beam_top']})",
    )
    f.add_argument("--priority", default="default", choices=PRIORITIES)
    f.add_argument("--mem-policy", default="flexer", choices=MEM_POLICIES)
    f.add_argument("--metric", default="latency*bytes", choices=METRICS)
    f.add_argument(
        "--max-ops",
        type=int,
        default=256,
        help="skip tilings with more operations (0: no cap; default 256)",
    )
    f.add_argument(
        "--fill-drain",
        type=int,
        help="cycles each operation spends filling and draining the PE array "
        "(default: rows + columns, 64 on a 32 x 32 array; 0: none)",
    )
    f.add_argument(
        "--cost",
        choices=["analytic", "zigzag", "compute"],
        default="analytic",
        help="an operation's cycles: analytic (default: a roofline per memory level of the "
        "NPU), zigzag (ZigZag's mapping search) or compute (the "
        "PE array's steps alone, the model before)",
    )
    f.add_argument(
        "--prefetch",
        action="store_true",
        help="overlap loads with earlier operations (default: loads on the operation's time)",
    )
    f.add_argument(
        "--time-limit",
        type=float,
        help="seconds for the whole search; then the best found so far (default: no limit)",
    )
    f.add_argument("--workers", type=positive_int, help="parallel layers (default: all cores)")
    f.add_argument("--no-verify", action="store_true", help="do not re-check the schedules")
    f.add_argument("--json", action="store_true", help="print one JSON object")
    f.set_defaults(func=run)
    return f


def run(args: argparse.Namespace) -> int:
    """Run ``npusched flexer``: search, verify, print a table or JSON (one per GEMM and
    matmul of a tensor program, :meth:`~npusched.workload.tensor.TensorProgram.gemm_networks`)."""
    from npusched.partition.api import resolve_network

    net = resolve_network(args.network, dims_of(args))
    return each_network(net, _run_one, args)


def _run_one(args: argparse.Namespace, net: Any) -> int:
    """``npusched flexer`` on one CNN network."""
    from tabulate import tabulate

    from npusched.arch import load_arch
    from npusched.methods.flexer import search_network, verify_choices

    arch = load_arch(flexer_arch_name(args.arch))
    if args.max_ops < 0:
        raise ValueError("--max-ops must be >= 0")
    if args.fill_drain is not None and args.fill_drain < 0:
        raise ValueError(f"--fill-drain must be >= 0, got {args.fill_drain}")
    if args.time_limit is not None and not args.time_limit > 0:
        raise ValueError(f"--time-limit must be positive, got {args.time_limit:g}")
    if args.beam_width < 1 or args.beam_depth < 1:
        raise ValueError(
            f"--beam-width and --beam-depth must be >= 1, got {args.beam_width} and "
            f"{args.beam_depth}"
        )
    if args.beam_top < 0:
        raise ValueError(f"--beam-top must be >= 0 (0: every tiling), got {args.beam_top}")
    if not 0 <= args.lns_seconds < float("inf"):
        raise ValueError(f"--lns-seconds must be finite and >= 0, got {args.lns_seconds:g}")
    layers = [x.strip() for x in args.layers.split(",")] if args.layers else None
    res = search_network(
        net,
        arch,
        layers=layers,
        kinds=(args.scheduler, "static"),
        workers=args.workers,
        priority=args.priority,
        mem_policy=args.mem_policy,
        metric=args.metric,
        max_ops=args.max_ops,
        fill_drain=args.fill_drain,
        cost=args.cost,
        prefetch=args.prefetch,
        beam_width=args.beam_width,
        beam_depth=args.beam_depth,
        beam_top=args.beam_top,
        lns_seconds=args.lns_seconds,
        time_limit=args.time_limit,
        progress=not args.json,
    )
    out = {"scheduler": args.scheduler, **res.to_json()}
    if not args.no_verify:
        out["verified_schedules"] = verify_choices(res)
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    rows = [
        [
            r["name"],
            "x".join(map(str, r["tiling"] or [])),
            r["dataflow"],
            r["ooo_latency"],
            r["static_latency"],
            _ratio(r["static_latency"], r["ooo_latency"]),
            r["ooo_transfer_bytes"],
            r["static_transfer_bytes"],
            _ratio(r["static_transfer_bytes"], r["ooo_transfer_bytes"]),
        ]
        for r in out["layers"]
    ]
    head = ["layer", "tiling", "dataflow", "OoO cyc", "static cyc", "speedup"]
    print(tabulate(rows, headers=[*head, "OoO bytes", "static bytes", "reduction"]))
    t = out["total"]
    print(
        f"\n{res.network} on {res.arch} ({res.settings.n_npus} NPUs, "
        f"{res.settings.capacity // 1024} KiB, {res.settings.bandwidth:g} B/cycle): "
        f"speed-up {t['speedup']:.2f}x, transfer reduction {t['transfer_reduction']:.2f}x; "
        f"{res.distinct} distinct layers searched in {res.search_seconds:.1f} s "
        f"(OoO: flexer-{args.scheduler})"
        + (f"; {out['verified_schedules']} schedules verified" if not args.no_verify else "")
        + (f"; not tiled: {', '.join(res.skipped)}" if res.skipped else "")
    )
    if not res.complete:
        cut = [r.name for r in res.layers if not r.complete]
        print(
            f"time limit of {args.time_limit:g} s reached: the best found so far for "
            f"{len(cut)} layers ({', '.join(cut[:5])}{', ...' if len(cut) > 5 else ''}); "
            "not a complete search"
        )
    return 0


def _ratio(a: float | None, b: float | None) -> str:
    return "" if not a or not b else f"{a / b:.2f}x"
