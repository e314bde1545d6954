"""problem.scheduling."""
