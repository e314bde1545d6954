"""The Flexer schedule checker (:mod:`npusched.verify.flexer`): a hand-checked schedule of a tiny
tiled convolution passes, each kind of violation is reported, and a real layer checks quickly."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import pytest

from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.layer import (
    IN,
    OT,
    WT,
    FlexerSchedule,
    Residency,
    TiledConv,
    Transfer,
    dram_cycles,
)
from npusched.verify.flexer import verify_flexer
from npusched.verify.scheduling.schedule import VerificationError
from npusched.workload.zoo import load_network

# ---- a tiny layer: counts (n_k, n_y, n_x, n_c) = (2, 1, 1, 2), numbered as tiled_conv does -----
# data: IN c0 = 0, IN c1 = 1; WT (k, c) = 2 + 2k + c; OT k = 6 + k
# ops:  o = 2k + c reads IN c, WT (k, c) and OT k; o1 follows o0, o3 follows o2


def tiny_problem() -> TiledConv:
    return TiledConv(
        name="tiny",
        counts=(2, 1, 1, 2),
        data_type=np.array([IN, IN, WT, WT, WT, WT, OT, OT], np.int64),
        data_bytes=np.array([4, 4, 4, 4, 4, 4, 8, 8], np.int64),
        out_bytes=np.array([0, 0, 0, 0, 0, 0, 4, 4], np.int64),
        op_in=np.array([0, 1, 0, 1], np.int64),
        op_wt=np.array([2, 3, 4, 5], np.int64),
        op_ot=np.array([6, 6, 7, 7], np.int64),
        op_c=np.array([0, 1, 0, 1], np.int64),
        latency=np.array([4, 4, 4, 4], np.int64),
    )


def tiny_schedule() -> FlexerSchedule:
    """Two NPUs, 32 bytes of buffer (full in [3, 7)), 4 bytes per cycle. OT 7 is spilled after
    op 2 (psum write-back [7, 9)) and reloaded for op 3 (psum load [10, 12)) into the same
    block; WT 3 and WT 5 reuse the blocks of WT 2 and WT 4."""
    transfers = [
        Transfer("load", 0, 4, 0, 1, "input"),
        Transfer("load", 2, 4, 1, 2, "weight"),
        Transfer("load", 4, 4, 2, 3, "weight"),
        Transfer("load", 1, 4, 3, 4, "input"),
        Transfer("load", 3, 4, 6, 7, "weight"),
        Transfer("writeback", 7, 8, 7, 9, "psum"),
        Transfer("load", 5, 4, 9, 10, "weight"),
        Transfer("load", 7, 8, 10, 12, "psum"),
        Transfer("writeback", 6, 4, 12, 13, "output"),
        Transfer("writeback", 7, 4, 16, 17, "output"),
    ]
    residencies = [
        Residency(0, 0, 4, 0, 7),
        Residency(2, 4, 4, 1, 6),
        Residency(4, 16, 4, 2, 7),
        Residency(6, 8, 8, 2, 13),
        Residency(7, 20, 8, 3, 9),
        Residency(1, 28, 4, 3, 16),
        Residency(3, 4, 4, 6, 11),
        Residency(5, 16, 4, 9, 16),
        Residency(7, 20, 8, 10, 17),
    ]
    return FlexerSchedule(
        problem=tiny_problem(),
        n_npus=2,
        capacity=32,
        bandwidth=4.0,
        npu=np.array([0, 0, 1, 1], np.int64),
        start=np.array([2, 7, 3, 12], np.int64),
        end=np.array([6, 11, 7, 16], np.int64),
        transfers=transfers,
        residencies=residencies,
        order=[(0, 2), (1, 3)],
        method="by hand",
    )


def with_ops(s: FlexerSchedule, o: int, **changes: int) -> FlexerSchedule:
    """A copy of ``s`` with ``npu``, ``start`` or ``end`` of operation ``o`` changed."""
    arrays = {k: getattr(s, k).copy() for k in ("npu", "start", "end")}
    for k, v in changes.items():
        arrays[k][o] = v
    return dataclasses.replace(s, **arrays)


def with_transfer(
    s: FlexerSchedule, kind: str, data: int, at: int, /, **changes: Any
) -> FlexerSchedule:
    """A copy of ``s`` with the transfer of ``kind`` and ``data`` starting ``at`` changed
    (removed when ``changes`` is empty)."""
    out, hit = [], 0
    for t in s.transfers:
        if (t.kind, t.data, t.start) == (kind, data, at):
            hit += 1
            if changes:
                out.append(dataclasses.replace(t, **changes))
        else:
            out.append(t)
    assert hit == 1
    return dataclasses.replace(s, transfers=out)


def with_residency(s: FlexerSchedule, data: int, at: int, /, **changes: int) -> FlexerSchedule:
    """A copy of ``s`` with the residency of ``data`` starting ``at`` changed (removed when
    ``changes`` is empty)."""
    out, hit = [], 0
    for r in s.residencies:
        if (r.data, r.start) == (data, at):
            hit += 1
            if changes:
                out.append(dataclasses.replace(r, **changes))
        else:
            out.append(r)
    assert hit == 1
    return dataclasses.replace(s, residencies=out)


def adding(s: FlexerSchedule, *items: Transfer | Residency, **changes: Any) -> FlexerSchedule:
    tr = [x for x in items if isinstance(x, Transfer)]
    res = [x for x in items if isinstance(x, Residency)]
    return dataclasses.replace(
        s, transfers=s.transfers + tr, residencies=s.residencies + res, **changes
    )


def assert_flags(s: FlexerSchedule, *phrases: str) -> list[str]:
    """``s`` fails and each phrase occurs in some violation."""
    report = verify_flexer(s)
    assert not report.ok
    for phrase in phrases:
        assert any(phrase in v for v in report.violations), (phrase, report.violations)
    return report.violations


# ---- the valid schedule --------------------------------------------------------------------


def test_hand_written_schedule_passes_with_its_totals():
    s = tiny_schedule()
    report = verify_flexer(s)
    assert report.ok, report.violations
    assert report.raise_if_failed() is report
    assert report.latency == s.latency == 17
    expected = {"input": 8, "weight": 16, "psum": 16, "output": 8}
    assert report.bytes_by_type == s.bytes_by_type() == expected
    assert report.transfer_bytes == s.transfer_bytes == 48
    assert report.peak_bytes == 32 == s.capacity
    assert report.reloads.tolist() == s.loads_per_tile().tolist() == [1, 1, 1, 1, 1, 1, 0, 1]


def test_zero_length_residencies_are_accepted_and_ignored():
    # in [3, 3) the block of WT 2 is taken: a zero-length residency holds nothing
    s = adding(tiny_schedule(), Residency(3, 4, 4, 3, 3))
    report = verify_flexer(s)
    assert report.ok, report.violations
    assert report.peak_bytes == 32


def test_raise_if_failed_lists_the_violations():
    s = with_ops(tiny_schedule(), 0, npu=5)
    with pytest.raises(VerificationError, match="NPU 5"):
        verify_flexer(s).raise_if_failed()


# ---- 1. operations -------------------------------------------------------------------------


def test_wrong_array_shapes_stop_the_check():
    s = dataclasses.replace(tiny_schedule(), start=np.zeros(3, np.int64))
    report = verify_flexer(s)
    assert report.latency is None
    assert report.violations == [
        "schedule has arrays of shapes [(4,), (3,), (4,)] for 4 operations"
    ]


def test_npu_that_does_not_exist():
    assert_flags(with_ops(tiny_schedule(), 3, npu=2), "op 3 (k=1, y=0, x=0, c=1) runs on NPU 2")


def test_negative_start():
    assert_flags(with_ops(tiny_schedule(), 0, start=-2, end=2), "op 0 (k=0, y=0, x=0, c=0) starts")


def test_duration_differs_from_latency():
    assert_flags(with_ops(tiny_schedule(), 1, end=12), "5 cycles instead of its latency 4")


def test_two_ops_at_once_on_one_npu():
    assert_flags(
        with_ops(tiny_schedule(), 2, npu=0),
        "NPU 0: op 0 (k=0, y=0, x=0, c=0) [2, 6) and op 2 (k=1, y=0, x=0, c=0) [3, 7) overlap",
    )


def test_partial_sum_precedence():
    # op 1 starts on NPU 1 while op 0, which leaves its partial sum, runs on NPU 0
    s = with_ops(tiny_schedule(), 1, npu=1, start=2, end=6)
    s = with_ops(s, 2, npu=0, start=7, end=11)  # keep each NPU to one op at a time
    assert_flags(
        s,
        "precedence op 0 (k=0, y=0, x=0, c=0) -> op 1 (k=0, y=0, x=0, c=1): op 1 (k=0, y=0, x=0, "
        "c=1) starts at 2 before its partial sum is ready at 6",
    )


def test_order_issues_every_op_once():
    s = dataclasses.replace(tiny_schedule(), order=[(0, 2), (1, 2), (7,)])
    assert_flags(
        s,
        "order issues op 3 (k=1, y=0, x=0, c=1) 0 times",
        "order issues op 2 (k=1, y=0, x=0, c=0) 2 times",
        "order issues op 7, which does not exist",
    )


# ---- 2. DRAM channel -----------------------------------------------------------------------


def test_transfers_overlap_on_the_channel():
    s = with_transfer(tiny_schedule(), "writeback", 6, 12, start=11, end=12)
    bad = assert_flags(
        s,
        "DRAM channel: psum load of OT tile 7 [10, 12) and output writeback of OT tile 6 "
        "[11, 12) overlap",
    )
    assert len(bad) == 1


def test_transfer_shorter_than_its_bytes_need():
    s = with_transfer(tiny_schedule(), "load", 7, 10, start=11)
    bad = assert_flags(s, "psum load of OT tile 7 [11, 12) takes 1 cycles, less than 2")
    assert len(bad) == 1


def test_transfer_type_and_size_recomputed_from_the_tiles():
    s = with_transfer(tiny_schedule(), "load", 0, 0, dtype="weight", nbytes=3)
    assert_flags(
        s,
        "weight load of IN tile 0 [0, 1) has type 'weight', expected 'input'",
        "weight load of IN tile 0 [0, 1) moves 3 bytes, expected 4",
    )
    report = verify_flexer(s)
    assert report.bytes_by_type == verify_flexer(tiny_schedule()).bytes_by_type
    assert s.bytes_by_type() != report.bytes_by_type


def test_output_writeback_size():
    s = with_transfer(tiny_schedule(), "writeback", 7, 16, nbytes=8)
    assert_flags(s, "output writeback of OT tile 7 [16, 17) moves 8 bytes, expected 4")


def test_only_output_tiles_are_written_back():
    s = adding(tiny_schedule(), Transfer("writeback", 0, 4, 17, 18, "psum"))
    assert_flags(s, "psum writeback of IN tile 0 [17, 18): only output tiles are written back")


def test_transfer_of_missing_data():
    s = adding(tiny_schedule(), Transfer("load", 8, 4, 17, 18, "input"))
    assert_flags(s, "input load of data 8 [17, 18): data 8 does not exist (8 tiles)")


# ---- 3. buffer -----------------------------------------------------------------------------


def test_residency_outside_the_buffer():
    s = dataclasses.replace(tiny_schedule(), capacity=30)
    assert_flags(s, "residency of IN tile 1 at [28, 32) in [3, 16) lies outside the buffer [0, 30)")


def test_residency_size_differs_from_the_tile():
    s = with_residency(tiny_schedule(), 0, 0, size=2)
    assert_flags(s, "residency of IN tile 0 at [0, 2) in [0, 7) has size 2, the tile is 4 bytes")


def test_residency_ending_before_it_starts():
    s = adding(tiny_schedule(), Residency(3, 4, 4, 5, 3))
    assert_flags(s, "residency of WT tile 3 at [4, 8) in [5, 3) ends before it starts")


def test_residencies_share_an_address():
    s = with_residency(tiny_schedule(), 3, 6, start=5)
    bad = assert_flags(
        s,
        "buffer: residency of WT tile 2 at [4, 8) in [1, 6) and residency of WT tile 3 at "
        "[4, 8) in [5, 11) overlap",
    )
    assert len(bad) == 1
    assert verify_flexer(s).peak_bytes == 36


def test_residencies_touching_in_time_or_address_do_not_overlap():
    # WT 3 takes WT 2's block the cycle it is freed; OT 7 is back in its own block after a gap
    s = tiny_schedule()
    assert any(r.data == 3 and r.start == 6 and r.addr == 4 for r in s.residencies)
    assert verify_flexer(s).ok


# ---- 4. operands ---------------------------------------------------------------------------


def test_operand_not_resident_throughout_the_op():
    s = with_residency(tiny_schedule(), 3, 6, end=10)
    assert_flags(
        s,
        "op 1 (k=0, y=0, x=0, c=1) runs in [7, 11) but its operand WT tile 3 is not resident "
        "throughout",
    )


def test_operand_split_over_two_residencies_is_not_held_throughout():
    # IN 1 moves from one block to another in the middle of op 3: no block holds it all along
    s = with_residency(tiny_schedule(), 1, 3, end=14)
    s = adding(s, Residency(1, 28, 4, 14, 16))
    assert_flags(s, "op 3 (k=1, y=0, x=0, c=1) runs in [12, 16) but its operand IN tile 1")


# ---- 5. loads ------------------------------------------------------------------------------


def test_load_outside_every_residency():
    s = with_residency(tiny_schedule(), 5, 9, start=10)
    assert_flags(
        s,
        "weight load of WT tile 5 [9, 10) lies outside every residency of WT tile 5",
        "WT tile 5 is on chip in [10, 16) without a load filling it",
    )


def test_input_on_chip_without_a_load():
    s = with_transfer(tiny_schedule(), "load", 1, 3)
    assert_flags(s, "IN tile 1 is on chip in [3, 16) without a load filling it")


def test_input_back_on_chip_without_a_reload():
    # IN 0 leaves at 7 and comes back for [8, 10) without being loaded again
    s = adding(tiny_schedule(), Residency(0, 0, 4, 8, 10))
    assert_flags(s, "IN tile 0 is on chip in [8, 10) without a load filling it")


def test_op_reads_a_tile_before_its_load_ends():
    s = with_transfer(tiny_schedule(), "load", 4, 2, start=5, end=6)
    bad = assert_flags(
        s,
        "op 2 (k=1, y=0, x=0, c=0) starts at 3 and reads WT tile 4 before weight load of WT "
        "tile 4 [5, 6) ends",
    )
    assert len(bad) == 1


def test_output_tile_on_chip_before_it_is_produced():
    s = adding(tiny_schedule(), Residency(6, 32, 8, 0, 1), capacity=40)
    assert_flags(
        s,
        "op 0 (k=0, y=0, x=0, c=0) produces OT tile 6 at 2, but the tile was on chip before it "
        "was produced, in [0, 1)",
    )


def test_partial_sum_loaded_where_it_is_produced():
    s = adding(tiny_schedule(), Transfer("load", 6, 8, 4, 6, "psum"))
    assert_flags(
        s,
        "psum load of OT tile 6 [4, 6) fills the first residency of OT tile 6, which its c = 0 "
        "op produces",
    )


def test_output_tile_back_on_chip_without_a_psum_load():
    s = with_transfer(tiny_schedule(), "load", 7, 10)
    assert_flags(
        s,
        "OT tile 7 is back on chip in [10, 17) after leaving at 9, without a psum load "
        "refilling it",
    )


def test_reload_without_a_writeback_before_it():
    s = with_transfer(tiny_schedule(), "writeback", 7, 7)
    bad = assert_flags(
        s,
        "psum load of OT tile 7 [10, 12) reloads OT tile 7, but no psum writeback of it ends "
        "before the reload starts",
    )
    assert len(bad) == 1


def test_reload_of_a_stale_partial_sum():
    # OT 7 leaves after op 3 without a write-back and is reloaded for its output write-back
    s = with_residency(tiny_schedule(), 7, 10, end=16)
    s = with_transfer(s, "writeback", 7, 16, start=19, end=20)
    s = adding(s, Transfer("load", 7, 8, 17, 19, "psum"), Residency(7, 20, 8, 17, 20))
    bad = assert_flags(
        s,
        "psum load of OT tile 7 [17, 19) reloads a stale partial sum: the last psum writeback "
        "before it, [7, 9), starts before op 3 (k=1, y=0, x=0, c=1) writing OT tile 7 ends at 16",
    )
    assert len(bad) == 1


def test_op_reads_a_partial_sum_before_its_reload_ends():
    s = with_transfer(tiny_schedule(), "load", 7, 10, start=13, end=15)
    bad = assert_flags(
        s,
        "op 3 (k=1, y=0, x=0, c=1) starts at 12 and reads OT tile 7 before psum load of OT tile "
        "7 [13, 15) ends",
    )
    assert len(bad) == 1


# ---- 6. write-backs ------------------------------------------------------------------------


def test_writeback_outside_every_residency():
    s = with_residency(tiny_schedule(), 7, 10, end=16)
    assert_flags(
        s, "output writeback of OT tile 7 [16, 17) lies outside every residency of OT tile 7"
    )


def test_psum_writeback_before_the_op_writing_it_ends():
    s = with_transfer(tiny_schedule(), "writeback", 7, 7, start=4, end=6)
    assert_flags(
        s,
        "psum writeback of OT tile 7 [4, 6) starts before op 2 (k=1, y=0, x=0, c=0) writing it "
        "ends at 7",
        "reloads a stale partial sum",
    )


def test_psum_writeback_before_the_tile_is_produced():
    s = adding(tiny_schedule(), Transfer("writeback", 7, 8, 4, 6, "psum"))
    s = with_ops(s, 2, start=7, end=11)  # the write-back precedes the chain's first op
    assert_flags(s, "psum writeback of OT tile 7 [4, 6) starts before OT tile 7 is produced")


def test_next_op_writes_during_a_psum_writeback():
    s = with_ops(tiny_schedule(), 3, start=8, end=12)
    assert_flags(
        s, "op 3 (k=1, y=0, x=0, c=1) starts at 8 and writes OT tile 7 during psum writeback"
    )


def test_psum_writeback_after_the_last_op():
    s = with_residency(tiny_schedule(), 6, 2, end=15)
    s = adding(s, Transfer("writeback", 6, 8, 13, 15, "psum"))
    assert_flags(
        s,
        "psum writeback of OT tile 6 [13, 15) follows the last op of the chain, op 1 "
        "(k=0, y=0, x=0, c=1)",
    )


def test_output_writeback_before_the_last_op():
    s = with_transfer(tiny_schedule(), "writeback", 6, 12, start=4, end=5)
    bad = assert_flags(
        s,
        "output writeback of OT tile 6 [4, 5) starts before the last op of the chain, op 1 "
        "(k=0, y=0, x=0, c=1), ends at 11",
    )
    assert len(bad) == 1


def test_missing_and_duplicate_output_writebacks():
    assert_flags(
        with_transfer(tiny_schedule(), "writeback", 6, 12),
        "OT tile 6 has 0 output writebacks instead of 1",
    )
    s = with_residency(tiny_schedule(), 6, 2, end=14)
    s = adding(s, Transfer("writeback", 6, 4, 13, 14, "output"))
    assert_flags(s, "OT tile 6 has 2 output writebacks instead of 1")


# ---- a real layer --------------------------------------------------------------------------


def first_fit(spans: list[tuple[int, int, int]], size: list[int]) -> tuple[list[int], int]:
    """Addresses for ``(data, start, end)`` spans: the lowest gap among the blocks still live
    (a block is reused only once its residency has ended); and the buffer size needed."""
    addr = [0] * len(spans)
    live: list[tuple[int, int, int]] = []  # (end, address, size)
    top = 0
    for j in sorted(range(len(spans)), key=lambda j: spans[j][1]):
        d, a, b = spans[j]
        live = [x for x in live if x[0] > a]
        pos = 0
        for _, at, sz in sorted(live, key=lambda x: x[1]):
            if at - pos >= size[d]:
                break
            pos = max(pos, at + sz)
        addr[j] = pos
        live.append((b, pos, size[d]))
        top = max(top, pos + size[d])
    return addr, top


def sequential(p: TiledConv, bandwidth: float, spill: bool) -> FlexerSchedule:
    """One op at a time on one NPU, everything in turn: load the input and weight tiles (and,
    with ``spill``, the partial sum), run the op, write the output tile back — as a psum after
    every op but the last of its chain when ``spill``, as the output after the last."""
    size = p.data_bytes.tolist()
    t = 0
    transfers: list[Transfer] = []
    spans: list[tuple[int, int, int]] = []
    since: dict[int, int] = {}
    start = np.zeros(p.n_ops, np.int64)
    for o in range(p.n_ops):
        i, w, ot = p.operands(o)
        loads = [(i, "input"), (w, "weight")]
        if spill and p.op_c[o] > 0:
            loads.append((ot, "psum"))
        for d, dtype in loads:
            since[d] = t
            dur = dram_cycles(size[d], bandwidth)
            transfers.append(Transfer("load", d, size[d], t, t + dur, dtype))
            t += dur
        if p.op_c[o] == 0:
            since[ot] = t
        start[o] = t
        t += int(p.latency[o])
        spans += [(i, since[i], t), (w, since[w], t)]
        if p.last_in_chain(o) or spill:
            kind = "output" if p.last_in_chain(o) else "psum"
            nbytes = int(p.out_bytes[ot]) if kind == "output" else size[ot]
            dur = dram_cycles(nbytes, bandwidth)
            transfers.append(Transfer("writeback", ot, nbytes, t, t + dur, kind))
            t += dur
            spans.append((ot, since[ot], t))
    addr, top = first_fit(spans, size)
    residencies = [Residency(d, a, size[d], b, e) for (d, b, e), a in zip(spans, addr, strict=True)]
    return FlexerSchedule(
        problem=p,
        n_npus=1,
        capacity=top,
        bandwidth=bandwidth,
        npu=np.zeros(p.n_ops, np.int64),
        start=start,
        end=start + p.latency,
        transfers=transfers,
        residencies=residencies,
        order=[(o,) for o in range(p.n_ops)],
        method="sequential",
    )


@pytest.fixture(scope="module")
def conv3_1() -> TiledConv:
    net = load_network("vgg16")
    layer = next(lay for lay in net.layers if lay.name == "conv3_1")
    return tiled_conv(net, layer, (32, 14, 14, 32), {"K": 32, "C": 32})


@pytest.mark.parametrize("spill", [False, True])
def test_sequential_schedule_of_a_vgg16_layer(conv3_1, spill):
    p = conv3_1
    s = sequential(p, 16.0, spill)
    assert p.n_ops == 512 and len(s.residencies) >= 1000
    begin = time.perf_counter()
    report = verify_flexer(s)
    elapsed = time.perf_counter() - begin
    assert report.ok, report.violations[:5]
    assert elapsed < 5.0
    assert report.latency == s.latency
    assert report.bytes_by_type == s.bytes_by_type()
    assert report.transfer_bytes == s.transfer_bytes
    assert report.reloads.tolist() == s.loads_per_tile().tolist()
    assert max(p.footprint(o) for o in range(p.n_ops)) <= report.peak_bytes <= s.capacity
    assert report.bytes_by_type["output"] == p.onchip_bytes()["output"]
    assert (report.bytes_by_type["psum"] > 0) == spill
    # one load too many at the end of the channel, where the channel is free
    late = s.latency
    extra = Transfer("load", 0, int(p.data_bytes[0]), late, late + 1, "input")
    bad = verify_flexer(dataclasses.replace(s, transfers=[*s.transfers, extra])).violations
    assert bad and all("lies outside every residency" in v or "takes 1 cycles" in v for v in bad)
