"""Where Flexer's out-of-order scheduling pays (issue 25, item 2): ``python -m
npusched.bench.flexer_sweep``.

    python -m npusched.bench.flexer_sweep [--networks vgg16,resnet50,yolov2]
        [--costs analytic,zigzag] [--npus 2,4] [--buffers 128,256,512,1024]
        [--dram 4,8,16,32,64] [--scheduler ooo|beam] [--max-ops 256] [--workers 2]
        [--json rows.json] [--plot flexer-sweep.png] [--doc FILE.md]

Flexer's Table 1 varies three things of its multi-NPU: the NPUs (2, 4), the global buffer (256,
512 KiB) and the DRAM bandwidth (32, 64). This sweep widens each axis: for every network, intra-
core cost model (``--costs``), NPU count, buffer (KiB) and bandwidth (bytes/cycle), it runs the
out-of-order and the best static search of every dense conv and fc layer
(:func:`~npusched.methods.flexer.search_network` on arch5's NPU with the three replaced,
:func:`sweep_settings`) and reports the end-to-end ratios of Fig. 8: speed-up ``Σ static
latency / Σ OoO latency`` and transfer reduction ``Σ static bytes / Σ OoO bytes`` over the layers
both searches schedule. Every chosen schedule is verified
(:func:`~npusched.methods.flexer.verify_choices`).

The output is a table (one row per cell), one heat map per network × cost model with a panel
per NPU count (:func:`~npusched.plot.flexer_sweep.sweep_heatmaps`: buffer × bandwidth, the
speed-up in colour, both ratios written in each cell), and the cells where the speed-up reaches
``--regime`` (default 1.2, the low end of the paper's 1.2–1.67×). The full grid is 240 network
searches; at the default ``--max-ops 256`` one search of ResNet-50 takes minutes on 2 cores, so
the whole sweep is a run of hours. ``--max-ops`` and fewer values make it shorter.

A sweep value that is not a positive number, an unknown network or cost model is a one-line
error, exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import sys
import time
from pathlib import Path
from typing import Any

from tabulate import tabulate

from npusched.arch import load_arch
from npusched.bench.doc import publish
from npusched.common.errors import InputError
from npusched.common.jsonio import write_json
from npusched.methods.flexer import search_network, verify_choices
from npusched.plot.flexer_sweep import sweep_heatmaps
from npusched.problem.flexer.settings import Settings
from npusched.workload.zoo import load_network

BASE_ARCH = "flexer-arch5"
"""The NPU every cell uses (Flexer Table 1: 32×32 PEs at 1 GHz); the sweep replaces its NPU
count, buffer and DRAM bandwidth."""

COSTS = ("analytic", "zigzag", "compute")


def sweep_settings(base: Settings, npus: int, buffer_kib: float, dram: float) -> Settings:
    """``base`` with ``npus`` NPUs, a global buffer of ``buffer_kib`` KiB and ``dram`` bytes
    per cycle off chip (the three fields of Flexer's Table 1)."""
    return dataclasses.replace(
        base, n_npus=npus, capacity=round(buffer_kib * 1024), bandwidth=float(dram)
    )


def sweep_cell(net_name: str, settings: Settings, workers: int, kinds: tuple[str, ...]
               ) -> dict[str, Any]:  # fmt: skip
    """One cell of the sweep: the OoO and static searches of ``net_name`` under ``settings``,
    their end-to-end ratios (``None`` when no layer has both schedules: every tiling of each
    layer overflows the buffer) and how many chosen schedules verified.

    Raises
    ------
    RuntimeError
        A chosen schedule fails verification.
    """
    res = search_network(load_network(net_name), settings, kinds=kinds, workers=workers)
    tot = res.totals()
    none = not tot["compared_layers"]  # no layer both searches schedule: no ratio
    return {
        "network": net_name,
        "cost": settings.cost,
        "npus": settings.n_npus,
        "buffer_kib": settings.capacity / 1024,
        "dram": settings.bandwidth,
        "compared": int(tot["compared_layers"]),
        "speedup": None if none else round(tot["speedup"], 4),
        "transfer_reduction": None if none else round(tot["transfer_reduction"], 4),
        "verified": verify_choices(res),
        "search_s": round(res.search_seconds, 1),
    }


def regime(rows: list[dict[str, Any]], threshold: float) -> str:
    """One line per network × cost model naming the cells whose speed-up is at least
    ``threshold``, and the best cell (cells without a ratio left out)."""
    lines = []
    for (net, cost), group in itertools.groupby(rows, key=lambda r: (r["network"], r["cost"])):
        cells = [r for r in group if r["speedup"] is not None]
        hit = [r for r in cells if r["speedup"] >= threshold]
        where = "; ".join(_cell(r) for r in hit) or "none"
        line = f"- {net}, {cost}: speed-up ≥ {threshold} in {len(hit)} of {len(cells)} cells"
        line += f" ({where})"
        if cells:
            best = max(cells, key=lambda r: r["speedup"])
            line += f"; best {best['speedup']:.3f}× at {_cell(best)}"
        lines.append(line)
    return "\n".join(lines)


def _cell(r: dict[str, Any]) -> str:
    return f"{r['npus']} NPUs, {r['buffer_kib']:g} KiB, {r['dram']:g} B/cycle"


def positive_list(text: str, option: str) -> list[float]:
    """The comma-separated positive numbers of ``option``; a ValueError naming it otherwise."""
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{option}: {text!r} is not a list of numbers") from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise ValueError(f"{option}: every value must be a finite number > 0, got {text!r}")
    return values


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m npusched.bench.flexer_sweep",
                                 description=__doc__.split("\n\n")[0])  # fmt: skip
    ap.add_argument("--networks", default="vgg16,resnet50,yolov2")
    ap.add_argument("--costs", default="analytic,zigzag", help="intra-core cost models")
    ap.add_argument("--npus", default="2,4")
    ap.add_argument("--buffers", default="128,256,512,1024", help="global buffer sizes (KiB)")
    ap.add_argument("--dram", default="4,8,16,32,64", help="DRAM bandwidths (bytes/cycle)")
    ap.add_argument("--scheduler", choices=["ooo", "beam"], default="ooo",
                    help="the out-of-order search: flexer-ooo (the paper's greedy) or "
                    "flexer-beam")  # fmt: skip
    ap.add_argument("--max-ops", type=int, default=256, help="operations per tiling (0: all)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--regime", type=float, default=1.2, help="speed-up the summary looks for")
    ap.add_argument("--json", type=Path, help="write the rows to this file")
    ap.add_argument("--plot", default="flexer-sweep.png",
                    help="heat maps' PNG ('' for none; -NETWORK-COST added)")  # fmt: skip
    ap.add_argument("--doc", type=Path, help="write the table into this Markdown file")
    return ap.parse_args(argv)


def _grid(args: argparse.Namespace) -> tuple[list[str], list[str], list[list[float]]]:
    """The networks, cost models and the three axes; a ValueError or InputError naming the
    first bad one."""
    nets = [x.strip() for x in args.networks.split(",") if x.strip()]
    costs = [x.strip() for x in args.costs.split(",") if x.strip()]
    bad = [c for c in costs if c not in COSTS]
    if bad or not costs:
        raise ValueError(f"--costs: unknown cost model {bad[0] if bad else ''!r}; choose from "
                         f"{', '.join(COSTS)}")  # fmt: skip
    axes = [positive_list(args.npus, "--npus"), positive_list(args.buffers, "--buffers"),
            positive_list(args.dram, "--dram")]  # fmt: skip
    if any(n != int(n) for n in axes[0]):
        raise ValueError(f"--npus: NPU counts must be whole numbers, got {args.npus!r}")
    if args.max_ops < 0 or args.workers < 1 or args.regime <= 0:
        raise ValueError("--max-ops must be >= 0, --workers >= 1 and --regime > 0")
    for name in nets:
        load_network(name)
    return nets, costs, axes


def main(argv: list[str] | None = None) -> int:
    """Run the sweep of the module docstring; print each cell as it ends, then the table and
    the regime summary (``--doc`` also writes them into a Markdown file's ``tables`` block).

    Returns
    -------
    int
        0, or 2 with a one-line error for a bad sweep value, network or cost model.
    """
    args = _parse(argv)
    try:
        nets, costs, (npus, buffers, drams) = _grid(args)
    except (InputError, ValueError) as err:
        print(f"error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    arch = load_arch(BASE_ARCH)
    kinds = (args.scheduler, "static")
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for net, cost in itertools.product(nets, costs):
        base = Settings.from_arch(arch, cost=cost, max_ops=args.max_ops)
        for n, kib, bw in itertools.product(npus, buffers, drams):
            rows.append(sweep_cell(net, sweep_settings(base, int(n), kib, bw), args.workers,
                                   kinds))  # fmt: skip
            print(tabulate([rows[-1]], headers="keys"), flush=True)
            if args.json:
                write_json(args.json, rows)  # whole or not at all
        if args.plot:
            path = sweep_heatmaps([r for r in rows if (r["network"], r["cost"]) == (net, cost)],
                                  _plot_path(args.plot, net, cost))  # fmt: skip
            print(f"wrote {path}", flush=True)
    head = (f"sweep: {len(rows)} cells in {time.perf_counter() - t0:.0f} s "
            f"(--scheduler {args.scheduler}, --max-ops {args.max_ops})")  # fmt: skip
    table = tabulate(rows, headers="keys", tablefmt="github")
    publish(f"{head}\n\n{table}\n\n{regime(rows, args.regime)}", args.doc)
    return 0


def _plot_path(plot: str, net: str, cost: str) -> Path:
    path = Path(plot)
    return path.with_name(f"{path.stem}-{net}-{cost}{path.suffix or '.png'}")


if __name__ == "__main__":
    raise SystemExit(main())
