"""What Flexer's layer search (Algorithm 1) takes: the multi-NPU and scheduler options
(:class:`Settings`, Table 1) and one layer of a network on them (:class:`FlexerLayer`), with the
option names the heuristics accept."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from npusched.arch.model import Arch
from npusched.workload.layers import Layer
from npusched.workload.network import Network

#: Operation-set priorities (§4.3 default; Table 2's Priority1/2).
PRIORITIES = ("default", "min-transfer", "min-spill")
#: Memory managers: Algorithm 2, and Table 2's MemPolicy1/2.
MEM_POLICIES = ("flexer", "first-fit", "small-spill")
STATIONARITY = ("IS", "WS", "OS")
Priority = Literal["default", "min-transfer", "min-spill"]
#: What the search minimises per layer.
METRICS = ("latency*bytes", "latency", "bytes")


@dataclass(frozen=True)
class Settings:
    """A multi-NPU (Table 1) and the scheduler's options."""

    n_npus: int
    capacity: int
    bandwidth: float
    unroll: tuple[tuple[str, int], ...] = (("K", 32), ("C", 32))
    elem_bytes: float = 1.0
    priority: str = "default"
    mem_policy: str = "flexer"
    metric: str = "latency*bytes"
    max_ops: int = 256
    window: int | None = None
    beam_width: int = 8  # flexer-beam: branches kept per step
    beam_depth: int = 3  # flexer-beam: sets looked ahead per branch (1: none beyond its own)
    beam_top: int = 16  # flexer-beam: the greedy's best (tiling, dataflow) pairs refined (0: all)
    lns_seconds: float = 1.0  # flexer-lns: seconds of re-timing per layer after the beam
    prefetch: bool = False
    fill_drain: int | None = None  # cycles per operation; None: rows + columns of the array
    cost: str = "compute"  # intra-core cost model of an operation (npusched.costmodel)
    lpf_limit: int = 6  # cost "zigzag": LOMA's loop prime factor limit (ZigZag's default 6)
    arch: Arch | None = field(default=None, compare=False, repr=False)

    @property
    def op_overhead(self) -> int:
        """Fill and drain cycles of the array per operation (module notes)."""
        return sum(u for _, u in self.unroll) if self.fill_drain is None else self.fill_drain

    def __post_init__(self) -> None:
        if self.priority not in PRIORITIES:
            raise ValueError(f"unknown priority {self.priority!r}; choose from {PRIORITIES}")
        if self.mem_policy not in MEM_POLICIES:
            raise ValueError(
                f"unknown memory policy {self.mem_policy!r}; choose from {MEM_POLICIES}"
            )
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; choose from {METRICS}")
        if self.n_npus < 1 or self.capacity < 1 or self.bandwidth <= 0:
            raise ValueError("NPUs, buffer and bandwidth must be positive")
        if self.beam_width < 1 or self.beam_depth < 1:
            raise ValueError(
                f"beam width and depth must be >= 1, got {self.beam_width} and {self.beam_depth}"
            )
        if not self.lns_seconds >= 0 or self.lns_seconds == float("inf"):
            raise ValueError(f"lns_seconds must be finite and >= 0, got {self.lns_seconds}")
        if self.beam_top < 0:
            raise ValueError(f"beam_top must be >= 0 (0: every tiling), got {self.beam_top}")
        if self.fill_drain is not None and self.fill_drain < 0:
            raise ValueError(f"fill_drain must be >= 0, got {self.fill_drain}")
        if self.cost not in ("compute", "analytic", "zigzag"):
            raise ValueError(f"unknown cost model {self.cost!r}; choose compute, analytic, zigzag")
        if isinstance(self.lpf_limit, bool) or int(self.lpf_limit) != self.lpf_limit \
                or self.lpf_limit < 1:  # fmt: skip
            raise ValueError(f"lpf_limit must be an integer >= 1, got {self.lpf_limit}")
        if self.cost != "compute" and self.arch is None:
            raise ValueError(f"the {self.cost} cost model needs the architecture (from_arch)")

    @classmethod
    def from_arch(cls, arch: Arch, **options: Any) -> Settings:
        """Flexer's settings from an architecture with a shared global buffer (flexer-arch1…8).

        Raises
        ------
        ValueError
            The architecture has no shared buffer or no DRAM bandwidth.
        """
        if arch.shared_buffer_bytes is None:
            raise ValueError(f"{arch.name}: Flexer needs a shared global buffer")
        unroll = tuple(sorted(arch.cores[0].pe_unroll.items()))
        return cls(
            n_npus=len(arch.cores),
            capacity=int(arch.shared_buffer_bytes),
            bandwidth=float(arch.dram_bytes_per_cycle()),
            unroll=unroll,
            elem_bytes=arch.element_bytes,
            arch=arch,
            **options,
        )


@dataclass(frozen=True, eq=False)
class FlexerLayer:
    """What ``solve(…, "flexer-ooo" | "flexer-static")`` searches: one layer of ``net`` on the
    multi-NPU and time model of ``settings`` (Algorithm 1 over its tilings × dataflows).

    :class:`Settings` checks its option names against :data:`PRIORITIES`, :data:`MEM_POLICIES`
    and :data:`METRICS`.
    """

    net: Network
    layer: Layer
    settings: Settings
