"""Placement of communicating tasks on mesh locations: Klotski Problem 3 without time (QAP form)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from npusched.problem.instance import Reference
from npusched.problem.noc import Mesh

IntArray = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class PlacementInstance:
    """``n`` tasks exchanging ``flow[t, u]`` bytes, to be put on distinct cells of a mesh.

    The cost of a placement ``loc`` (task → mesh cell) is Σ_tu flow[t, u] · hops(loc_t, loc_u)
    (Klotski eq. 14 weighted by bytes; with 0/1 flows it counts hops per producer→consumer edge).

    Parameters
    ----------
    flow
        ``(n, n)`` non-negative integers, zero diagonal.
    mesh
        The mesh.
    cells
        Mesh cells available to tasks (default: all); at least ``n`` of them.
    """

    flow: IntArray
    mesh: Mesh
    cells: IntArray | None = None
    name: str = "placement"
    reference: Reference = field(default_factory=Reference)
    source: dict[str, Any] = field(default_factory=dict)
    weight: IntArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        flow = np.asarray(self.flow, dtype=np.int64)
        if flow.ndim != 2 or flow.shape[0] != flow.shape[1]:
            raise ValueError(f"flow must be a square matrix, got shape {flow.shape}")
        if (flow < 0).any():
            raise ValueError("flows must be non-negative")
        if np.diag(flow).any():
            raise ValueError("a task has flow to itself (non-zero diagonal)")
        cells = np.arange(self.mesh.size) if self.cells is None else np.asarray(self.cells)
        cells = cells.astype(np.int64)
        if (
            len(set(cells.tolist())) != cells.size
            or ((cells < 0) | (cells >= self.mesh.size)).any()
        ):
            raise ValueError("cells must be distinct cells of the mesh")
        if cells.size < flow.shape[0]:
            raise ValueError(f"{flow.shape[0]} tasks do not fit on {cells.size} cells")
        object.__setattr__(self, "flow", flow)
        object.__setattr__(self, "cells", cells)
        # distances are symmetric, so only w = flow + flowᵀ matters (upper triangle used)
        object.__setattr__(self, "weight", flow + flow.T)

    @property
    def n(self) -> int:
        return int(self.flow.shape[0])

    @property
    def cell_array(self) -> IntArray:
        assert self.cells is not None
        return self.cells

    def distance(self) -> IntArray:
        """Hops between the available cells (indexed like ``cells``)."""
        c = self.cell_array
        return self.mesh.distance()[np.ix_(c, c)]

    def cost(self, loc: IntArray) -> int:
        """NoC cost of ``loc`` (cell index per task, indices into ``cells``)."""
        d = self.distance()[np.ix_(loc, loc)]
        return int((self.flow * d).sum())

    def symmetries(self) -> list[IntArray]:
        """Mesh symmetries (flips, and transposes on square meshes) that keep ``cells`` as a set,
        each as a permutation of cell indices."""
        R, C = self.mesh.rows, self.mesh.cols
        rc = self.mesh.coords()[self.cell_array]
        maps = [
            lambda r, c: (r, c),
            lambda r, c: (R - 1 - r, c),
            lambda r, c: (r, C - 1 - c),
            lambda r, c: (R - 1 - r, C - 1 - c),
        ]
        if R == C:
            maps += [
                lambda r, c: (c, r),
                lambda r, c: (C - 1 - c, r),
                lambda r, c: (c, R - 1 - r),
                lambda r, c: (C - 1 - c, R - 1 - r),
            ]
        index = {int(cell): k for k, cell in enumerate(self.cell_array)}
        out = []
        for f in maps:
            image = [int(a * C + b) for a, b in (f(int(r), int(c)) for r, c in rc)]
            if all(cell in index for cell in image):
                out.append(np.array([index[cell] for cell in image], dtype=np.int64))
        return out


@dataclass(frozen=True)
class Placement:
    """Cell index (into ``instance.cells``) of each task."""

    loc: IntArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "loc", np.asarray(self.loc, dtype=np.int64).reshape(-1))
