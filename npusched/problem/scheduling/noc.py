"""Networks of cores: the mesh (coordinates, Manhattan hops, directed links and XY routes, its
symmetries) and the hypercube's symmetries."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, eq=False)
class Mesh:
    """A ``rows × cols`` mesh; core ``k`` sits at ``(k // cols, k % cols)`` (Klotski eq. 10–11).

    Links are directed between 4-neighbours and numbered once; ``route(a, b)`` is the XY route
    (along the row to the target column first, then along the column), as a list of link ids.

    Parameters
    ----------
    rows, cols
        Mesh size.
    bandwidth
        Bytes per cycle per link.
    hop_latency
        Cycles per hop.
    """

    rows: int
    cols: int
    bandwidth: float = 1.0
    hop_latency: int = 1
    links: tuple[tuple[int, int], ...] = field(init=False, repr=False)
    link_id: dict[tuple[int, int], int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.rows < 1 or self.cols < 1:
            raise ValueError(f"mesh must be at least 1x1, got {self.rows}x{self.cols}")
        if self.bandwidth <= 0 or self.hop_latency < 0:
            raise ValueError("mesh bandwidth must be positive and hop latency non-negative")
        links = []
        for k in range(self.size):
            r, c = divmod(k, self.cols)
            for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                rr, cc = r + dr, c + dc
                if 0 <= rr < self.rows and 0 <= cc < self.cols:
                    links.append((k, rr * self.cols + cc))
        object.__setattr__(self, "links", tuple(links))
        object.__setattr__(self, "link_id", {lk: i for i, lk in enumerate(links)})

    @property
    def size(self) -> int:
        """Number of cells (cores) of the mesh, ``rows · cols``; cells are numbered ``0..size-1``
        row-major."""
        return self.rows * self.cols

    def coords(self) -> NDArray[np.int64]:
        """``(size, 2)`` array of (row, col)."""
        k = np.arange(self.size)
        return np.stack([k // self.cols, k % self.cols], axis=1)

    def distance(self) -> NDArray[np.int64]:
        """Manhattan hop count between every pair of cores (Klotski eq. 9)."""
        xy = self.coords()
        return np.abs(xy[:, None, :] - xy[None, :, :]).sum(axis=2)

    def route(self, a: int, b: int) -> list[int]:
        """XY route from core ``a`` to core ``b`` as link ids (empty when ``a == b``)."""
        (r, c), (r1, c1) = divmod(a, self.cols), divmod(b, self.cols)
        path = []
        while c != c1:
            nc = c + (1 if c1 > c else -1)
            path.append(self.link_id[(r * self.cols + c, r * self.cols + nc)])
            c = nc
        while r != r1:
            nr = r + (1 if r1 > r else -1)
            path.append(self.link_id[(r * self.cols + c, nr * self.cols + c)])
            r = nr
        return path

    def snake(self) -> list[int]:
        """Cores in boustrophedon (zig-zag) order: row 0 left to right, row 1 right to left, …"""
        order: list[int] = []
        for r in range(self.rows):
            cols = range(self.cols) if r % 2 == 0 else range(self.cols - 1, -1, -1)
            order.extend(r * self.cols + c for c in cols)
        return order

    def symmetries(self, cells: NDArray[np.int64]) -> list[NDArray[np.int64]]:
        """Mesh symmetries (flips; rotations and transposes on square meshes) that map the set
        ``cells`` onto itself, each as a permutation of indices into ``cells`` (identity first).

        Hops are invariant under them, so any of them turns a placement into one of equal cost.
        """
        R, C = self.rows, self.cols
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
        rc = self.coords()[cells]
        index = {int(cell): k for k, cell in enumerate(cells.tolist())}
        out: list[NDArray[np.int64]] = []
        for f in maps:
            image = [int(a * C + b) for a, b in (f(int(r), int(c)) for r, c in rc)]
            perm = [index.get(cell, -1) for cell in image]
            if -1 not in perm and all(perm != list(p) for p in out):
                out.append(np.array(perm, dtype=np.int64))
        return out


def hypercube_symmetries(nodes: NDArray[np.int64], dim: int) -> list[NDArray[np.int64]]:
    """Automorphisms of the ``dim``-cube (a permutation of the bit positions, then a flip of some
    bits: ``2**dim · dim!`` maps) that map the set ``nodes`` onto itself, each as a permutation of
    indices into ``nodes`` (identity first). Hops (differing bits) are invariant under them."""
    index = {int(v): k for k, v in enumerate(nodes.tolist())}
    bits = (nodes[:, None] >> np.arange(dim)) & 1
    out: list[NDArray[np.int64]] = []
    seen: set[tuple[int, ...]] = set()
    for order in itertools.permutations(range(dim)):
        for flip in range(2**dim):
            image = (bits[:, list(order)] << np.arange(dim)).sum(axis=1) ^ flip
            perm = tuple(index.get(int(v), -1) for v in image)
            if -1 not in perm and perm not in seen:
                seen.add(perm)
                out.append(np.array(perm, dtype=np.int64))
    return out


def stabilizer_chain(
    group: list[NDArray[np.int64]], depth: int, most: int = 512
) -> list[tuple[tuple[int, ...], list[int]]]:
    """Symmetry breaking on the cores of a sequence of objects ``o_1, o_2, …`` (μops, say)
    under a ``group`` of core permutations (identity included) that maps solutions to solutions.

    Any solution is mapped by some ``g`` so that ``o_1`` sits on the least core of its orbit
    under the group, then by some ``g`` that fixes that core so that ``o_2`` sits on the least
    core of its orbit under that stabilizer, and so on: the stabilizer chain (Sims; as symmetry
    breaking, e.g. Puget, "Symmetry breaking using stabilizers", CP 2003). So every solution has
    an image where, for each level ``l`` and the cores ``c_1..c_{l-1}`` of the objects before,
    ``o_l`` is not on a core that is not the least of its orbit under the stabilizer of
    ``c_1..c_{l-1}``.

    Returns the pairs ``(c_1..c_{l-1}, excluded cores of o_l)`` with something excluded, for
    ``l ≤ depth``, stopping early where every stabilizer is trivial or more than ``most`` prefixes
    would be followed. Sound for any ``depth``: a shorter chain only breaks less."""
    if not group:
        return []
    m = int(group[0].size)
    out: list[tuple[tuple[int, ...], list[int]]] = []
    states: list[tuple[tuple[int, ...], list[NDArray[np.int64]]]] = [((), group)]
    for _ in range(depth):
        nxt: list[tuple[tuple[int, ...], list[NDArray[np.int64]]]] = []
        for prefix, sub in states:
            if len(sub) < 2:
                continue
            images = np.stack(sub)  # (|sub|, m): images[g, k] = g(k)
            least = images.min(axis=0)
            excluded = np.flatnonzero(least != np.arange(m)).tolist()
            if excluded:
                out.append((prefix, excluded))
            for k in np.flatnonzero(least == np.arange(m)).tolist():
                nxt.append((prefix + (k,), [g for g in sub if int(g[k]) == k]))
        if not nxt or len(nxt) > most:
            break
        states = nxt
    return out
