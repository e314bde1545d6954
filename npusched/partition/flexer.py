"""Flexer's partition of one layer: the tiled convolution's DFG (Min, Kwon, Egger, CGO 2023,
Fig. 3a-c) built from the layer, its tile sizes and the cost model."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from npusched.costmodel import TileShape, compute_cycles
from npusched.partition.grid import Tiling, layer_extents
from npusched.problem.flexer.layer import IN, OT, WT, TiledConv, supports
from npusched.workload.layers import Layer
from npusched.workload.network import Network


def tiled_conv(
    net: Network,
    layer: Layer,
    tiles: tuple[int, int, int, int],
    unroll: dict[str, int],
    elem_bytes: float = 1.0,
    psum_bytes: int = 4,
    fill_drain: int = 0,
    latency_of: Callable[[TileShape], int] | None = None,
) -> TiledConv:
    """Flexer's DFG of ``layer`` for tile sizes ``(t_oc, t_oh, t_ow, t_ic)`` (Fig. 3a), clipped
    to the layer. Input tiles include the halo of the receptive field; fc layers read their
    flattened input in ``t_ic`` slices.

    An operation takes the cost model's cycles (``latency_of`` its tile, e.g. a
    :class:`~npusched.costmodel.CostModel`'s latency on the NPU; by default the PE array's
    steps, :func:`~npusched.costmodel.compute_cycles`) plus ``fill_drain`` cycles: the array's
    pipeline fills and drains once per operation.

    Raises
    ------
    ValueError
        For layers other than dense conv and fc, or tile sizes below 1.
    """
    if not supports(layer):
        raise ValueError(f"{layer.name}: Flexer tiles dense conv and fc layers, not {layer.op}")
    if min(tiles) < 1:
        raise ValueError(f"{layer.name}: tile sizes must be positive, got {tiles}")
    if fill_drain < 0:
        raise ValueError(f"{layer.name}: fill_drain must be >= 0, got {fill_drain}")
    in_shape = net.in_shapes(layer)[0]
    ext = layer_extents(layer, [in_shape], net.shapes[layer.name])
    clipped = tuple(min(t, e) for t, e in zip(tiles, ext, strict=True))
    if layer.op == "fc":
        clipped = (clipped[0], 1, 1, clipped[3])
    tiling = Tiling.regular(ext, clipped)  # type: ignore[arg-type]
    nk, ny, nx, nc = tiling.counts
    lk, ly, lx, lc = (tiling.lengths(d) for d in range(4))
    kb, yb, xb, _ = tiling.bounds
    r, s = layer.kernel if layer.op == "conv" else (1, 1)
    if layer.op == "conv":
        _, h, w = in_shape
        rows, cols = (
            np.array([_span(layer, axis, b, size) for b in zip(bd[:-1], bd[1:], strict=True)])
            for axis, bd, size in ((0, yb, h), (1, xb, w))
        )
    else:
        rows = cols = np.ones(1, np.int64)
    eb = float(elem_bytes)
    acc = psum_bytes if nc > 1 else eb
    in_b = np.ceil(np.einsum("c,y,x->cyx", lc, rows, cols) * eb).reshape(-1)
    wt_b = np.ceil(np.outer(lk, lc) * r * s * eb).reshape(-1)
    ot_el = np.einsum("k,y,x->kyx", lk, ly, lx).reshape(-1)
    n_in, n_wt, n_ot = in_b.size, wt_b.size, ot_el.size
    data_type = np.repeat(np.array([IN, WT, OT], np.int64), [n_in, n_wt, n_ot])
    data_bytes = np.r_[in_b, wt_b, np.ceil(ot_el * acc)].astype(np.int64)
    out_bytes = np.r_[np.zeros(n_in + n_wt), np.ceil(ot_el * eb)].astype(np.int64)
    k, y, x, c = (a.reshape(-1) for a in np.indices((nk, ny, nx, nc)))
    op_in = (c * ny + y) * nx + x
    op_wt = n_in + k * nc + c
    op_ot = n_in + n_wt + (k * ny + y) * nx + x
    if latency_of is None:

        def latency_of(shape: TileShape) -> int:
            return compute_cycles(shape.loops(), unroll)

    lat = _latencies(layer, (lk, ly, lx, lc), (k, y, x, c), latency_of, fill_drain)
    return TiledConv(
        name=layer.name,
        counts=(nk, ny, nx, nc),
        data_type=data_type,
        data_bytes=data_bytes,
        out_bytes=out_bytes,
        op_in=op_in.astype(np.int64),
        op_wt=op_wt.astype(np.int64),
        op_ot=op_ot.astype(np.int64),
        op_c=c.astype(np.int64),
        latency=lat,
        tiles=clipped,  # type: ignore[arg-type]
    )


def _latencies(
    layer: Layer,
    lengths: tuple[np.ndarray, ...],
    index: tuple[np.ndarray, ...],
    latency_of: Callable[[TileShape], int],
    fill_drain: int,
) -> np.ndarray:
    """Cycles of every operation: the cost model for its tile lengths ``(K, OY, OX, C)`` plus
    ``fill_drain``. Each axis has at most two tile lengths: the cost model runs once per
    distinct shape."""
    (uk, ik), (uy, iy), (ux, ix), (uc, ic) = (np.unique(a, return_inverse=True) for a in lengths)
    table = np.empty((uk.size, uy.size, ux.size, uc.size), np.int64)
    for idx in np.ndindex(table.shape):
        a, b, d, e = (int(u[i]) for u, i in zip((uk, uy, ux, uc), idx, strict=True))
        table[idx] = latency_of(TileShape.of(layer, a, b, d, e)) + fill_drain
    k, y, x, c = index
    return table[ik[k], iy[y], ix[x], ic[c]]


def _span(layer: Layer, axis: int, out: tuple[int, int], size: int) -> int:
    """Input rows (``axis`` 0) or columns an output interval reads, halo included."""
    lo, hi = layer.input_range(axis, int(out[0]), int(out[1]), size)
    return hi - lo
