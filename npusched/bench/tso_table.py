"""TSO's Table I with this package's model: ``python -m npusched.bench.tso_table``.

Sousa et al., "Tensor Slicing and Optimization for Multicore NPUs" (seed
``004_442fbcc29e97fffd.txt``), Table I: execution time (µs) of each model's convolutions on the
NMP with TSO-burst, TSO-noburst, each TLE slicing fixed (Fig. 12) and each TLT schedule fixed
(Fig. 13). Here every column comes from one exhaustive pass per layer
(:func:`npusched.heuristics.tiling.search.combo_bests`, all 9 slicing × schedule pairs under both
DRAM
models); every time is the burst model's (:mod:`npusched.problem.tiling`), as Table I's are measured
on the board.

The absolute times cannot match: the paper measures a board (RISC-V software, a DMA engine per
TLE, a measured 192 GMAC/s roof, Fig. 11) and its "YOLO" is a license-plate detector with
102×102 to 416×416 inputs, not YOLOv2. What is compared are the orderings the paper states: TSO
is fastest in every row (§VI: "TSO always produces the shortest execution"), TSO-burst beats
TSO-noburst (Fig. 8: by 7.4 % to 21.7 %), and which fixed strategy is best or worst.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from typing import Any

from tabulate import tabulate

from npusched.arch import load_arch
from npusched.common.parallel import map_layers
from npusched.heuristics.tiling.search import choice_from_bests, combo_bests, conv_layers
from npusched.workload.zoo import load_network

#: (zoo name, name in Table I)
NETWORKS = (
    ("lenet", "LeNet"),
    ("resnet50", "ResNet-50"),
    ("mobilenetv2", "MobileNetV2"),
    ("squeezenet", "SqueezeNet"),
    ("inceptionv3", "InceptionV3"),
    ("yolov2", "YOLO"),
)
#: Table I columns: (label, model, fixed TLE, fixed TLT)
COLUMNS = (
    ("burst", "burst", None, None),
    ("noburst", "noburst", None, None),
    ("KS", "burst", "KS", None),
    ("KS&OFM", "burst", "KS&OFM", None),
    ("OFM", "burst", "OFM", None),
    ("IS", "burst", None, "IS"),
    ("OS", "burst", None, "OS"),
    ("WS", "burst", None, "WS"),
)
#: TSO Table I, µs (Burst, No Burst, KS, KS&OFM, OFM, IS, OS, WS).
PAPER = {
    "InceptionV3": (72686, 88478, 82370, 81367, 91408, 73706, 93731, 101641),
    "LeNet": (199, 231, 202, 224, 231, 199, 233, 228),
    "MobileNetV2": (14030, 15470, 17765, 16696, 17571, 14084, 17387, 15155),
    "ResNet-50": (55927, 62375, 62077, 63118, 78844, 59714, 71905, 77535),
    "SqueezeNet": (12504, 13713, 16579, 14134, 12993, 12908, 15840, 13452),
    "YOLO": (53271, 57225, 56591, 55713, 63550, 68530, 58592, 55375),
}
#: Fig. 9: LOAD+STORE share of the TSO-noburst time, from 51.83 % (InceptionV3) to 83.80 % (LeNet).
PAPER_FIG9 = {"InceptionV3": 51.83, "LeNet": 83.80}
LABELS = [c[0] for c in COLUMNS]
TLE_COLS, TLT_COLS = ("KS", "KS&OFM", "OFM"), ("IS", "OS", "WS")


def network_row(zoo: str, arch_name: str, workers: int | None = None) -> dict[str, Any]:
    """All Table I columns for one network: totals (µs), layers that fell back to the free
    search per fixed column, the noburst LOAD+STORE share, and the search time."""
    arch = load_arch(arch_name)
    net = load_network(zoo)
    layers = conv_layers(net)
    t0 = time.perf_counter()
    bests = map_layers(
        combo_bests,
        [(ly, sh, arch) for ly, sh in layers],
        workers=workers,
        weights=[sh[0] * sh[1] * sh[2] for _, sh in layers],
    )
    seconds = time.perf_counter() - t0
    totals: dict[str, float] = {}
    fallback: dict[str, int] = {}
    load_store = 0.0
    for label, model, ftle, ftlt in COLUMNS:
        tot, fb = 0.0, 0
        for (ly, sh), b in zip(layers, bests, strict=True):
            ch = choice_from_bests(ly, sh, arch, b, model, ftle, ftlt)
            tot += ch.time_us
            fb += ch.fallback
            if label == "noburst":
                load_store += ch.time.load_us + ch.time.store_us
        totals[label], fallback[label] = tot, fb
    return {
        "network": zoo,
        "layers": len(layers),
        "totals_us": totals,
        "fallback_layers": fallback,
        "noburst_load_store_pct": 100 * load_store / totals["noburst"],
        "search_seconds": seconds,
    }


def _argmins(d: Mapping[str, float], keys: tuple[str, ...]) -> list[str]:
    """The keys with the smallest value (ties within 1e-9 relative)."""
    lo = min(d[k] for k in keys)
    return [k for k in keys if d[k] <= lo * (1 + 1e-9)]


def checks(rows: list[dict[str, Any]]) -> list[tuple[str, bool, str]]:
    """The paper's orderings, each as (claim, holds here, detail)."""
    out: list[tuple[str, bool, str]] = []
    by = {name: r for (zoo, name), r in zip(NETWORKS, rows, strict=True)}
    for name, r in by.items():
        t = r["totals_us"]
        worse = [c for c in LABELS[1:] if t[c] < t["burst"] - 1e-9]
        out.append(
            (
                f"{name}: TSO-burst <= every other column (Table I)",
                not worse,
                "ok" if not worse else f"beaten by {worse}",
            )
        )
    speed = {n: r["totals_us"]["noburst"] / r["totals_us"]["burst"] for n, r in by.items()}
    for n, s in speed.items():
        p = PAPER[n][1] / PAPER[n][0]
        out.append(
            (
                f"{n}: TSO-burst faster than TSO-noburst (Fig. 8)",
                s > 1,
                f"speed-up {100 * (s - 1):.1f} % (paper {100 * (p - 1):.1f} %)",
            )
        )
    for n, r in by.items():
        paper = dict(zip(LABELS, PAPER[n], strict=True))
        ours = r["totals_us"]
        for group, name in ((TLE_COLS, "TLE slicing"), (TLT_COLS, "TLT schedule")):
            a, b = _argmins(ours, group), _argmins(paper, group)
            out.append(
                (
                    f"{n}: best fixed {name} is {'='.join(b)} (Table I)",
                    bool(set(a) & set(b)),
                    f"ours {'='.join(a)}",
                )
            )
    for col in LABELS[2:]:
        ours = max(by, key=lambda n: by[n]["totals_us"][col] / by[n]["totals_us"]["burst"])
        paper_n = max(PAPER, key=lambda n: PAPER[n][LABELS.index(col)] / PAPER[n][0])
        out.append(
            (
                f"largest TSO gain over fixed {col} is on {paper_n} (Fig. 12/13)",
                ours == paper_n,
                f"ours {ours}",
            )
        )
    return out


def render(rows: list[dict[str, Any]], arch: str) -> str:
    """The table (ours and the paper's, absolute and relative to TSO-burst) and the checks."""
    lines = [f"TSO Table I on {arch}: conv+fc time in us (burst model), ours / paper"]
    body = []
    for (_, name), r in zip(NETWORKS, rows, strict=True):
        t = r["totals_us"]
        body.append([name, "ours", *(round(t[c], 1) for c in LABELS)])
        body.append(["", "paper", *PAPER[name]])
    lines.append(tabulate(body, headers=["model", "", *LABELS]))
    lines.append("\nRelative to TSO-burst (1.000 = as fast as TSO)")
    rel = []
    for (_, name), r in zip(NETWORKS, rows, strict=True):
        t = r["totals_us"]
        rel.append([name, "ours", *(f"{t[c] / t['burst']:.3f}" for c in LABELS)])
        rel.append(["", "paper", *(f"{v / PAPER[name][0]:.3f}" for v in PAPER[name])])
    lines.append(tabulate(rel, headers=["model", "", *LABELS]))
    lines.append("\nLayers with no feasible candidate under the fixed strategy (free search used)")
    fb = [
        [name, *(r["fallback_layers"][c] for c in LABELS[2:])]
        for (_, name), r in zip(NETWORKS, rows, strict=True)
    ]
    lines.append(tabulate(fb, headers=["model", *LABELS[2:]]))
    lines.append("\nFig. 9: LOAD+STORE share of the TSO-noburst time")
    for (_, name), r in zip(NETWORKS, rows, strict=True):
        paper = PAPER_FIG9.get(name)
        lines.append(
            f"  {name:12s} {r['noburst_load_store_pct']:6.2f} %"
            + (f"   (paper {paper:.2f} %)" if paper is not None else "")
        )
    lines.append("\nThe paper's orderings")
    res = checks(rows)
    for claim, ok, detail in res:
        lines.append(f"  [{'holds' if ok else 'FAILS'}] {claim}: {detail}")
    n_ok = sum(ok for _, ok, _ in res)
    lines.append(f"\n{n_ok}/{len(res)} orderings hold")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.tso_table``: :func:`network_row` for each network of
    :data:`NETWORKS` on ``--arch`` (``--workers`` parallel layer searches), print
    :func:`render`, and with ``--json`` write the rows beside the paper's figures.

    Parameters
    ----------
    argv
        ``[--arch NAME] [--workers N] [--json FILE]`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0, also when some ordering of the paper fails (the output says which).
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.tso_table", description=__doc__)
    p.add_argument("--arch", default="tso-nmp-16")
    p.add_argument("--workers", type=int, help="parallel layer searches (default: all cores)")
    p.add_argument("--json", help="also write the rows as JSON here")
    args = p.parse_args(argv)
    rows = [network_row(zoo, args.arch, args.workers) for zoo, _ in NETWORKS]
    print(render(rows, args.arch))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"arch": args.arch, "rows": rows, "paper": PAPER}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
