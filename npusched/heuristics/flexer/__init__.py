"""heuristics.flexer."""
