"""Product tilings of a layer and exact inter-layer dependencies by interval arithmetic.

A layer's work is the loop nest over output channels ``K``, output rows ``OY``, output columns
``OX`` and input channels ``C`` (the reduction). A :class:`Tiling` splits each of the four
dimensions into consecutive intervals (the last may be a remainder); its μops are the products of
one interval per dimension. μop ``(k, y, x, c)`` computes output channels ``K_k`` at rows ``OY_y``
and columns ``OX_x`` over input channels ``C_c``; when ``C`` is split, the μops of one output tile
form a partial-sum chain ``c = 0 → 1 → …`` and the last one holds the finished output tile.

Dependencies between a producer layer ``P`` and a consumer ``Q`` factor by dimension because both
tilings are products of intervals: the input that the ``Q`` μop ``(k, y, x, c)`` reads is the box
``channels(c) × rows(y) × cols(x)`` of ``P``'s output (receptive fields: kernel, stride, padding,
dilation), and its overlap with the ``P`` tile ``(k', y', x')`` is the product of three interval
overlaps. Per dimension the overlapping pairs come from two ``searchsorted`` calls over sorted
interval ends, so the cost is linear in the number of edges, not in all pairs (Stream uses an
R-tree over every pair of CNs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from npusched.workload.layers import Layer, Shape

IntArray = NDArray[np.int64]
DIMS = ("K", "OY", "OX", "C")


def split(extent: int, tile: int) -> IntArray:
    """Bounds ``[0, t, 2t, …, extent]`` of intervals of ``tile`` (the last one the remainder)."""
    if extent < 1 or tile < 1:
        raise ValueError(f"cannot split {extent} into tiles of {tile}")
    return np.append(np.arange(0, extent, tile, dtype=np.int64), np.int64(extent))


@dataclass(frozen=True, eq=False)
class Tiling:
    """Split points per dimension: ``bounds[d]`` runs from 0 to the extent of ``d`` in
    :data:`DIMS` order (``K``, ``OY``, ``OX``, ``C``)."""

    bounds: tuple[IntArray, IntArray, IntArray, IntArray]

    def __post_init__(self) -> None:
        for d, b in zip(DIMS, self.bounds, strict=True):
            if b.size < 2 or b[0] != 0 or (b[1:] <= b[:-1]).any():
                raise ValueError(f"bounds of {d} must rise strictly from 0: {b.tolist()}")

    @classmethod
    def regular(cls, extents: tuple[int, int, int, int], tiles: tuple[int, int, int, int]):
        """Tiles of the given sizes per dimension, remainders last."""
        return cls(tuple(split(e, t) for e, t in zip(extents, tiles, strict=True)))  # type: ignore[arg-type]

    @property
    def counts(self) -> tuple[int, int, int, int]:
        """Number of tiles along each dimension, in :data:`DIMS` order ``(K, OY, OX, C)``."""
        return tuple(int(b.size - 1) for b in self.bounds)  # type: ignore[return-value]

    @property
    def size(self) -> int:
        """Number of tiles (μops) of the layer: the product of :attr:`counts`."""
        return int(np.prod(self.counts))

    def lengths(self, d: int) -> IntArray:
        """The tiles' lengths along dimension ``d`` (0..3, index into :data:`DIMS`), first to last:
        equal sizes with the remainder last for a :meth:`regular` tiling."""
        return np.diff(self.bounds[d])

    def index(self, k, y, x, c) -> IntArray:
        """μop index of tile ``(k, y, x, c)`` (``C`` innermost: chains are consecutive)."""
        nk, ny, nx, nc = self.counts
        return ((np.asarray(k) * ny + y) * nx + x) * nc + c

    def kinds(self) -> int:
        """Distinct μop shapes (Klotski Fig. 5: up to 2⁴ = 16 with a remainder per dimension)."""
        return int(np.prod([np.unique(self.lengths(d)).size for d in range(4)]))


def layer_extents(layer: Layer, in_shapes: list[Shape], out_shape: Shape) -> tuple[int, ...]:
    """``(K, OY, OX, C)`` of a layer: ``C`` is the reduction (input channels of one group for
    conv; all input elements for fc; 1 for pooling, add and concat, which reduce nothing)."""
    k, oy, ox = out_shape
    c, h, w = in_shapes[0]
    if layer.op == "conv":
        return (k, oy, ox, c // layer.groups)
    if layer.op == "fc":
        return (k, 1, 1, c * h * w)
    return (k, oy, ox, 1)


def tile_macs(layer: Layer, tiling: Tiling) -> IntArray:
    """MACs of every μop, in μop order (sums to the layer's MACs)."""
    if layer.op not in ("conv", "fc"):
        return np.zeros(tiling.size, dtype=np.int64)
    rs = layer.kernel[0] * layer.kernel[1] if layer.op == "conv" else 1
    lk, ly, lx, lc = (tiling.lengths(d) for d in range(4))
    grid = np.einsum("k,y,x,c->kyxc", lk, ly, lx, lc)
    return (grid * rs).reshape(-1).astype(np.int64)


def _overlaps(
    need_lo: IntArray, need_hi: IntArray, bounds: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Pairs ``(i, j, overlap)`` of needed intervals ``[lo_i, hi_i)`` and tiles
    ``[bounds_j, bounds_{j+1})`` that intersect (needed intervals may overlap each other)."""
    starts, ends = bounds[:-1], bounds[1:]
    first = np.searchsorted(ends, need_lo, side="right")
    last = np.searchsorted(starts, need_hi, side="left")
    count = np.maximum(last - first, 0)
    i = np.repeat(np.arange(need_lo.size), count)
    offset = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    j = np.repeat(first, count) + offset
    ov = np.minimum(need_hi[i], ends[j]) - np.maximum(need_lo[i], starts[j])
    keep = ov > 0
    return i[keep], j[keep], ov[keep]


def _strided_counts(
    layer: Layer, axis: int, bounds: IntArray, size: int
) -> NDArray[np.int64] | None:
    """Prefix counts ``(tiles, size + 1)`` of the input positions each output tile along ``axis``
    really reads, or ``None`` when every receptive field is an interval (dilation 1 and stride at
    most the kernel): a stride larger than the kernel, or a dilation, leaves gaps that the
    interval hull of :meth:`Layer.input_range` would count."""
    if layer.op not in ("conv", "maxpool", "avgpool") or layer.global_pool:
        return None
    r, s, d = layer.kernel[axis], layer.stride[axis], layer.dilation[axis]
    if d == 1 and s <= r:
        return None
    p = layer.pad[2 * axis]
    taps = np.arange(r) * d - p
    out = np.zeros((bounds.size - 1, size + 1), dtype=np.int64)
    for i, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)):
        pos = (np.arange(lo, hi)[:, None] * s + taps[None, :]).reshape(-1)
        pos = np.unique(pos[(pos >= 0) & (pos < size)])
        mark = np.zeros(size, dtype=np.int64)
        mark[pos] = 1
        out[i, 1:] = np.cumsum(mark)
    return out


def _exact(
    pairs: tuple[IntArray, IntArray, IntArray], prefix: NDArray[np.int64] | None, bounds: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Replace hull overlaps by the positions really read (drop pairs that read none)."""
    i, j, ov = pairs
    if prefix is None:
        return i, j, ov
    ov = prefix[i, bounds[1:][j]] - prefix[i, bounds[:-1][j]]
    keep = ov > 0
    return i[keep], j[keep], ov[keep]


def needed_input(
    consumer: Layer,
    tiling: Tiling,
    in_shape: Shape,
    channel_offset: int = 0,
    channels: int | None = None,
) -> tuple[tuple[IntArray, IntArray], ...]:
    """Per consumer dimension, the interval of one input each tile reads, in that input's
    coordinates: channels (indexed by the consumer's ``C`` tiles, or ``K`` tiles for depthwise,
    pooling and add), rows (by ``OY`` tiles) and columns (by ``OX`` tiles).

    ``channel_offset``/``channels`` place this input inside a concat's channels.
    """
    c_in, h, w = in_shape
    kb, yb, xb, cb = tiling.bounds
    if consumer.op == "fc":  # reads all of its input; C tiles are channels when it is 1 × 1
        if h * w > 1 and cb.size > 2:
            raise ValueError(f"{consumer.name}: fc over a {h}x{w} input cannot split C")
        one = np.zeros(1, np.int64)
        ch = (cb[:-1], cb[1:]) if h * w == 1 else (one, np.full(1, c_in, np.int64))
        return ch, (one, np.full(1, h, np.int64)), (one, np.full(1, w, np.int64))
    if consumer.op == "conv" and consumer.groups == 1:
        ch = (cb[:-1], cb[1:])
    elif consumer.op == "conv":  # grouped: the groups that the K tile's channels belong to
        kg = consumer.out_channels // consumer.groups
        cg = c_in // consumer.groups
        ch = ((kb[:-1] // kg) * cg, -(-kb[1:] // kg) * cg)
    else:  # pooling, add, concat: channel k reads channel k
        lo, hi = kb[:-1] - channel_offset, kb[1:] - channel_offset
        n = c_in if channels is None else channels
        ch = (np.clip(lo, 0, n), np.clip(hi, 0, n))
    ry = [consumer.input_range(0, int(a), int(b), h) for a, b in zip(yb[:-1], yb[1:], strict=True)]
    rx = [consumer.input_range(1, int(a), int(b), w) for a, b in zip(xb[:-1], xb[1:], strict=True)]
    rows = (np.array([r[0] for r in ry], np.int64), np.array([r[1] for r in ry], np.int64))
    cols = (np.array([r[0] for r in rx], np.int64), np.array([r[1] for r in rx], np.int64))
    return ch, rows, cols


def dependencies(
    producer: Tiling,
    consumer: Layer,
    ctiling: Tiling,
    in_shape: Shape,
    channel_offset: int = 0,
    elem_bytes: int = 1,
) -> tuple[IntArray, IntArray, IntArray]:
    """Edges from the finished output tiles of ``producer`` (its last ``C`` μop of each tile) to
    the ``consumer`` μops that read them: ``(src, dst, bytes)`` as μop indices local to each
    layer and the overlap volume × ``elem_bytes``.

    ``in_shape`` is the producer's output shape. A consumer that reads a concat input at
    ``channel_offset`` sees the producer's channels shifted there.
    """
    pc = producer.counts[3]
    nk, ny, nx, nc = ctiling.counts
    ch, rows, cols = needed_input(consumer, ctiling, in_shape, channel_offset, in_shape[0])
    ci, cj, cv = _overlaps(ch[0], ch[1], producer.bounds[0])
    yi, yj, yv = _exact(
        _overlaps(rows[0], rows[1], producer.bounds[1]),
        _strided_counts(consumer, 0, ctiling.bounds[1], in_shape[1]),
        producer.bounds[1],
    )
    xi, xj, xv = _exact(
        _overlaps(cols[0], cols[1], producer.bounds[2]),
        _strided_counts(consumer, 1, ctiling.bounds[2], in_shape[2]),
        producer.bounds[2],
    )
    channel_by_c = consumer.op == "conv" and consumer.groups == 1 or consumer.op == "fc"
    # consumer tiles not indexed by the channel dimension replicate over it
    if channel_by_c:
        ck = np.repeat(np.arange(nk), ci.size)
        cc = np.tile(ci, nk)
    else:
        ck = np.repeat(ci, nc)
        cc = np.tile(np.arange(nc), ci.size)
    cp = np.tile(cj, nk) if channel_by_c else np.repeat(cj, nc)
    vol_c = np.tile(cv, nk) if channel_by_c else np.repeat(cv, nc)
    # product of the three per-dimension pair lists
    a = np.arange(ck.size)
    b = np.arange(yi.size)
    g = np.arange(xi.size)
    A, B, G = (m.reshape(-1) for m in np.meshgrid(a, b, g, indexing="ij"))
    src = producer.index(cp[A], yj[B], xj[G], pc - 1)
    dst = ctiling.index(ck[A], yi[B], xi[G], cc[A])
    vol = vol_c[A] * yv[B] * xv[G] * elem_bytes
    return src.astype(np.int64), dst.astype(np.int64), vol.astype(np.int64)


def _expand(lo: IntArray, hi: IntArray) -> tuple[IntArray, IntArray]:
    """For ranges ``[lo_i, hi_i)``: the owner ``i`` and the value of every element."""
    count = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(lo.size), count)
    value = (
        np.repeat(lo, count)
        + np.arange(int(count.sum()))
        - np.repeat(np.cumsum(count) - count, count)
    )
    return owner, value


def box_overlaps(
    producers: NDArray[np.int64], consumers: NDArray[np.int64]
) -> tuple[IntArray, IntArray, IntArray]:
    """The general path for partitions that are not products of intervals: every pair of a
    producer box and a consumer box that intersect, with the intersection volume.

    Boxes are rows ``[c0, c1, y0, y1, x0, x1]`` (half-open); producer boxes must not overlap each
    other. Producers are sorted by ``(y0, x0)``; a producer can only meet a consumer if its ``y0``
    lies in ``(y0_c − H, y1_c)`` and its ``x0`` in ``(x0_c − W, x1_c)`` (``H``, ``W``: the largest
    producer height and width), so two rounds of ``searchsorted`` — over the distinct ``y0`` rows,
    then over ``x0`` inside each row — give the candidates, and array operations filter them.
    Returns ``(producer, consumer, volume)`` for positive volumes.
    """
    if producers.size == 0 or consumers.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    order = np.lexsort((producers[:, 4], producers[:, 2]))
    p = producers[order]
    height = int((p[:, 3] - p[:, 2]).max())
    width = int((p[:, 5] - p[:, 4]).max())
    rows, row_of = np.unique(p[:, 2], return_inverse=True)
    span = int(max(p[:, 5].max(), consumers[:, 5].max())) + width + 1
    key = row_of.astype(np.int64) * span + p[:, 4]  # sorted: rows, then x0 within a row
    ci, g = _expand(
        np.searchsorted(rows, consumers[:, 2] - height, side="right"),
        np.searchsorted(rows, consumers[:, 3], side="left"),
    )
    base = g.astype(np.int64) * span
    lo = np.searchsorted(key, base + consumers[ci, 4] - width, side="right")
    hi = np.searchsorted(key, base + consumers[ci, 5], side="left")
    owner, pj = _expand(lo, hi)
    ci = ci[owner]
    vol = np.ones(ci.size, dtype=np.int64)
    for a in range(3):
        lo_a = np.maximum(p[pj, 2 * a], consumers[ci, 2 * a])
        hi_a = np.minimum(p[pj, 2 * a + 1], consumers[ci, 2 * a + 1])
        vol *= np.maximum(hi_a - lo_a, 0)
    keep = vol > 0
    return order[pj[keep]].astype(np.int64), ci[keep].astype(np.int64), vol[keep]
