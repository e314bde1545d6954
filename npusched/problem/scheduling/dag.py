"""A DAG of μops stored as arrays.

Nodes are indexed ``0..n-1``; ``ids`` keeps the identifier each μop has in its source file.
Edges are parallel arrays ``src``, ``dst``, ``bytes``; predecessor and successor lists are CSR
arrays built once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

IntArray = NDArray[np.int64]


def _ranges(lo: IntArray, hi: IntArray) -> tuple[IntArray, IntArray]:
    """For ranges ``[lo_i, hi_i)``: the owner ``i`` and the value of every element."""
    count = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(lo.size), count)
    start = np.repeat(lo - (np.cumsum(count) - count), count)
    return owner, start + np.arange(int(count.sum()))


def release_load_bound(release: IntArray, work: IntArray, m: int) -> int:
    """A makespan bound from release times: for every threshold ``r``, what is released no
    earlier than ``r`` still needs ``⌈Σ work / m⌉`` cycles after it, so

    .. math:: C_{max} \\ge \\max_j \\bigl(r_j + \\lceil \\textstyle\\sum_{k : r_k \\ge r_j} w_k / m
              \\rceil\\bigr),

    the bound of the preemptive relaxation of P|r_j|C_max with each item's work
    ``w`` split freely over the ``m`` cores. It holds on heterogeneous cores with ``w`` the
    fastest latency. Reversed in time (``release`` the time after each item until the end), it
    bounds the same way, so one function serves heads and tails. ``release`` and ``work`` are
    parallel arrays (items may be μops or groups of μops with a common release); 0 when empty.
    """
    r = np.asarray(release, dtype=np.int64)
    if r.size == 0:
        return 0
    order = np.argsort(-r, kind="stable")
    after = np.cumsum(np.asarray(work, dtype=np.int64)[order])
    return int((r[order] + -(-after // m)).max())


def _csr(keys: IntArray, values: IntArray, n: int) -> tuple[IntArray, IntArray]:
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr, values[order]


@dataclass(frozen=True, eq=False)
class UopGraph:
    """Directed acyclic graph of μops.

    Parameters
    ----------
    latency
        Base latency of each μop in cycles (non-negative integers), shape ``(n,)``.
    src, dst
        Edge endpoints as node indices, shape ``(e,)``; ``src[k]`` must finish before ``dst[k]``
        starts.
    bytes
        Data carried by each edge (0 when unknown), shape ``(e,)``.
    ids
        Identifier of each μop in its source (defaults to ``0..n-1``).
    """

    latency: IntArray
    src: IntArray
    dst: IntArray
    bytes: IntArray
    ids: tuple[int | str, ...] = ()
    pred_ptr: IntArray = field(init=False, repr=False)
    pred_idx: IntArray = field(init=False, repr=False)
    succ_ptr: IntArray = field(init=False, repr=False)
    succ_idx: IntArray = field(init=False, repr=False)
    topo: IntArray = field(init=False, repr=False)
    level: IntArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        lat = np.asarray(self.latency, dtype=np.int64).reshape(-1)
        src = np.asarray(self.src, dtype=np.int64).reshape(-1)
        dst = np.asarray(self.dst, dtype=np.int64).reshape(-1)
        byt = np.asarray(self.bytes, dtype=np.int64).reshape(-1)
        n = lat.size
        if n == 0:
            raise ValueError("a μop graph needs at least one μop")

        def called(k: int) -> Any:
            """μop ``k`` as the source names it (its id, when the ids are given)."""
            return repr(self.ids[k]) if self.ids and len(self.ids) == n else k

        if (lat < 0).any():
            raise ValueError(f"latency of μop {called(int(np.argmin(lat)))} is negative")
        if not (src.size == dst.size == byt.size):
            raise ValueError("src, dst and bytes must have one entry per edge")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise ValueError(f"edge endpoint out of range 0..{n - 1}")
        if (src == dst).any():
            raise ValueError(f"self-loop on μop {called(int(src[src == dst][0]))}")
        if (byt < 0).any():
            raise ValueError("edge bytes must be non-negative")
        ids = tuple(self.ids) if self.ids else tuple(range(n))
        if len(ids) != n or len(set(ids)) != n:
            raise ValueError("ids must name every μop exactly once")
        for name, arr in (("latency", lat), ("src", src), ("dst", dst), ("bytes", byt)):
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "ids", ids)
        pred_ptr, pred_idx = _csr(dst, src, n)
        succ_ptr, succ_idx = _csr(src, dst, n)
        for name, arr in (
            ("pred_ptr", pred_ptr),
            ("pred_idx", pred_idx),
            ("succ_ptr", succ_ptr),
            ("succ_idx", succ_idx),
        ):
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "topo", self._topological_order())

    def _topological_order(self) -> IntArray:
        """Kahn's algorithm a frontier at a time (all sources, then all μops whose producers are
        done, …), with array operations per frontier; also records each μop's level."""
        n = self.n
        indeg = np.bincount(self.dst, minlength=n)
        level = np.full(n, -1, dtype=np.int64)
        frontier = np.flatnonzero(indeg == 0)
        order: list[IntArray] = []
        depth = 0
        while frontier.size:
            order.append(frontier)
            level[frontier] = depth
            _, pos = _ranges(self.succ_ptr[frontier], self.succ_ptr[frontier + 1])
            succ = self.succ_idx[pos]
            indeg -= np.bincount(succ, minlength=n)
            frontier = np.unique(succ[indeg[succ] == 0])
            depth += 1
        if (level < 0).any():
            cyclic = [self.ids[i] for i in np.flatnonzero(level < 0)[:5]]
            raise ValueError(f"the μop graph has a cycle through μops {cyclic}")
        object.__setattr__(self, "level", level)
        return np.concatenate(order).astype(np.int64) if order else np.zeros(0, np.int64)

    @property
    def n(self) -> int:
        """Number of μops."""
        return int(self.latency.size)

    @property
    def num_edges(self) -> int:
        """Number of edges ``e`` (the length of ``src``, ``dst`` and ``bytes``)."""
        return int(self.src.size)

    def preds(self, i: int) -> IntArray:
        """The producers of μop ``i``: the ``src`` of every edge into it, in edge order (a view of
        the CSR array ``pred_idx``; do not modify it)."""
        return self.pred_idx[self.pred_ptr[i] : self.pred_ptr[i + 1]]

    def succs(self, i: int) -> IntArray:
        """The consumers of μop ``i``: the ``dst`` of every edge out of it, in edge order (a view of
        the CSR array ``succ_idx``; do not modify it)."""
        return self.succ_idx[self.succ_ptr[i] : self.succ_ptr[i + 1]]

    def latest_starts(self, duration: IntArray, due: IntArray) -> IntArray:
        """Latest start of each μop when each must end by its own ``due`` time: ``L_i =
        min(due_i, min_{i → j} L_j) − d_i`` (ALAP with per-μop deadlines); computed level by
        level from the last. ``T − tails(duration)`` is the case ``due = T`` everywhere."""
        d = np.asarray(duration, dtype=np.int64)
        end = np.array(due, dtype=np.int64)
        for e in reversed(self._by_level(self.src)):
            np.minimum.at(end, self.src[e], end[self.dst[e]] - d[self.dst[e]])
        return end - d

    def dominated_edges(self, per_hop: IntArray, fixed: IntArray) -> np.ndarray:
        """Edges whose transfer delay a path of two edges always covers: ``i → k`` with some
        ``i → j → k`` whose two edges each have delay terms at least ``i → k``'s (``λ``,
        ``φ`` of a delay ``λ·hops + φ`` between different cores). By the triangle inequality of
        the hops, ``s_k ≥ e_j + λ_jk h_jk + φ_jk ≥ e_i + λ_ij h_ij + φ_ij + λ_jk h_jk + φ_jk ≥ e_i
        + λ_ik h_ik + φ_ik`` (a φ counted where its edge leaves its core, and ``h_ij + h_jk ≥
        h_ik``), so a model needs no row for ``i → k``; and a dominated edge of the path is
        itself covered by a longer path of edges no weaker, so every dominated edge can be left
        out at once. A boolean mask over the edges; ``O(Σ_e min(out(i), in(k)))``."""
        lam = np.asarray(per_hop).tolist()
        phi = np.asarray(fixed).tolist()
        src, dst = self.src.tolist(), self.dst.tolist()
        out: list[dict[int, int]] = [{} for _ in range(self.n)]
        into: list[dict[int, int]] = [{} for _ in range(self.n)]
        for e, (i, k) in enumerate(zip(src, dst, strict=True)):
            out[i][k] = into[k][i] = e
        mask = np.zeros(len(src), dtype=bool)
        for e, (i, k) in enumerate(zip(src, dst, strict=True)):
            a, b = out[i], into[k]
            for j in a if len(a) < len(b) else b:
                f, g = a.get(j), b.get(j)
                if f is None or g is None:
                    continue
                if min(lam[f], lam[g]) >= lam[e] and min(phi[f], phi[g]) >= phi[e]:
                    mask[e] = True
                    break
        return mask

    def reach(self) -> np.ndarray:
        """The ``(n, n)`` boolean matrix of :meth:`descendants` (row ``i``: the μops that
        descend from ``i``)."""
        width = (self.n + 7) // 8
        rows = [b.to_bytes(width, "little") for b in self.descendants()]
        bits = np.unpackbits(np.frombuffer(b"".join(rows), dtype=np.uint8), bitorder="little")
        return bits.reshape(self.n, 8 * width)[:, : self.n].astype(bool)

    def descendants(self) -> list[int]:
        """Each μop's descendants (every μop a path of edges leads to from it) as a bit set: bit
        ``j`` of entry ``i`` is set when ``j`` descends from ``i``. ``O(n²/64)`` words of memory
        and time ``O(E·n/64)``: for models of up to some thousands of μops."""
        below = [0] * self.n
        ptr, idx = self.succ_ptr.tolist(), self.succ_idx.tolist()
        for i in self.topo[::-1].tolist():
            bits = 0
            for j in idx[ptr[i] : ptr[i + 1]]:
                bits |= (1 << j) | below[j]
            below[i] = bits
        return below

    def _by_level(self, of: IntArray) -> list[IntArray]:
        """Edge indices grouped by the level of ``of`` (``self.dst`` or ``self.src``), levels
        ascending."""
        key = self.level[of]
        order = np.argsort(key, kind="stable")
        cut = np.flatnonzero(np.diff(key[order])) + 1
        return np.split(order, cut) if order.size else []

    def heads(
        self,
        duration: IntArray | None = None,
        delay: IntArray | None = None,
        release: IntArray | None = None,
    ) -> IntArray:
        """Earliest start of each μop, i.e. the longest path into it (Klotski eq. 1, ASAP);
        computed level by level. ``delay`` adds a time to each edge (in edge order) and
        ``release`` is each μop's earliest start of its own (both zero by default)."""
        d = np.asarray(self.latency if duration is None else duration, dtype=np.int64)
        w = np.zeros(self.src.size, dtype=np.int64) if delay is None else delay
        head = (
            np.zeros(self.n, dtype=np.int64)
            if release is None
            else np.array(release, dtype=np.int64)
        )
        for e in self._by_level(self.dst):
            np.maximum.at(head, self.dst[e], head[self.src[e]] + d[self.src[e]] + w[e])
        return head

    def tails(self, duration: IntArray | None = None) -> IntArray:
        """Longest path from the start of each μop to the end of the DAG, its own latency included
        (the b-level of list scheduling); computed level by level from the last."""
        d = np.asarray(self.latency if duration is None else duration, dtype=np.int64)
        below = np.zeros(self.n, dtype=np.int64)
        for e in reversed(self._by_level(self.src)):
            np.maximum.at(below, self.src[e], d[self.dst[e]] + below[self.dst[e]])
        return d + below
