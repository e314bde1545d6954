"""Certify TSO's enumeration with the exact CP-SAT model: ``python -m npusched.bench.tso_exact``.

For every ``conv``/``fc`` layer of the networks (default: LeNet, ResNet-50, MobileNetV2,
SqueezeNet, InceptionV3, YOLOv2) on ``tso-nmp-16`` with the burst model, the enumeration's best
tiling (:func:`npusched.heuristics.tiling.search.search_tso_layer`) is compared with the optimum of
:func:`npusched.formulations.tiling.exact.solve_layer_cpsat` (integer tile sizes, exact
objective in cycles). Per network it prints:

* *proven equal*: CP-SAT returned optimal and its optimum equals the enumeration's, in cycles;
* *different*: CP-SAT's best differs from the enumeration's -- proven optimal and not equal, or
  any solution cheaper than the enumeration's. Must be 0 (otherwise one of the two is wrong; the
  layers are listed);
* *not proven*: the time limit stopped CP-SAT before it closed every (slicing, schedule) pair;
* the wall time of the exact solves and of the enumeration.

``--no-warm`` solves without the enumeration's warm start and ``--no-cutoff`` without the
incumbent's cutoff (together: each pair to its own optimum, an independent check);
``--warm-mode hint`` solves the warm start's pair hinted instead of by a cutoff; ``--space free``
lets :math:`T_M` be any fitting filter count instead of ``GetFilters``' and counts the layers
where that is strictly cheaper (expected > 0; those are not errors); ``--mip`` also solves the
one-binary-per-candidate model on HiGHS and checks it agrees.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from tabulate import tabulate

from npusched.arch import load_arch
from npusched.formulations.tiling.exact import solve_layer_cpsat, solve_layer_mip
from npusched.heuristics.tiling.search import conv_layers, search_tso_layer
from npusched.problem.tiling import TileChoice, TsoLayer, nmp_params
from npusched.verify.tiling import verify_tiling
from npusched.workload.zoo import load_network

NETWORKS = ("lenet", "resnet50", "mobilenetv2", "squeezenet", "inceptionv3", "yolov2")


def run_layer(layer: Any, shape: Any, arch: Any, args: argparse.Namespace) -> dict[str, Any]:
    """One layer: enumeration, exact model (and MIP); the comparison as a JSON-able row."""
    mhz = nmp_params(arch).freq_hz / 1e6
    t0 = time.perf_counter()
    lc = search_tso_layer(layer, shape, arch, args.model)
    t_enum = time.perf_counter() - t0
    enum_cycles = round(lc.objective_us * mhz)
    r = solve_layer_cpsat(
        layer,
        shape,
        arch,
        args.model,
        warm=None if args.no_warm else lc,
        time_limit=args.time_limit,
        threads=args.threads,
        seed=args.seed,
        space=args.space,
        use_cutoff=not args.no_cutoff,
        warm_mode=args.warm_mode,
    )
    obj = r.stats["objective_cycles"]
    proven = r.status.value == "optimal"
    if args.space == "free":
        # a superset of the enumerated space: cheaper is allowed, dearer is a bug
        different = obj is not None and (obj > enum_cycles if proven else False)
        improved = obj is not None and obj < enum_cycles
    else:
        different = obj is not None and (obj != enum_cycles if proven else obj < enum_cycles)
        improved = False
    row: dict[str, Any] = {
        "layer": layer.name,
        "op": layer.op,
        "enum_cycles": enum_cycles,
        "enum_choice": [lc.tle, lc.tlt, lc.T_R, lc.T_C, lc.T_N, lc.T_M],
        "exact_cycles": obj,
        "exact_bound_cycles": r.stats["bound_cycles"],
        "exact_choice": r.stats["choice"],
        "status": r.status.value,
        "equal": proven and obj == enum_cycles,
        "different": different,
        "improved": improved,
        "exact_s": r.runtime_s,
        "enum_s": t_enum,
    }
    if isinstance(r.solution, TileChoice) and obj is not None:
        problem = TsoLayer.from_layer(layer, shape, arch, args.model)
        row["reevaluated"] = verify_tiling(problem, r.solution, obj).ok
    if args.mip:
        mip = solve_layer_mip(layer, shape, arch, args.model, threads=1)
        row["mip_status"] = mip.status.value
        row["mip_cycles"] = mip.stats["objective_cycles"]
        row["mip_agrees"] = mip.stats["objective_cycles"] == enum_cycles
        row["mip_s"] = mip.runtime_s
    return row


def _summary(
    name: str, rows: list[dict[str, Any]], args: argparse.Namespace, total: dict[str, int]
) -> list[Any]:
    """One network's line of the table; adds its counts to ``total``."""
    n_eq = sum(r["equal"] for r in rows)
    n_diff = sum(r["different"] for r in rows)
    n_open = sum(r["status"] != "optimal" for r in rows)
    n_imp = sum(r["improved"] for r in rows)
    exact_s = sum(r["exact_s"] for r in rows)
    enum_s = sum(r["enum_s"] for r in rows)
    line: list[Any] = [name, len(rows), n_eq, n_diff, n_open]
    if args.space == "free":
        line.append(n_imp)
    line += [f"{exact_s:.1f}", f"{max(r['exact_s'] for r in rows):.2f}", f"{enum_s:.1f}"]
    if args.mip:
        line.append(sum(bool(r["mip_agrees"]) for r in rows))
    for key, val in zip(
        ("layers", "equal", "different", "open", "improved"),
        (len(rows), n_eq, n_diff, n_open, n_imp),
        strict=True,
    ):
        total[key] += val
    return line


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.tso_exact``: :func:`run_layer` on every ``conv``/``fc``
    layer of ``--networks`` on ``--arch``, print the settings, the table per network and the
    totals of the module docstring, and one ``MISMATCH`` line per layer in error; ``--json``
    gets every layer's row, ``-v`` prints one line per layer as it goes.

    Parameters
    ----------
    argv
        The options of the module docstring (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0, or 1 when some layer's exact optimum differs from the enumeration's,
        the exact tiling does not re-evaluate to its objective, or (``--mip``) the MIP
        disagrees with the enumeration.
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.tso_exact", description=__doc__)
    p.add_argument("--arch", default="tso-nmp-16")
    p.add_argument("--networks", default=",".join(NETWORKS), help="comma-separated zoo names")
    p.add_argument("--model", default="burst", choices=("burst", "noburst"))
    p.add_argument("--time-limit", type=float, default=10.0, help="CP-SAT seconds per layer")
    p.add_argument("--threads", type=int, default=2, help="CP-SAT workers")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--space", default="tso", choices=("tso", "free"))
    p.add_argument("--no-warm", action="store_true", help="no hint from the enumeration")
    p.add_argument("--no-cutoff", action="store_true", help="solve every pair to its optimum")
    p.add_argument(
        "--warm-mode",
        default="cutoff",
        choices=("cutoff", "hint"),
        help="prove the warm pair by a cutoff (default) or solve it hinted",
    )
    p.add_argument("--mip", action="store_true", help="also solve the candidate MIP (HiGHS)")
    p.add_argument("--json", help="write every layer's row to this file")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per layer")
    args = p.parse_args(argv)
    arch = load_arch(args.arch)
    table, everything = [], {}
    total = {"layers": 0, "equal": 0, "different": 0, "open": 0, "improved": 0}
    bad: list[str] = []
    for name in args.networks.split(","):
        net = load_network(name)
        rows = []
        for layer, shape in conv_layers(net):
            row = run_layer(layer, shape, arch, args)
            rows.append(row)
            if (
                row["different"]
                or row.get("reevaluated") is False
                or row.get("mip_agrees") is False
            ):
                bad.append(f"{name}/{row['layer']}: {json.dumps(row)}")
            if args.verbose:
                print(
                    f"{name:12s} {row['layer']:28s} {row['status']:9s} enum={row['enum_cycles']} "
                    f"exact={row['exact_cycles']} bound={row['exact_bound_cycles']} "
                    f"{row['exact_s']:.2f}s",
                    flush=True,
                )
        everything[name] = rows
        table.append(_summary(name, rows, args, total))
    headers = ["network", "layers", "proven equal", "different", "not proven"]
    if args.space == "free":
        headers.append("free T_M cheaper")
    headers += ["exact total (s)", "exact max (s)", "enum total (s)"]
    if args.mip:
        headers.append("MIP agrees")
    print(
        f"arch={args.arch} model={args.model} space={args.space} time_limit={args.time_limit}s "
        f"threads={args.threads} warm={'no' if args.no_warm else 'yes'} "
        f"cutoff={'no' if args.no_cutoff else 'yes'} warm_mode={args.warm_mode}"
    )
    print(tabulate(table, headers=headers))
    print(
        f"\nall: {total['layers']} layers, {total['equal']} proven equal, "
        f"{total['different']} different, {total['open']} not proven"
        + (f", {total['improved']} cheaper with free T_M" if args.space == "free" else "")
    )
    for b in bad:
        print("MISMATCH", b)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(everything, fh, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
