"""Stream's accelerator YAMLs (``stream-dse`` 2.x, ``stream/inputs/examples/hardware``) read into
an :class:`~npusched.arch.Arch`, so ``--arch path/to/accelerator.yaml`` works wherever an arch
name does (:func:`npusched.arch.load_arch` dispatches on the suffix).

A Stream accelerator names its cores by id (``0 … N−1``), each a ZigZag core YAML (relative to
the file, or in its ``cores/`` folder, as Stream's examples write them, or given inline), the
off-chip core, and ``core_connectivity``: links (two directed links of one bandwidth) and buses
(one resource among all members), bandwidths in **bits per cycle**. Stream 2.1.1 reads them so
(``stream/parser/accelerator_factory.py``); here, field by field:

- **cores** of type ``compute`` (any namespace, ``zigzag.compute``) become
  :class:`~npusched.arch.CoreSpec`; ``memory`` cores (TPU v7's VMEM) become NoC routers; the
  off-chip core becomes the DRAM's node (:attr:`~npusched.arch.DramSpec.node`);
- a core's **memory** is the top memory of its ``I1`` operand (Stream's
  ``get_memory_capacity``: the last memory listed that holds ``I1``), bits / 8, and its SRAM
  bandwidths are that memory's read and write ports (``read_write`` ports count for both); each
  operand's innermost memory below it is that operand's register file (:func:`_registers`);
- the **PE array** ``D1, D2, …``: a core without ``dataflows`` (every example) has its
  unrolling *searched* (:attr:`~npusched.arch.CoreSpec.unrolling`): the cost models choose the
  loop of each array dimension per tile, as Stream has ZigZag do per layer. ``pe_unroll``
  names the loops :data:`UNROLL` in order (K on ``D1``, C on ``D2``, …; ``FX, FY, K`` on a
  core that runs only pooling): the order ties go to, and the one unrolling the partition
  schemes align to. A core with ``dataflows`` keeps that order fixed (its dataflows are not
  read; an assumption the arch lists);
- the core's own **ZigZag description** (its memory hierarchy whole) is kept
  (:attr:`~npusched.arch.CoreSpec.zigzag`): the ZigZag cost model prices tiles on it, as
  Stream does, where the analytic model sees the register files and the top memory above;
- **links and buses**: bits per cycle / 8. Where two entries join the same ordered pair, the
  later one carries it (Stream's graph keeps one edge per pair): a link listed before a bus over
  its two cores is dropped; a link listed after such a bus is refused, which npusched's NoC
  cannot express (no example does it);
- **core_memory_sharing** (cores that share one memory, TPU v7's MXUs and VPU with their VMEM):
  where the group's first core is a memory core (the VMEM, its owner) it is linked to each of
  the group's compute cores, its read and write ports split evenly among them; otherwise a
  bus at the shared memory's read bandwidth joins the group. The memory is split evenly among
  the group's compute cores (assumptions, listed). Stream reads the group's cores in place;
  here data between them moves, at the memory's rate. One bus for the whole group (the reading
  before) was held by every transfer into the group for the whole transfer, at the rate of its
  slowest link (a fetch from HBM, or the inter-chip link): on ``tpu_v7_ironwood`` it was the
  busiest resource of ResNet-18's list, 93 843 → 70 663 cycles with the links (the Stream
  bench, one run);
- the **DRAM** bandwidth is the off-chip core's top-memory ports, summed (a top-level
  ``bandwidth`` ceiling for one of them replaces its ``bandwidth_max``);
- **precision**: the first compute core's ``operand_precision.input`` (8 bits where none);
- **forwarding** on (:attr:`~npusched.arch.NocSpec.forwarding`): a core may send a DRAM
  tensor it holds to another core, as Stream's current release sends a tensor from the cores
  that hold it (its ``CommunicationManager`` plans transfers from several sources).

Energy (``unit_energy_cost``, ``r_cost``, …), ``core_coordinates``, ``technology_node`` and
the memory levels between an operand's register file and the top memory are not modelled.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from npusched.arch.model import (
    Arch,
    ArchError,
    Bus,
    CoreSpec,
    DramSpec,
    NocSpec,
    Register,
    Source,
)
from npusched.common.errors import InputError
from npusched.common.jsonio import read_text, validate

UNROLL = ("K", "C", "OX", "OY")
"""Loops unrolled on a compute core's array dimensions ``D1, D2, …`` in order (assumed)."""
ZIGZAG_FIELDS = ("name", "memories", "operational_array")
"""The fields of a core YAML that describe it to ZigZag (kept as
:attr:`~npusched.arch.CoreSpec.zigzag`; Stream strips its own fields, ``operator_types`` and
``operand_precision``, before ZigZag validates the rest)."""
POOLING = ("FX", "FY", "K")
"""Loops unrolled on a core whose ``operator_types`` are all pooling (assumed)."""
POOL_OPS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}
STREAM = ("Symons et al., Stream: design space exploration of layer-fused DNNs on "
          "heterogeneous dataflow accelerators (stream-dse 2.1.1, MIT)")  # fmt: skip


def read_stream_accelerator(path: str | Path) -> Arch:
    """The :class:`~npusched.arch.Arch` of a Stream accelerator YAML (module docstring); a bad
    file raises :class:`~npusched.common.errors.InputError` naming the file and field."""
    path = Path(path)
    data = _yaml(path)
    validate(data, "stream_accelerator.schema.json", path)
    ids = sorted(int(k) for k in data["cores"])
    if ids != list(range(len(ids))):
        raise InputError(path, "cores", f"core ids are 0 … N−1 (Stream's rule), got {ids}")
    off = data["offchip_core_id"]
    if off not in ids:
        raise InputError(path, "offchip_core_id", f"{off} is not one of the cores {ids}")
    cores = {int(k): _core(path, int(k), v) for k, v in data["cores"].items()}
    kinds = {k: _kind(c.get("type", "compute")) for k, c in cores.items()}
    if kinds[off] != "offchip":
        raise InputError(path, "offchip_core_id", f"core {off} is not of type offchip")
    compute = [k for k in ids if kinds[k] == "compute"]
    if not compute:
        raise InputError(path, "cores", "no core of type compute")
    assumptions = [
        f"cores/*/pe_unroll: the array dimensions D1, D2, ... named {', '.join(UNROLL)} in "
        f"order ({', '.join(POOLING)} on pooling-only cores); the loop each unrolls is searched "
        "per tile, except on a core with dataflows, whose unrolling is that order, fixed",
    ]
    groups = _sharing(path, data, ids)
    shares = {k: len([c for c in g if c in compute]) for g in groups for k in g}
    buses, links, bandwidths = _connectivity(path, data, groups)
    for g in groups:
        top = _top(cores[g[0]])
        read, write = _port_bits(top, "read") / 8, _port_bits(top, "write") / 8
        members = [c for c in g if c in compute]
        if g[0] in compute:  # no memory core of its own: one bus among the sharers
            buses.append(Bus(tuple(g), read))
            assumptions.append(f"core_memory_sharing {g}: a bus at the shared memory's read "
                               f"bandwidth ({read:g} B/cycle), and its capacity split evenly "
                               "among the group's compute cores")  # fmt: skip
            continue
        for c in members:  # the memory core's ports, split among its compute cores
            links += [(g[0], c), (c, g[0])]
            bandwidths += [read / len(members), write / len(members)]
        assumptions.append(f"core_memory_sharing {g}: memory core {g[0]} linked to each "
                           f"compute core of the group, its read and write ports ({read:g} "
                           f"and {write:g} B/cycle) split evenly among them, and its "
                           "capacity split evenly too")  # fmt: skip
    specs = tuple(_spec(k, cores[k], shares.get(k, 1)) for k in compute)
    try:
        return Arch(
            name=str(data["name"]),
            source=Source(STREAM, f"accelerator YAML {path.name}"),
            frequency_hz=None,
            precision_bits=_bits(cores[compute[0]].get("operand_precision", {}).get("input")),
            cores=specs,
            noc=NocSpec("links", None, 0, links=tuple(links), bandwidths=tuple(bandwidths),
                        buses=tuple(buses), routers=tuple(k for k in ids if k not in compute),
                        forwarding=True,
                        description="Stream core_connectivity: links and buses"),
            dram=DramSpec(kind=f"Stream off-chip core {off} ({cores[off]['name']})",
                          bandwidth_bytes_per_cycle=_dram_bits(data, off, cores[off]) / 8,
                          node=off),
            description=f"Stream accelerator {data['name']} ({path.name}): "
                        f"{len(compute)} compute cores",
            assumptions=tuple(assumptions),
        )  # fmt: skip
    except ArchError as err:
        raise InputError(path, err.field, err.reason) from None


def _yaml(path: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(read_text(path))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        raise InputError(path, where, f"not YAML: {getattr(err, 'problem', err)}") from None


def _core(path: Path, cid: int, ref: Any) -> dict[str, Any]:
    """A core's YAML: inline, or its file beside ``path`` or in the ``cores/`` folder there."""
    if isinstance(ref, dict):
        validate(ref, "zigzag_core.schema.json", f"{path} (cores/{cid})")
        return ref
    for where in (path.parent / ref, path.parent / "cores" / ref):
        if where.is_file():
            core = _yaml(where)
            validate(core, "zigzag_core.schema.json", where)
            return dict(core)
    raise InputError(path, f"cores/{cid}", f"no core file {ref!r} beside it or in cores/")


def _kind(kind: str) -> str:
    return kind.rsplit(".", 1)[-1]


def _sharing(path: Path, data: dict[str, Any], ids: list[int]) -> list[list[int]]:
    groups = []
    for k, text in enumerate(data.get("core_memory_sharing", [])):
        g = [int(x) for x in text.split(",")]
        if not set(g) <= set(ids) or len(set(g)) != len(g):
            raise InputError(path, f"core_memory_sharing/{k}", f"unknown or repeated cores {g}")
        groups.append(g)
    return groups


def _connectivity(path: Path, data: dict[str, Any], groups: list[list[int]]
                  ) -> tuple[list[Bus], list[tuple[int, int]], list[float]]:  # fmt: skip
    """Links and buses, the later entry carrying an ordered pair that two of them join."""
    owner: dict[tuple[int, int], int] = {}  # ordered pair -> the entry that carries it
    entries = data["core_connectivity"]
    for k, e in enumerate(entries):
        cs = [int(c) for c in e["cores"]]
        if not set(cs) <= set(range(len(data["cores"]))) or len(set(cs)) != len(cs):
            raise InputError(path, f"core_connectivity/{k}/cores", f"unknown or repeated {cs}")
        if e.get("type", "link") == "link" and len(cs) != 2:
            raise InputError(path, f"core_connectivity/{k}/cores", "a link joins two cores")
        for a in cs:
            for b in cs:
                if a == b:
                    continue
                before = entries[owner[(a, b)]] if (a, b) in owner else {}
                if e.get("type", "link") == "link" and before.get("type", "link") == "bus":
                    raise InputError(path, f"core_connectivity/{k}",
                                     "a link over two cores of an earlier bus is not supported")
                owner[(a, b)] = k
    links, bws, buses = [], [], []
    for k, e in enumerate(entries):
        bw = float(e["bandwidth"]) / 8
        if e.get("type", "link") == "bus":
            buses.append(Bus(tuple(int(c) for c in e["cores"]), bw))
            continue
        a, b = (int(c) for c in e["cores"])
        for pair in ((a, b), (b, a)):
            if owner[pair] == k:
                links.append(pair)
                bws.append(bw)
    return buses, links, bws


def _top(core: dict[str, Any]) -> dict[str, Any]:
    """The core's top memory of ``I1`` (the last memory listed that holds it)."""
    tops = [m for m in core["memories"].values() if "I1" in m["operands"]]
    return tops[-1] if tops else list(core["memories"].values())[-1]


def _port_bits(mem: dict[str, Any], kind: str) -> float:
    """The widest port of ``mem`` that reads (or writes), bits per cycle."""
    return max((p["bandwidth_max"] for p in mem["ports"] if p["type"] in (kind, "read_write")),
               default=0)  # fmt: skip


def _unroll(core: dict[str, Any]) -> dict[str, int]:
    """The core's PE array as ``pe_unroll``: each dimension of size above 1 unrolls the next
    loop of :data:`UNROLL` (:data:`POOLING` on a pooling-only core)."""
    ops = set(core.get("operator_types", ()))
    loops = POOLING if ops and ops <= POOL_OPS else UNROLL
    arr = core["operational_array"]
    out: dict[str, int] = {}
    for k, size in enumerate(s for s in arr["sizes"] if s > 1):
        key = loops[k] if k < len(loops) else f"D{k + 1}"
        out[key] = out.get(key, 1) * int(size)
    return out or {"K": 1}


def _registers(core: dict[str, Any], top: dict[str, Any]) -> dict[str, Register]:
    """Each operand's innermost memory below the top one (ZigZag's ``I1``, ``I2``, ``O``: our
    inputs, weights and outputs) as its register file: size / 8 bytes at its widest read port,
    shared over the loops its ``served_dimensions`` unroll."""
    loops = dict(zip((f"D{k + 1}" for k in range(8)), _dims_to_loops(core), strict=False))
    out = {}
    for ours, theirs in (("I", "I1"), ("W", "I2"), ("O", "O")):
        mem = next((m for m in core["memories"].values() if theirs in m["operands"]), None)
        if mem is None or mem is top or mem["size"] < 8:
            continue
        shared = tuple(loops[d] for d in mem.get("served_dimensions", ()) if d in loops)
        out[ours] = Register(int(mem["size"]) // 8, _port_bits(mem, "read") / 8 or None, shared)
    return out


def _dims_to_loops(core: dict[str, Any]) -> list[str]:
    """The loop each array dimension ``D1, D2, …`` unrolls (:func:`_unroll`), ``""`` for a
    dimension of size 1."""
    ops = set(core.get("operator_types", ()))
    loops = POOLING if ops and ops <= POOL_OPS else UNROLL
    out, k = [], 0
    for size in core["operational_array"]["sizes"]:
        if size > 1 and k < len(loops):
            out.append(loops[k])
            k += 1
        else:
            out.append("")
    return out


def _spec(cid: int, core: dict[str, Any], share: int) -> CoreSpec:
    top = _top(core)
    name = [n for n, m in core["memories"].items() if m is top][0]
    read, write = _port_bits(top, "read") / 8, _port_bits(top, "write") / 8
    mem = int(top["size"]) // 8 // max(1, share)
    return CoreSpec(cid, f"{core['name']}{cid}", _unroll(core), mem, {name: mem},
                    kind=str(core["name"]), registers=_registers(core, top),
                    sram_read_bytes_per_cycle=read or None,
                    sram_write_bytes_per_cycle=write or None,
                    unrolling="fixed" if core.get("dataflows") else "searched",
                    zigzag=_zigzag(core))  # fmt: skip


def _zigzag(core: dict[str, Any]) -> dict[str, Any]:
    """The core's ZigZag description (:data:`ZIGZAG_FIELDS`) and, where its
    ``operand_precision`` declares one, the bits of its ``accumulator`` (Stream prices a MAC
    operator's partial sums at them)."""
    out = {k: core[k] for k in ZIGZAG_FIELDS}
    acc = (core.get("operand_precision") or {}).get("accumulator")
    return out if acc is None else {**out, "accumulator_bits": _bits(acc)}


def _bits(name: Any) -> int:
    """Bits of a Stream element type (``int8``, ``bf16``, ``fp32``…); 8 where none is given."""
    m = re.search(r"(\d+)$", str(name)) if name is not None else None
    return int(m.group(1)) if m else 8


def _dram_bits(data: dict[str, Any], off: int, core: dict[str, Any]) -> float:
    """The off-chip core's top-memory ports, summed; a top-level ``bandwidth`` ceiling for the
    core (``"16"``) or one port (``"16.hbm3e.rw_port_1"``) replaces its ``bandwidth_max``."""
    ceilings = data.get("bandwidth", {})
    top = _top(core)
    name = [n for n, m in core["memories"].items() if m is top][0]
    if str(off) in ceilings:
        return float(ceilings[str(off)].get("ceiling", 0)) or _sum_ports(top)
    total = 0.0
    for k, port in enumerate(top["ports"]):
        key = f"{off}.{name}.{port.get('name', f'port{k}')}"
        total += float(ceilings.get(key, {}).get("ceiling", port["bandwidth_max"]))
    return total


def _sum_ports(mem: dict[str, Any]) -> float:
    return float(sum(p["bandwidth_max"] for p in mem["ports"]))
