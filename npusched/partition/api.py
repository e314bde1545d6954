"""One call from a network and an architecture to a scheduling instance, for the CLI, the search
and the notebooks: ``partition_network(net, arch, "klotski", s=(h, w, ic, oc))``.

Data flows one way, one module per step:

1. **scheme → tilings** (:mod:`~npusched.partition.schemes`): how each paper cuts a layer;
2. **tilings → dependencies** (:mod:`~npusched.partition.build`, by
   :mod:`~npusched.partition.grid`'s interval arithmetic): the μop numbering and edges;
3. **costs** (:mod:`~npusched.partition.costs`): each μop's latency on each core from a cost
   model (:mod:`npusched.costmodel`);
4. **instance** (:mod:`~npusched.partition.instance`): the machine — ``routed`` (the default:
   links, DRAM, memories; a :class:`~npusched.problem.scheduling.routed.RoutedInstance`) or
   ``compute-only`` (the μop DAG on the mesh with compute latencies, the model before).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from npusched.arch import Arch
from npusched.costmodel import CostModel
from npusched.partition.build import Layout, uop_edges
from npusched.partition.costs import latency_table
from npusched.partition.grid import Tiling
from npusched.partition.instance import compute_instance, routed_instance, within_uops
from npusched.partition.schemes import (
    flexer_tiling,
    klotski_tilings,
    loop_order_rank,
    memory_violation,
    stream_default_tiling,
    stream_tiling,
)
from npusched.problem import SchedulingInstance
from npusched.problem.scheduling.machine_view import MachineView
from npusched.problem.scheduling.routed import RoutedInstance
from npusched.workload.network import Network
from npusched.workload.tensor import TensorProgram

LOOP_NAMES = ("B", "M", "K", "N")
"""``--s`` of a tensor program: tile lengths of heads, rows, reduction and columns."""

SCHEMES = ("klotski", "stream", "flexer")
MACHINES = ("routed", "compute-only")
PRECISIONS = ("arch", "workload")
"""Whose element width prices the tensors: the arch's ``precision_bits``, or the workload's
element type (an ONNX file's; the arch's where the workload declares none)."""


def priced_arch(net: Network | TensorProgram, arch: Arch, precision: str | int = "arch") -> Arch:
    """``arch`` with the element width the partition prices every tensor and tile at
    (:func:`priced_bits`)."""
    bits = priced_bits(net, arch, precision)
    return arch if bits == arch.precision_bits else replace(arch, precision_bits=bits)


def priced_bits(net: Network | TensorProgram, arch: Arch, precision: str | int = "arch") -> int:
    """The element width the partition prices every tensor and tile at: ``"arch"`` keeps
    ``arch.precision_bits``; ``"workload"`` takes the workload's ``source["precision_bits"]``
    (the ONNX element type, as Stream 2.1.1 prices its operands), the arch's where there is
    none; an integer gives the bits."""
    if isinstance(precision, str) and precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from "
                         f"{', '.join(PRECISIONS)} or a number of bits")  # fmt: skip
    bits = (arch.precision_bits if precision == "arch" else
            net.source.get("precision_bits") or arch.precision_bits if precision == "workload"
            else int(precision))  # fmt: skip
    if bits < 1:
        raise ValueError(f"precision: an element needs at least 1 bit, got {bits}")
    return int(bits)


def resolve_network(spec: str, dims: dict[str, int] | None = None) -> Any:
    """The one entry of workloads: a zoo name, a network JSON file, or an ONNX file (a CNN
    :class:`~npusched.workload.network.Network`, or a
    :class:`~npusched.workload.tensor.TensorProgram`,
    :func:`~npusched.io.onnx_tensor.read_workload_onnx`, its symbolic dimensions set by
    ``dims``)."""
    if spec.endswith(".onnx"):
        from npusched.io.onnx_tensor import read_workload_onnx

        return read_workload_onnx(spec, dims=dims)
    if dims:
        raise ValueError(f"--dim sets an ONNX file's symbolic dimensions; {spec} is not one")
    from npusched.workload.zoo import load_network

    return load_network(spec)


def scheme_tilings(
    net: Network,
    arch: Arch | MachineView,
    scheme: str,
    *,
    s: tuple[int, int, int, int] | None = None,
    cn: Mapping[str, int] | None = None,
    tiles: tuple[int, int, int, int] | None = None,
    align: bool = True,
) -> tuple[dict[str, Tiling], dict[str, Any]]:
    """Step 1: every layer's tiling under ``scheme`` and what the scheme was given."""
    view = MachineView.of(arch)
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; choose from {', '.join(SCHEMES)}")
    if scheme == "klotski":
        if s is None:
            raise ValueError("the klotski scheme needs --s H,W,IC,OC")
        tilings = klotski_tilings(net, view, s, align)
        if why := memory_violation(net, view, tilings):
            raise ValueError(f"{why}; choose a smaller --s")
        return tilings, {"s": list(s)}
    if scheme == "stream":
        outer = {"OY": 1} if cn is None else dict(cn)
        if "K" in outer:
            return {ly.name: stream_tiling(net, ly, outer) for ly in net.layers}, {"cn": outer}
        cap = max((c.memory_bytes for c in view.cores if c.memory_bytes), default=None)
        elem = view.elem_bytes
        tilings = {ly.name: stream_default_tiling(net, ly, cap, elem, outer)
                   for ly in net.layers}  # fmt: skip
        cut_k = {name: int(t.lengths(0).max()) for name, t in tilings.items() if t.counts[0] > 1}
        return tilings, {"cn": outer, **({"cn_k": cut_k} if cut_k else {})}
    if tiles is None:
        raise ValueError("the flexer scheme needs --tiles OC,OH,OW,IC")
    return {ly.name: flexer_tiling(net, ly, tiles) for ly in net.layers}, {"tiles": list(tiles)}


FINER = {
    "klotski": "a smaller --s",
    "stream": "more CNs per layer, e.g. --cn K=16,OY=1",
    "flexer": "smaller --tiles",
}
"""What :func:`partition_network` suggests, per scheme, when a μop does not fit its core."""


def machine_cost_model(machine: str, cost: str | CostModel, arch: Arch | MachineView
                       ) -> CostModel:  # fmt: skip
    """The cost model that :func:`partition_network` uses for ``cost`` on ``machine``: the
    compute-only machine takes ``compute`` for the default ``analytic``; a name is built once
    per machine view (:meth:`~npusched.problem.scheduling.machine_view.MachineView.cost_model`)."""
    if isinstance(cost, str) and machine == "compute-only" and cost == "analytic":
        cost = "compute"
    return MachineView.of(arch).cost_model(cost) if isinstance(cost, str) else cost


def partition_network(
    net: Network | TensorProgram,
    arch: Arch | MachineView,
    scheme: str,
    *,
    s: tuple[int, int, int, int] | None = None,
    cn: Mapping[str, int] | None = None,
    tiles: tuple[int, int, int, int] | None = None,
    loop_order: str = "K,OY,OX,C",
    align: bool = True,
    machine: str = "routed",
    cost: str | CostModel = "analytic",
    precision: str | int = "arch",
    max_uops: int | None = None,
) -> RoutedInstance | SchedulingInstance:
    """Cut every layer of ``net`` by ``scheme`` and build its instance on ``arch`` (module
    docstring).

    ``klotski`` needs ``s = (h, w, ic, oc)`` (aligned to the first core's PE array unless
    ``align`` is false; every μtensor must fit the smallest core memory); ``stream`` takes the
    CN loops ``cn`` (default one CN per output row, ``{"OY": 1}``); ``flexer`` the tile sizes
    ``tiles = (t_oc, t_oh, t_ow, t_ic)`` and a ``loop_order``, which numbers each layer's μops
    (Fig. 3c: the operation sequence of the loop nest). ``machine`` is ``routed`` or
    ``compute-only``; ``cost`` a cost model or its name (``analytic``, ``zigzag``, ``compute``;
    the compute-only machine takes ``compute`` unless told otherwise); ``precision`` the
    element width every tensor and tile is priced at (:func:`priced_bits`); ``max_uops``, if
    given, the most μops the cut may make (more: a ``ValueError`` before the dependencies and
    costs are built, :func:`~npusched.partition.instance.within_uops`). ``arch`` may be
    a :class:`~npusched.problem.scheduling.machine_view.MachineView`: what it derived from the
    arch (topology, memories, cost models) serves every partition made with it.
    """
    if machine not in MACHINES:
        raise ValueError(f"unknown machine {machine!r}; choose from {', '.join(MACHINES)}")
    view = MachineView.of(arch)
    view = view.priced(priced_bits(net, view.arch, precision))
    if isinstance(net, TensorProgram):
        return _program_instance(net, view, scheme, s=s, cn=cn, machine=machine, cost=cost,
                                 max_uops=max_uops)  # fmt: skip
    tilings, given = scheme_tilings(net, view, scheme, s=s, cn=cn, tiles=tiles, align=align)
    ranks = None
    if scheme == "flexer":
        given["loop_order"] = loop_order
        ranks = {name: loop_order_rank(t, loop_order) for name, t in tilings.items()}
    layout = Layout.of(net, tilings, ranks)
    within_uops(layout.n, max_uops)
    elem = view.elem_bytes
    edges = uop_edges(layout, elem)
    model = machine_cost_model(machine, cost, view)
    before = len(getattr(model, "fallbacks", []))
    latency = latency_table(layout, view.cores, model)
    source: dict[str, Any] = {
        "scheme": scheme,
        "arch": view.name,
        **given,
        "max_kinds_per_layer": int(max(t.kinds() for t in tilings.values())),
        "network": net.name,
        "layers": layout.record(),
        "macs": net.macs(),
        "elem_bytes": elem,
        "machine": machine,
        "cost": model.name,
    }
    _record_fallbacks(source, model, before)
    name = f"{net.name}_{view.name}_{scheme}"
    if machine == "compute-only":
        return compute_instance(layout, edges, latency, view.accelerator, name, source)
    try:
        return routed_instance(layout, edges, latency, view, name, source, elem)
    except ValueError as err:  # a μop whose data alone exceeds a core's memory: say how to cut
        if "memory holds" not in str(err):
            raise
        raise ValueError(f"{err}; cut finer with {FINER[scheme]}") from None


def _program_instance(prog: TensorProgram, view: MachineView, scheme: str, *,
                      s: tuple[int, int, int, int] | None, cn: Mapping[str, int] | None,
                      machine: str, cost: str | CostModel,
                      max_uops: int | None = None) -> RoutedInstance:  # fmt: skip
    """:func:`partition_network` of a tensor program (:mod:`npusched.partition.tensor`): the
    ``stream`` scheme's CNs along the rows (``cn``: ``{"M": rows}``), or the ``klotski``
    scheme's tiles ``s = (B, M, K, N)``; on the routed machine only."""
    from npusched.partition.tensor import tensor_instance, tile_lengths

    if machine != "routed":
        raise ValueError("tensor programs are partitioned on the routed machine only")
    given = dict(zip(LOOP_NAMES, s, strict=True)) if s is not None else cn
    tiles = tile_lengths(prog, view, scheme, given)
    model = machine_cost_model(machine, cost, view)
    source: dict[str, Any] = {"scheme": scheme, "arch": view.name, "tiles": tiles,
                              "network": prog.name, "macs": prog.macs(),
                              "elem_bytes": view.elem_bytes,
                              "machine": machine, "cost": model.name}  # fmt: skip
    name = f"{prog.name}_{view.name}_{scheme}"
    before = len(getattr(model, "fallbacks", []))
    try:
        inst = tensor_instance(prog, view, tiles, model, name, source, max_uops)
    except ValueError as err:  # a μop whose data alone exceeds a core's memory: say how to cut
        if "memory holds" not in str(err):
            raise
        hint = "--cn M=ROWS with fewer rows" if scheme == "stream" else "smaller --s B,M,K,N"
        raise ValueError(f"{err}; cut finer: {hint}") from None
    _record_fallbacks(inst.source, model, before)
    return inst


def _record_fallbacks(source: dict[str, Any], model: CostModel, before: int) -> None:
    """``source["cost_fallbacks"]``: the tiles of this partition that the cost model could not
    cost and gave the analytic latency (ZigZag past its time limit, or a tile too large for a
    core kind's SRAM), those after its first ``before`` (a model serves many partitions)."""
    if fallbacks := getattr(model, "fallbacks", [])[before:]:
        source["cost_fallbacks"] = [f"{shape.kind} K{shape.K} C{shape.C} {shape.OY}x{shape.OX}"
                                    f" F{shape.FY}x{shape.FX}: {why}"
                                    for shape, why in fallbacks]  # fmt: skip
