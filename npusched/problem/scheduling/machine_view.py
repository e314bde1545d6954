"""The machine view: an accelerator read once into what every step below the frontends derives
from it (the arch loader's output, :func:`npusched.arch.load_arch`, is the one input).

A partition needs, from an :class:`~npusched.arch.model.Arch`, the scheduling spine's
:class:`~npusched.problem.Accelerator`, the routed machine's
:class:`~npusched.problem.scheduling.routed.Topology` and memory capacities
(:mod:`~npusched.problem.scheduling.machine`), the smallest core memory every μtensor must fit,
the element width, the first core's PE array (Klotski's aligned cut) and a cost model. Each
was derived from the arch again at every use, once per partition: a search of ``k`` shapes
built the topology ``k`` times. A :class:`MachineView` derives each once, when first asked,
and keeps it; the search, the partition and the instance builders take the view, so one
``orchestrate`` call reads its arch once per element width.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from npusched.arch.model import Arch, CoreSpec
from npusched.costmodel import CostModel, cost_model
from npusched.problem.scheduling.accelerator import Accelerator
from npusched.problem.scheduling.machine import capacities, machine_topology
from npusched.problem.scheduling.routed import Topology


def smallest_memory(arch: Arch) -> int | None:
    """The smallest private memory of ``arch``'s cores, in bytes
    (:attr:`~npusched.arch.model.CoreSpec.memory_bytes` over the cores that have one): what every
    μtensor of a partition must fit, since a μop may run on any core.

    Returns
    -------
    int or None
        ``None`` when no core has a memory of its own (Flexer's cores share the global buffer): then
        no tiling is refused for memory.
    """
    memories = [c.memory_bytes for c in arch.cores if c.memory_bytes is not None]
    return min(memories) if memories else None


@dataclass(frozen=True, eq=False)
class MachineView:
    """``arch`` read once (module docstring): each derived part is computed when first asked
    and kept. Build one with :meth:`of`, which returns a view unchanged."""

    arch: Arch
    _costs: dict[str, CostModel] = field(default_factory=dict, repr=False)
    _priced: dict[int, MachineView] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, arch: Arch | MachineView) -> MachineView:
        """The view of ``arch`` (``arch`` itself when it is one)."""
        return arch if isinstance(arch, MachineView) else cls(arch)

    @property
    def name(self) -> str:
        """The arch's name."""
        return self.arch.name

    @property
    def m(self) -> int:
        """The number of cores."""
        return self.arch.m

    @property
    def cores(self) -> tuple[CoreSpec, ...]:
        """The arch's cores."""
        return tuple(self.arch.cores)

    @property
    def elem_bytes(self) -> int:
        """Bytes of one tensor element (at least 1)."""
        return max(1, round(self.arch.element_bytes))

    @cached_property
    def accelerator(self) -> Accelerator:
        """:meth:`Accelerator.from_arch <npusched.problem.Accelerator.from_arch>`."""
        return Accelerator.from_arch(self.arch)

    @cached_property
    def topology(self) -> Topology:
        """:func:`~npusched.problem.scheduling.machine.machine_topology`."""
        return machine_topology(self.arch)

    @cached_property
    def capacity(self) -> np.ndarray:
        """:func:`~npusched.problem.scheduling.machine.capacities` (read-only)."""
        cap = capacities(self.arch)
        cap.setflags(write=False)
        return cap

    @cached_property
    def smallest_memory(self) -> int | None:
        """:func:`smallest_memory`."""
        return smallest_memory(self.arch)

    @cached_property
    def unroll(self) -> dict[str, int]:
        """The first core's fixed PE unrolling (searched dimensions, ``*``, left out): what
        Klotski's aligned cut rounds ``ic`` and ``oc`` up to (§III-B)."""
        return {k: v for k, v in self.arch.cores[0].pe_unroll.items() if "*" not in k}

    def cost_model(self, name: str, **options: Any) -> CostModel:
        """:func:`npusched.costmodel.cost_model` ``name`` for this arch, built once per name
        (one model serves every partition, so each tile shape is costed once); with
        ``options`` a new one each call. ZigZag's falls back where a tile is too large for a
        core kind's SRAM (``too_large="fallback"``, as Stream does) unless told otherwise."""
        default = {"too_large": "fallback"} if name == "zigzag" else {}
        if options:
            return cost_model(name, self.arch, **{**default, **options})
        if name not in self._costs:
            self._costs[name] = cost_model(name, self.arch, **default)
        return self._costs[name]

    def priced(self, bits: int) -> MachineView:
        """This view with every tensor priced at ``bits`` per element: itself at the arch's
        ``precision_bits``, else one view per width, kept."""
        if bits == self.arch.precision_bits:
            return self
        if bits not in self._priced:
            self._priced[bits] = MachineView(replace(self.arch, precision_bits=bits))
        return self._priced[bits]
