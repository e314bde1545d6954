"""Partitioning layers into μops (Klotski), CNs (Stream) and tiled convolutions (Flexer), with
exact inter-layer dependencies, on a machine (:mod:`npusched.partition.api`)."""

from npusched.partition.build import Layout, output_bytes, uop_edges
from npusched.partition.grid import Tiling, dependencies, layer_extents, split, tile_macs
from npusched.partition.schemes import (
    flexer_tiling,
    klotski_tiling,
    loop_order_rank,
    stream_cn_io,
    stream_tiling,
)

__all__ = [
    "Layout",
    "Tiling",
    "dependencies",
    "flexer_tiling",
    "klotski_tiling",
    "layer_extents",
    "loop_order_rank",
    "output_bytes",
    "split",
    "stream_cn_io",
    "stream_tiling",
    "tile_macs",
    "uop_edges",
]
