"""Where Flexer's out-of-order scheduling pays (issue 25, item 2): ``python -m
npusched.bench.flexer_sweep``.

    python -m npusched.bench.flexer_sweep [--networks vgg16,resnet50,yolov2]
        [--costs analytic,zigzag] [--npus 2,4] [--buffers 128,256,512,1024]
        [--dram 4,8,16,32,64] [--scheduler ooo|beam|lns] [--max-ops 256] [--workers 2]
        [--lpf-limit 6]
        [--json rows.json] [--resume a.json,b.json] [--plot flexer-sweep.png] [--doc FILE.md]

Flexer's Table 1 varies three things of its multi-NPU: the NPUs (2, 4), the global buffer (256,
512 KiB) and the DRAM bandwidth (32, 64). This sweep widens each axis: for every network, intra-
core cost model (``--costs``), NPU count, buffer (KiB) and bandwidth (bytes/cycle), it runs the
out-of-order and the best static search of every dense conv and fc layer
(:func:`~npusched.methods.flexer.search_network` on arch5's NPU with the three replaced,
:func:`sweep_arch`) and reports the end-to-end ratios of Fig. 8: speed-up ``Σ static
latency / Σ OoO latency`` and transfer reduction ``Σ static bytes / Σ OoO bytes`` over the layers
both searches schedule, and the same over one layer set per network and cost model, the layers
every cell compares (:func:`common_ratios`: a small buffer leaves some layers without a tiling
that fits, so a cell's own ratios are over fewer layers). Every chosen schedule is verified
(:func:`~npusched.methods.flexer.verify_choices`).

The output is a table (one row per cell), one heat map per network × cost model with a panel
per NPU count (:func:`~npusched.plot.flexer_sweep.sweep_heatmaps`: buffer × bandwidth, the
speed-up in colour, both ratios written in each cell), and the cells where the speed-up reaches
``--regime`` (default 1.2, the low end of the paper's 1.2–1.67×). The full grid is 240 network
searches; at the default ``--max-ops 256`` one search of ResNet-50 takes minutes on 2 cores, so
the whole sweep is a run of hours. ``--max-ops`` and fewer values make it shorter, and
``--resume`` takes the cells an earlier run has written (``--json``) from its rows instead of
searching them again: a sweep stopped half-way goes on where it stopped, and parts of the grid
run on several machines are joined into one table and one heat map (:func:`earlier_rows`).

With ``--costs zigzag`` every distinct tile shape costs one ZigZag call (cached on disk, one
answer for every buffer share that holds the tile). ``--lpf-limit`` sets LOMA's loop prime
factor limit: ZigZag's default 6, or 3, which gave the same latency on 103 of 103 tile shapes
drawn from VGG16's sweep, in 58 % of the time (:mod:`npusched.bench.zigzag_lpf`).

A sweep value that is not a positive number, an unknown network or cost model, or a
``--resume`` file that is not a list of sweep rows is a one-line error, exit 2.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tabulate import tabulate

from npusched.arch import Arch, arch_from_dict, arch_to_dict, load_arch
from npusched.bench.doc import publish
from npusched.common.errors import InputError
from npusched.common.jsonio import read_json, write_json
from npusched.methods.flexer import OOO_KINDS, figures, search_network, verify_choices
from npusched.plot.flexer_sweep import sweep_heatmaps
from npusched.problem.flexer.settings import Settings
from npusched.workload.zoo import load_network

BASE_ARCH = "flexer-arch5"
"""The NPU every cell uses (Flexer Table 1: 32×32 PEs at 1 GHz); the sweep replaces its NPU
count, buffer and DRAM bandwidth."""

COSTS = ("analytic", "zigzag", "compute")

CELL = ("network", "cost", "npus", "buffer_kib", "dram", "scheduler", "max_ops")
"""The fields that name a cell of the sweep and what was run in it (:func:`earlier_rows`)."""

ROW_FIELDS = (*CELL, "compared", "speedup", "transfer_reduction", "verified", "layers")
"""The fields of a sweep row that a resumed run reads (:func:`earlier_rows`)."""


def sweep_arch(base: Arch, npus: int, buffer_kib: float, dram: float) -> Arch:
    """``base`` with ``npus`` copies of its first NPU, a global buffer of ``buffer_kib`` KiB and
    ``dram`` bytes per cycle off chip (the three fields of Flexer's Table 1): one architecture,
    so the search and the cost model see the same machine (ZigZag's SRAM per NPU is the
    buffer's share, :func:`~npusched.costmodel.zigzag_input.sram_bits`)."""
    d = arch_to_dict(base)
    d["cores"] = [{**d["cores"][0], "id": k, "name": f"npu{k}"} for k in range(npus)]
    d["shared_buffer_bytes"] = round(buffer_kib * 1024)
    d["dram"] = {"kind": "off-chip memory", "bandwidth_bytes_per_cycle": dram}
    d["name"] = f"{base.name}-{npus}npu-{buffer_kib:g}kib-{dram:g}bpc"
    return arch_from_dict(d)


def sweep_cell(net_name: str, arch: Arch, cost: str, max_ops: int, workers: int,
               kinds: tuple[str, ...], lpf_limit: int = 6) -> dict[str, Any]:  # fmt: skip
    """One cell of the sweep: the OoO and static searches of ``net_name`` on ``arch``, their
    end-to-end ratios over the layers both schedule (``None`` when none: every tiling of each
    layer overflows the buffer), how many chosen schedules verified, and each compared
    layer's ``[OoO latency, OoO bytes, static latency, static bytes]`` (``layers``, for the
    ratios over one layer set, :func:`common_ratios`).

    Raises
    ------
    RuntimeError
        A chosen schedule fails verification.
    """
    settings = Settings.from_arch(arch, cost=cost, max_ops=max_ops, lpf_limit=lpf_limit)
    res = search_network(load_network(net_name), settings, kinds=kinds, workers=workers)
    tot = res.totals()
    none = not tot["compared_layers"]  # no layer both searches schedule: no ratio
    layers = {}
    for r in res.layers:
        o, st = figures(r.ooo), figures(r.static)
        if o and st:
            layers[r.name] = [o["latency"], o["transfer_bytes"], st["latency"],
                              st["transfer_bytes"]]  # fmt: skip
    return {
        "network": net_name,
        "cost": cost,
        "npus": settings.n_npus,
        "buffer_kib": settings.capacity / 1024,
        "dram": settings.bandwidth,
        "compared": int(tot["compared_layers"]),
        "speedup": None if none else round(tot["speedup"], 4),
        "transfer_reduction": None if none else round(tot["transfer_reduction"], 4),
        "verified": verify_choices(res),
        "search_s": round(res.search_seconds, 1),
        "scheduler": kinds[0],
        "max_ops": max_ops,
        "lpf_limit": lpf_limit if cost == "zigzag" else None,
        "layers": layers,
    }


def cell_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """A row's cell and settings (:data:`CELL`) as one comparable key (numbers as floats, so
    2 and 2.0 NPUs are one cell), and for ZigZag's cells its ``lpf_limit`` (6 where a row
    does not say)."""
    key = tuple(row[k] if k in ("network", "cost", "scheduler") else float(row[k])
                for k in CELL)  # fmt: skip
    return (*key, float(row.get("lpf_limit") or 6) if row["cost"] == "zigzag" else None)


def earlier_rows(paths: list[Path]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The rows that earlier runs wrote with ``--json``, by :func:`cell_key`; the last file
    wins where two hold the same cell. An :class:`~npusched.common.errors.InputError` names
    a file that cannot be read or holds anything but a list of sweep rows (``_is_row``)."""
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in paths:
        rows = read_json(path)
        if not isinstance(rows, list) or not all(map(_is_row, rows)):
            raise InputError(path, "(--resume)", "not a list of sweep rows as --json writes "
                             f"them (fields {', '.join(ROW_FIELDS)})")  # fmt: skip
        found.update((cell_key(r), r) for r in rows)
    return found


def _is_row(r: Any) -> bool:
    """Whether ``r`` has a sweep row's fields with their types: names as strings, numbers as
    numbers (the two ratios may be ``None``), ``layers`` as name → four positive figures."""

    def num(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)

    if not isinstance(r, dict) or not set(ROW_FIELDS) <= r.keys():
        return False
    names = all(isinstance(r[k], str) for k in ("network", "cost", "scheduler"))
    numbers = all(num(r[k]) for k in ("npus", "buffer_kib", "dram", "max_ops", "compared",
                                      "verified"))  # fmt: skip
    ratios = all(r[k] is None or num(r[k]) for k in ("speedup", "transfer_reduction"))
    layers = isinstance(r["layers"], dict) and all(
        isinstance(f, list) and len(f) == 4 and all(num(x) and x > 0 for x in f)
        for f in r["layers"].values()
    )
    return names and numbers and ratios and layers


def common_ratios(rows: list[dict[str, Any]]) -> None:
    """Add to each row the ratios over its network × cost model's *common* layers, those every
    cell of the group compares (``common``, ``common_speedup``, ``common_reduction``;
    ``None`` without such a layer): a cell's own ratios are over the layers it can schedule,
    which shrink with the buffer, so only these compare across the map."""
    for _, group in itertools.groupby(rows, key=lambda r: (r["network"], r["cost"])):
        cells = list(group)
        common = set.intersection(*(set(r["layers"]) for r in cells))
        for r in cells:
            figs = [r["layers"][name] for name in sorted(common)]
            r["common"] = len(figs)
            tot = np.array(figs, float).sum(axis=0) if figs else None
            r["common_speedup"] = None if tot is None else round(tot[2] / tot[0], 4)
            r["common_reduction"] = None if tot is None else round(tot[3] / tot[1], 4)


def regime(rows: list[dict[str, Any]], threshold: float, key: str = "speedup") -> str:
    """One line per network × cost model naming the cells whose speed-up (the rows' ``key``)
    is at least ``threshold``, and the best cell (cells without a ratio left out)."""
    lines = []
    for (net, cost), group in itertools.groupby(rows, key=lambda r: (r["network"], r["cost"])):
        cells = [r for r in group if r.get(key) is not None]
        hit = [r for r in cells if r[key] >= threshold]
        where = "; ".join(_cell(r) for r in hit) or "none"
        line = f"- {net}, {cost}: {key} ≥ {threshold} in {len(hit)} of {len(cells)} cells"
        line += f" ({where})"
        if cells:
            best = max(cells, key=lambda r: r[key])
            line += f"; best {best[key]:.3f}× at {_cell(best)}"
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
    ap.add_argument("--scheduler", choices=list(OOO_KINDS), default="ooo",
                    help="the out-of-order search: flexer-ooo (the paper's greedy), flexer-beam "
                    "or flexer-lns (the beam, re-timed for lns_seconds per layer)")  # fmt: skip
    ap.add_argument("--max-ops", type=int, default=256, help="operations per tiling (0: all)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--lpf-limit", type=int, default=6,
                    help="ZigZag: LOMA's loop prime factor limit (ZigZag's default 6)")
    ap.add_argument("--regime", type=float, default=1.2, help="speed-up the summary looks for")
    ap.add_argument("--json", type=Path, help="write the rows to this file")
    ap.add_argument("--resume", default="",
                    help="comma-separated --json files of earlier runs: their cells are taken "
                    "from them, not searched again")  # fmt: skip
    ap.add_argument("--plot", default="flexer-sweep.png",
                    help="heat maps' PNG ('' for none; -NETWORK-COST added)")  # fmt: skip
    ap.add_argument("--doc", type=Path, help="write the table into this Markdown file")
    ap.add_argument("--block", default="sweep", help="the --doc file's block to replace")
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
    if args.max_ops < 0 or args.workers < 1 or args.regime <= 0 or args.lpf_limit < 1:
        raise ValueError("--max-ops must be >= 0, --workers >= 1, --lpf-limit >= 1 and "
                         "--regime > 0")  # fmt: skip
    for name in nets:
        load_network(name)
    return nets, costs, axes


def main(argv: list[str] | None = None) -> int:
    """Run the sweep of the module docstring; print each cell as it ends, then the table and
    the regime summary (``--doc`` also writes them into a Markdown file's ``--block``, by default
    ``sweep``).

    Returns
    -------
    int
        0, or 2 with a one-line error for a bad sweep value, network or cost model.
    """
    args = _parse(argv)
    try:
        nets, costs, (npus, buffers, drams) = _grid(args)
        earlier = earlier_rows([Path(x.strip()) for x in args.resume.split(",") if x.strip()])
    except (InputError, ValueError) as err:
        print(f"error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    base = load_arch(BASE_ARCH)
    kinds = (args.scheduler, "static")
    rows: list[dict[str, Any]] = []
    resumed, t0 = 0, time.perf_counter()
    for net, cost in itertools.product(nets, costs):
        for n, kib, bw in itertools.product(npus, buffers, drams):
            cell = dict(zip(CELL, (net, cost, n, kib, bw, kinds[0], args.max_ops), strict=True))
            row = earlier.get(cell_key({**cell, "lpf_limit": args.lpf_limit}))
            if row is None:
                arch = sweep_arch(base, int(n), kib, bw)
                row = sweep_cell(net, arch, cost, args.max_ops, args.workers, kinds,
                                 args.lpf_limit)  # fmt: skip
            else:
                resumed += 1
            rows.append(row)
            print(tabulate([_shown(row)], headers="keys"), flush=True)
            if args.json:
                write_json(args.json, rows)  # whole or not at all
        common_ratios(rows)
        if args.json:
            write_json(args.json, rows)
        if args.plot:
            group = [r for r in rows if (r["network"], r["cost"]) == (net, cost)]
            paths = [sweep_heatmaps(group, _plot_path(args.plot, net, cost))]
            if group[0]["common"]:  # some layer every cell compares
                title = (f"{net}, {cost} cost model: OoO / static over the {group[0]['common']} "
                         "layers every cell compares (b: transfer reduction)")  # fmt: skip
                common = _plot_path(args.plot, net, f"{cost}-common")
                paths.append(sweep_heatmaps(group, common, title, "common_speedup",
                                            "common_reduction"))  # fmt: skip
            print(f"wrote {', '.join(map(str, paths))}", flush=True)
    head = (f"sweep: {len(rows)} cells, {len(rows) - resumed} searched in "
            f"{time.perf_counter() - t0:.0f} s and {resumed} taken from --resume "
            f"(--scheduler {args.scheduler}, --max-ops {args.max_ops}"
            f"{f', --lpf-limit {args.lpf_limit}' if 'zigzag' in costs else ''})")  # fmt: skip
    table = tabulate([_shown(r) for r in rows], headers="keys", tablefmt="github")
    lines = f"{regime(rows, args.regime)}\n{regime(rows, args.regime, 'common_speedup')}"
    publish(f"{head}\n\n{table}\n\n{lines}", args.doc, args.block)
    return 0


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the table shows it: without the per-layer figures and the settings that the
    table's head line gives."""
    return {k: v for k, v in row.items()
            if k not in ("layers", "scheduler", "max_ops", "lpf_limit")}  # fmt: skip


def _plot_path(plot: str, net: str, cost: str) -> Path:
    path = Path(plot)
    return path.with_name(f"{path.stem}-{net}-{cost}{path.suffix or '.png'}")


if __name__ == "__main__":
    raise SystemExit(main())
