"""Check a Flexer schedule (:mod:`npusched.problem.flexer`) against its tiled convolution without
trusting the scheduler that produced it.

The checks, in the order :func:`verify_flexer` runs them:

1. *Operations*: one NPU and one interval per operation, the NPU exists, ``start ≥ 0``,
   ``end − start`` is the operation's latency, one operation at a time per NPU (half-open
   intervals), an operation with ``c > 0`` starts at or after its partial-sum predecessor ends,
   and ``order`` issues every operation exactly once.
2. *DRAM channel*: one transfer at a time (half-open intervals), each at least
   :func:`~npusched.problem.flexer.layer.dram_cycles` of the bytes it moves; a transfer's
   ``kind`` and ``dtype`` fit its data tile (``load`` of an input, weight or partial sum;
   ``writeback`` of an output tile as ``psum`` or ``output``) and its ``nbytes`` is the tile's
   size (``out_bytes`` for the final output).
3. *Buffer*: every residency lies in ``[0, capacity)``, has its tile's size and
   ``start ≤ end`` (zero-length residencies are accepted and ignored); no two residencies share
   an address at the same time (half-open in address and in time).
4. *Operands*: each operand of an operation (input, weight and output tile) is held by one
   residency throughout the operation.
5. *Loads*: a load lies within a residency of its tile (the block is reserved while it fills).
   A tile's residencies that touch or overlap in time form one *stay* on chip; every stay of
   an input or weight tile contains a load, and an operation reads it only once the stay's
   first load has ended. An output tile's first stay is where its ``c = 0`` operation produces
   it (no load); each later stay is filled by a ``psum`` load that ends before any operation of
   the stay starts and that begins after a ``psum`` write-back which itself began after the
   last operation of the chain that ran before the reload.
6. *Write-backs*: a write-back lies within a residency of its tile. A ``psum`` write-back starts
   after the chain operation before it ends, ends before the next one starts and is not after
   the chain's last operation; each output tile has exactly one ``output`` write-back, after
   its chain's last operation.
7. *Totals*: latency, bytes per transfer type (recomputed from the tile sizes, not from the
   transfers' ``nbytes``), peak bytes resident and loads per tile.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from npusched.problem.flexer.layer import (
    IN,
    OT,
    TRANSFER_TYPES,
    TYPE_NAMES,
    WT,
    FlexerSchedule,
    IntArray,
    Residency,
    TiledConv,
    Transfer,
    dram_cycles,
)
from npusched.verify.scheduling.schedule import Checked

#: Overlap messages reported per check before the rest are only counted.
MAX_CLASHES = 20

_LOAD_TYPE = {IN: "input", WT: "weight", OT: "psum"}


@dataclass
class FlexerReport(Checked):
    """Outcome of :func:`verify_flexer`: every violation found and the recomputed totals.

    Attributes
    ----------
    latency
        Cycles until the last operation and the last transfer end (``None`` when the operation
        arrays do not fit the problem).
    violations
        One message per violation, naming the operation, data tile, transfer or residency and
        the times involved.
    bytes_by_type
        Bytes moved per transfer type (``input``, ``weight``, ``psum``, ``output``), recomputed
        from the tile sizes.
    transfer_bytes
        Sum of ``bytes_by_type``.
    peak_bytes
        Most bytes resident in the global buffer at any time.
    reloads
        Loads of each data tile (as :meth:`FlexerSchedule.loads_per_tile`: the first load
        counts; output tiles count their partial-sum reloads).
    """

    latency: int | None
    violations: list[str] = field(default_factory=list)
    bytes_by_type: dict[str, int] = field(default_factory=dict)
    transfer_bytes: int = 0
    peak_bytes: int = 0
    reloads: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))


def verify_flexer(schedule: FlexerSchedule) -> FlexerReport:
    """Check that ``schedule`` runs its tiled convolution; recompute its totals.

    Parameters
    ----------
    schedule
        The schedule to check, with its problem, NPU count, buffer capacity and DRAM bandwidth.

    Returns
    -------
    FlexerReport
        The violations (empty when the schedule is feasible), the latency, the bytes moved per
        transfer type, the peak buffer occupancy and the loads per tile. See the module
        docstring for the checks.
    """
    p, s = schedule.problem, schedule
    n = p.n_ops
    shapes = [np.shape(a) for a in (s.npu, s.start, s.end)]
    if any(sh != (n,) for sh in shapes):
        return FlexerReport(None, [f"schedule has arrays of shapes {shapes} for {n} operations"])
    bad = _check_ops(s)
    by_type, tr_bad = _check_transfers(s)
    bad += tr_bad
    peak, res_bad = _check_residencies(s)
    bad += res_bad
    bad += _check_data_flow(s)
    reloads = np.zeros(p.n_data, np.int64)
    for t in s.transfers:
        if t.kind == "load" and 0 <= t.data < p.n_data:
            reloads[t.data] += 1
    last = max((t.end for t in s.transfers), default=0)
    latency = int(max(int(s.end.max(initial=0)), last))
    return FlexerReport(latency, bad, by_type, sum(by_type.values()), peak, reloads)


# ---- labels -------------------------------------------------------------------------------


def _op(p: TiledConv, o: int) -> str:
    if int(np.prod(p.counts)) != p.n_ops:
        return f"op {o}"
    k, y, x, c = (int(i) for i in np.unravel_index(o, p.counts))
    return f"op {o} (k={k}, y={y}, x={x}, c={c})"


def _data(p: TiledConv, d: int) -> str:
    return f"{TYPE_NAMES[int(p.data_type[d])]} tile {d}"


def _tr(p: TiledConv, t: Transfer) -> str:
    what = _data(p, t.data) if 0 <= t.data < p.n_data else f"data {t.data}"
    return f"{t.dtype} {t.kind} of {what} [{t.start}, {t.end})"


def _res(p: TiledConv, r: Residency) -> str:
    what = _data(p, r.data) if 0 <= r.data < p.n_data else f"data {r.data}"
    return f"residency of {what} at [{r.addr}, {r.addr + r.size}) in [{r.start}, {r.end})"


# ---- 1. operations ------------------------------------------------------------------------


def _check_ops(s: FlexerSchedule) -> list[str]:
    p = s.problem
    bad: list[str] = []
    for o in np.flatnonzero((s.npu < 0) | (s.npu >= s.n_npus)).tolist():
        bad.append(f"{_op(p, o)} runs on NPU {s.npu[o]}, which does not exist (n={s.n_npus})")
    for o in np.flatnonzero(s.start < 0).tolist():
        bad.append(f"{_op(p, o)} starts at negative time {s.start[o]}")
    for o in np.flatnonzero(s.end - s.start != p.latency).tolist():
        bad.append(
            f"{_op(p, o)} runs in [{s.start[o]}, {s.end[o]}), {s.end[o] - s.start[o]} cycles "
            f"instead of its latency {p.latency[o]}"
        )
    order = np.lexsort((s.start, s.npu))
    same = s.npu[order[1:]] == s.npu[order[:-1]]
    clash = np.flatnonzero(same & (s.start[order[1:]] < s.end[order[:-1]]))
    for k in clash.tolist():
        a, b = int(order[k]), int(order[k + 1])
        bad.append(
            f"NPU {s.npu[a]}: {_op(p, a)} [{s.start[a]}, {s.end[a]}) and {_op(p, b)} "
            f"[{s.start[b]}, {s.end[b]}) overlap"
        )
    prev_end = np.r_[np.iinfo(np.int64).min, s.end[:-1]]
    for o in np.flatnonzero((p.op_c > 0) & (s.start < prev_end)).tolist():
        bad.append(
            f"precedence {_op(p, o - 1)} -> {_op(p, o)}: {_op(p, o)} starts at {s.start[o]} "
            f"before its partial sum is ready at {s.end[o - 1]}"
        )
    issued = np.zeros(p.n_ops, np.int64)
    for ops in s.order:
        for o in ops:
            if 0 <= o < p.n_ops:
                issued[o] += 1
            else:
                bad.append(f"order issues op {o}, which does not exist ({p.n_ops} operations)")
    for o in np.flatnonzero(issued != 1).tolist():
        bad.append(f"order issues {_op(p, o)} {issued[o]} times instead of once")
    return bad


# ---- 2. DRAM channel ----------------------------------------------------------------------


def _true_bytes(p: TiledConv, t: Transfer) -> tuple[str, int] | None:
    """Transfer type and size ``t`` must have (``None`` if it cannot exist at all)."""
    if not 0 <= t.data < p.n_data:
        return None
    kind = int(p.data_type[t.data])
    if t.kind == "load":
        return _LOAD_TYPE[kind], int(p.data_bytes[t.data])
    if t.kind == "writeback" and kind == OT and t.dtype == "psum":
        return "psum", int(p.data_bytes[t.data])
    if t.kind == "writeback" and kind == OT and t.dtype == "output":
        return "output", int(p.out_bytes[t.data])
    return None


def _check_transfers(s: FlexerSchedule) -> tuple[dict[str, int], list[str]]:
    p = s.problem
    bad: list[str] = []
    by_type = dict.fromkeys(TRANSFER_TYPES, 0)
    if s.bandwidth <= 0:
        bad.append(f"DRAM bandwidth {s.bandwidth} is not positive")
    for t in s.transfers:
        true = _true_bytes(p, t)
        if true is None:
            if not 0 <= t.data < p.n_data:
                bad.append(f"{_tr(p, t)}: data {t.data} does not exist ({p.n_data} tiles)")
            elif t.kind == "writeback" and p.data_type[t.data] != OT:
                bad.append(f"{_tr(p, t)}: only output tiles are written back")
            else:
                bad.append(
                    f"{_tr(p, t)}: a write-back is psum or output, a transfer a load or a writeback"
                )
            continue
        dtype, nbytes = true
        by_type[dtype] += nbytes
        if t.dtype != dtype:
            bad.append(f"{_tr(p, t)} has type {t.dtype!r}, expected {dtype!r}")
        if t.nbytes != nbytes:
            bad.append(f"{_tr(p, t)} moves {t.nbytes} bytes, expected {nbytes}")
        if t.start < 0:
            bad.append(f"{_tr(p, t)} starts at negative time {t.start}")
        if s.bandwidth > 0 and t.end - t.start < (need := dram_cycles(nbytes, s.bandwidth)):
            bad.append(
                f"{_tr(p, t)} takes {t.end - t.start} cycles, less than {need} for {nbytes} "
                f"bytes at {s.bandwidth} bytes/cycle"
            )
    busy = sorted((t for t in s.transfers if t.end > t.start), key=lambda t: (t.start, t.end))
    clashes = 0
    latest: Transfer | None = None  # the transfer ending last among those started so far
    for t in busy:
        if latest is not None and t.start < latest.end:
            clashes += 1
            if clashes <= MAX_CLASHES:
                bad.append(f"DRAM channel: {_tr(p, latest)} and {_tr(p, t)} overlap")
        if latest is None or t.end > latest.end:
            latest = t
    if clashes > MAX_CLASHES:
        bad.append(f"DRAM channel: ... and {clashes - MAX_CLASHES} more overlapping transfers")
    return by_type, bad


# ---- 3. buffer ----------------------------------------------------------------------------


def _check_residencies(s: FlexerSchedule) -> tuple[int, list[str]]:
    p = s.problem
    bad: list[str] = []
    live: list[Residency] = []
    for r in s.residencies:
        if not 0 <= r.data < p.n_data:
            bad.append(f"{_res(p, r)}: data {r.data} does not exist ({p.n_data} tiles)")
            continue
        ok = True
        if r.size != p.data_bytes[r.data]:
            bad.append(f"{_res(p, r)} has size {r.size}, the tile is {p.data_bytes[r.data]} bytes")
            ok = False
        if r.addr < 0 or r.addr + r.size > s.capacity:
            bad.append(f"{_res(p, r)} lies outside the buffer [0, {s.capacity})")
        if r.start < 0:
            bad.append(f"{_res(p, r)} starts at negative time {r.start}")
        if r.start > r.end:
            bad.append(f"{_res(p, r)} ends before it starts")
            ok = False
        if ok and r.end > r.start and r.size > 0:
            live.append(r)
    live.sort(key=lambda r: (r.start, r.addr))
    active: dict[int, Residency] = {}
    ending: list[tuple[int, int]] = []  # (end, index into live)
    clashes = 0
    for i, r in enumerate(live):
        while ending and ending[0][0] <= r.start:
            active.pop(heapq.heappop(ending)[1])
        for a in active.values():
            if a.addr < r.addr + r.size and r.addr < a.addr + a.size:
                clashes += 1
                if clashes <= MAX_CLASHES:
                    bad.append(f"buffer: {_res(p, a)} and {_res(p, r)} overlap")
        active[i] = r
        heapq.heappush(ending, (r.end, i))
    if clashes > MAX_CLASHES:
        bad.append(f"buffer: ... and {clashes - MAX_CLASHES} more overlapping residencies")
    if not live:
        return 0, bad
    times = np.array([r.start for r in live] + [r.end for r in live], np.int64)
    sizes = np.array([r.size for r in live], np.int64)
    delta = np.r_[sizes, -sizes]
    order = np.lexsort((delta, times))  # frees before allocations at the same cycle
    return int(np.cumsum(delta[order]).max()), bad


# ---- 4.–6. data flow ----------------------------------------------------------------------


@dataclass
class _Tile:
    """The non-empty residencies of one data tile by start, grouped into stays on chip."""

    res: list[Residency] = field(default_factory=list)
    stay: list[int] = field(default_factory=list)  # stay index of each residency
    stays: list[tuple[int, int]] = field(default_factory=list)  # (start, end) of each stay
    fill: dict[int, Transfer] = field(default_factory=dict)  # stay → its first load
    loads: dict[int, list[Transfer]] = field(default_factory=dict)  # stay → its loads

    def holder(self, start: int, end: int) -> int | None:
        """Index of a residency holding the tile throughout ``[start, end)``."""
        for i, r in enumerate(self.res):
            if r.start > start:
                break
            if end <= r.end:
                return i
        return None


def _tiles(s: FlexerSchedule) -> list[_Tile]:
    p = s.problem
    tiles = [_Tile() for _ in range(p.n_data)]
    for r in s.residencies:
        if 0 <= r.data < p.n_data and r.start < r.end:
            tiles[r.data].res.append(r)
    # a residency that begins where the previous one ended continues its stay (the tile moved),
    # unless a load starts right then: the tile left and comes back (a reload)
    reload_at = {(t.data, t.start) for t in s.transfers if t.kind == "load"}
    for d, tile in enumerate(tiles):
        tile.res.sort(key=lambda r: (r.start, r.end))
        for r in tile.res:
            if tile.stays and (
                r.start < tile.stays[-1][1]
                or (r.start == tile.stays[-1][1] and (d, r.start) not in reload_at)
            ):
                begin, end = tile.stays[-1]
                tile.stays[-1] = (begin, max(end, r.end))
            else:
                tile.stays.append((r.start, r.end))
            tile.stay.append(len(tile.stays) - 1)
    return tiles


@dataclass
class _Flow:
    """What the data-flow checks share: the tiles' stays, each output tile's chain by ``c``
    (with start and end times), and the write-backs sorted out of the transfers."""

    p: TiledConv
    tiles: list[_Tile]
    start: list[int]
    end: list[int]
    chain: dict[int, list[int]]
    chain_starts: dict[int, list[int]]
    chain_ends: dict[int, list[int]]
    psum_wb: dict[int, list[Transfer]] = field(default_factory=dict)
    outputs: dict[int, list[Transfer]] = field(default_factory=dict)

    def last_by(self, times: dict[int, list[int]], d: int, t: int) -> int | None:
        """Position in ``chain[d]`` of the last operation whose time in ``times`` is at or
        before ``t``."""
        i = bisect_right(times.get(d, []), t) - 1
        return i if i >= 0 else None


def _flow(s: FlexerSchedule, bad: list[str]) -> _Flow:
    """The :class:`_Flow` of ``s``; transfers outside every residency go to ``bad``."""
    p = s.problem
    start, end = s.start.tolist(), s.end.tolist()
    chain: dict[int, list[int]] = {}  # output tile → its operations by c
    for o in np.lexsort((p.op_c, p.op_ot)).tolist():
        chain.setdefault(int(p.op_ot[o]), []).append(o)
    f = _Flow(
        p, _tiles(s), start, end, chain,
        {d: [start[o] for o in ops] for d, ops in chain.items()},
        {d: [end[o] for o in ops] for d, ops in chain.items()},
    )  # fmt: skip
    for t in s.transfers:
        if _true_bytes(p, t) is None:
            continue  # reported with the transfers
        tile = f.tiles[t.data]
        h = tile.holder(t.start, t.end)
        if h is None:
            bad.append(f"{_tr(p, t)} lies outside every residency of {_data(p, t.data)}")
        if t.kind == "load":
            if h is None:
                continue  # fills no stay
            k = tile.stay[h]
            tile.loads.setdefault(k, []).append(t)
            if k not in tile.fill or t.start < tile.fill[k].start:
                tile.fill[k] = t
        elif t.dtype == "psum":
            f.psum_wb.setdefault(t.data, []).append(t)
        else:
            f.outputs.setdefault(t.data, []).append(t)
    return f


def _check_data_flow(s: FlexerSchedule) -> list[str]:
    bad: list[str] = []
    f = _flow(s, bad)
    for check in (_check_fills, _check_operands, _check_writebacks, _check_outputs):
        bad += check(f)
    return bad


def _check_fills(f: _Flow) -> list[str]:
    bad: list[str] = []
    p, tiles, end, chain, psum_wb = f.p, f.tiles, f.end, f.chain, f.psum_wb
    # 5. every stay is filled: inputs and weights by a load, output tiles by their producer
    # (first stay) or a partial-sum reload after a write-back
    for d, tile in enumerate(tiles):
        kind = int(p.data_type[d])
        for k, (begin, finish) in enumerate(tile.stays):
            fill = tile.fill.get(k)
            if kind != OT:
                if fill is None:
                    bad.append(
                        f"{_data(p, d)} is on chip in [{begin}, {finish}) without a load filling it"
                    )
                continue
            if k == 0:
                for t in tile.loads.get(0, []):
                    bad.append(
                        f"{_tr(p, t)} fills the first residency of {_data(p, d)}, which its c = 0 "
                        "op produces: there is no partial sum to reload"
                    )
                continue
            if fill is None:
                bad.append(
                    f"{_data(p, d)} is back on chip in [{begin}, {finish}) after leaving at "
                    f"{tile.stays[k - 1][1]}, without a psum load refilling it"
                )
                continue
            before = [w for w in psum_wb.get(d, []) if w.end <= fill.start]
            if not before:
                bad.append(
                    f"{_tr(p, fill)} reloads {_data(p, d)}, but no psum writeback of it ends "
                    "before the reload starts"
                )
                continue
            w = max(before, key=lambda w: (w.end, w.start))
            i = f.last_by(f.chain_ends, d, fill.start)  # the last op done before the reload
            if i is not None and end[chain[d][i]] > w.start:
                o = chain[d][i]
                bad.append(
                    f"{_tr(p, fill)} reloads a stale partial sum: the last psum writeback before "
                    f"it, [{w.start}, {w.end}), starts before {_op(p, o)} writing "
                    f"{_data(p, d)} ends at {end[o]}"
                )

    return bad


def _check_operands(f: _Flow) -> list[str]:
    bad: list[str] = []
    p, tiles, start, end = f.p, f.tiles, f.start, f.end
    # 4. operands resident throughout each operation, filled before it starts
    for o in range(p.n_ops):
        for d in p.operands(o):
            tile = tiles[d]
            h = tile.holder(start[o], end[o])
            if h is None:
                bad.append(
                    f"{_op(p, o)} runs in [{start[o]}, {end[o]}) but its operand {_data(p, d)} is "
                    "not resident throughout"
                )
                continue
            k = tile.stay[h]
            if p.data_type[d] == OT and p.op_c[o] == 0:
                if k > 0:
                    first = tile.stays[0]
                    bad.append(
                        f"{_op(p, o)} produces {_data(p, d)} at {start[o]}, but the tile was on "
                        f"chip before it was produced, in [{first[0]}, {first[1]})"
                    )
                continue
            fill = tile.fill.get(k)
            if fill is not None and fill.end > start[o]:
                bad.append(
                    f"{_op(p, o)} starts at {start[o]} and reads {_data(p, d)} before "
                    f"{_tr(p, fill)} ends"
                )

    return bad


def _check_writebacks(f: _Flow) -> list[str]:
    bad: list[str] = []
    p, start, end, chain = f.p, f.start, f.end, f.chain
    # 6. write-backs after the operation that wrote the tile, before the next one
    for d, wbs in f.psum_wb.items():
        ops = chain.get(d, [])
        for w in wbs:
            i = f.last_by(f.chain_starts, d, w.start)
            if i is None:
                bad.append(f"{_tr(p, w)} starts before {_data(p, d)} is produced")
                continue
            o = ops[i]
            if end[o] > w.start:
                bad.append(f"{_tr(p, w)} starts before {_op(p, o)} writing it ends at {end[o]}")
            if i == len(ops) - 1:
                bad.append(
                    f"{_tr(p, w)} follows the last op of the chain, {_op(p, o)}: a final tile "
                    "is written back as output"
                )
            elif start[ops[i + 1]] < w.end:
                nxt = ops[i + 1]
                bad.append(
                    f"{_op(p, nxt)} starts at {start[nxt]} and writes {_data(p, d)} "
                    f"during {_tr(p, w)}"
                )
    return bad


def _check_outputs(f: _Flow) -> list[str]:
    """Every output tile written back once, after the last operation of its chain."""
    bad: list[str] = []
    p, end, chain = f.p, f.end, f.chain
    for d in np.flatnonzero(p.data_type == OT).tolist():
        wbs = f.outputs.get(d, [])
        if len(wbs) != 1:
            bad.append(f"{_data(p, d)} has {len(wbs)} output writebacks instead of 1")
        ops = chain.get(d, [])
        if not ops:
            continue
        last = ops[-1]
        for w in wbs:
            if w.start < end[last]:
                bad.append(
                    f"{_tr(p, w)} starts before the last op of the chain, {_op(p, last)}, ends "
                    f"at {end[last]}"
                )
    return bad
