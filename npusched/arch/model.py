"""Accelerator architectures as data: cores (PE unrolling, memories), mesh, NoC, shared buffer,
DRAM.

An :class:`Arch` is the hardware description a paper gives; :meth:`Accelerator.from_arch
<npusched.problem.Accelerator.from_arch>` turns it
into the scheduling spine's :class:`~npusched.problem.Accelerator` (core ids, mesh coordinates, hop
latency, link bandwidth). Files are JSON in the ``npusched/arch/v1`` format
(``npusched/common/schema/arch.schema.json``); the shipped ones are in ``npusched/arch/data/``,
written
by ``tools/make_archs.py``.

Units: bytes, bytes per accelerator cycle, hertz, nanoseconds; ``KB``/``MB`` in the papers are read
as ``2**10``/``2**20`` bytes, ``GB/s`` as ``10**9`` bytes per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

FORMAT = "npusched/arch/v1"
#: Loop dimensions of a convolution (an FC layer uses ``K`` and ``C`` with the others 1).
CONV_DIMS = ("K", "C", "OY", "OX", "FY", "FX")
#: Deterministic mesh routings (:func:`npusched.problem.scheduling.machine.mesh_routes`).
ROUTINGS = ("XY", "YX", "XY-YX")


class ArchError(ValueError):
    """An inconsistent architecture; ``field`` is the JSON path of the offending value."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"{field}: {reason}")


def unroll_dims(key: str) -> tuple[str, ...]:
    """The loop dimensions of an unrolling key: ``"K"`` → ``("K",)``; ``"OY*OX*FY*FX"`` →
    ``("OY", "OX", "FY", "FX")`` (dimensions flattened into one spatial axis)."""
    return tuple(key.split("*"))


@dataclass(frozen=True)
class Source:
    """Where an architecture comes from.

    Parameters
    ----------
    paper
        Authors, title and venue.
    where
        Section / table / figure the numbers are taken from.
    seed
        File name of the paper's text in ``../shared/seeds/``, if any.
    fields
        Per-field citations (JSON path → section and quote).
    """

    paper: str
    where: str
    seed: str = ""
    fields: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Register:
    """The register file of one operand in a PE array.

    Parameters
    ----------
    bytes
        Capacity of one register file.
    bandwidth_bytes_per_cycle
        Rate at which it is filled and read (``None``: not limiting).
    shared_over
        Unrolled loops (``pe_unroll`` dimensions) whose PEs share one register file (Stream's
        TPU-like output register serves the PEs that reduce over ``C``); empty: one per PE.
    """

    bytes: int
    bandwidth_bytes_per_cycle: float | None = None
    shared_over: tuple[str, ...] = ()


@dataclass(frozen=True)
class CoreSpec:
    """One compute core.

    Parameters
    ----------
    id
        Core id (as in instances and solutions).
    name
        Human-readable name.
    pe_unroll
        Spatial unrolling of the PE array: loop dimension (``K``, ``C``, ``OY``, ``OX``, ``FY``,
        ``FX``) → factor. A key ``"A*B*..."`` unrolls the flattened product of those dimensions
        (TSO's MAC unit, eq. 7). See :func:`npusched.costmodel.compute_cycles`.
    memory_bytes
        Private on-chip memory of the core, or ``None`` when the paper gives none (Flexer's cores
        share the global buffer).
    buffers
        Named breakdown of ``memory_bytes`` (e.g. TSO's ``MB0``/``MB1``/``MB2``).
    kind
        Core type (``"pe_array"``, ``"pooling"``, ``"simd"``, ...), for heterogeneous systems.
    coord
        ``(row, col)`` on the mesh, required when the architecture has a mesh.
    cluster
        Group of cores that share a local interconnect (TSO: the TLE of a TLT), or ``None``.
    registers
        The register file of each operand (``W``, ``I``, ``O``) in the PE array: the innermost
        memory level of the intra-core cost models (:mod:`npusched.costmodel`); an operand
        without one is read from the SRAM at every use.
    sram_read_bytes_per_cycle, sram_write_bytes_per_cycle
        Bandwidth between the core's SRAM (``memory_bytes``) and its PE array, or ``None``
        when unlimited.
    unrolling
        ``"fixed"``: each array dimension unrolls its ``pe_unroll`` key's loops for every tile;
        ``"searched"``: ``pe_unroll`` gives the array dimensions' sizes (in order) and the cost
        models choose the loop each one unrolls per tile
        (:func:`npusched.costmodel.compute.searched_core`, ZigZag's spatial mapping
        generator), as Stream does for a core without ``dataflows``.
    zigzag
        The core's own ZigZag description (``name``, ``memories``, ``operational_array``: a
        Stream core YAML, its full memory hierarchy), which the ZigZag cost model prices its
        tiles on instead of the register-and-SRAM one it generates from the fields above,
        and ``accumulator_bits``, the width of its partial sums, where the core declares one;
        ``None``: generated.
    """

    id: int
    name: str
    pe_unroll: dict[str, int] = field(hash=False)
    memory_bytes: int | None = None
    buffers: dict[str, int] = field(default_factory=dict, hash=False)
    kind: str = "pe_array"
    coord: tuple[int, int] | None = None
    cluster: int | None = None
    registers: dict[str, Register] = field(default_factory=dict, hash=False)
    sram_read_bytes_per_cycle: float | None = None
    sram_write_bytes_per_cycle: float | None = None
    unrolling: str = "fixed"
    zigzag: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def num_pes(self) -> int:
        """Number of PEs (MAC units): the product of the unrolling factors."""
        return math.prod(self.pe_unroll.values())


@dataclass(frozen=True)
class Bus:
    """A bus joining ``cores`` (core or router ids): one transfer at a time among all of them,
    ``bandwidth_bytes_per_cycle`` (Stream's ``core_connectivity`` entries of type ``bus``)."""

    cores: tuple[int, ...]
    bandwidth_bytes_per_cycle: float


@dataclass(frozen=True)
class NocSpec:
    """Inter-core network. ``None`` means the paper does not give the value.

    Parameters
    ----------
    topology
        ``"mesh"``, ``"ring"``, ``"bus"``, ``"links"`` (point-to-point links) or
        ``"shared_memory"``.
    bandwidth_bytes_per_cycle
        Per-link bandwidth.
    hop_latency_cycles
        Cycles per router hop.
    routing
        ``"XY"``, ``"YX"`` or ``"XY-YX"`` on a mesh (see
        :func:`npusched.problem.scheduling.machine.mesh_routes`).
    flit_bits, packet_bytes
        Flit size and payload bytes per packet, as stated by the paper.
    packet_header_bits
        Header bits each packet adds to its payload; with the two above it sets the payload
        rate of a link (:meth:`payload_bytes_per_cycle`).
    links
        Directed point-to-point links ``(sender, receiver)`` by core (or router) id (topology
        ``"links"``).
    bandwidths
        Each link's bandwidth in bytes per cycle, in the order of ``links`` (empty: every link
        at ``bandwidth_bytes_per_cycle``).
    buses
        Buses beside the links (topology ``"links"``): a transfer between two of a bus's
        members may take it as one hop.
    routers
        Ids of NoC nodes that are not compute cores (Stream's memory cores and its off-chip
        core): links and buses may join them, and routes between cores may pass through them.
    forwarding
        Whether a core may send a DRAM tensor it holds to another core over the NoC, in place
        of that core's fetch from DRAM (the routed instances'
        :attr:`~npusched.problem.scheduling.routed.RoutedInstance.forward`).
    description
        As stated by the paper.
    """

    topology: str
    bandwidth_bytes_per_cycle: float | None = None
    hop_latency_cycles: int | None = None
    routing: str | None = None
    flit_bits: int | None = None
    packet_bytes: int | None = None
    packet_header_bits: int | None = None
    links: tuple[tuple[int, int], ...] = ()
    bandwidths: tuple[float, ...] = ()
    buses: tuple[Bus, ...] = ()
    routers: tuple[int, ...] = ()
    forwarding: bool = False
    description: str = ""

    def payload_bytes_per_cycle(self) -> float | None:
        r"""Payload a link carries per cycle: each packet of ``P = packet_bytes`` payload bytes
        and ``h = packet_header_bits`` header bits travels as whole flits of ``f = flit_bits``,

        .. math:: bw_{payload} = bw \cdot \frac{8P}{f \lceil (8P + h) / f \rceil}

        (Klotski §IV-A: 512 B/cycle links, 8-byte packets, 192-bit flits: one packet per flit,
        ``512 · 64 / 192 ≈ 170.7`` B/cycle). Without packets it is the raw bandwidth."""
        bw = self.bandwidth_bytes_per_cycle
        if bw is None or self.packet_bytes is None or self.flit_bits is None:
            return bw
        bits = 8 * self.packet_bytes
        flits = -(-(bits + (self.packet_header_bits or 0)) // self.flit_bits)
        return bw * bits / (flits * self.flit_bits)


@dataclass(frozen=True)
class DramSpec:
    """Off-chip memory, shared by all cores.

    Bandwidth is given per second (needs the accelerator clock to become per cycle) or directly
    per accelerator cycle; CAS latency in nanoseconds or accelerator cycles. ``burst_bytes`` and
    the CAS latency feed TSO's burst model (Algorithm 4), the bandwidth both DRAM models.
    ``node``: the NoC router (one of ``noc.routers``) that fronts the DRAM, as Stream's off-chip
    core: transfers to and from DRAM then take the NoC's links and buses to it, never passing
    through it, and the bandwidth is its port's, shared by all (``None``: ``controllers``, or one
    port that every core reaches directly).
    """

    kind: str = ""
    bandwidth_bytes_per_s: float | None = None
    bandwidth_bytes_per_cycle: float | None = None
    burst_bytes: int | None = None
    cas_latency_ns: float | None = None
    cas_latency_cycles: int | None = None
    clock_hz: float | None = None
    controllers: tuple[int, ...] = ()
    node: int | None = None


@dataclass(frozen=True)
class Arch:
    """A multi-core accelerator as described in a paper.

    Parameters
    ----------
    name
        Short name (the file stem of a shipped architecture).
    source
        Citation.
    frequency_hz
        Accelerator clock, or ``None`` when the paper counts only cycles.
    precision_bits
        Operand precision.
    cores
        Compute cores, ids unique.
    noc
        Inter-core network.
    mesh
        ``(rows, cols)`` when the cores sit on a mesh (every core then has a ``coord``).
    shared_buffer_bytes
        On-chip memory shared by all cores (Flexer's global buffer), or ``None``.
    dram
        Off-chip memory, or ``None`` when the paper gives none.
    description
        One-paragraph summary.
    assumptions
        Values the paper does not state and this file assumes, each with its reason.
    """

    name: str
    source: Source
    frequency_hz: float | None
    precision_bits: int
    cores: tuple[CoreSpec, ...]
    noc: NocSpec
    mesh: tuple[int, int] | None = None
    shared_buffer_bytes: int | None = None
    dram: DramSpec | None = None
    description: str = ""
    assumptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.cores:
            raise ArchError("cores", "an architecture needs at least one core")
        seen: set[int] = set()
        for k, c in enumerate(self.cores):
            if c.id in seen:
                raise ArchError(f"cores/{k}/id", f"duplicate core id {c.id}")
            seen.add(c.id)
            dims = [d for key in c.pe_unroll for d in unroll_dims(key)]
            if len(set(dims)) != len(dims):
                raise ArchError(f"cores/{k}/pe_unroll", f"a dimension is unrolled twice: {dims}")
            for key, u in c.pe_unroll.items():
                if u < 1:
                    raise ArchError(f"cores/{k}/pe_unroll/{key}", f"factor must be >= 1, got {u}")
            for key, reg in c.registers.items():
                where = f"cores/{k}/registers/{key}"
                if key not in ("W", "I", "O"):
                    raise ArchError(where, "registers are per operand: W, I or O")
                if reg.bytes < 1 or (reg.bandwidth_bytes_per_cycle or 1) <= 0:
                    raise ArchError(where, "a register file holds >= 1 byte at a positive rate")
                shared = {d for key2 in c.pe_unroll for d in unroll_dims(key2)}
                if not set(reg.shared_over) <= shared:
                    raise ArchError(f"{where}/shared_over", f"name unrolled loops of {shared}")
            for key in ("sram_read_bytes_per_cycle", "sram_write_bytes_per_cycle"):
                if getattr(c, key) is not None and getattr(c, key) <= 0:
                    raise ArchError(f"cores/{k}/{key}", "a bandwidth must be positive")
            if c.memory_bytes is not None and sum(c.buffers.values()) > c.memory_bytes:
                raise ArchError(f"cores/{k}/buffers", "buffers exceed memory_bytes")
            if self.mesh is not None:
                rows, cols = self.mesh
                if c.coord is None:
                    raise ArchError(f"cores/{k}/coord", "a meshed architecture needs coordinates")
                if not (0 <= c.coord[0] < rows and 0 <= c.coord[1] < cols):
                    raise ArchError(
                        f"cores/{k}/coord", f"{c.coord} is not on the {rows}x{cols} mesh"
                    )
        if self.mesh is not None:
            coords = [c.coord for c in self.cores]
            if len(set(coords)) != len(coords):
                raise ArchError("cores", "two cores share a mesh coordinate")
        self._check_noc(seen)
        if (
            self.noc.routing is not None
            and self.mesh is not None
            and (self.noc.routing not in ROUTINGS)
        ):
            raise ArchError("noc/routing", f"choose one of {', '.join(ROUTINGS)}")
        d = self.dram
        for k, cid in enumerate(d.controllers if d is not None else ()):
            if cid not in seen:
                raise ArchError(f"dram/controllers/{k}", f"no core with id {cid} to attach to")
        if d is not None and d.node is not None and (
            d.node not in self.noc.routers or self.noc.topology != "links"
        ):
            raise ArchError("dram/node", f"{d.node} is not one of the routers of a 'links' NoC")
        if d is not None:
            if d.bandwidth_bytes_per_s is None and d.bandwidth_bytes_per_cycle is None:
                raise ArchError("dram", "needs bandwidth_bytes_per_s or bandwidth_bytes_per_cycle")
            if d.bandwidth_bytes_per_cycle is None and self.frequency_hz is None:
                raise ArchError("dram/bandwidth_bytes_per_s", "needs frequency_hz to give cycles")
            if (
                d.cas_latency_cycles is None
                and d.cas_latency_ns is not None
                and self.frequency_hz is None
            ):
                raise ArchError("dram/cas_latency_ns", "needs frequency_hz to give cycles")

    def _check_noc(self, cores: set[int]) -> None:
        """Links and buses join distinct known nodes (cores or routers); one bandwidth per link."""
        noc = self.noc
        if cores & set(noc.routers) or len(set(noc.routers)) != len(noc.routers):
            raise ArchError("noc/routers", "a router id is unique and not a core's id")
        nodes = cores | set(noc.routers)
        for k, (a, b) in enumerate(noc.links):
            if a not in nodes or b not in nodes or a == b:
                raise ArchError(f"noc/links/{k}", f"a link joins two distinct nodes, got {a}->{b}")
        if noc.bandwidths and len(noc.bandwidths) != len(noc.links):
            raise ArchError("noc/links", "give every link a bandwidth, or none")
        if any(bw <= 0 for bw in noc.bandwidths):
            raise ArchError("noc/links", "a link's bandwidth must be positive")
        for k, bus in enumerate(noc.buses):
            if len(set(bus.cores)) < 2 or not set(bus.cores) <= nodes:
                raise ArchError(f"noc/buses/{k}/cores", "a bus joins two or more known nodes")
            if bus.bandwidth_bytes_per_cycle <= 0:
                raise ArchError(f"noc/buses/{k}/bandwidth_bytes_per_cycle", "must be positive")

    # --- derived values ---------------------------------------------------------------------

    @property
    def m(self) -> int:
        """Number of cores."""
        return len(self.cores)

    def core(self, cid: int) -> CoreSpec:
        """The core with id ``cid``."""
        for c in self.cores:
            if c.id == cid:
                return c
        raise KeyError(f"{self.name}: no core with id {cid}")

    @property
    def element_bytes(self) -> float:
        """Bytes per operand element (``precision_bits / 8``)."""
        return self.precision_bits / 8

    def dram_bytes_per_cycle(self) -> float:
        """DRAM bandwidth in bytes per accelerator cycle.

        .. math:: bw_{cycle} = bw_{s} / f
        """
        d = self._need_dram()
        if d.bandwidth_bytes_per_cycle is not None:
            return d.bandwidth_bytes_per_cycle
        assert d.bandwidth_bytes_per_s is not None and self.frequency_hz is not None
        return d.bandwidth_bytes_per_s / self.frequency_hz

    def dram_cas_cycles(self) -> int:
        """CAS latency in accelerator cycles (0 when the paper gives none).

        .. math:: CAS_{cycle} = \\lceil CAS_{ns} \\cdot f / 10^9 \\rceil
        """
        d = self._need_dram()
        if d.cas_latency_cycles is not None:
            return d.cas_latency_cycles
        if d.cas_latency_ns is None:
            return 0
        assert self.frequency_hz is not None
        return math.ceil(d.cas_latency_ns * self.frequency_hz / 1e9 - 1e-9)

    def _need_dram(self) -> DramSpec:
        if self.dram is None:
            raise ValueError(f"{self.name}: the architecture has no DRAM specification")
        return self.dram
