"""formulations.tiling."""
