"""One call from a network and an architecture to a scheduling instance, for the CLI and the
notebooks: ``partition_network(net, arch, "klotski", s=(h, w, ic, oc))``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npusched.arch import Arch
from npusched.partition.build import build_instance
from npusched.partition.grid import Tiling, layer_extents, needed_input
from npusched.partition.schemes import (
    flexer_tiling,
    klotski_tiling,
    loop_order_rank,
    stream_tiling,
)
from npusched.problem import Accelerator, SchedulingInstance
from npusched.workload.layers import Layer
from npusched.workload.network import Network

SCHEMES = ("klotski", "stream", "flexer")


def resolve_network(spec: str) -> Network:
    """A zoo name, a network JSON file, or an ONNX file."""
    if spec.endswith(".onnx"):
        from npusched.io.onnx_import import read_onnx

        return read_onnx(spec)
    from npusched.workload.zoo import load_network

    return load_network(spec)


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


def smallest_memory(arch: Arch) -> int | None:
    memories = [c.memory_bytes for c in arch.cores if c.memory_bytes is not None]
    return min(memories) if memories else None


def memory_violation(net: Network, arch: Arch, tilings: Mapping[str, Tiling]) -> str | None:
    """Why the tilings do not fit the smallest core's memory (:func:`over_memory`), or
    ``None`` when every μtensor fits."""
    cap, elem = smallest_memory(arch), max(1, round(arch.element_bytes))
    for layer in net.layers if cap is not None else ():
        why = over_memory(layer, footprint(layer, net, tilings[layer.name], elem), cap)
        if why:
            return why
    return None


class KlotskiMemory:
    """:func:`memory_violation` of :func:`klotski_tilings` for many shapes ``s`` of one network:
    each layer's largest μtensor depends only on ``s`` clipped to the layer's extents, so it is
    computed once per distinct clipped shape (the design-space enumeration of the search)."""

    def __init__(self, net: Network, arch: Arch, align: bool = True) -> None:
        self.net, self.cap = net, smallest_memory(arch)
        self.elem = max(1, round(arch.element_bytes))
        self.unroll = {k: v for k, v in arch.cores[0].pe_unroll.items() if "*" not in k}
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
    net: Network, arch: Arch, s: tuple[int, int, int, int], align: bool = True
) -> dict[str, Tiling]:
    """Every layer cut by Klotski's μtensor ``s`` (``align``: ic, oc up to the first core's PE
    array, §III-B's remainder-free partition)."""
    unroll = {k: v for k, v in arch.cores[0].pe_unroll.items() if "*" not in k}
    return {ly.name: klotski_tiling(net, ly, s, unroll if align else None) for ly in net.layers}


def partition_network(
    net: Network,
    arch: Arch,
    scheme: str,
    *,
    s: tuple[int, int, int, int] | None = None,
    cn: Mapping[str, int] | None = None,
    tiles: tuple[int, int, int, int] | None = None,
    loop_order: str = "K,OY,OX,C",
    align: bool = True,
) -> SchedulingInstance:
    """Cut every layer of ``net`` by ``scheme`` and build the μop-graph instance on ``arch``.

        ``klotski`` needs ``s = (h, w, ic, oc)`` (aligned to the first core's PE array unless
        ``align`` is false; every μtensor must fit the smallest core memory); ``stream`` takes the
        CN loops ``cn`` (default one CN per output row, ``{"OY": 1}``); ``flexer`` the tile sizes
        ``tiles = (t_oc, t_oh, t_ow, t_ic)`` and a ``loop_order``, which numbers each layer's μops
    (Fig. 3c: the operation sequence of the loop nest).
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; choose from {', '.join(SCHEMES)}")
    elem = max(1, round(arch.element_bytes))
    unrolls = [dict(c.pe_unroll) for c in arch.cores]
    tilings: dict[str, Tiling] = {}
    info: dict[str, Any] = {"scheme": scheme, "arch": arch.name}
    if scheme == "klotski":
        if s is None:
            raise ValueError("the klotski scheme needs --s H,W,IC,OC")
        tilings = klotski_tilings(net, arch, s, align)
    for layer in net.layers if scheme != "klotski" else ():
        if scheme == "stream":
            tilings[layer.name] = stream_tiling(net, layer, cn or {"OY": 1})
        else:
            if tiles is None:
                raise ValueError("the flexer scheme needs --tiles OC,OH,OW,IC")
            tilings[layer.name] = flexer_tiling(net, layer, tiles)
    if scheme == "klotski" and (why := memory_violation(net, arch, tilings)):
        raise ValueError(f"{why}; choose a smaller --s")
    if scheme == "klotski":
        info["s"] = list(s or ())
    elif scheme == "stream":
        info["cn"] = dict(cn or {"OY": 1})
    else:
        info["tiles"], info["loop_order"] = list(tiles or ()), loop_order
    ranks = None
    if scheme == "flexer":
        ranks = {name: loop_order_rank(t, loop_order) for name, t in tilings.items()}
    kinds = [tilings[layer.name].kinds() for layer in net.layers]
    info["max_kinds_per_layer"] = int(np.max(kinds))
    name = f"{net.name}_{arch.name}_{scheme}"
    return build_instance(
        net,
        tilings,
        Accelerator.from_arch(arch),
        unrolls,
        elem_bytes=elem,
        name=name,
        source=info,
        ranks=ranks,
    )
