"""The last step of a partition (scheme → tilings → dependencies → costs → **instance**;
:mod:`npusched.partition.api`): the μop graph with its latencies on a machine.

- :func:`routed_instance` (the default machine, ``routed``): Stream's kind of model for every
  partition (``../shared/DESIGN.md``, *Machine model*), the same
  :class:`~npusched.problem.scheduling.routed.RoutedInstance` a Stream export gives:

  - the arch's links, routes, DRAM controllers and memories
    (:mod:`npusched.problem.scheduling.machine`);
  - a μop produces its output tile (:func:`~npusched.partition.build.output_bytes`, the
    instance's ``output``), and each data edge carries what its consumer reads of it (the
    overlap of the consumer's input box with the tile, its halo included); a copy sent to
    another core carries what the consumers there read, at most the whole tile
    (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.copy_data`; Stream's CNs send
    their whole output, which is what they read);
  - weights and the network's input start in DRAM (:func:`dram_tensors`);
  - every core's SRAM is its capacity, in bytes.

- :func:`compute_instance` (the machine ``compute-only``): the μop DAG with its compute
  latencies on the accelerator's mesh (hops and bytes over the raw link bandwidth, no contention,
  no DRAM, no memory), the model of the releases before the machine model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from npusched.arch.model import CoreSpec
from npusched.costmodel import ComputeSteps
from npusched.partition.build import Layout, output_bytes, uop_edges
from npusched.partition.costs import latency_table
from npusched.partition.grid import IntArray, Tiling, needed_input
from npusched.problem import Accelerator, SchedulingInstance, UopGraph
from npusched.problem.scheduling.machine_view import MachineView
from npusched.problem.scheduling.routed import DramTensor, RoutedInstance
from npusched.workload.layers import INPUT

Edges = tuple[IntArray, IntArray, IntArray]


class TooManyUops(ValueError):
    """A cut that makes more μops (``n``) than it may (:func:`within_uops`)."""

    def __init__(self, n: int, most: int) -> None:
        super().__init__(f"the cut makes {n:,} μops, more than the {most:,} allowed")
        self.n = n


def within_uops(n: int, max_uops: int | None) -> None:
    """Raise :class:`TooManyUops` where a cut of ``n`` μops makes more than ``max_uops`` (none:
    no limit), before its dependencies and costs are built."""
    if max_uops is not None and n > max_uops:
        raise TooManyUops(n, max_uops)


def compute_instance(
    layout: Layout, edges: Edges, latency: IntArray, accelerator: Accelerator, name: str,
    source: dict[str, Any],
) -> SchedulingInstance:  # fmt: skip
    """The compute-only instance: ``latency`` is ``(n, m)``; edges carry their overlap bytes."""
    src, dst, byt = edges
    identical = bool((latency == latency[:, :1]).all())
    graph = UopGraph(latency[:, 0], src, dst, byt)
    return SchedulingInstance(graph, accelerator, None if identical else latency, name,
                              source=source)  # fmt: skip


def build_instance(
    net: Any, tilings: Mapping[str, Tiling], accelerator: Accelerator,
    unrolls: Sequence[Mapping[str, int]], *, elem_bytes: int = 1, psum_bytes: int = 4,
    name: str | None = None,
) -> SchedulingInstance:  # fmt: skip
    """The compute-only instance of ``net`` cut by ``tilings`` on ``accelerator``, one PE
    unrolling per core (for benches and tests that need no arch)."""
    if len(unrolls) != accelerator.m:
        raise ValueError(f"{len(unrolls)} PE arrays for {accelerator.m} cores")
    layout = Layout.of(net, tilings)
    cores = [CoreSpec(k, "", dict(u)) for k, u in enumerate(unrolls)]
    latency = latency_table(layout, cores, ComputeSteps())
    edges = uop_edges(layout, elem_bytes, psum_bytes)
    source = {"network": net.name, "layers": layout.record(), "macs": net.macs(),
              "elem_bytes": elem_bytes}  # fmt: skip
    return compute_instance(layout, edges, latency, accelerator, name or net.name, source)


def routed_instance(
    layout: Layout, edges: Edges, latency: IntArray, view: MachineView, name: str,
    source: dict[str, Any], elem_bytes: int, psum_bytes: int = 4,
) -> RoutedInstance:  # fmt: skip
    """The routed instance of the module docstring on the machine ``view`` (its accelerator,
    topology and memories). A μop whose own data (inputs, weights and output) exceeds its
    core's memory raises ``ValueError`` naming both."""
    base = compute_instance(layout, edges, latency, view.accelerator, name, source)
    return RoutedInstance(
        base,
        view.topology,
        dram=dram_tensors(layout, elem_bytes),
        data_unit="bytes",
        capacity=view.capacity,
        layer=layout.layer_of(),
        output=output_bytes(layout, elem_bytes, psum_bytes),
        forward=view.arch.noc.forwarding,
    )


def dram_tensors(layout: Layout, elem_bytes: int) -> tuple[DramTensor, ...]:
    """Constant operands in DRAM: each conv or fc layer's weights, one tensor per output- and
    input-channel tile ``(k, c)`` read by the μops of that tile at every ``(y, x)``; and the
    network's input, one tensor per input box ``(channels, rows, columns)`` a first-layer μop
    reads (boxes of neighbouring tiles overlap by their halo, which is then fetched twice)."""
    out: list[DramTensor] = []
    net = layout.net
    for layer in net.layers:
        t, uops = layout.tilings[layer.name], layout.uops(layer.name)
        k, y, x, c = layout.tiles(layer.name)
        lk, lc = t.lengths(0), t.lengths(3)
        if layer.op in ("conv", "fc"):
            rs = layer.kernel[0] * layer.kernel[1] if layer.op == "conv" else 1
            key = k * t.counts[3] + c
            for g in np.unique(key).tolist():
                kk, cc = divmod(g, t.counts[3])
                size = int(lk[kk] * lc[cc] * rs) * elem_bytes
                out.append(DramTensor(f"{layer.name}.W[{kk},{cc}]", size, uops[key == g]))
        channel = 0
        for p in layer.inputs:
            shape = net.shapes[p]
            if p == INPUT:
                out.extend(_input_boxes(layout, layer.name, shape, channel, elem_bytes))
            if layer.op == "concat":
                channel += shape[0]
    return tuple(out)


def _input_boxes(
    layout: Layout, name: str, shape: tuple[int, int, int], channel: int, elem_bytes: int
) -> list[DramTensor]:
    """The network-input boxes layer ``name`` reads (:func:`dram_tensors`)."""
    layer = layout.net.layer(name)
    t, uops = layout.tilings[name], layout.uops(name)
    k, y, x, c = layout.tiles(name)
    ch, rows, cols = needed_input(layer, t, shape, channel, shape[0])
    by_c = layer.op == "fc" or (layer.op == "conv" and layer.groups == 1)
    cidx = (c if by_c else k) if ch[0].size > 1 else np.zeros_like(c)
    yidx = y if rows[0].size > 1 else np.zeros_like(y)
    xidx = x if cols[0].size > 1 else np.zeros_like(x)
    vol = (ch[1] - ch[0])[cidx] * (rows[1] - rows[0])[yidx] * (cols[1] - cols[0])[xidx]
    key = (cidx * (yidx.max() + 1) + yidx) * (xidx.max() + 1) + xidx
    boxes = []
    for g in np.unique(key).tolist():
        on = key == g
        size = int(vol[on][0]) * elem_bytes
        if size > 0:
            boxes.append(DramTensor(f"{name}.I[{g}]", size, uops[on]))
    return boxes
