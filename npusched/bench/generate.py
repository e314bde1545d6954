"""Random instances for experiments: layered DAGs of μops on a mesh."""

from __future__ import annotations

import numpy as np

from npusched.problem import Accelerator, SchedulingInstance, UopGraph


def layered_dag(
    layers: int,
    width: int,
    mesh: tuple[int, int],
    *,
    hop_latency: int = 1,
    link_bandwidth: float | None = 8.0,
    latency: tuple[int, int] = (2, 12),
    nbytes: tuple[int, int] = (8, 64),
    fan_in: int = 3,
    seed: int = 0,
) -> SchedulingInstance:
    """A random layered DAG, the shape of a partitioned DNN: ``layers`` levels of 1..``width``
    μops; each μop after the first level reads from 1..``fan_in`` μops of the previous level (and,
    with probability 0.2, one more from two levels back, a residual connection). Latencies and
    edge bytes are uniform in the given closed ranges. Repeatable for a given ``seed``."""
    if layers < 1 or width < 1 or fan_in < 1:
        raise ValueError("layers, width and fan_in must be at least 1")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, width + 1, size=layers)
    first = np.concatenate([[0], np.cumsum(sizes)])
    src: list[int] = []
    dst: list[int] = []
    for layer in range(1, layers):
        prev = np.arange(first[layer - 1], first[layer])
        for v in range(first[layer], first[layer + 1]):
            k = int(rng.integers(1, min(fan_in, prev.size) + 1))
            for u in rng.choice(prev, size=k, replace=False).tolist():
                src.append(u)
                dst.append(v)
            if layer >= 2 and rng.random() < 0.2:
                src.append(int(rng.integers(first[layer - 2], first[layer - 1])))
                dst.append(v)
    n = int(first[-1])
    graph = UopGraph(
        rng.integers(latency[0], latency[1] + 1, size=n),
        np.array(src, dtype=np.int64),
        np.array(dst, dtype=np.int64),
        rng.integers(nbytes[0], nbytes[1] + 1, size=len(src)),
    )
    rows, cols = mesh
    return SchedulingInstance(
        graph,
        Accelerator.mesh_grid(rows, cols, hop_latency, link_bandwidth),
        name=f"layered_L{layers}_W{width}_{rows}x{cols}_s{seed}",
        source={
            "generator": "npusched.bench.generate.layered_dag",
            "layers": layers,
            "width": width,
            "fan_in": fan_in,
            "latency": list(latency),
            "bytes": list(nbytes),
            "seed": seed,
        },
    )
