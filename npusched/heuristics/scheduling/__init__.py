"""heuristics.scheduling."""
