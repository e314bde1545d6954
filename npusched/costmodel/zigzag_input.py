r"""What ZigZag is given for a tile on a core: the accelerator and layer dictionaries generated
from the arch JSON and the :class:`~npusched.costmodel.shape.TileShape` (for
:class:`~npusched.costmodel.zigzag.ZigZagCost`).

The accelerator ZigZag sees (:func:`accelerator_dict`)
------------------------------------------------------
- **PE array**: one dimension ``D1, D2, ...`` per key of ``pe_unroll``, in its order, of the
  key's factor.
- **Spatial unrolling** (fixed, part of each tile's mapping, :func:`spatial_mapping`): the
  dimension of key ``"K"`` unrolls the layer loop ``K``, and so on; ZigZag clips a factor to the
  tile's extent, counts a partial last step as one (``K = 33`` on 32 rows: 2 steps), and lowers
  a factor the SRAM's ports cannot feed (an add of 56 channels on Stream's 64-lane SIMD core, 512
  bits/cycle for two 8-bit inputs per lane, runs 32 wide: Stream's number too).
  A *grouped* key (``"OY*OX*FY*FX"``, TSO's MAC unit, which :func:`~npusched.costmodel.
  compute_cycles` divides as one flattened product) cannot be expressed as a flattened product
  in ZigZag, which unrolls each layer loop by its own factor; it becomes a *mixed* unrolling of
  those loops on one array dimension, chosen per tile: factors :math:`f_d \le L_d` with
  :math:`\prod f_d \le u` that minimise the temporal steps :math:`\prod \lceil L_d / f_d \rceil`
  (ties: the larger :math:`\prod f_d`, then larger factors on the key's first loops). It takes
  the flattened count of steps when the extents allow it (``OX = 8, FX = 2`` on 16 MACs: 1 step)
  and more otherwise (a 7×7 output with a 3×3 kernel on 16 MACs: ``OY 4 × OX 4``, 36 steps;
  flattened: 28). A loop the tile does not have is not unrolled, so an array dimension may stay
  idle (pooling on a K×C array uses only its ``K`` rows: ZigZag's number, not the analytic
  model's :math:`\lceil ops / PEs \rceil`).
  A core whose unrolling is *searched* (:attr:`~npusched.arch.CoreSpec.unrolling`, Stream's
  cores without ``dataflows``) gets an empty spatial mapping: ZigZag's spatial mapping
  generator chooses one per tile, as Stream 2.1.1 calls it (one mapping generated, none mixed).
- **Registers**: one memory level per operand of ``registers`` (``W``, ``I``, ``O``), below the
  SRAM: ``bytes · 8`` bits, read and write ports of ``bandwidth_bytes_per_cycle · 8``
  bits/cycle (rounded to whole bits; below 1 bit an error; ``None``: ``2**20``), one register
  file per PE except along the array dimensions whose key contains a ``shared_over`` loop
  (ZigZag's ``served_dimensions``: Stream's TPU-like output register is shared over ``C``). The
  ``O`` register has Stream's dual port pair: partial sums come in and leave towards the SRAM on
  a second read/write port pair.
- **SRAM** (the top level; no DRAM: the data starts on chip): holds ``W``, ``I`` and ``O``,
  ``memory_bytes · 8`` bits (a Flexer core, without its own memory, gets
  ``shared_buffer_bytes // cores``), one read port (``sram_read_bytes_per_cycle · 8``
  bits/cycle) and one write port (``sram_write_bytes_per_cycle · 8``; ``None``: ``2**20``),
  served over every array dimension. An operand without a register is read from the SRAM.
- **Precision**: ``W`` and ``I`` of ``arch.precision_bits``, partial sums ``O`` of
  :func:`~npusched.costmodel.shape.psum_bytes` (16 bits for 8-bit operands, as Stream's TPU-like
  core), final outputs ``O_final`` of ``precision_bits`` (as Stream's ONNX parsers write them).
- Energies are nominal (ZigZag uses them here only to break ties between equally fast mappings);
  nothing is systolic.

The layer ZigZag sees (:func:`layer_dict`)
------------------------------------------
Stream 2.1.1's layer dictionaries, its loop names and operands too (ZigZag's spatial mapping
generator breaks ties between equally full mappings by the loops' names, so the names change
what a searched unrolling gets), with the tile's extents and no padding. ZigZag derives the
inputs from the relations (``d8 = SX·d1 + DX·d3`` for the columns) and loads only the rows and
columns the windows touch (a 1×1 conv of stride 2 reads ``OX`` columns, as
:attr:`~npusched.costmodel.shape.TileShape.IX` counts them; with a dilation ZigZag also skips the
gaps, which ``IX`` counts as read):

- ``conv``: ``O[d0][d6][d2][d1] += I[d0][d5][d7][d8] · W[d6][d5][d4][d3]`` (``d1 … d6``: ``OX,
  OY, FX, FY, C, K``; :data:`CONV_NAMES`);
- a grouped conv whose tile reads ``in_channels = g·C`` channels: ``G = g`` groups of
  ``⌈K/g⌉`` output channels, ``O[b][g][k][oy][ox] += W[g][k][c][fy][fx] · I[b][g][c][iy][ix]``,
  the ``K`` unrolling covering ``K`` then ``G``; ``dwconv``: ``G = K`` groups of one channel,
  ``W[g][fy][fx]``, the ``K`` unrolling unrolling ``G`` (a channel per row, as the analytic
  model counts it) (:func:`_grouped_form`);
- ``fc``: ``O[d0][d2] += I[d1] · W[d1][d2]`` (``C, K``);
- ``gemm``: as Stream writes a MatMul, ``O[d0][d1] += I[d0][d2] · W[d2][d1]`` with ``D0 = OY ·
  OX`` rows, ``D1 = K`` columns, ``D2 = C`` of reduction;
- ``pool``: one operand, ``O[d0][d1][d2][d3] = I[d0][d1][d6][d7]`` (``N, C, H, W`` and the
  window ``d4, d5``; :data:`PLANE_NAMES`), outputs of the operand precision;
- ``add`` of two inputs: ``O[d0][d1][d2][d3] += I[…] · W[…]`` (the second input is ``W``);
  ``add`` of one input and ``concat`` (a tile copies its slice of one input): one operand,
  ``O[…] = I[…]``; ``add`` of three or more inputs has no ZigZag form and falls back to the
  analytic latency.
"""

from __future__ import annotations

import math
from typing import Any

from npusched.arch.model import Arch, CoreSpec, unroll_dims
from npusched.costmodel.compute import split_unrolling
from npusched.costmodel.shape import TileShape, psum_bytes

UNLIMITED_BITS = 2**20
"""Bits per cycle of a port whose bandwidth the arch leaves unlimited (``None``)."""
MEM_OP = {"W": "I2", "I": "I1", "O": "O"}
"""Layer operand → ZigZag memory operand (ZigZag's and Stream's convention)."""


class Unsupported(Exception):
    """A tile ZigZag has no form for: the analytic latency is used (the reason is recorded)."""


# --- the generated descriptions --------------------------------------------------------------


def sram_bits(arch: Arch, core: CoreSpec, k: int) -> tuple[int, str]:
    """Bits of the core's SRAM and the arch field they come from."""
    if core.memory_bytes is not None:
        return core.memory_bytes * 8, f"cores/{k}/memory_bytes"
    if arch.shared_buffer_bytes is not None:
        return arch.shared_buffer_bytes // len(arch.cores) * 8, "shared_buffer_bytes"
    raise ValueError(
        f"cores/{k}/memory_bytes: ZigZag needs the core's SRAM size "
        "(memory_bytes, or the arch's shared_buffer_bytes)"
    )


def _bits(bytes_per_cycle: float | None, field: str) -> int:
    """A bandwidth in whole bits per cycle (ZigZag's unit)."""
    if bytes_per_cycle is None:
        return UNLIMITED_BITS
    if bytes_per_cycle * 8 < 1:
        raise ValueError(
            f"{field}: ZigZag rejects a bandwidth of {bytes_per_cycle * 8:g} "
            "bits/cycle (it takes whole bits, at least 1)"
        )
    return int(round(bytes_per_cycle * 8))


def _port(name: str, kind: str, bits: int, allocation: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "bandwidth_min": bits,
        "bandwidth_max": bits,
        "allocation": allocation,
    }


def accelerator_dict(arch: Arch, core: CoreSpec, k: int = 0) -> dict[str, Any]:
    """ZigZag's accelerator dictionary of ``core`` (module docstring); ``k`` is the core's index
    in ``arch.cores``, for messages. The core's name is left out, so that equal cores share
    cache entries."""
    dims = {f"D{i + 1}": key for i, key in enumerate(core.pe_unroll)}
    if len(dims) > 9:
        raise ValueError(f"cores/{k}/pe_unroll: ZigZag takes at most 9 array dimensions")
    memories: dict[str, Any] = {}
    for op in ("W", "I", "O"):
        reg = core.registers.get(op)
        if reg is None:
            continue
        where = f"cores/{k}/registers/{op}"
        bits = _bits(reg.bandwidth_bytes_per_cycle, f"{where}/bandwidth_bytes_per_cycle")
        mop = MEM_OP[op]
        ports = [
            _port("r_port_1", "read", bits, [f"{mop}, tl"]),
            _port("w_port_1", "write", bits, [f"{mop}, fh"]),
        ]
        if op == "O":  # partial sums go up and come back on a second port pair (Stream's rf_2B)
            ports += [
                _port("r_port_2", "read", bits, ["O, th"]),
                _port("w_port_2", "write", bits, ["O, fl"]),
            ]
        served = [d for d, key in dims.items() if set(unroll_dims(key)) & set(reg.shared_over)]
        memories[f"reg_{op}"] = {
            "size": reg.bytes * 8,
            "r_cost": 0.1,
            "w_cost": 0.1,
            "area": 0.0,
            "latency": 1,
            "operands": [mop],
            "ports": ports,
            "served_dimensions": served,
        }
    size, _ = sram_bits(arch, core, k)
    rd = _bits(core.sram_read_bytes_per_cycle, f"cores/{k}/sram_read_bytes_per_cycle")
    wr = _bits(core.sram_write_bytes_per_cycle, f"cores/{k}/sram_write_bytes_per_cycle")
    memories["sram"] = {
        "size": size,
        "r_cost": 100.0,
        "w_cost": 100.0,
        "area": 0.0,
        "latency": 1,
        "operands": ["I2", "I1", "O"],
        "ports": [
            _port("r_port_1", "read", rd, ["I2, tl", "I1, tl", "O, tl", "O, th"]),
            _port("w_port_1", "write", wr, ["I2, fh", "I1, fh", "O, fh", "O, fl"]),
        ],
        "served_dimensions": list(dims),
    }
    return {
        "name": "npusched_core",
        "memories": memories,
        "operational_array": {
            "unit_energy": 0.04,
            "unit_area": 1.0,
            "dimensions": list(dims),
            "sizes": list(core.pe_unroll.values()),
            "systolic_dimensions": [],
        },
    }


def own_description(core: CoreSpec) -> dict[str, Any] | None:
    """The core's own ZigZag description (:attr:`~npusched.arch.CoreSpec.zigzag`) as ZigZag
    takes it, or ``None`` where npusched generates one (:func:`accelerator_dict`)."""
    if core.zigzag is None:
        return None
    return {k: v for k, v in core.zigzag.items() if k != "accumulator_bits"}


def _precision(arch: Arch, core: CoreSpec, kind: str) -> dict[str, int]:
    """Bits of each operand. Partial sums: on a core with its own ZigZag description, as
    Stream 2.1.1 prices them (``create_operand_precision``): a MAC operator's at the core's
    accumulator bits, where it declares them, else as wide as the outputs; otherwise
    :func:`~npusched.costmodel.shape.psum_bytes`."""
    elem = arch.precision_bits
    psum = 8 * psum_bytes(max(1, math.ceil(arch.element_bytes)))
    if core.zigzag is not None:
        acc = core.zigzag.get("accumulator_bits")
        psum = int(acc) if acc and kind in ("conv", "fc", "gemm") else elem
    if kind == "pool":  # a running max / sum of the window: no wider partial results
        return {"W": 0, "I": elem, "O": elem, "O_final": elem}
    if kind == "copy":
        return {"W": 0, "I": elem, "O": psum, "O_final": elem}
    return {"W": elem, "I": elem, "O": psum, "O_final": elem}


Form = tuple[dict[str, int], str, list[str], str, str, dict[str, list[str]]]
"""A layer's loops, equation, dimension relations, precision kind, operator type and the
``pe_unroll`` loop → layer loops it unrolls."""

CONV_NAMES = {"OX": ["D1"], "OY": ["D2"], "FX": ["D3"], "FY": ["D4"], "C": ["D5"], "K": ["D6"]}
"""Stream 2.1.1's loop names of a convolution (``O[d0][d6][d2][d1] += I[d0][d5][d7][d8] ·
W[d6][d5][d4][d3]``)."""
PLANE_NAMES = {"K": ["D1"], "OY": ["D2"], "OX": ["D3"], "FY": ["D4"], "FX": ["D5"]}
"""Stream 2.1.1's loop names of pooling and element-wise operators (``N, C, H, W`` as ``d0 …
d3``, a pooling window ``d4, d5``)."""


def _form(s: TileShape, core: CoreSpec) -> Form:
    """The tile as Stream 2.1.1 writes its layer for ZigZag (module docstring); a grouped or
    depthwise convolution as npusched writes it (:func:`_grouped_form`)."""
    win = [f"d7={s.SY}*d2+{s.DY}*d4", f"d8={s.SX}*d1+{s.DX}*d3"]
    if s.kind == "dwconv" or (s.kind == "conv" and s.in_channels > s.C
                              and s.in_channels % s.C == 0):  # fmt: skip
        return _grouped_form(s)
    if s.kind == "conv":
        dims = {"D0": 1, "D1": s.OX, "D2": s.OY, "D3": s.FX, "D4": s.FY, "D5": s.C, "D6": s.K}
        eq = "O[d0][d6][d2][d1]+=I[d0][d5][d7][d8]*W[d6][d5][d4][d3]"
        return dims, eq, win, "conv", "Conv", CONV_NAMES
    if s.kind == "fc":
        dims = {"D0": 1, "D1": s.C, "D2": s.K}
        return dims, "O[d0][d2]+=I[d1]*W[d1][d2]", [], "fc", "Gemm", {"C": ["D1"], "K": ["D2"]}
    if s.kind == "gemm":  # as Stream writes a MatMul: rows d0, columns d1, reduction d2
        dims = {"D0": s.OY * s.OX, "D1": s.K, "D2": s.C}
        rows = {"OX": ["D0"], "OY": [] if "OX" in core.pe_unroll else ["D0"]}
        return dims, "O[d0][d1]+=I[d0][d2]*W[d2][d1]", [], "gemm", "MatMul", {
            "K": ["D1"], "C": ["D2"], **rows}
    plane = {"D0": 1, "D1": s.K, "D2": s.OY, "D3": s.OX}
    ix = "[d0][d1][d2][d3]"
    if s.kind == "pool":
        rel = [f"d6={s.SY}*d2+{s.DY}*d4", f"d7={s.SX}*d3+{s.DX}*d5"]
        return ({**plane, "D4": s.FY, "D5": s.FX}, f"O{ix}=I[d0][d1][d6][d7]", rel, "pool",
                "MaxPool", PLANE_NAMES)  # fmt: skip
    if s.kind == "add" and s.inputs > 2:
        raise Unsupported(f"add of {s.inputs} inputs: ZigZag's element-wise operators take two")
    if s.kind == "add" and s.inputs == 2:
        return plane, f"O{ix}+=I{ix}*W{ix}", [], "add", "Add", PLANE_NAMES
    return plane, f"O{ix}=I{ix}", [], "copy", "Copy", PLANE_NAMES


def _grouped_form(s: TileShape) -> Form:
    """A depthwise convolution (``G = K`` groups of one channel), or a tile over several
    groups (``G = g`` groups of ``⌈K/g⌉`` output channels); the ``K`` unrolling covers ``K``
    then ``G``."""
    if s.kind == "dwconv":
        groups, K, C = s.K, 1, 1
        alias = {"K": ["G"], "C": []}
    else:
        groups = s.in_channels // s.C
        K, C = -(-s.K // groups), s.C
        alias = {"K": ["K", "G"]}
    dims = {"B": 1, "K": K, "G": groups, "OX": s.OX, "C": C, "FX": s.FX, "OY": s.OY, "FY": s.FY}
    w = "[g][k]" if K > 1 else "[g]"
    eq = f"O[b][g][k][oy][ox]+=W{w}[c][fy][fx]*I[b][g][c][iy][ix]"
    for d in ("C", "K"):  # a size-1 K or C is left out
        if dims[d] == 1:
            del dims[d]
            eq = eq.replace(f"[{d.lower()}]", "")
    rel = [f"ix={s.SX}*ox+{s.DX}*fx", f"iy={s.SY}*oy+{s.DY}*fy"]
    return dims, eq, rel, "conv", "Conv", alias


def layer_dict(
    shape: TileShape, core: CoreSpec, arch: Arch
) -> tuple[dict[str, Any], dict[str, Any]]:
    """ZigZag's layer dictionary of ``shape`` (module docstring) and its mapping dictionary
    (the fixed spatial unrolling of ``core``, or none where it is searched)."""
    dims, eq, rel, kind, op, alias = _form(shape, core)
    precision = _precision(arch, core, kind)
    operands = ["I", "W"] if "W[" in eq else ["I"]  # a unary operator reads one operand
    if "W" not in operands:
        del precision["W"]
    layer = {
        "id": 0,
        "name": shape.kind,
        "operator_type": op,
        "equation": eq,
        "loop_dims": list(dims),
        "loop_sizes": list(dims.values()),
        "dimension_relations": rel,
        "operand_precision": precision,
        "operand_source": {x: 0 for x in operands},
    }
    if shape.cycles_per_op > 1:  # not ZigZag's layer field: the evaluation takes it (Stream's)
        layer["cycles_per_op"] = shape.cycles_per_op
    mapping = {
        "name": op,  # the layer's operator type: ZigZag picks it without a warning
        # a searched unrolling: empty, ZigZag's generator picks one (as Stream leaves it)
        "spatial_mapping": {} if core.unrolling == "searched" else spatial_mapping(core, dims,
                                                                                    alias),
        "memory_operand_links": {"O": "O", **{x: MEM_OP[x] for x in operands}},
        "temporal_ordering": [],
    }
    return layer, mapping


def spatial_mapping(
    core: CoreSpec, dims: dict[str, int], alias: dict[str, list[str]] | None = None
) -> dict[str, list[str]]:
    """The fixed spatial unrolling of ``core`` for a layer with loops ``dims`` (module
    docstring): array dimension → ``"LOOP, factor"`` entries. ``alias`` maps a ``pe_unroll``
    loop to the layer loops it unrolls (``K`` → ``G`` for a depthwise conv)."""
    alias = alias or {}
    out: dict[str, list[str]] = {}
    for i, (key, u) in enumerate(core.pe_unroll.items()):
        loops = [x for d in unroll_dims(key) for x in alias.get(d, [d]) if x in dims]
        if len(loops) == 1:  # ZigZag clips the factor to the extent itself
            out[f"D{i + 1}"] = [f"{loops[0]}, {u}"]
        else:
            split = split_unrolling(u, [(d, dims[d]) for d in loops])
            out[f"D{i + 1}"] = [f"{d}, {f}" for d, f in split if f > 1]
    return out


def tile_text(s: TileShape) -> str:
    """A short label of the tile for error messages: its kind and loop extents, e.g.
    ``conv K32 C16 OY28 OX28 FY3 FX3 S2x2`` (``C`` only for conv and fc, no output plane for
    fc, the kernel only when larger than 1 × 1, the strides only when not 1 × 1)."""
    text = f"{s.kind} K{s.K}"
    if s.kind in ("conv", "fc", "gemm"):
        text += f" C{s.C}"
    if s.kind != "fc":
        text += f" OY{s.OY} OX{s.OX}"
    if s.FY * s.FX > 1:
        text += f" FY{s.FY} FX{s.FX}"
    if (s.SY, s.SX) != (1, 1):
        text += f" S{s.SY}x{s.SX}"
    if s.cycles_per_op > 1:
        text += f" {s.cycles_per_op} cycles/op"
    return text


def operand_bits(shape: TileShape, layer: dict[str, Any]) -> dict[str, int]:
    """Bits of each operand ZigZag keeps in the SRAM: the inputs the tile reads, outputs as
    partial sums when the tile reduces."""
    prec, s = layer["operand_precision"], shape
    out = s.K * s.OY * s.OX
    if s.kind in ("add", "concat"):
        w = out if layer["operator_type"] == "Add" else 0
        return {"W": w * prec.get("W", 0), "I": out * prec["I"], "O": out * prec["O_final"]}
    rows = len({s.SY * o + s.DY * f for o in range(s.OY) for f in range(s.FY)})
    cols = len({s.SX * o + s.DX * f for o in range(s.OX) for f in range(s.FX)})
    inputs = s.C if s.kind == "fc" else s.in_channels * rows * cols
    reduces = s.C * s.FY * s.FX > 1 if s.has_weights else s.FY * s.FX > 1
    return {
        "W": s.elements()["W"] * prec.get("W", 0),
        "I": inputs * prec["I"],
        "O": out * (prec["O"] if reduces else prec["O_final"]),
    }


def footprint_bits(shape: TileShape, layer: dict[str, Any]) -> int:
    """Bits the tile's three operands take together in the SRAM (the sum of
    :func:`operand_bits`): what the SRAM must hold for ZigZag to find a loop ordering.

    Parameters
    ----------
    shape
        The tile.
    layer
        Its ZigZag layer dictionary (:func:`layer_dict`), for the operands' precisions.

    Returns
    -------
    int
        Bits of ``W``, ``I`` and ``O`` (partial sums when the tile reduces).
    """
    return sum(operand_bits(shape, layer).values())


def field_of(message: str, k: int, arch: Arch, core: CoreSpec) -> str:
    """The arch field behind a ZigZag message that names one of the generated memories."""
    for op in ("W", "I", "O"):
        if f"reg_{op}" in message:
            return f"cores/{k}/registers/{op}"
    if "sram" in message:
        if "bandwidth" in message.lower():
            side = "write" if ("wr_" in message or "write" in message) else "read"
            return f"cores/{k}/sram_{side}_bytes_per_cycle"
        return sram_bits(arch, core, k)[1]
    if "oa_dim" in message or "spatial" in message.lower():
        return f"cores/{k}/pe_unroll"
    return f"cores/{k}"
