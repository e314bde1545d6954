"""Time and peak memory of partition + dependency generation at scale.

Run ``python -m npusched.bench.partition_scale``. Cases:

- Stream's case (Stream paper §V): a 3 × 3 convolution feeding another, each split into
  448 × 448 CNs (one per output pixel of a 448 × 448 feature map), which Stream's R-tree handles in
  about 6 s. Goal: ≤ 0.6 s.
- ResNet-50 from the zoo at about 10⁵ and 10⁶ μops (Klotski μtensors, sizes chosen so the total
  lands near the target), when the zoo is installed.

Peak memory is measured with :mod:`tracemalloc` (numpy reports its buffers to it); every case is
run once in this process, so the figures are single measurements on a noisy machine.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from npusched.partition import Tiling, dependencies, klotski_tiling
from npusched.partition.instance import build_instance
from npusched.problem import Accelerator
from npusched.workload import INPUT, Layer, Network


def measure(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """``fn()``'s result, its wall time (s) and its peak traced memory (MiB)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, seconds, peak / 2**20


def stream_case(size: int = 448, channels: int = 1) -> tuple[int, int]:
    """Two 3 × 3 convolutions (same padding) on a ``size × size`` map, one CN per output pixel;
    returns (CNs, edges) of the dependency generation between them."""
    net = Network(
        "stream_case",
        (channels, size, size),
        (
            Layer("a", "conv", (INPUT,), channels, (3, 3), pad=(1, 1, 1, 1)),
            Layer("b", "conv", ("a",), channels, (3, 3), pad=(1, 1, 1, 1)),
        ),
    )
    ext = (channels, size, size, channels)
    t = Tiling.regular(ext, (channels, 1, 1, channels))
    src, _, _ = dependencies(t, net.layer("b"), t, net.shapes["a"])
    return 2 * t.size, int(src.size)


def stream_case_general(size: int = 448) -> tuple[int, int]:
    """Stream's case through the general box path (:func:`box_overlaps`), as if the CNs were an
    arbitrary partition."""
    from npusched.partition.grid import box_overlaps

    y = np.repeat(np.arange(size), size)
    x = np.tile(np.arange(size), size)
    one = np.ones_like(y)
    producers = np.stack([0 * one, one, y, y + 1, x, x + 1], axis=1)
    consumers = np.stack(
        [
            0 * one,
            one,
            np.maximum(y - 1, 0),
            np.minimum(y + 2, size),
            np.maximum(x - 1, 0),
            np.minimum(x + 2, size),
        ],
        axis=1,
    )
    pj, _, _ = box_overlaps(producers, consumers)
    return 2 * size * size, int(pj.size)


def choose_s(net: Network, target: int) -> tuple[int, int, int, int]:
    """The Klotski μtensor ``(h, h, ic, oc)`` whose μop count on ``net`` is nearest ``target``."""
    best: tuple[float, tuple[int, int, int, int]] | None = None
    for side in (56, 28, 16, 14, 8, 7, 4, 2, 1):
        for ch in (512, 256, 128, 64, 32, 16, 8):
            for ic in (ch, 2 * ch, 4 * ch):
                s = (side, side, ic, ch)
                total = sum(klotski_tiling(net, layer, s).size for layer in net.layers)
                miss = abs(float(np.log(total / target)))
                if best is None or miss < best[0]:
                    best = (miss, s)
    assert best is not None
    return best[1]


def resnet50_case(net: Network, s: tuple[int, int, int, int]) -> tuple[int, int]:
    """Partition ResNet-50 by ``s`` and build the instance (dependencies, latencies, graph)."""
    tilings = {layer.name: klotski_tiling(net, layer, s) for layer in net.layers}
    inst = build_instance(net, tilings, Accelerator.identical(4), [{"K": 16, "C": 16}] * 4)
    return inst.n, inst.graph.num_edges


def main(argv: list[str] | None = None) -> None:
    """Run ``python -m npusched.bench.partition_scale``: Stream's case on a ``--size`` ×
    ``--size`` feature map (:func:`stream_case`, then :func:`stream_case_general`), then
    ResNet-50 near each μop count of ``--resnet`` (:func:`choose_s`); one line each with the
    counts, seconds and peak MiB. Returns nothing: the command's exit code is 0.

    Parameters
    ----------
    argv
        ``[--size N] [--resnet N ...]`` (default: ``sys.argv[1:]``).
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=448, help="feature map of Stream's case")
    p.add_argument("--resnet", type=int, nargs="*", default=[10**5, 10**6])
    args = p.parse_args(argv)
    (cns, edges), secs, mib = measure(lambda: stream_case(args.size))
    print(
        f"Stream's case {args.size}x{args.size}: {cns} CNs, {edges} edges, "
        f"{secs:.3f} s, peak {mib:.0f} MiB (Stream's R-tree: about 6 s; goal 0.6 s)"
    )
    (cns, edges), secs, mib = measure(lambda: stream_case_general(args.size))
    print(f"  same through the general box path: {edges} edges, {secs:.3f} s, peak {mib:.0f} MiB")
    from npusched.workload.zoo import load_network

    net = load_network("resnet50")
    for target in args.resnet:
        s = choose_s(net, target)
        (n, e), secs, mib = measure(lambda: resnet50_case(net, s))  # noqa: B023
        print(
            f"ResNet-50 ~{target:.0e} μops, s = {s}: {n} μops, {e} edges, {secs:.2f} s, "
            f"peak {mib:.0f} MiB"
        )


if __name__ == "__main__":
    main()
