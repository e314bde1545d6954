"""From a network and one tiling per layer to the μop graph: numbering and dependencies.

μops are numbered layer by layer (layer offset + :meth:`Tiling.index`, or a layer's ``rank`` of
that index, e.g. Flexer's loop order). Edges:

- partial-sum chains inside a layer: ``(k, y, x, c) → (k, y, x, c + 1)`` carrying the output tile
  in ``psum_bytes`` per element;
- between layers, from each finished producer tile to every consumer μop whose input box overlaps
  it, carrying the overlap volume × ``elem_bytes`` (:func:`~npusched.partition.grid.dependencies`).

This is the second step of a partition (scheme → tilings → **dependencies** → costs →
instance; :mod:`npusched.partition.api`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from npusched.partition.grid import IntArray, Tiling, dependencies
from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network


@dataclass(frozen=True, eq=False)
class Layout:
    """Where each layer's μops sit in the numbering: ``offsets[name]`` and ``ranks[name]`` (the
    position of each tile, in :meth:`Tiling.index` order, within its layer)."""

    net: Network
    tilings: Mapping[str, Tiling]
    offsets: Mapping[str, int]
    ranks: Mapping[str, IntArray]
    n: int

    @classmethod
    def of(
        cls,
        net: Network,
        tilings: Mapping[str, Tiling],
        ranks: Mapping[str, IntArray] | None = None,
    ) -> Layout:
        """Number the μops of ``net`` layer by layer, in the network's order.

        Parameters
        ----------
        net
            The network.
        tilings
            One tiling per layer name.
        ranks
            Per layer, the μop position of each tile (a permutation of ``0..size-1`` given in
            :meth:`~npusched.partition.grid.Tiling.index` order, e.g. Flexer's loop order); a layer
            without one keeps the tile index order.

        Returns
        -------
        Layout
            Each layer's first μop index (the layers before it take ``0..offset-1``), its ranks and
            the total count ``n``.
        """
        offsets: dict[str, int] = {}
        rank: dict[str, IntArray] = {}
        n = 0
        for layer in net.layers:
            t = tilings[layer.name]
            offsets[layer.name] = n
            given = None if ranks is None else ranks.get(layer.name)
            rank[layer.name] = (
                np.arange(t.size) if given is None else np.asarray(given, dtype=np.int64)
            )
            n += t.size
        return cls(net, tilings, offsets, rank, n)

    def uops(self, name: str) -> IntArray:
        """μop index of each tile of layer ``name``, in :meth:`Tiling.index` order."""
        return self.offsets[name] + self.ranks[name]

    def layer_of(self) -> IntArray:
        """Each μop's layer index (position in ``net.layers``)."""
        out = np.empty(self.n, dtype=np.int64)
        for k, layer in enumerate(self.net.layers):
            out[self.uops(layer.name)] = k
        return out

    def tiles(self, name: str) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        """The ``(k, y, x, c)`` tile coordinates of layer ``name``'s tiles, in
        :meth:`Tiling.index` order."""
        counts = self.tilings[name].counts
        grid = np.indices(counts).reshape(4, -1)
        return grid[0], grid[1], grid[2], grid[3]

    def record(self) -> list[dict[str, object]]:
        """Each layer's name, first μop and tile counts (an instance's ``source["layers"]``)."""
        return [
            {
                "name": ly.name,
                "offset": self.offsets[ly.name],
                "tiles": self.tilings[ly.name].counts,
            }
            for ly in self.net.layers
        ]


def psum_chains(t: Tiling, psum_bytes: int) -> tuple[IntArray, IntArray, IntArray]:
    """Partial-sum edges of one layer: each input-channel tile passes its partial sums (of the
    output tile's volume) to the next, in :meth:`Tiling.index` numbering."""
    nk, ny, nx, nc = t.counts
    idx = np.arange(t.size).reshape(nk, ny, nx, nc)
    vol = np.einsum("k,y,x->kyx", t.lengths(0), t.lengths(1), t.lengths(2))
    src = idx[..., :-1].reshape(-1)
    dst = idx[..., 1:].reshape(-1)
    return src, dst, np.repeat(vol.reshape(-1), nc - 1) * psum_bytes


EDGE_CACHE = 4_000_000
"""Edges an :class:`EdgeCache` keeps by default (24 bytes each: 96 MB; ResNet-50's design space on
klotski-5x5 repeats 3 million)."""


class EdgeCache:
    """:func:`~npusched.partition.grid.dependencies` remembered by the two tilings, for callers
    that repeat them (the points of a design space cut most layers alike), up to ``limit``
    edges in all; past it, new pairs are computed and not kept."""

    def __init__(self, limit: int = EDGE_CACHE) -> None:
        self.limit = limit
        self.edges = 0
        self._memo: dict[Any, tuple[IntArray, IntArray, IntArray]] = {}

    def get(
        self, key: Any, compute: Callable[[], tuple[IntArray, IntArray, IntArray]]
    ) -> tuple[IntArray, IntArray, IntArray]:
        """The edges stored under ``key``, or ``compute()``'s, kept while there is room."""
        hit = self._memo.get(key)
        if hit is None:
            hit = compute()
            if self.edges + hit[0].size <= self.limit:
                self._memo[key] = hit
                self.edges += hit[0].size
        return hit


def layer_edges(
    net: Network,
    layer: Layer,
    tilings: Mapping[str, Tiling],
    elem_bytes: int = 1,
    cache: EdgeCache | None = None,
) -> Iterator[tuple[str, IntArray, IntArray, IntArray]]:
    """For each producer layer that ``layer`` reads (the network input left out): its name and
    the ``(src, dst, bytes)`` of :func:`~npusched.partition.grid.dependencies`, in each layer's
    :meth:`Tiling.index` numbering; a ``concat`` reads each input at its channel offset.
    ``cache`` remembers them by the two tilings."""
    channel = 0
    t = tilings[layer.name]
    for p in layer.inputs:
        shape = net.shapes[p]
        if p != INPUT:
            compute = functools.partial(dependencies, tilings[p], layer, t, shape, channel,
                                        elem_bytes)  # fmt: skip
            if cache is None:
                yield p, *compute()
            else:
                key = (layer.name, p, channel, elem_bytes, _key(tilings[p]), _key(t))
                yield p, *cache.get(key, compute)
        if layer.op == "concat":
            channel += shape[0]


def _key(t: Tiling) -> tuple[bytes, ...]:
    return tuple(b.tobytes() for b in t.bounds)


def uop_edges(
    layout: Layout, elem_bytes: int = 1, psum_bytes: int = 4
) -> tuple[IntArray, IntArray, IntArray]:
    """``(src, dst, bytes)`` of every edge (module docstring), in μop numbering."""
    srcs: list[IntArray] = []
    dsts: list[IntArray] = []
    byts: list[IntArray] = []
    for layer in layout.net.layers:
        t, here = layout.tilings[layer.name], layout.uops(layer.name)
        if t.counts[3] > 1:
            s, d, b = psum_chains(t, psum_bytes)
            srcs.append(here[s])
            dsts.append(here[d])
            byts.append(b)
        for p, s, d, b in layer_edges(layout.net, layer, layout.tilings, elem_bytes):
            srcs.append(layout.uops(p)[s])
            dsts.append(here[d])
            byts.append(b)
    empty = np.zeros(0, np.int64)
    return (
        np.concatenate(srcs) if srcs else empty,
        np.concatenate(dsts) if dsts else empty,
        np.concatenate(byts) if byts else empty,
    )


def heads(
    net: Network,
    tilings: Mapping[str, Tiling],
    latency: Mapping[str, IntArray],
    cache: EdgeCache | None = None,
) -> IntArray:
    """Each μop's earliest start (the longest path into it, as
    :meth:`~npusched.problem.scheduling.dag.UopGraph.heads` on the graph of :func:`uop_edges`)
    with each layer's ``latency`` per tile, in :meth:`Tiling.index` order, layer after layer:
    a μop waits for the finished producer tiles it reads, then for its chain's previous μop.
    No graph is built; ``cache`` as in :func:`layer_edges`."""
    finish: dict[str, IntArray] = {}
    out: list[IntArray] = []
    for layer in net.layers:
        t, lat = tilings[layer.name], latency[layer.name]
        head = np.zeros(t.size, dtype=np.int64)
        for p, src, dst, _ in layer_edges(net, layer, tilings, cache=cache):
            np.maximum.at(head, dst, finish[p][src])
        chain, took = head.reshape(-1, t.counts[3]), lat.reshape(-1, t.counts[3])
        for c in range(1, t.counts[3]):
            np.maximum(chain[:, c], chain[:, c - 1] + took[:, c - 1], out=chain[:, c])
        finish[layer.name] = head + lat
        out.append(head)
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def output_bytes(layout: Layout, elem_bytes: int, psum_bytes: int = 4) -> IntArray:
    """Bytes of each μop's output tile: partial sums (``psum_bytes`` per element) for all but the
    last μop of a chain, the finished tile (``elem_bytes``) for the last."""
    out = np.empty(layout.n, dtype=np.int64)
    for layer in layout.net.layers:
        t = layout.tilings[layer.name]
        k, y, x, c = layout.tiles(layer.name)
        vol = t.lengths(0)[k] * t.lengths(1)[y] * t.lengths(2)[x]
        per = np.where(c == t.counts[3] - 1, elem_bytes, psum_bytes)
        out[layout.uops(layer.name)] = vol * per
    return out
