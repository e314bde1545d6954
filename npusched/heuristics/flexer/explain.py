"""Where a Flexer schedule's time goes: each NPU's cycles split into compute, stalls on data
movement and idle time by cause (issue 25, item 1; the time model of §3,
``lat(total) = lat(o) + lat(p) + lat(l)``).

Every NPU is accounted for from cycle 0 to the schedule's latency ``L``, so the categories of
:func:`time_split` add up to exactly ``L × n_npus``:

- ``compute`` — the operations' own cycles (``Σ lat(o)``);
- ``load`` — waiting for the first load of an operand tile (``lat(l)``, the data on chip once);
- ``spill`` — waiting for traffic a spill caused, on this NPU's behalf or another's: a reload
  of a dropped input or weight tile or of a written-back partial sum, or a partial sum's
  write-back (``lat(p)``);
- ``writeback`` — waiting for a final output's write-back (on the channel, or freeing the
  space it held), and the write-backs still running after the last operation;
- ``dependency`` — waiting for another operation: a partial-sum predecessor on another NPU, or
  an operand being loaded on another NPU's time;
- ``dram`` — waiting for the DRAM channel while it serves other operations' first loads (one
  transfer at a time), or because its idle gaps are too short for the transfer;
- ``buffer`` — waiting for buffer space still held by data in use;
- ``tail`` — done while the other NPUs still compute.

The gap before each operation, from its NPU's previous operation to its start, is explained
backwards from the event that ended it (:class:`~npusched.problem.flexer.layer.Waits` records
what each operation and transfer waited for): the operand ready last — its load, its
partial-sum predecessor, or the space of a new output tile; a transfer's own cycles, then the
channel's occupants before it, then the constraint its start waited for (the NPU, the block of
the buffer, the data in DRAM), and so on until the gap is covered. Each cycle of a gap goes to
one category.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from npusched.problem.flexer.layer import OT, FlexerSchedule, Transfer

#: The categories of :func:`time_split`, in stacking order.
CATEGORIES = ("compute", "load", "spill", "writeback", "dependency", "dram", "buffer", "tail")


@dataclass
class _Index:
    """Lookups built once per schedule."""

    s: FlexerSchedule
    loads: dict[int, tuple[list[int], list[int]]]  # data → (load ends, transfer ids) by end
    wbs: dict[tuple[int, int], int]  # (data, end) → write-back transfer id
    res: dict[tuple[int, int], tuple[int, int]]  # (data, start) → (addr, size)
    by_start: list[int]  # transfer ids by start
    starts: list[int]
    reloaded: list[bool]  # per transfer: a load of a tile loaded before
    ends_at: dict[int, list[tuple[int, int, int]]]  # residency end → (addr, size, data)
    op_end: dict[tuple[int, int], int]  # (output tile, end) → operation


def _index(s: FlexerSchedule) -> _Index:
    loads: dict[int, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    seen: set[int] = set()
    reloaded = [False] * len(s.transfers)
    for i in sorted(range(len(s.transfers)), key=lambda i: s.transfers[i].start):
        t = s.transfers[i]
        if t.kind == "load":
            reloaded[i] = t.dtype == "psum" or t.data in seen
            seen.add(t.data)
            ends, ids = loads[t.data]
            ends.append(t.end)
            ids.append(i)
    wbs = {(t.data, t.end): i for i, t in enumerate(s.transfers) if t.kind == "writeback"}
    ends_at: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for r in s.residencies:
        ends_at[r.end].append((r.addr, r.size, r.data))
    by_start = sorted(range(len(s.transfers)), key=lambda i: s.transfers[i].start)
    return _Index(
        s=s,
        loads=loads,
        wbs=wbs,
        res={(r.data, r.start): (r.addr, r.size) for r in s.residencies},
        by_start=by_start,
        starts=[s.transfers[i].start for i in by_start],
        reloaded=reloaded,
        ends_at=ends_at,
        op_end={(int(s.problem.op_ot[o]), int(s.end[o])): o for o in range(s.problem.n_ops)},
    )


def _own_class(ix: _Index, i: int) -> str:
    """The category of waiting on transfer ``i`` itself."""
    t = ix.s.transfers[i]
    if t.kind == "writeback":
        return "writeback" if t.dtype == "output" else "spill"
    return "spill" if ix.reloaded[i] else "load"


def _channel(ix: _Index, lo: int, hi: int, own: set[int], out: dict[str, int]) -> None:
    """Split ``[lo, hi)`` of waiting for the DRAM channel by what occupied it: write-backs and
    reloads (as :func:`_own_class`), the waiting operation's ``own`` first loads (``load``),
    other operations' first loads and idle gaps (``dram``)."""
    covered = 0
    j = max(0, bisect.bisect_right(ix.starts, lo) - 1)
    while j < len(ix.by_start) and ix.starts[j] < hi:
        i = ix.by_start[j]
        t = ix.s.transfers[i]
        part = min(t.end, hi) - max(t.start, lo)
        if part > 0:
            mine = t.kind == "writeback" or i in own or ix.reloaded[i]
            out[_own_class(ix, i) if mine else "dram"] += part
            covered += part
        j += 1
    out["dram"] += hi - lo - covered


def _block(ix: _Index, addr: int, size: int, at: int) -> int | None:
    """The write-back that freed ``[addr, addr + size)`` of the buffer at ``at``, if one did."""
    for a, sz, d in ix.ends_at.get(at, ()):
        if a < addr + size and addr < a + sz and (d, at) in ix.wbs:
            return ix.wbs[(d, at)]
    return None


def _explain(
    ix: _Index, a: int, b: int, event: tuple[str, int], own: set[int], out: dict[str, int]
) -> None:
    """Attribute the wait ``[a, b)`` that ``event`` ended at ``b``: ``("xfer", i)`` transfer
    ``i`` ended, ``("op", label)`` an operation ended (``label`` 0: a dependency, 1: space held
    by data in use), ``("space", i)`` the block transfer ``i`` or a new output tile
    (``-1 - data``) is placed in became free."""
    s, w = ix.s, ix.s.waits
    assert w is not None
    while b > a:
        kind, i = event
        if kind == "op":
            out["buffer" if i else "dependency"] += b - a
            return
        if kind == "space":
            if i >= 0:
                lt = s.transfers[i]
                addr, size = ix.res.get((lt.data, lt.start), (0, s.capacity))
            else:
                addr, size = _new_output_block(ix, -1 - i, b)
            wb = _block(ix, addr, size, b)
            if wb is None:
                out["buffer"] += b - a
                return
            event = ("xfer", wb)
            continue
        t: Transfer = s.transfers[i]
        lo = max(a, t.start)
        out[_own_class(ix, i)] += b - lo
        b = lo
        if b <= a:
            return
        npu, block, avail = (int(x) for x in w.asked[i])
        m = max(npu, block, avail)
        _channel(ix, max(a, m), b, own, out)
        b = max(a, m)
        if b <= a:
            return
        if m == block:
            event = ("space", i)
        elif m == avail and t.kind == "load":  # a partial sum back in DRAM: its write-back
            wb = ix.wbs.get((t.data, avail))
            event = ("op", 0) if wb is None else ("xfer", wb)
        elif m == avail:  # a write-back waits for its value: the space is held by it
            event = ("op", 1)
        else:  # the NPU the load runs on was busy
            event = ("op", 0)


def _new_output_block(ix: _Index, d: int, at: int) -> tuple[int, int]:
    """Address range of output tile ``d``'s residency from ``at``."""
    return ix.res.get((d, at), (0, ix.s.capacity))


def _own_loads(ix: _Index, o: int, start: int) -> set[int]:
    """The last load of each operand of ``o`` that ended by ``start``."""
    p = ix.s.problem
    own = set()
    for d in p.operands(o):
        ends, ids = ix.loads.get(d, ([], []))
        k = bisect.bisect_right(ends, start)
        if k:
            own.add(ids[k - 1])
    return own


def _ready_event(ix: _Index, o: int, d: int, at: int) -> tuple[str, int]:
    """What made operand ``d`` of operation ``o`` ready at ``at``."""
    ends, ids = ix.loads.get(d, ([], []))
    k = bisect.bisect_left(ends, at)
    if k < len(ends) and ends[k] == at:
        return ("xfer", ids[k])
    p = ix.s.problem
    if p.data_type[d] == OT:
        if p.op_c[o] > 0 and (d, at) in ix.op_end:
            return ("op", 0)
        return ("space", -1 - d)
    return ("op", 0)


def time_split(schedule: FlexerSchedule) -> dict[str, int]:
    """Cycles of the NPUs per category of :data:`CATEGORIES` (module notes); they add up to
    ``schedule.latency × schedule.n_npus``.

    Raises
    ------
    ValueError
        The schedule carries no :class:`~npusched.problem.flexer.layer.Waits` (only the OoO and
        static schedulers record them).
    """
    s, w = schedule, schedule.waits
    if w is None:
        raise ValueError(f"{s.method or 'schedule'}: no waits recorded; cannot split its time")
    ix = _index(s)
    p = s.problem
    out = dict.fromkeys(CATEGORIES, 0)
    out["compute"] = int((s.end - s.start).sum())
    last_op = int(s.end.max(initial=0))
    for k in range(s.n_npus):
        free = 0
        for o in sorted(np.flatnonzero(s.npu == k).tolist(), key=lambda o: int(s.start[o])):
            st = int(s.start[o])
            if st > free:
                ready = [int(x) for x in w.ready[o]]
                d = p.operands(o)[int(np.argmax(ready))]
                if max(ready) != st:
                    raise ValueError(f"operation {o} starts at {st}, not when last ready")
                _explain(ix, free, st, _ready_event(ix, o, d, st), _own_loads(ix, o, st), out)
            free = int(s.end[o])
        out["tail"] += max(0, last_op - free)
        out["writeback"] += s.latency - max(free, last_op)
    return out


def split_fractions(split: dict[str, int]) -> dict[str, float]:
    """Each category's share of the total (NPU cycles)."""
    total = sum(split.values())
    return {k: (v / total if total else 0.0) for k, v in split.items()}
