"""Growth of Flexer's out-of-order greedy with the number of operations.

Run ``python -m npusched.bench.flexer_scaling``. One 3×3 convolution, 64 → 64 channels with
padding 1 (VGG16's ``conv1_2`` at 224 × 224), on ``flexer-arch5`` (Table 1), scheduled by
Flexer's greedy (:func:`~npusched.heuristics.flexer.ooo.ooo_schedule`, Algorithm 1, the
default priority and memory manager, output-stationary order) and verified. Two series:

- ``size``: the layer's rows and columns grow (``--sizes``) at one tiling (``--tile`` rows and
  columns, 32 output and 32 input channels per tile). The operations grow with the area; the
  tiles' sizes, so how many the buffer can hold at once (its segments, which the memory manager
  scans at each placement, Algorithm 2), stay the same.
- ``tile``: one layer (``--tile-layer``) with fewer rows and columns per tile (``--tiles``). The
  operations grow as the tiles shrink, and so does the number of tiles the buffer holds.

Each row shows the time per operation and, between successive rows, the growth of the time
against the growth of the operations: for a linear cost the two ratios are about equal. The
column ``tiles resident`` is the most tiles the buffer held at one time (its segments with
data). Every figure is a single measurement in this process on a shared machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from npusched.arch import load_arch
from npusched.bench.doc import growth
from npusched.heuristics.flexer.memory import NoFit
from npusched.heuristics.flexer.ooo import ooo_schedule
from npusched.heuristics.flexer.search import layer_problem
from npusched.problem.flexer.layer import FlexerSchedule
from npusched.problem.flexer.settings import Settings
from npusched.verify.flexer import verify_flexer
from npusched.workload.network import Network
from npusched.workload.zoo import network_from_dict


def conv_network(size: int) -> Network:
    """A network of one 3×3 convolution, 64 → 64 channels, padding 1, on ``size`` × ``size``."""
    layer = {"name": "conv", "op": "conv", "inputs": ["input"], "out_channels": 64,
             "kernel": [3, 3], "pad": [1, 1, 1, 1]}  # fmt: skip
    data = {"format": "npusched/network/v1", "name": f"conv{size}",
            "input_shape": [64, size, size], "layers": [layer]}  # fmt: skip
    return network_from_dict(data)


def peak_resident(sched: FlexerSchedule) -> int:
    """The most tiles resident in the buffer at one time (its segments that hold data, which
    the memory manager scans at each placement)."""
    events = sorted(
        [(r.start, 1) for r in sched.residencies if r.end > r.start]
        + [(r.end, -1) for r in sched.residencies if r.end > r.start]
    )  # at equal times the ends (-1) come first
    peak = now = 0
    for _, d in events:
        now += d
        peak = max(peak, now)
    return peak


def measure(series: str, size: int, tile: int, s: Settings) -> dict[str, Any]:
    """Schedule and verify the ``size`` × ``size`` layer at ``tile`` × ``tile`` rows and
    columns per tile; one row.

    Raises
    ------
    ValueError
        One operation's tiles do not fit in the buffer."""
    net = conv_network(size)
    p = layer_problem(net, net.layers[0], (32, tile, tile, 32), s)
    t0 = time.perf_counter()
    try:
        sched = ooo_schedule(p, s.n_npus, s.capacity, s.bandwidth)
    except NoFit:
        raise ValueError(
            f"{series} series: {tile}x{tile} tiles of the {size}x{size} layer need "
            f"{p.footprint(0)} bytes for one operation; the buffer has {s.capacity}"
        ) from None
    secs = time.perf_counter() - t0
    rep = verify_flexer(sched)
    return {
        "series": series,
        "size": size,
        "tile": tile,
        "ops": p.n_ops,
        "resident": peak_resident(sched),
        "seconds": secs,
        "us_per_op": secs / p.n_ops * 1e6,
        "verify": "ok" if rep.ok else f"FAILED ({len(rep.violations)})",
        "latency": sched.latency,
    }


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a Markdown table, with growth ratios between successive rows of a series."""
    lines = [
        "| series | layer | tile | operations | tiles resident (peak) | seconds | µs per op | "
        "time ratio | ops ratio | verify | latency |",
        "| --- " * 11 + "|",
    ]
    prev: dict[str, Any] | None = None
    for r in rows:
        same = prev is not None and prev["series"] == r["series"]
        t_ratio, n_ratio = growth(prev if same else None, r, "ops")
        lines.append(
            f"| {r['series']} | {r['size']}×{r['size']} | {r['tile']}×{r['tile']} | {r['ops']} | "
            f"{r['resident']} | {r['seconds']:.2f} | {r['us_per_op']:.0f} | {t_ratio} | "
            f"{n_ratio} | {r['verify']} | {r['latency']} |"
        )
        prev = r
    return lines


def _ints(text: str, flag: str) -> list[int]:
    """``text`` as positive integers separated by commas; a ``ValueError`` naming ``flag``."""
    try:
        out = [int(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{flag} takes integers separated by commas, got {text!r}") from None
    if min(out) < 1:
        raise ValueError(f"{flag} values must be >= 1, got {text!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.flexer_scaling``: :func:`measure` both series and print
    :func:`table`.

    Parameters
    ----------
    argv
        ``[--sizes 56,112,224,448] [--tile 4] [--tiles 16,8,4,2] [--tile-layer 224]``
        (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 when every schedule verified, 1 when one did not, 2 on bad options
        (a tile whose operation does not fit in the buffer among them).
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="56,112,224,448", help="layer rows = columns (size series)")
    p.add_argument("--tile", type=int, default=4, help="rows = columns per tile (size series)")
    p.add_argument("--tiles", default="16,8,4,2", help="rows = columns per tile (tile series)")
    p.add_argument("--tile-layer", type=int, default=224, help="layer rows = columns (tile series)")
    args = p.parse_args(argv)
    try:
        sizes, tiles = _ints(args.sizes, "--sizes"), _ints(args.tiles, "--tiles")
        _ints(str(args.tile), "--tile")
        _ints(str(args.tile_layer), "--tile-layer")
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    s = Settings.from_arch(load_arch("flexer-arch5"), cost="analytic", max_ops=0)
    try:
        rows = [measure("size", n, args.tile, s) for n in sizes]
        rows += [measure("tile", args.tile_layer, t, s) for t in tiles]
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print("\n".join(table(rows)))
    return 0 if all(r["verify"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
