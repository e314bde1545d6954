"""formulations.flexer."""
