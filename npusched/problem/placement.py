"""Placement of communicating tasks on mesh locations: Klotski Problem 3 without time (QAP form)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from npusched.problem.scheduling.instance import Reference, SchedulingInstance
from npusched.problem.scheduling.noc import Mesh

IntArray = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class PlacementInstance:
    """``n`` tasks exchanging ``flow[t, u]`` bytes, to be put on cells of a mesh.

    The cost of a placement ``loc`` (task → mesh cell) is Σ_tu flow[t, u] · hops(loc_t, loc_u)
    (Klotski eq. 14 weighted by bytes; with 0/1 flows it counts hops per producer→consumer edge).

    Without ``groups`` every task needs its own cell (QAP form). With ``groups``, only the tasks
    of one group must take distinct cells: Klotski's stage 2, where the groups are the sets of μops
    that overlap in time (eq. 12) and μops that never overlap may share a core.

    Parameters
    ----------
    flow
        ``(n, n)`` non-negative integers, zero diagonal.
    mesh
        The mesh.
    cells
        Mesh cells available to tasks (default: all).
    groups
        Sets of task indices that must occupy distinct cells; ``None``: all tasks.
    """

    flow: IntArray
    mesh: Mesh
    cells: IntArray | None = None
    groups: tuple[IntArray, ...] | None = None
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
        n = flow.shape[0]
        if self.groups is None:
            if cells.size < n:
                raise ValueError(f"{n} tasks do not fit on {cells.size} cells")
        else:
            groups = tuple(np.unique(np.asarray(g, dtype=np.int64)) for g in self.groups)
            for g in groups:
                if g.size and (g[0] < 0 or g[-1] >= n):
                    raise ValueError(f"group {g.tolist()} names a task outside 0..{n - 1}")
                if g.size > cells.size:
                    raise ValueError(
                        f"{g.size} tasks must be apart but there are {cells.size} cells"
                    )
            object.__setattr__(self, "groups", groups)
        object.__setattr__(self, "flow", flow)
        object.__setattr__(self, "cells", cells)
        # distances are symmetric, so only w = flow + flowᵀ matters (upper triangle used)
        object.__setattr__(self, "weight", flow + flow.T)

    @property
    def n(self) -> int:
        """Number of tasks: the side of the ``(n, n)`` ``flow`` matrix."""
        return int(self.flow.shape[0])

    @property
    def all_distinct(self) -> bool:
        """True in QAP form (every task on its own cell)."""
        return self.groups is None

    @property
    def cell_array(self) -> IntArray:
        """The mesh cells (row-major indices, int64) available to tasks, ``cells`` as checked in
        construction (every cell of the mesh when none were given); a placement's ``loc`` indexes
        into it."""
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
        """Mesh symmetries that keep ``cells`` as a set (see :meth:`Mesh.symmetries`)."""
        return self.mesh.symmetries(self.cell_array)


@dataclass(frozen=True)
class Placement:
    """Cell index (into ``instance.cells``) of each task."""

    loc: IntArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "loc", np.asarray(self.loc, dtype=np.int64).reshape(-1))


def overlap_groups(start: IntArray, end: IntArray) -> tuple[IntArray, ...]:
    """Maximal sets of μops running at a common instant (cliques of the interval graph).

    Half-open intervals ``[start, end)``; zero-length μops overlap nothing. Each maximal clique is
    the set active just after some start time.
    """
    busy = np.flatnonzero(end > start)
    groups: list[IntArray] = []
    previous: set[int] = set()
    for t in np.unique(start[busy]):
        active = busy[(start[busy] <= t) & (end[busy] > t)]
        if len(active) > 1 and not set(active.tolist()) <= previous:
            groups.append(active)
        previous = set(active.tolist())
    maximal = [g for g in groups if not any(set(g.tolist()) < set(h.tolist()) for h in groups)]
    return tuple(maximal)


def stage2_instance(
    instance: SchedulingInstance, start: IntArray, weighted: bool = False
) -> PlacementInstance:
    """Klotski's stage 2 for fixed slots: map the μops of ``instance`` (with a mesh) to cores.

    Flow ``t → u`` counts the producer→consumer edges (eq. 14) or, with ``weighted``, their bytes;
    μops that overlap in time must sit on different cores (eq. 12).
    """
    acc = instance.accelerator
    cells = acc.cells()
    if acc.mesh is None or cells is None or len(cells) != acc.m:
        raise ValueError("stage-2 mapping needs an accelerator whose cores sit on a mesh")
    g = instance.graph
    flow = np.zeros((g.n, g.n), dtype=np.int64)
    np.add.at(flow, (g.src, g.dst), g.bytes if weighted else 1)
    end = start + instance.duration[:, 0]
    return PlacementInstance(
        flow,
        Mesh(*acc.mesh),
        np.asarray(cells),
        overlap_groups(np.asarray(start), end),
        name=f"{instance.name}_stage2",
    )
