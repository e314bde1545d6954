"""formulations.scheduling."""
