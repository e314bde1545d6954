"""Cost model: compute cycles of a tile on a PE array, DRAM transfers (volume and TSO burst models),
NoC transfers. Every function returns accelerator cycles (integers)."""

from npusched.costmodel.compute import compute_cycles, conv_loops, macs, utilization
from npusched.costmodel.dram import (
    burst_count,
    calc_data_transfer,
    dram_cycles_burst,
    dram_cycles_volume,
    slicing_burst_count,
    t_dram,
    tile_burst_count,
)
from npusched.costmodel.models import COST_MODELS, ComputeSteps, CostModel, cost_model
from npusched.costmodel.noc import ceil_div, noc_cycles
from npusched.costmodel.shape import KINDS, TileShape

__all__ = [
    "COST_MODELS",
    "KINDS",
    "ComputeSteps",
    "CostModel",
    "TileShape",
    "cost_model",
    "burst_count",
    "calc_data_transfer",
    "ceil_div",
    "compute_cycles",
    "conv_loops",
    "dram_cycles_burst",
    "dram_cycles_volume",
    "macs",
    "noc_cycles",
    "slicing_burst_count",
    "t_dram",
    "tile_burst_count",
    "utilization",
]
