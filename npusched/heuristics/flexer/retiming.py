"""What re-timing a Flexer schedule keeps, and the earliest schedule that keeps it (for
``flexer-lns``, :mod:`npusched.formulations.flexer.retime`).

A schedule of the engine (:mod:`npusched.heuristics.flexer.ooo`) decides what moves — every
load, spill and write-back, every residency of a tile at an address of the global buffer — and
when. :func:`structure` reads off the first part: which residency each operand and transfer lies
in, which operation's NPU time each load runs on (without prefetch), and the chain operations
around each write-back. :func:`compact` then moves every event of a schedule with that structure
to its earliest time given the schedule's orders — on each NPU, on the DRAM channel, and of the
residencies that share an address — as the longest paths of those precedences (a schedule
CP-SAT returns may leave an event later than it needs to be), and records why each operation
and transfer waited (:class:`~npusched.problem.flexer.layer.Waits`), so that
:func:`~npusched.heuristics.flexer.explain.time_split` splits its time like the engine's.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from npusched.problem.flexer.layer import OT, FlexerSchedule, Residency, Transfer, Waits


@dataclass
class Structure:
    """What a schedule decided, which re-timing keeps: each transfer's and each operand's
    residency (indices into ``residencies``, the schedule's non-empty ones), the readers of
    each residency, the operation each load runs on the NPU time of (−1 with prefetch), the
    chain operation before each write-back and after a partial-sum one (−1: none), and the
    write-back each partial-sum reload follows (−1 for other transfers)."""

    residencies: list[Residency]
    op_res: list[tuple[int, ...]]
    tr_res: list[int]
    readers: list[list[int]]
    owner: list[int]
    wb_after: list[int]
    wb_before: list[int]
    reload_of: list[int]
    chains: list[list[int]] = field(default_factory=list)


def structure(s: FlexerSchedule, prefetch: bool) -> Structure:
    """The :class:`Structure` of ``s`` (module notes).

    Raises
    ------
    ValueError
        An operand or a transfer lies outside every residency of its tile, or a load has no
        reader whose NPU is free when it starts (``s`` is not a schedule of this time model;
        :func:`~npusched.verify.flexer.verify_flexer` names the first kind).
    """
    p = s.problem
    res = [r for r in s.residencies if r.end > r.start]
    by_tile: dict[int, list[int]] = {}
    for i in sorted(range(len(res)), key=lambda i: (res[i].start, res[i].end)):
        by_tile.setdefault(res[i].data, []).append(i)

    start, end, npu = s.start.tolist(), s.end.tolist(), s.npu.tolist()

    def holder(d: int, a: int, b: int, what: str) -> int:
        for i in by_tile.get(d, []):
            if res[i].start <= a and b <= res[i].end:
                return i
        raise ValueError(f"{what} [{a}, {b}) lies outside every residency of tile {d}")

    op_res = [
        tuple(holder(d, start[o], end[o], f"op {o}") for d in p.operands(o)) for o in range(p.n_ops)
    ]
    tr_res = [holder(t.data, t.start, t.end, f"{t.kind} of tile {t.data}") for t in s.transfers]
    # residencies that no operand and no transfer lies in hold nothing anyone needs: dropped
    kept = sorted({r for rs in op_res for r in rs} | set(tr_res))
    new = {r: i for i, r in enumerate(kept)}
    res = [res[r] for r in kept]
    op_res = [tuple(new[r] for r in rs) for rs in op_res]
    tr_res = [new[r] for r in tr_res]
    readers: list[list[int]] = [[] for _ in res]
    for o, rs in enumerate(op_res):
        for r in rs:
            readers[r].append(o)
    chains: dict[int, list[int]] = {}
    for o in np.lexsort((p.op_c, p.op_ot)).tolist():
        chains.setdefault(int(p.op_ot[o]), []).append(o)
    # the previous operation's end on each operation's NPU
    prev_end = [0] * p.n_ops
    for k in range(s.n_npus):
        on = sorted((o for o in range(p.n_ops) if npu[o] == k), key=start.__getitem__)
        for a, b in zip(on, on[1:], strict=False):
            prev_end[b] = end[a]
    n_tr = len(s.transfers)
    owner, wb_after, wb_before, reload_of = [-1] * n_tr, [-1] * n_tr, [-1] * n_tr, [-1] * n_tr
    psum_wbs: dict[int, list[int]] = {}
    for i in sorted(range(n_tr), key=lambda i: s.transfers[i].start):
        t = s.transfers[i]
        if t.kind == "writeback":
            ops = chains[t.data]
            j = bisect.bisect_right([end[o] for o in ops], t.start) - 1
            wb_after[i] = ops[j]
            wb_before[i] = ops[j + 1] if t.dtype == "psum" and j + 1 < len(ops) else -1
            psum_wbs.setdefault(t.data, []).append(i)
            continue
        if p.data_type[t.data] == OT:
            reload_of[i] = psum_wbs[t.data][-1]
        if not prefetch:
            free = [o for o in readers[tr_res[i]] if prev_end[o] <= t.start]
            if not free:
                raise ValueError(f"the load of tile {t.data} at {t.start} runs on no NPU's time")
            owner[i] = min(free, key=start.__getitem__)
    return Structure(
        res, op_res, tr_res, readers, owner, wb_after, wb_before, reload_of,
        [c for d, c in sorted(chains.items())],
    )  # fmt: skip




def _space_chains(
    res: list[Residency], addr: list[int], begins: list[int]
) -> set[tuple[int, int]]:
    """Pairs ``(r1, r2)`` of residencies that share an address (``addr``: each one's), ``r2``
    the next after ``r1`` there: per segment between the residencies' address bounds, the
    residencies covering it by begin, consecutive pairs (the rest follows by transitivity)."""
    points = sorted({b for r, a in zip(res, addr, strict=True) for b in (a, a + r.size)})
    cover: list[list[int]] = [[] for _ in points]
    for i, (r, a) in enumerate(zip(res, addr, strict=True)):
        for k in range(bisect.bisect_left(points, a), bisect.bisect_left(points, a + r.size)):
            cover[k].append(i)
    pairs: set[tuple[int, int]] = set()
    for rs in cover:
        rs.sort(key=begins.__getitem__)
        pairs.update(zip(rs, rs[1:], strict=False))
    return pairs


def compact(s: FlexerSchedule, st: Structure, addr: list[int] | None = None) -> FlexerSchedule:
    """``s`` (with the structure ``st``; its residencies at ``addr``, default those of ``st``)
    with every event at its earliest time given its orders on the NPUs, on the DRAM channel
    and at each address (module notes), and its waits.

    The events are each operation's start ``s_o`` and busy start ``g_o`` and each transfer's
    start ``τ_t``; every constraint of the re-timing model is ``x_b ≥ x_a + w`` once the orders
    are fixed, so the earliest times are the longest paths from 0. A residency begins with its
    first load (a new output tile: its first reader) and ends with its last reader or transfer;
    its ``(space, fill)``: when its address range was free, when its first load ended.

    Raises
    ------
    ValueError
        The orders are cyclic (``s`` does not have the structure ``st``).
    """
    p, tr = s.problem, s.transfers
    n, lat, dur = p.n_ops, p.latency.tolist(), [t.end - t.start for t in tr]
    start, npu = s.start.tolist(), s.npu.tolist()
    G, X = n, 2 * n  # node of s_o: o, of g_o: n + o, of τ_t: 2n + t
    out: list[list[tuple[int, int]]] = [[] for _ in range(2 * n + len(tr))]

    def edge(a: int, b: int, w: int) -> None:
        out[a].append((b, w))

    for k in range(s.n_npus):  # one operation at a time per NPU, busy from g_o
        on = sorted((o for o in range(n) if npu[o] == k), key=start.__getitem__)
        for a, b in zip(on, on[1:], strict=False):
            edge(a, G + b, lat[a])
    for o in range(n):
        edge(G + o, o, 0)
    for chain in st.chains:
        for a, b in zip(chain, chain[1:], strict=False):
            edge(a, b, lat[a])
    channel = sorted(range(len(tr)), key=lambda i: tr[i].start)
    for a, b in zip(channel, channel[1:], strict=False):
        edge(X + a, X + b, dur[a])
    fills: list[list[int]] = [[] for _ in st.residencies]
    for i, t in enumerate(tr):
        fills[st.tr_res[i]].append(i)
        if t.kind == "load":
            for o in st.readers[st.tr_res[i]]:
                edge(X + i, o, dur[i])
            if st.owner[i] >= 0:
                edge(G + st.owner[i], X + i, 0)
            if (w := st.reload_of[i]) >= 0:
                edge(X + w, X + i, dur[w])
        else:
            edge(st.wb_after[i], X + i, lat[st.wb_after[i]])
            if st.wb_before[i] >= 0:
                edge(X + i, st.wb_before[i], dur[i])
    first, ends = [], []  # per residency: its begin node; its end terms (node, weight)
    for r, rd in enumerate(st.readers):
        loads = [i for i in fills[r] if tr[i].kind == "load"]
        if loads:
            head = X + min(loads, key=lambda i: tr[i].start)
        else:
            head = min(rd, key=start.__getitem__)
        for m in [X + i for i in loads] + rd:
            if m != head:
                edge(head, m, 0)
        first.append(head)
        ends.append([(o, lat[o]) for o in rd] + [(X + i, dur[i]) for i in fills[r]])
    addr = [r.addr for r in st.residencies] if addr is None else addr
    begins = [int(tr[h - X].start) if h >= X else start[h] for h in first]
    pairs = _space_chains(st.residencies, addr, begins)
    for r1, r2 in pairs:
        for a, w in ends[r1]:
            edge(a, first[r2], w)
    x = _longest_paths(out)
    space = [0] * len(first)
    for r1, r2 in pairs:
        space[r2] = max([space[r2]] + [x[a] + w for a, w in ends[r1]])
    return _rebuilt(s, st, x, (first, ends, fills), space, addr)


def _longest_paths(out: list[list[tuple[int, int]]]) -> list[int]:
    """Longest paths from 0 to every node of a DAG given by its out-edges (Kahn's order)."""
    indeg = [0] * len(out)
    for es in out:
        for b, _ in es:
            indeg[b] += 1
    x = [0] * len(out)
    todo = deque(i for i, d in enumerate(indeg) if d == 0)
    seen = 0
    while todo:
        a = todo.popleft()
        seen += 1
        for b, w in out[a]:
            x[b] = max(x[b], x[a] + w)
            indeg[b] -= 1
            if not indeg[b]:
                todo.append(b)
    if seen != len(out):
        raise ValueError("the schedule's orders are cyclic: it does not have this structure")
    return x


def _rebuilt(
    s: FlexerSchedule,
    st: Structure,
    x: list[int],
    residency: tuple[list[int], list[list[tuple[int, int]]], list[list[int]]],
    space: list[int],
    addr: list[int],
) -> FlexerSchedule:
    """The schedule at the times ``x`` of :func:`compact` (``residency``: each one's begin
    node, end terms and transfers), with its waits."""
    p, tr = s.problem, s.transfers
    first, ends, fills = residency
    n = p.n_ops
    G, X = n, 2 * n
    start = np.array(x[:n], np.int64)
    end = start + p.latency
    tau = x[X:]
    transfers = [Transfer(t.kind, t.data, t.nbytes, a, a + (t.end - t.start), t.dtype)
                 for t, a in zip(tr, tau, strict=True)]  # fmt: skip
    residencies = [
        Residency(r.data, y, r.size, x[h], max(x[a] + w for a, w in es))
        for r, y, h, es in zip(st.residencies, addr, first, ends, strict=True)
    ]
    fill = [min((transfers[i].end for i in fs if tr[i].kind == "load"), default=-1) for fs in fills]
    ready = np.zeros((n, 3), np.int64)
    for o in range(n):
        for j, r in enumerate(st.op_res[o]):
            chain = int(end[o - 1]) if j == OT and p.op_c[o] > 0 else -1
            ready[o, j] = max(fill[r], chain) if fill[r] >= 0 or chain >= 0 else space[r]
    asked = np.full((len(tr), 3), -1, np.int64)
    for i, t in enumerate(tr):
        r = st.tr_res[i]
        if t.kind == "load":
            asked[i, 0] = x[G + st.owner[i]] if st.owner[i] >= 0 else -1
            asked[i, 1] = space[r] if first[r] == X + i else x[first[r]]
            w = st.reload_of[i]
            asked[i, 2] = transfers[w].end if w >= 0 else 0
        else:
            asked[i, 2] = int(end[st.wb_after[i]])
    order = sorted(s.order, key=lambda ops: min(int(start[o]) for o in ops))
    return FlexerSchedule(
        problem=p, n_npus=s.n_npus, capacity=s.capacity, bandwidth=s.bandwidth, npu=s.npu.copy(),
        start=start, end=end, transfers=transfers, residencies=residencies, order=order,
        method=s.method, waits=Waits(ready, asked),
    )  # fmt: skip
