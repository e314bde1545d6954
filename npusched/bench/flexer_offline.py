"""Offline residency bound against Belady for fixed Flexer orders:
``python -m npusched.bench.flexer_offline``.

For each layer and tiling (``net:layer:t_oc,t_oh,t_ow,t_ic``) and each NPU count ``n``, the order
is the operations in index order (``C`` innermost) cut into consecutive sets of ``n``
(:func:`~npusched.problem.flexer.residency.index_order`). With a global buffer of
``--capacity`` KiB it prints the mandatory bytes (every tile moved once), Belady's bytes (farthest
next use evicted first, no contiguity), the offline model's best bytes and proven bound
(:func:`~npusched.formulations.flexer.offline.offline_bound`), the bound's source, how far
Belady is above the bound, and the solver time. ``--contiguous`` also solves the CP-SAT model
with fixed addresses (NoOverlap2D). A set whose own tiles exceed the buffer is listed as
``does not fit``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from tabulate import tabulate

from npusched.formulations.flexer.offline import BACKENDS
from npusched.heuristics.flexer.residency import belady_bytes
from npusched.methods.registry import solve
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.layer import TiledConv
from npusched.problem.flexer.residency import ResidencyProblem, index_order, use_gaps
from npusched.workload.zoo import load_network

KIB = 1024
#: Default layers and tilings ``net:layer:t_oc,t_oh,t_ow,t_ic`` (16 to 512 steps).
LAYERS = (
    "vgg16:conv3_2:64,14,14,64",
    "vgg16:conv4_2:64,14,14,64",
    "vgg16:conv5_1:64,7,7,64",
    "resnet50:layer1.0.conv2:16,8,8,16",
    "resnet50:layer3.0.conv2:64,7,7,64",
    "vgg16:conv3_2:32,14,14,32",
)


def load_layer(spec: str, unroll: dict[str, int]) -> TiledConv:
    """The tiled layer of ``net:layer:t_oc,t_oh,t_ow,t_ic``.

    Raises
    ------
    ValueError
        A malformed spec or an unknown layer.
    """
    try:
        net_name, layer_name, tiles = spec.split(":")
        t = tuple(int(v) for v in tiles.split(","))
    except ValueError as err:
        raise ValueError(f"layer spec {spec!r} is not net:layer:t_oc,t_oh,t_ow,t_ic") from err
    if len(t) != 4:
        raise ValueError(f"layer spec {spec!r} needs four tile sizes")
    net = load_network(net_name)
    layer = next((x for x in net.layers if x.name == layer_name), None)
    if layer is None:
        raise ValueError(f"{net_name} has no layer {layer_name!r}")
    return tiled_conv(net, layer, t, unroll)


def _pct(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{100 * (a - b) / b:.2f}%"


def run(spec: str, n: int, args: argparse.Namespace, unroll: dict[str, int]) -> dict[str, Any]:
    """One (layer, n): Belady and the offline bound, as a JSON-able row."""
    problem = load_layer(spec, unroll)
    order = index_order(problem, n)
    capacity = args.capacity * KIB
    gaps = use_gaps(problem, order)
    row: dict[str, Any] = {
        "layer": spec,
        "n": n,
        "ops": problem.n_ops,
        "steps": gaps.n_steps,
        "tiles": problem.n_data,
        "gaps": gaps.n_gaps,
        "peak": int(gaps.demand.max()),
        "mandatory": gaps.mandatory,
    }
    if row["peak"] > capacity:
        row["status"] = "does not fit"
        return row
    t0 = time.perf_counter()
    row["belady"] = belady_bytes(problem, order, capacity)
    row["belady_s"] = time.perf_counter() - t0
    bounded = ResidencyProblem(problem, order, capacity)
    kw = {"time_limit": args.time_limit, "threads": args.threads, "seed": args.seed}
    r = solve(bounded, "flexer-offline", args.backend, **kw)
    row |= {
        "status": r.status.value,
        "objective": r.objective,
        "bound": r.bound,
        "bound_source": r.stats["bound_source"],
        "variables": r.stats.get("variables"),
        "rows": r.stats.get("rows"),
        "runtime_s": r.runtime_s,
        "message": r.message,
    }
    if args.contiguous:
        c = solve(bounded, "flexer-offline", "cpsat", contiguous=True, **kw)
        row |= {
            "contiguous_status": c.status.value,
            "contiguous_objective": c.objective,
            "contiguous_bound": c.bound,
            "contiguous_hint": c.stats["hint_bytes"],
            "contiguous_s": c.runtime_s,
        }
    return row


def main(argv: list[str] | None = None) -> int:
    """Run the comparison of the module docstring on ``argv`` (the command line when ``None``)
    and print its table; ``--json FILE`` also writes every row.

    Returns
    -------
    int
        0, or 1 when a model ended in an error.
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.flexer_offline", description=__doc__)
    p.add_argument(
        "--layers", nargs="+", default=list(LAYERS), help="net:layer:t_oc,t_oh,t_ow,t_ic ..."
    )
    p.add_argument("--npus", default="2,4", help="comma-separated set sizes n")
    p.add_argument("--capacity", type=int, default=256, help="global buffer in KiB")
    p.add_argument("--backend", default="highs", choices=BACKENDS)
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--unroll", default="K=32,C=32", help="NPU unrolling of the cost model")
    p.add_argument("--contiguous", action="store_true", help="also solve the NoOverlap2D model")
    p.add_argument("--json", help="write every row to this file")
    args = p.parse_args(argv)
    unroll = {k: int(v) for k, v in (kv.split("=") for kv in args.unroll.split(","))}
    rows = []
    for spec in args.layers:
        for n in (int(v) for v in args.npus.split(",")):
            rows.append(run(spec, n, args, unroll))
    table = []
    for r in rows:
        line = [r["layer"], r["n"], r["steps"], r["gaps"], r["mandatory"]]
        if r["status"] == "does not fit":
            line += ["-", "-", "-", "-", "-", "-", f"does not fit (peak {r['peak']} B)", "-"]
        else:
            bound = "-" if r["bound"] is None else f"{r['bound']:.0f} ({r['bound_source']})"
            line += [
                f"{r['variables']}/{r['rows']}",
                r["belady"],
                r["objective"],
                bound,
                _pct(r["belady"], r["bound"]),
                _pct(r["objective"], r["bound"]),
                r["status"],
                f"{r['runtime_s']:.2f}",
            ]
        if args.contiguous:
            line += [r.get("contiguous_objective"), r.get("contiguous_status")]
        table.append(line)
    headers = ["layer", "n", "steps", "use gaps", "mandatory B", "vars/rows", "Belady B"]
    headers += ["best B", "bound B", "Belady over bound", "best over bound", "status", "time (s)"]
    if args.contiguous:
        headers += ["contiguous B", "contiguous status"]
    print(
        f"capacity={args.capacity} KiB backend={args.backend} time_limit={args.time_limit}s "
        f"threads={args.threads} order=index order in sets of n"
    )
    print(tabulate(table, headers=headers))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    errors = [r for r in rows if r["status"] == "error"]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
