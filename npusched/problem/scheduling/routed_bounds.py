"""The makespan bounds of a routed instance
(:class:`~npusched.problem.scheduling.routed.RoutedInstance`): the critical path with transfers,
relays and DRAM fetches, the load after heads, before tails and in windows, the DRAM ports, and
the operands that cannot all be prefetched (the terms of :mod:`npusched.problem.scheduling.bounds`),
which :meth:`~npusched.problem.scheduling.routed.RoutedInstance.lower_bound` and
:attr:`~npusched.problem.scheduling.routed.RoutedInstance.heads_tails` return. Each function
takes the routed instance as ``inst`` (typed ``Any``: this module is below the instance's, which
calls it)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from npusched.problem.scheduling.bounds import (
    ancestor_load_heads,
    distinct_pairs,
    distinct_rows,
    port_bound,
    prefetch_bound,
    window_load_bound,
)
from npusched.problem.scheduling.dag import IntArray, release_load_bound


def bandwidths(inst: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(m, m)`` bottleneck bandwidth between cores (inf on the diagonal) and ``(m,)`` from
    the DRAM core (0 without one)."""
    bw = np.full((inst.m, inst.m), np.inf)
    for a in range(inst.m):
        for c in range(inst.m):
            if a != c:
                bw[a, c] = min(inst.topology.links[x].bandwidth for x in inst.route(a, c))
    dram = np.zeros(inst.m)
    if inst.topology.dram is not None:
        dram = np.array(
            [
                min(inst.topology.links[x].bandwidth for x in inst.route(-1, c))
                for c in range(inst.m)
            ]
        )
    return bw, dram


def _prefetch(inst: Any, head: IntArray, tail: IntArray) -> int:
    """:func:`~npusched.problem.scheduling.bounds.prefetch_bound` over the DRAM tensors none
    of whose readers is streamed (those take no space), with every core's capacity and the
    bandwidths of the first links out of DRAM (one per resource) summed; 0 without
    capacities or DRAM tensors."""
    streamed = inst.is_streamed
    used = [t for t in inst.dram
            if t.data > 0 and t.consumers.size and not streamed[t.consumers].any()]  # fmt: skip
    if inst.capacity is None or not used:
        return 0
    topo, first = inst.topology, {}  # type: ignore[var-annotated]
    for route in (inst.route(-1, c) for c in range(inst.m)):
        if route:
            res = int(topo.resource_of[route[0]])
            first[res] = max(first.get(res, 0.0), topo.links[route[0]].bandwidth)
    return prefetch_bound(
        np.array([head[t.consumers].min() for t in used]),
        np.array([tail[t.consumers].min() for t in used]),
        np.array([t.data for t in used]),
        int(inst.capacity.sum()),
        float(sum(first.values())),
    )


def _ports(inst: Any, tail: IntArray) -> int:
    """:func:`~npusched.problem.scheduling.bounds.port_bound` over the DRAM tensors: each
    crosses one first link out of DRAM (one port per resource those links use, ``P`` for a
    resource of ``P`` lanes) at no more than the fastest route's bandwidth, before its reader
    of longest tail starts."""
    used = [t for t in inst.dram if t.data > 0 and t.consumers.size]
    if not used:
        return 0
    dram_bw = bandwidths(inst)[1]
    ports = {int(inst.topology.resource_of[inst.route(-1, c)[0]]) for c in range(inst.m)}
    cycles = [int(np.ceil(t.data / dram_bw.max() - 1e-9)) for t in used]
    return port_bound(np.array([tail[t.consumers].max() for t in used]), np.array(cycles),
                      int(inst.topology.lanes[list(ports)].sum()))  # fmt: skip


def heads_tails(inst: Any) -> tuple[IntArray, IntArray]:
    """Each μop's earliest start and its tail (the longest path from its start to the end,
    its own fastest latency included) over every allowed assignment and transfer timing,
    evicting or not: the critical path of :func:`lower_bound`'s first item."""
    d = inst.min_duration
    g, mask = inst.graph, inst.mask
    bw, dram_bw = bandwidths(inst)
    copy = inst.copy_data(g.src, inst.read_data)  # at least what the consumer reads
    # per distinct row of the mask (one for μops free to run anywhere): the fastest link
    # between the core sets of each pair of rows that an edge joins, and from DRAM into one
    kinds, of = distinct_rows(mask)
    ends, pair_of, _ = distinct_pairs(of[g.src], of[g.dst], len(kinds))
    pair = kinds[ends[0]][:, :, None] & kinds[ends[1]][:, None, :]
    best = np.where(pair, bw[None], 0.0).max(axis=(1, 2))[pair_of]
    weight = np.ceil(copy / best - 1e-9)
    if inst.can_write_back:  # or relayed through DRAM: the whole output out, the copy back
        back = max(min(inst.topology.links[x].bandwidth for x in inst.route(k, -1))
                   for k in range(inst.m))  # fmt: skip
        relay = np.ceil(inst.output_data[g.src] / back - 1e-9) + np.ceil(
            copy / dram_bw.max() - 1e-9)
        weight = np.minimum(weight, relay)
    weight = np.where(g.bytes > 0, weight, 0).astype(np.int64)
    fastest = np.where(kinds, dram_bw[None], 0.0).max(axis=1)[of]
    if inst.forward:  # a forwarded copy came out of DRAM into some core first
        fastest = np.full(inst.n, dram_bw.max())
    head = np.zeros(inst.n, dtype=np.int64)
    for t in inst.dram:
        if t.data > 0 and t.consumers.size:
            arrive = np.ceil(t.data / fastest[t.consumers] - 1e-9).astype(np.int64)
            np.maximum.at(head, t.consumers, arrive)
    if inst.layer is not None:
        head = np.maximum(head, ancestor_load_heads(g, d, inst.layer, inst.m))
    head = g.heads(d, weight, head)
    return head, g.tails(d)


def lower_bound(inst: Any) -> int:
    """A makespan bound of ``inst`` valid for every allowed assignment and any transfer timing.

    The largest of:

    - the critical path with each μop at its fastest allowed latency, where a data edge
      whose ends can share no core costs its fastest possible transfer (of no more than what
      its consumer reads: :meth:`copy_data` of the edge alone) or, where cores can write
      back, its fastest relay through DRAM (the whole output written back, the copy
      fetched again), whichever is shorter, and a μop cannot start
      before its DRAM tensors can arrive on any of its cores (where the instance lets a
      core forward them: on any core);
    - the load of μops that can run on one core only, and the load after each head and
      before each tail (:func:`~npusched.problem.scheduling.dag.release_load_bound`; with a
      zero threshold, ``⌈Σ fastest latencies / m⌉``), with the heads of the critical path;
    - when all DRAM routes share a link: the DRAM traffic on it (each tensor once per core
      its consumers are forced onto, at least once, at the route's bandwidth; once where
      the instance forwards DRAM tensors; over ``P`` for a link of ``P`` lanes) plus the
      shortest remaining path of a DRAM consumer: the fetch that ends last still has to be
      consumed;
    - with layers, each μop's head is at least the load of the ancestors found layer by
      layer (:func:`~npusched.problem.scheduling.bounds.ancestor_load_heads`);
    - the load inside each window after a head and before a tail
      (:func:`~npusched.problem.scheduling.bounds.window_load_bound`);
    - the DRAM tensors through the ports out of DRAM, each before its reader of longest
      tail (:func:`~npusched.problem.scheduling.bounds.port_bound`);
    - with memory capacities, the DRAM operands that cannot all be prefetched before their
      readers' heads (:func:`~npusched.problem.scheduling.bounds.prefetch_bound`).
    """
    d, mask = inst.min_duration, inst.mask
    head, tail = heads_tails(inst)
    dram_bw = bandwidths(inst)[1]
    bound = max(int((head + d).max()), release_load_bound(head, d, inst.m),
                release_load_bound(tail - d, d, inst.m),
                window_load_bound(head, tail - d, d, inst.m),
                _prefetch(inst, head, tail), _ports(inst, tail))  # fmt: skip
    only = mask.sum(axis=1) == 1
    if only.any():
        core = np.argmax(mask, axis=1)
        load = np.bincount(core[only], weights=d[only], minlength=inst.m)
        bound = max(bound, int(load.max()))
    used = [t for t in inst.dram if t.data > 0 and t.consumers.size]
    if used:
        routes = [inst.route(-1, k) for k in range(inst.m)]
        shared = set.intersection(
            *({int(inst.topology.resource_of[x]) for x in r} for r in routes)
        )
        if shared:
            traffic = 0
            for t in used:
                forced = np.unique(np.argmax(mask[t.consumers], axis=1)[only[t.consumers]])
                if forced.size and not inst.forward:  # (forwarded: out of DRAM once)
                    traffic += int(np.ceil(t.data / dram_bw[forced] - 1e-9).sum())
                else:
                    traffic += int(np.ceil(t.data / dram_bw.max() - 1e-9))
            last = min(int(tail[t.consumers].min()) for t in used)
            lanes = int(inst.topology.lanes[list(shared)].min())  # (at most so many at once)
            bound = max(bound, -(-traffic // lanes) + last)
    return bound


def live_peak(inst: Any, horizon: int) -> int:
    """The most data any core can hold at one instant in a schedule that ends by ``horizon``,
    evicting or not: a producer's output and its copies live from its head until its last
    reader ends, at the latest ``horizon`` minus the reader's tail after it (its own, for an
    output no μop reads); a DRAM tensor from 0 until its last reader ends. A core holds one
    copy of a tensor at a time, of at most its whole size, so the largest sum of sizes over
    windows that overlap at one instant bounds every core's resident data. A sweep over the
    windows' ends, O((n + the DRAM tensors) log n)."""
    head, tail = inst.heads_tails  # (the instance's, cached)
    g, d = inst.graph, inst.min_duration
    after = tail - d  # the least time left after a μop ends
    last = np.array(after)  # per producer: the least time after its last reader ends
    np.minimum.at(last, g.src, after[g.dst])
    size = inst.output_data
    made = size > 0
    starts = [head[made]]
    ends = [horizon - last[made]]
    sizes = [size[made]]
    for t in inst.dram:
        if t.data > 0 and t.consumers.size:
            starts.append(np.zeros(1, dtype=np.int64))
            ends.append(np.array([horizon - int(after[t.consumers].min())]))
            sizes.append(np.array([int(t.data)]))
    start, end, data = (np.concatenate(v).astype(np.int64) for v in (starts, ends, sizes))
    keep = end > start
    times = np.concatenate([start[keep], end[keep]])
    delta = np.concatenate([data[keep], -data[keep]])
    order = np.lexsort((delta, times))  # at one instant, ends (negative) before starts
    return int(np.cumsum(delta[order]).max(initial=0))
