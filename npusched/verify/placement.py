"""Check a placement against its instance."""

from __future__ import annotations

import numpy as np

from npusched.problem.placement import Placement, PlacementInstance


def verify_placement(
    inst: PlacementInstance, placement: Placement, claimed_cost: float | None = None
) -> list[str]:
    """Violations of ``placement``: one cell per task, distinct cells within each group (all tasks
    in QAP form), cost as claimed."""
    loc = placement.loc
    if loc.shape != (inst.n,):
        return [f"placement has {loc.size} entries for {inst.n} tasks"]
    bad = [
        f"task {t} on cell index {loc[t]}, which does not exist"
        for t in np.flatnonzero((loc < 0) | (loc >= inst.cell_array.size))
    ]
    if bad:
        return bad
    groups = [np.arange(inst.n)] if inst.groups is None else inst.groups
    for g in groups:
        _, first, counts = np.unique(loc[g], return_index=True, return_counts=True)
        for f, c in zip(first.tolist(), counts.tolist(), strict=True):
            if c > 1:
                cell = inst.cell_array[loc[g][f]]
                bad.append(f"cell {cell} holds {c} tasks of the group {g.tolist()[:8]}")
    if claimed_cost is not None and abs(inst.cost(loc) - claimed_cost) > 1e-6:
        bad.append(f"claimed cost {claimed_cost} differs from recomputed {inst.cost(loc)}")
    return bad
