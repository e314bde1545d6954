"""heuristics.tiling."""
