"""From a network and one tiling per layer to the μop-graph instance of the spine issue.

μops are numbered layer by layer (layer offset + :meth:`Tiling.index`). Edges:

- partial-sum chains inside a layer: ``(k, y, x, c) → (k, y, x, c + 1)`` carrying the output tile
  in ``psum_bytes`` per element;
- between layers, from each finished producer tile to every consumer μop whose input box overlaps
  it, carrying the overlap volume × ``elem_bytes`` (:func:`~npusched.partition.grid.dependencies`).

Latency of a μop on a core (the compute model of :mod:`npusched.costmodel`): with spatial
unrolling ``u_d`` of loop ``d`` on the PE array, ``Π_d ⌈L_d / u_d⌉`` cycles over the tile's loops
``K, C, OY, OX, FY, FX`` (the ceil is the loss of partial tiles; grouped keys such as
``"OY*OX*FY*FX"`` unroll a flattened product); pooling, add and concat take
``⌈elements read / PEs⌉``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from npusched.costmodel import compute_cycles
from npusched.partition.grid import IntArray, Tiling, dependencies
from npusched.problem import Accelerator, SchedulingInstance, UopGraph
from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network


def tile_cycles(layer: Layer, tiling: Tiling, unroll: Mapping[str, int]) -> IntArray:
    """Cycles of every μop of ``layer`` on a PE array with spatial ``unroll``: the cost model's
    :func:`~npusched.costmodel.compute_cycles` once per distinct tile shape (at most 16 per
    layer), broadcast to the μops."""
    r, s = layer.kernel if layer.op in ("conv", "maxpool", "avgpool") else (1, 1)
    pes = max(1, math.prod(int(v) for v in unroll.values()))
    fan = r * s * (len(layer.inputs) if layer.op == "add" else 1)
    per_dim = []
    for d in range(4):
        lengths = tiling.lengths(d)
        kinds, inverse = np.unique(lengths, return_inverse=True)
        per_dim.append((kinds, inverse))
    shape = tuple(k.size for k, _ in per_dim)
    table = np.empty(shape, dtype=np.int64)
    for idx in np.ndindex(*shape):
        lk, ly, lx, lc = (int(per_dim[d][0][i]) for d, i in enumerate(idx))
        if layer.op in ("conv", "fc"):
            loops = {"K": lk, "C": lc, "OY": ly, "OX": lx, "FY": r, "FX": s}
            table[idx] = compute_cycles(loops, unroll)
        else:
            table[idx] = -(-(lk * ly * lx * lc * fan) // pes)
    grid = table[np.ix_(*(inv for _, inv in per_dim))]
    return grid.reshape(-1).astype(np.int64)


def psum_chains(t: Tiling, psum_bytes: int) -> tuple[IntArray, IntArray, IntArray]:
    """Partial-sum edges of one layer: each input-channel tile passes its partial sums (of the
    output tile's volume) to the next, in :meth:`Tiling.index` numbering."""
    nk, ny, nx, nc = t.counts
    idx = np.arange(t.size).reshape(nk, ny, nx, nc)
    vol = np.einsum("k,y,x->kyx", t.lengths(0), t.lengths(1), t.lengths(2))
    src = idx[..., :-1].reshape(-1)
    dst = idx[..., 1:].reshape(-1)
    return src, dst, np.repeat(vol.reshape(-1), nc - 1) * psum_bytes


def build_instance(
    net: Network,
    tilings: Mapping[str, Tiling],
    accelerator: Accelerator,
    unrolls: Sequence[Mapping[str, int]],
    *,
    elem_bytes: int = 1,
    psum_bytes: int = 4,
    name: str | None = None,
    source: dict[str, Any] | None = None,
    ranks: Mapping[str, IntArray] | None = None,
) -> SchedulingInstance:
    """The μop DAG of ``net`` cut by ``tilings`` on ``accelerator`` (one PE unrolling per core).

    ``ranks`` renumbers a layer's μops (:meth:`Tiling.index` order → position), e.g. Flexer's
    loop order (:func:`~npusched.partition.schemes.loop_order_rank`)."""
    if len(unrolls) != accelerator.m:
        raise ValueError(f"{len(unrolls)} PE arrays for {accelerator.m} cores")
    offsets: dict[str, int] = {}
    n = 0
    for layer in net.layers:
        offsets[layer.name] = n
        n += tilings[layer.name].size
    rank = {
        layer.name: (
            np.arange(tilings[layer.name].size)
            if ranks is None or layer.name not in ranks
            else np.asarray(ranks[layer.name], dtype=np.int64)
        )
        for layer in net.layers
    }
    distinct = {tuple(sorted(u.items())) for u in unrolls}
    lat = np.empty((n, len(distinct)), dtype=np.int64)
    col = {u: k for k, u in enumerate(sorted(distinct))}
    srcs: list[IntArray] = []
    dsts: list[IntArray] = []
    byts: list[IntArray] = []
    for layer in net.layers:
        t, off = tilings[layer.name], offsets[layer.name]
        r = rank[layer.name]
        for u, k in col.items():
            lat[off + r, k] = tile_cycles(layer, t, dict(u))
        if t.counts[3] > 1:
            s, d, b = psum_chains(t, psum_bytes)
            srcs.append(off + r[s])
            dsts.append(off + r[d])
            byts.append(b)
        channel = 0
        for p in layer.inputs:
            shape = net.shapes[p]
            if p != INPUT:
                s, d, b = dependencies(tilings[p], layer, t, shape, channel, elem_bytes)
                srcs.append(offsets[p] + rank[p][s])
                dsts.append(off + r[d])
                byts.append(b)
            if layer.op == "concat":
                channel += shape[0]
    src = np.concatenate(srcs) if srcs else np.zeros(0, np.int64)
    dst = np.concatenate(dsts) if dsts else np.zeros(0, np.int64)
    byt = np.concatenate(byts) if byts else np.zeros(0, np.int64)
    per_core = lat[:, [col[tuple(sorted(u.items()))] for u in unrolls]]
    identical = lat.shape[1] == 1
    graph = UopGraph(per_core[:, 0], src, dst, byt)
    info = {
        "network": net.name,
        "layers": [
            {"name": layer.name, "offset": offsets[layer.name], "tiles": tilings[layer.name].counts}
            for layer in net.layers
        ],
        "macs": net.macs(),
        "elem_bytes": elem_bytes,
        **(source or {}),
    }
    return SchedulingInstance(
        graph,
        accelerator,
        None if identical else per_core,
        name or net.name,
        source=info,
    )
