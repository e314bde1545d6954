"""Partitioning layers into μops (Klotski), CNs (Stream) and tiled convolutions (Flexer), with
exact inter-layer dependencies."""

from npusched.partition.build import build_instance, tile_cycles
from npusched.partition.grid import Tiling, dependencies, layer_extents, split, tile_macs
from npusched.partition.schemes import (
    flexer_tiling,
    klotski_tiling,
    loop_order_rank,
    stream_cn_io,
    stream_tiling,
)

__all__ = [
    "Tiling",
    "build_instance",
    "dependencies",
    "flexer_tiling",
    "klotski_tiling",
    "layer_extents",
    "loop_order_rank",
    "split",
    "stream_cn_io",
    "stream_tiling",
    "tile_cycles",
    "tile_macs",
]
