"""Klotski's partition search (§III-B, Algorithm 1): the design space of μtensor shapes, the
entropy objective (eq. 3) and Bayesian optimization over the feasible shapes."""
