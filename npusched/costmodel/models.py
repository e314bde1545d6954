"""Intra-core cost models behind one interface: a μop's latency on a core, with its data in the
core's SRAM (``../shared/DESIGN.md``, *Machine model*).

- ``analytic`` (the default): a roofline per memory level
  (:class:`~npusched.costmodel.roofline.Roofline`);
- ``zigzag``: ZigZag's temporal-mapping search, cached on disk
  (:class:`~npusched.costmodel.zigzag.ZigZagCost`; ``zigzag-dse`` comes with the default install);
- ``compute``: the PE array's compute steps alone (:class:`ComputeSteps`), the model of the
  compute-only machine.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from npusched.arch.model import Arch, CoreSpec
from npusched.costmodel.compute import compute_cycles, searched_core
from npusched.costmodel.shape import TileShape

COST_MODELS = ("analytic", "zigzag", "compute")


class CostModel(Protocol):
    """What a partition asks of a cost model."""

    name: str

    def latency(self, shape: TileShape, core: CoreSpec) -> int:
        """Cycles of the tile ``shape`` on ``core``."""
        ...


class ComputeSteps:
    """The PE array's temporal steps (:func:`~npusched.costmodel.compute.compute_cycles`) for
    conv and fc; ``⌈operations / PEs⌉`` for pooling, add and concat. Memory is free."""

    name = "compute"

    def latency(self, shape: TileShape, core: CoreSpec) -> int:
        """Cycles of the tile ``shape`` on ``core`` counting compute steps only.

        Parameters
        ----------
        shape
            The tile's loop nest.
        core
            The core; its ``pe_unroll`` (conv, fc; the one
            :func:`~npusched.costmodel.compute.searched_core` chooses where it is searched) or
            ``num_pes`` (the rest) sets the steps.

        Returns
        -------
        int
            :func:`~npusched.costmodel.compute.compute_cycles` of the tile's loops on the PE
            array for conv, dwconv and fc; ``⌈operations / PEs⌉``, at least 1, otherwise,
            times the tile's ``cycles_per_op``.
        """
        if shape.has_weights:
            loops = shape.loops()
            return compute_cycles(loops, searched_core(core, loops).pe_unroll)
        return max(1, math.ceil(shape.operations() / core.num_pes)) * shape.cycles_per_op


def cost_model(name: str, arch: Arch, **options: Any) -> CostModel:
    """The cost model called ``name`` (:data:`COST_MODELS`) for ``arch``; ``options`` go to
    ZigZag's (``cache_dir``, ``time_limit``)."""
    if name == "compute":
        return ComputeSteps()
    if name == "analytic":
        from npusched.costmodel.roofline import Roofline

        return Roofline(arch)
    if name == "zigzag":
        from npusched.costmodel.zigzag import ZigZagCost

        return ZigZagCost(arch, **options)
    raise ValueError(f"unknown cost model {name!r}; choose from {', '.join(COST_MODELS)}")
