"""Check a placement against its instance."""

from __future__ import annotations

import numpy as np

from npusched.problem.placement import Placement, PlacementInstance


def verify_placement(
    inst: PlacementInstance, placement: Placement, claimed_cost: float | None = None
) -> list[str]:
    """Violations of ``placement``: one cell per task, distinct cells, cost as claimed."""
    loc = placement.loc
    if loc.shape != (inst.n,):
        return [f"placement has {loc.size} entries for {inst.n} tasks"]
    bad = [
        f"task {t} on cell index {loc[t]}, which does not exist"
        for t in np.flatnonzero((loc < 0) | (loc >= inst.cell_array.size))
    ]
    if bad:
        return bad
    _, first, counts = np.unique(loc, return_index=True, return_counts=True)
    bad += [
        f"cell {inst.cell_array[loc[f]]} holds {c} tasks"
        for f, c in zip(first, counts, strict=True)
        if c > 1
    ]
    if claimed_cost is not None and abs(inst.cost(loc) - claimed_cost) > 1e-6:
        bad.append(f"claimed cost {claimed_cost} differs from recomputed {inst.cost(loc)}")
    return bad
