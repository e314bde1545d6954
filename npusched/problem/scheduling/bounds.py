"""Two makespan bounds of layered μop graphs with off-chip operands (ours; used by
:meth:`~npusched.problem.scheduling.routed.RoutedInstance.lower_bound`).

- :func:`ancestor_load_heads`: a μop cannot start before its ancestors' work is done, and ``m``
  cores do at most ``m`` cycles of it per cycle. The critical path misses this where a layer
  reads the *whole* output of the layer before it (a fully connected layer after the last
  pooling, a global pooling): there every μop waits for everything below it, while its critical
  path is one tile per layer.
- :func:`prefetch_bound`: operands that no μop can use before a time ``r`` and that do not fit
  the cores' memories together must partly come from DRAM after ``r``; the off-chip links carry
  them at their summed bandwidth. On VGG the fully connected layers' weights (411 MB of fc6
  alone against 25 × 5.86 MB of SRAM on klotski-5x5) make this the binding term.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from npusched.problem.scheduling.dag import IntArray, UopGraph


def ancestor_load_heads(graph: UopGraph, duration: IntArray, layer: IntArray, m: int) -> IntArray:
    """Per μop, ``⌈Σ_{j ∈ A} d_j / m⌉`` over a set ``A`` of its ancestors found layer by layer,
    a bound on its start (all of ``A`` ends before it starts, on ``m`` cores).

    With layers numbered in a topological order (edges between layers go from a lower to a
    higher number; others are ignored, which only weakens the bound):

    - a *sink* of a layer is a μop with no successor in its own layer (the end of a partial-sum
      chain, or any μop of a layer without chains): every μop of the layer is a sink or an
      ancestor of one;
    - layer ``P`` is *covered* by layer ``L`` when every sink of ``P`` has a successor in ``L``:
      then all of ``P`` are ancestors of ``L``'s μops taken together, and so is what covers
      ``P``: :math:`\\mathrm{Cov}(L) = \\bigcup_{P \\text{ covered by } L} \\{P\\} \\cup
      \\mathrm{Cov}(P)`;
    - a μop that reads every sink of a layer ``L`` has all of ``L ∪ Cov(L)`` among its ancestors,
      so its bound is the largest ``⌈W(L ∪ Cov(L)) / m⌉`` over such ``L``, ``W`` the summed
      ``duration``; 0 for a μop that reads no layer whole.

    ``O(E log E + L²)`` for ``E`` edges and ``L`` layers."""
    n = graph.n
    head = np.zeros(n, dtype=np.int64)
    lay = np.asarray(layer, dtype=np.int64)
    if n == 0 or graph.src.size == 0:
        return head
    count = int(lay.max()) + 1
    work = np.bincount(lay, weights=np.asarray(duration, dtype=np.float64), minlength=count)
    src, dst = graph.src, graph.dst
    inner = lay[src] == lay[dst]
    sink = np.ones(n, dtype=bool)  # no successor in its own layer: the end of a partial-sum chain
    sink[src[inner]] = False
    size = np.bincount(lay[sink], minlength=count)
    cross = (lay[src] < lay[dst]) & sink[src]
    src, dst = src[cross], dst[cross]
    # P covered by L: distinct (sink of P, layer L) pairs number P's sinks
    fed = distinct_pairs(src, lay[dst], count)[0]
    pl, _, hits = distinct_pairs(lay[fed[0]], fed[1], count)
    covers: list[list[int]] = [[] for _ in range(count)]
    for p, q in pl[:, hits == size[pl[0]]].T.tolist():
        covers[q].append(p)
    cov = np.zeros((count, count), dtype=bool)
    for q in range(count):
        for p in covers[q]:
            cov[q, p] = True
            cov[q] |= cov[p]
    closure = np.ceil((work + cov.astype(np.float64) @ work) / m - 1e-9).astype(np.int64)
    # μops that read every sink of a layer L: distinct (μop, sink of L) pairs number L's sinks
    read = distinct_pairs(dst, src, n)[0]
    ul, _, hits = distinct_pairs(read[0], lay[read[1]], count)
    whole = ul[:, hits == size[ul[1]]]
    np.maximum.at(head, whole[0], closure[whole[1]])
    return head


def distinct_pairs(a: IntArray, b: IntArray, base: int) -> tuple[IntArray, IntArray, IntArray]:
    """The distinct pairs ``(a[k], b[k])`` as the columns of a ``2 × P`` array in lexicographic
    order, each pair's column and how often each occurs: what ``np.unique(np.stack([a, b]),
    axis=1, return_inverse=True, return_counts=True)`` gives, through one integer key per pair
    (``0 ≤ b < base``; a sort of integers instead of rows, several times faster)."""
    key = np.asarray(a, dtype=np.int64) * base + np.asarray(b, dtype=np.int64)
    keys, inverse, hits = np.unique(key, return_inverse=True, return_counts=True)
    return np.stack([keys // base, keys % base]), inverse.ravel(), hits


def distinct_rows(mask: NDArray[np.bool_]) -> tuple[NDArray[np.bool_], IntArray]:
    """The distinct rows of a boolean matrix, in lexicographic order, and each row's index among
    them: what ``np.unique(mask, axis=0, return_inverse=True)`` gives, through each row packed
    into 64-bit words (a sort of integers; with up to 64 columns one word a row)."""
    packed = np.packbits(np.asarray(mask, dtype=bool), axis=1)
    packed = np.pad(packed, ((0, 0), (0, -packed.shape[1] % 8)))
    words = np.ascontiguousarray(packed).view(">u8")
    if words.shape[1] == 1:
        _, first, inverse = np.unique(words[:, 0], return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(words, axis=0, return_index=True, return_inverse=True)
    return np.asarray(mask, dtype=bool)[first], inverse.ravel()


def prefetch_bound(
    release: IntArray, tail: IntArray, data: IntArray, capacity: int, rate: float
) -> int:
    """A makespan bound from off-chip operands that arrive too late to be prefetched whole.

    Operand ``k`` (``data[k]`` units, read from DRAM at least once) has no reader that can start
    before ``release[k]``, and ``tail[k]`` is the least time from a reader's start to the end.
    A copy fetched before ``r`` by readers that start after ``r`` is in some core's memory at
    ``r``, so of the operands with ``release ≥ r`` at most ``capacity`` units (all memories
    together) are fetched before ``r``; the rest crosses the off-chip links after ``r`` at no
    more than ``rate`` units per cycle (their bandwidths summed), and the reader of the last
    unit still runs its tail:

    .. math:: C_{max} \\ge \\max_r \\Bigl(r + \\Bigl\\lceil \\frac{\\sum_{k: r_k \\ge r} D_k
              - C}{B} \\Bigr\\rceil + \\min_{k: r_k \\ge r} \\mathit{tail}_k\\Bigr),

    over the thresholds ``r`` with more than ``C`` units released after them; 0 when there is
    none. The sets are taken operand by operand, latest release first, so one may stop inside a
    group of equal releases: a subset of a threshold's operands, which the same argument
    bounds (with its own, possibly longer, shortest tail)."""
    r = np.asarray(release, dtype=np.int64)
    if r.size == 0 or rate <= 0:
        return 0
    order = np.argsort(-r, kind="stable")
    after = np.cumsum(np.asarray(data, dtype=np.int64)[order]) - capacity
    last = np.minimum.accumulate(np.asarray(tail, dtype=np.int64)[order])
    over = after > 0
    if not over.any():
        return 0
    wait = np.ceil(after[over] / rate - 1e-9).astype(np.int64)
    return int((r[order][over] + wait + last[over]).max())


def port_bound(tail: IntArray, cycles: IntArray, ports: int) -> int:
    """A makespan bound from the off-chip ports: operand ``k`` crosses one of ``ports`` links
    out of DRAM (each one transfer at a time) for at least ``cycles[k]``, and the copy read by
    its reader of longest tail ``tail[k]`` (from that reader's start to the end) arrives before
    that reader starts, so by ``C − tail[k]``. The operands of tail at least ``q`` keep the
    ports busy for their cycles within ``[0, C − q]``:

    .. math:: C_{max} \\ge \\max_q \\Bigl(q + \\Bigl\\lceil \\frac{\\sum_{k: tail_k \\ge q}
              \\mathit{cycles}_k}{P} \\Bigr\\rceil\\Bigr)

    taken operand by operand, longest tail first; 0 without operands or ports."""
    q = np.asarray(tail, dtype=np.int64)
    if q.size == 0 or ports <= 0:
        return 0
    order = np.argsort(-q, kind="stable")
    busy = np.cumsum(np.asarray(cycles, dtype=np.int64)[order])
    return int((q[order] + -(-busy // ports)).max())


def window_load_bound(head: IntArray, after: IntArray, work: IntArray, m: int,
                      thresholds: int = 32) -> int:  # fmt: skip
    """The load that must run inside a window: every μop with head at least ``r`` and at least
    ``q`` cycles of its successors after it (``after``) runs within ``[r, C − q]`` on ``m``
    cores:

    .. math:: C_{max} \\ge \\max_{r, q} \\Bigl(r + \\Bigl\\lceil \\frac{\\sum_{i: r_i \\ge r,
              q_i \\ge q} l_i}{m} \\Bigr\\rceil + q\\Bigr)

    (:func:`~npusched.problem.scheduling.dag.release_load_bound` is its ``q = 0`` side). The
    thresholds ``r`` are ``thresholds`` quantiles of the heads and every ``q`` is tried for
    each (sorted once per ``r``): ``O(thresholds · n log n)``."""
    r = np.asarray(head, dtype=np.int64)
    if r.size == 0:
        return 0
    q, w = np.asarray(after, dtype=np.int64), np.asarray(work, dtype=np.int64)
    best = 0
    for lo in np.unique(np.quantile(r, np.linspace(0, 1, thresholds), method="lower")).tolist():
        on = r >= lo
        order = np.argsort(-q[on], kind="stable")
        load = np.cumsum(w[on][order])
        best = max(best, int(lo + (q[on][order] + -(-load // m)).max()))
    return best
