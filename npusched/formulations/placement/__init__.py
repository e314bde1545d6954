"""formulations.placement."""
