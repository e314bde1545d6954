"""How each paper partitions a layer into μops, as a :class:`~npusched.partition.grid.Tiling`.

- **Klotski** (§III-B, Fig. 5): one μtensor shape ``s = (h, w, ic, oc)`` cut from every layer, the
  remainders forming up to 2⁴ = 16 μtensor kinds per layer. With ``align`` the channel sizes are
  rounded up to multiples of the PE array's unrolling of ``K`` and ``C`` (no partially used PE
  rows or columns except in remainders). Input-channel splits make partial-sum chains.
- **Stream** (§III-B): computation nodes from a set of outer loops: ``{"OY": 1}`` is one CN per
  output row, ``{"K": 16, "OY": 4}`` splits output channels by 16 and rows by 4. The reduction is
  never split. :func:`stream_cn_io` gives each CN's new output and the input it may discard.
- **Flexer** (§3, Fig. 3): tiling factors ``(t_oc, t_oh, t_ow, t_ic)`` and a loop order; its DFG is
  the tiled convolutions with partial-sum chains over the input-channel tiles.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from npusched.arch import Arch
from npusched.partition.grid import DIMS, IntArray, Tiling, layer_extents, needed_input
from npusched.problem.scheduling.machine_view import MachineView
from npusched.workload.layers import Layer
from npusched.workload.network import Network


def _fits(layer: Layer, extents: tuple[int, ...], tiles: list[int]) -> tuple[int, ...]:
    """Clip tile sizes to the layer and keep the reduction whole where it cannot be split
    (grouped conv, pooling, add, concat; fc after a spatial input)."""
    out = [min(t, e) for t, e in zip(tiles, extents, strict=True)]
    if layer.op != "conv" or layer.groups > 1:
        out[3] = extents[3]
    return tuple(out)


def klotski_tiling(
    net: Network,
    layer: Layer,
    s: tuple[int, int, int, int],
    unroll: Mapping[str, int] | None = None,
) -> Tiling:
    """Klotski's μtensor ``s = (h, w, ic, oc)`` applied to ``layer`` (clipped to its extents).

    ``unroll`` (e.g. ``{"K": 12, "C": 14}``) aligns ``oc`` and ``ic`` up to multiples of the PE
    array's unrolling of ``K`` and ``C``.
    """
    h, w, ic, oc = s
    if min(s) < 1:
        raise ValueError(f"μtensor sizes must be positive, got {s}")
    if unroll:
        oc = -(-oc // unroll.get("K", 1)) * unroll.get("K", 1)
        ic = -(-ic // unroll.get("C", 1)) * unroll.get("C", 1)
    ext = layer_extents(layer, net.in_shapes(layer), net.shapes[layer.name])
    if layer.op == "fc":
        ext_fc = ext
        c, hh, ww = net.in_shapes(layer)[0]
        tiles = [oc, 1, 1, ic if hh * ww == 1 else ext_fc[3]]
        return Tiling.regular(ext, _fits(layer, ext, tiles))  # type: ignore[arg-type]
    return Tiling.regular(ext, _fits(layer, ext, [oc, h, w, ic]))  # type: ignore[arg-type]


def stream_tiling(net: Network, layer: Layer, outer: Mapping[str, int]) -> Tiling:
    """Stream's CNs: tile size per outer loop in ``outer`` (``K``, ``OY``, ``OX``); the others and
    the reduction stay whole."""
    bad = set(outer) - {"K", "OY", "OX"}
    if bad:
        raise ValueError(f"Stream CN loops are K, OY, OX; got {sorted(bad)}")
    ext = layer_extents(layer, net.in_shapes(layer), net.shapes[layer.name])
    tiles = [outer.get(d, e) for d, e in zip(DIMS[:3], ext[:3], strict=True)] + [ext[3]]
    return Tiling.regular(ext, _fits(layer, ext, tiles))  # type: ignore[arg-type]


def stream_default_tiling(net: Network, layer: Layer, cap: int | None, elem_bytes: int,
                          outer: Mapping[str, int] | None = None) -> Tiling:  # fmt: skip
    """Stream's CNs where ``K`` is not given: the loops ``outer`` (default one CN per output
    row, ``OY = 1``), the output channels ``K`` halved (rounded up) while the largest CN
    (:func:`footprint`) exceeds ``cap``, the largest core memory (a CN may run on any core and
    must fit one), as the columns of a tensor program's CNs are when ``N`` is not given
    (:func:`~npusched.partition.tensor.fitting_cut`). A layer whose rows fit is cut as before;
    one whose weights alone exceed a core (ResNet-18's last 3 × 3 convolutions on Stream's
    ``tpu_like_quad_core``) gets CNs that each hold a block of its filters, as Stream's
    inter-core tiling of ``K`` does."""
    outer = dict(outer) if outer is not None else {"OY": 1}
    tiling = stream_tiling(net, layer, outer)
    k = int(tiling.lengths(0).max())
    while cap is not None and k > 1 and footprint(layer, net, tiling, elem_bytes) > cap:
        k = -(-k // 2)
        tiling = stream_tiling(net, layer, {**outer, "K": k})
    return tiling


def flexer_tiling(net: Network, layer: Layer, factors: tuple[int, int, int, int]) -> Tiling:
    """Flexer's tiled convolution: tile sizes ``(t_oc, t_oh, t_ow, t_ic)`` (Fig. 3a)."""
    ext = layer_extents(layer, net.in_shapes(layer), net.shapes[layer.name])
    return Tiling.regular(ext, _fits(layer, ext, list(factors)))  # type: ignore[arg-type]


def loop_order_rank(tiling: Tiling | tuple[int, int, int, int], order: str) -> IntArray:
    """Position of every μop (in :meth:`Tiling.index` order) when the tile loops run in
    ``order`` (outermost first, e.g. ``"K,OY,OX,C"``, Flexer Fig. 3b). ``tiling`` may also be
    the tile counts per dimension."""
    names = [d.strip().upper() for d in order.split(",")]
    if sorted(names) != sorted(DIMS):
        raise ValueError(f"a loop order names each of {DIMS} once, got {order!r}")
    counts = tiling.counts if isinstance(tiling, Tiling) else tiling
    size = int(np.prod(counts))
    perm = [DIMS.index(d) for d in names]
    grid = np.arange(size).reshape(counts)  # μop index at (k, y, x, c)
    rank = np.empty(size, dtype=np.int64)
    rank[np.transpose(grid, perm).reshape(-1)] = np.arange(size)
    return rank


def stream_cn_io(net: Network, layer: Layer, tiling: Tiling) -> tuple[IntArray, IntArray]:
    """Per CN (in order): the new output it produces and the input it is the last to read
    (Stream's discardable input), both in elements of its first input.

    CNs run in index order; an input element can be discarded after the last CN that reads it.
    """
    in_shape = net.in_shapes(layer)[0]
    ch, rows, cols = needed_input(layer, tiling, in_shape)
    nk, ny, nx, nc = tiling.counts
    lk, ly, lx = (tiling.lengths(d) for d in range(3))
    new_out = np.einsum("k,y,x->kyx", lk, ly, lx).reshape(-1)
    new_out = np.repeat(new_out, nc)
    # last reader of every input element, by the per-dimension intervals of each CN
    c_in, h, w = in_shape
    last = np.full((c_in, h, w), -1, dtype=np.int64)
    idx = 0
    chan_by_c = layer.op == "conv" and layer.groups == 1 or layer.op == "fc"
    for k in range(nk):
        for y in range(ny):
            for x in range(nx):
                for c in range(nc):
                    t = c if chan_by_c else k
                    if ch[0].size == 1:
                        t = 0
                    last[ch[0][t] : ch[1][t], rows[0][y] : rows[1][y], cols[0][x] : cols[1][x]] = (
                        idx
                    )
                    idx += 1
    discard = np.bincount(last[last >= 0].reshape(-1), minlength=tiling.size)
    return new_out.astype(np.int64), discard.astype(np.int64)


# --- Klotski's memory rule (§III-B): every μtensor fits the smallest core -----------------


def footprint(layer: Layer, net: Network, tiling: Tiling, elem_bytes: int) -> int:
    """Bytes of the largest μtensor: its input box, its weights and its output tile (partial sums
    at 4 bytes when the reduction is split)."""
    ch, rows, cols = needed_input(layer, tiling, net.in_shapes(layer)[0])
    inp = (
        int((ch[1] - ch[0]).max()) * int((rows[1] - rows[0]).max()) * int((cols[1] - cols[0]).max())
    )
    lk, ly, lx, lc = (int(tiling.lengths(d).max()) for d in range(4))
    r, s = layer.kernel if layer.op == "conv" else (1, 1)
    weights = lk * lc * r * s if layer.op in ("conv", "fc") else 0
    out = lk * ly * lx * (4 if tiling.counts[3] > 1 else elem_bytes)
    return (inp + weights) * elem_bytes + out


def over_memory(layer: Layer, need: int, cap: int | None) -> str | None:
    """Klotski §III-B: a μtensor may not exceed a core's on-chip memory ``cap`` (the reason,
    or ``None`` when it fits)."""
    if cap is None or need <= cap:
        return None
    return f"layer {layer.name}: a μtensor needs {need} bytes, more than the {cap}-byte core memory"


def memory_violation(net: Network, view: MachineView, tilings: Mapping[str, Tiling]
                     ) -> str | None:  # fmt: skip
    """Why the tilings do not fit the smallest core's memory (:func:`over_memory`), or
    ``None`` when every μtensor fits."""
    cap, elem = view.smallest_memory, view.elem_bytes
    for layer in net.layers if cap is not None else ():
        why = over_memory(layer, footprint(layer, net, tilings[layer.name], elem), cap)
        if why:
            return why
    return None


class KlotskiMemory:
    """:func:`memory_violation` of :func:`klotski_tilings` for many shapes ``s`` of one network:
    each layer's largest μtensor depends only on ``s`` clipped to the layer's extents, so it is
    computed once per distinct clipped shape (the design-space enumeration of the search)."""

    def __init__(self, net: Network, arch: Arch | MachineView, align: bool = True) -> None:
        view = MachineView.of(arch)
        self.net, self.cap, self.elem, self.unroll = (net, view.smallest_memory, view.elem_bytes,
                                                      view.unroll)  # fmt: skip
        self.align = align
        self.extents = {
            ly.name: layer_extents(ly, net.in_shapes(ly), net.shapes[ly.name]) for ly in net.layers
        }
        self.need: dict[tuple[str, tuple[int, ...]], int] = {}
        self.tilings: dict[tuple[str, tuple[int, ...]], Tiling] = {}

    def tiling(self, layer: Layer, s: tuple[int, int, int, int]) -> Tiling:
        """:func:`klotski_tiling` of ``layer`` by ``s``, once per distinct clipped shape."""
        key = (layer.name, self.clipped(layer, s))
        if key not in self.tilings:
            unroll = self.unroll if self.align else None
            self.tilings[key] = klotski_tiling(self.net, layer, s, unroll)
        return self.tilings[key]

    def clipped(self, layer: Layer, s: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        """``s`` clipped to ``layer``'s extents, as ``(oc, h, w, ic)``: shapes with equal clipped
        values cut the layer alike."""
        h, w, ic, oc = s
        ext = self.extents[layer.name]
        return (min(oc, ext[0]), min(h, ext[1]), min(w, ext[2]), min(ic, ext[3]))

    def signature(self, s: tuple[int, int, int, int]) -> tuple[tuple[int, int, int, int], ...]:
        """What ``s`` does to every layer: equal signatures give the same partition."""
        return tuple(self.clipped(layer, s) for layer in self.net.layers)

    def violation(self, s: tuple[int, int, int, int]) -> str | None:
        """As :func:`memory_violation` for ``klotski_tilings(net, arch, s, align)``."""
        for layer in self.net.layers if self.cap is not None else ():
            key = (layer.name, self.clipped(layer, s))
            if key not in self.need:
                self.need[key] = footprint(layer, self.net, self.tiling(layer, s), self.elem)
            why = over_memory(layer, self.need[key], self.cap)
            if why:
                return why
        return None


def klotski_tilings(
    net: Network, view: MachineView, s: tuple[int, int, int, int], align: bool = True
) -> dict[str, Tiling]:
    """Every layer cut by Klotski's μtensor ``s`` (``align``: ic, oc up to the first core's PE
    array, §III-B's remainder-free partition)."""
    unroll = view.unroll
    return {ly.name: klotski_tiling(net, ly, s, unroll if align else None) for ly in net.layers}
