"""LOMA's loop prime factor limit against ZigZag's answer, on the tiles the Flexer sweep asks
for: ``python -m npusched.bench.zigzag_lpf``.

    python -m npusched.bench.zigzag_lpf [--networks vgg16] [--sample 120] [--limits 3,6]
        [--max-ops 256] [--seed 0]

ZigZag's temporal-mapping search (LOMA) orders the prime factors of the loops the PE array does
not unroll; ``lpf_limit`` (ZigZag's default 6) caps how many factors it orders one by one, the
rest merged, so a lower limit tries fewer orderings: faster, and possibly a worse mapping. This
bench draws ``--sample`` distinct tile shapes (seeded) from the viable tilings the sweep
searches (:mod:`npusched.bench.flexer_sweep`: every dense layer of ``--networks``, tilings of
at most ``--max-ops`` operations whose tiles fit the buffer, arch5's NPU with 2 NPUs and 1 MiB,
so each holds a 512 KiB share), costs each under every limit with a fresh cache (every answer
is a real ZigZag call), and prints, per limit, on how many shapes its ``latency_total2`` equals
that of the largest limit, the largest relative difference and the seconds of its calls.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from npusched.arch import load_arch
from npusched.bench.flexer_sweep import BASE_ARCH, positive_list, sweep_arch
from npusched.costmodel import TileShape
from npusched.costmodel.zigzag import ZigZagCost
from npusched.heuristics.flexer.search import candidates
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.layer import supports
from npusched.problem.flexer.settings import Settings
from npusched.workload.zoo import load_network


def sweep_shapes(networks: list[str], settings: Settings) -> list[TileShape]:
    """The distinct tile shapes of every viable tiling of the networks' dense layers under
    ``settings`` (the sweep's tilings), in a fixed order."""
    seen: dict[tuple, TileShape] = {}

    def collect(shape: TileShape) -> int:
        seen.setdefault(shape.key(), shape)
        return 1

    for name in networks:
        net = load_network(name)
        for layer in (ly for ly in net.layers if supports(ly)):
            for _, tiles, _ in candidates(net, layer, settings):
                tiled_conv(net, layer, tiles, dict(settings.unroll), latency_of=collect)
    return [seen[k] for k in sorted(seen, key=repr)]


def compare(shapes: list[TileShape], limits: list[int], buffer_kib: float = 1024) -> list[dict]:
    """One row per limit: shapes costed, shapes whose ``latency_total2`` equals the largest
    limit's, the largest relative difference, seconds of ZigZag calls. A tile ZigZag rejects
    (too large for the share: the sweep never asks for it) or answers under no limit (the
    analytic fallback, no ``latency_total2``) is left out of every row; ``left_out`` counts
    them. ``buffer_kib`` is the whole global buffer, shared by the 2 NPUs."""
    arch = sweep_arch(load_arch(BASE_ARCH), 2, buffer_kib, 32)
    core = arch.cores[0]
    got: dict[int, list[float]] = {lim: [] for lim in limits}
    secs = dict.fromkeys(limits, 0.0)
    left_out = 0
    with tempfile.TemporaryDirectory() as tmp:
        models = {lim: ZigZagCost(arch, cache_dir=Path(tmp) / str(lim), lpf_limit=lim)
                  for lim in limits}  # fmt: skip
        for shape in shapes:
            answers: dict[int, float | None] = {}
            try:
                for lim, model in models.items():
                    t0 = time.perf_counter()
                    answers[lim] = model.explain(shape, core).latency_total2
                    secs[lim] += time.perf_counter() - t0
            except ValueError:  # does not fit the share
                answers = {}
            costed = {lim: a for lim, a in answers.items() if a is not None}
            if len(costed) < len(limits):
                left_out += 1
                continue
            for lim in limits:
                got[lim].append(costed[lim])
    ref = got[max(limits)]
    rows = []
    for lim in limits:
        diffs = [abs(a - r) / max(r, 1.0) for a, r in zip(got[lim], ref, strict=True)]
        rows.append({"lpf_limit": lim, "shapes": len(ref),
                     "same_as_largest": sum(d == 0 for d in diffs),
                     "max_rel_diff": max(diffs, default=0.0),
                     "zigzag_s": round(secs[lim], 1), "left_out": left_out})  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the comparison of the module docstring; 2 with a one-line error for bad values."""
    ap = argparse.ArgumentParser(prog="python -m npusched.bench.zigzag_lpf",
                                 description=__doc__.split("\n\n")[0])  # fmt: skip
    ap.add_argument("--networks", default="vgg16")
    ap.add_argument("--sample", type=int, default=120, help="tile shapes drawn (0: all)")
    ap.add_argument("--limits", default="3,6", help="LOMA lpf limits compared")
    ap.add_argument("--max-ops", type=int, default=256, help="operations per tiling (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        given = positive_list(args.limits, "--limits")
        if any(x != int(x) for x in given):
            raise ValueError(f"--limits: whole numbers >= 1, got {args.limits!r}")
        limits = sorted({int(x) for x in given})
        if args.sample < 0 or args.max_ops < 0:
            raise ValueError("--sample and --max-ops must be >= 0")
        nets = [n.strip() for n in args.networks.split(",") if n.strip()]
        settings = Settings.from_arch(sweep_arch(load_arch(BASE_ARCH), 2, 1024, 32),
                                      max_ops=args.max_ops)  # fmt: skip
        shapes = sweep_shapes(nets, settings)
    except (ValueError, OSError) as err:
        print(f"error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    pool = list(shapes)
    if args.sample and args.sample < len(pool):
        pool = random.Random(args.seed).sample(pool, args.sample)
    t0 = time.perf_counter()
    rows = compare(pool, limits)
    print(f"{len(shapes)} distinct tile shapes in the sweep's tilings of {', '.join(nets)} "
          f"(--max-ops {args.max_ops}); {len(pool)} drawn (seed {args.seed}), "
          f"{time.perf_counter() - t0:.0f} s\n")  # fmt: skip
    print(tabulate(rows, headers="keys", tablefmt="github"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
