"""Partial copies (a copy carries what its readers read) in the memory-aware list and in verify: a
halo by hand, eviction of a partial copy by hand (the whole output written back from the
producer's core), and the checks that refuse a copy of the wrong size, a transfer or re-fetch
timed for less than its copy, and a write-back of a partial copy."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from test_memory_list import instance

from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.methods import solve
from npusched.problem.scheduling.routed import MOVE_KINDS, RoutedSchedule, required_transfers
from npusched.verify import check
from npusched.verify.scheduling.memory import move_bits

ROW = 8
"""Data units of one row of a producer's output tile."""


def violations(inst, sched: RoutedSchedule, **changes) -> list[str]:
    rep = check(inst, replace(sched, **changes))
    assert not rep.ok
    return rep.violations


def test_a_halo_row_by_hand():
    """P (core 0, 2 cycles) makes a tile of 4 rows (32 units); Q on core 1 reads one row of it
    (its halo): the transfer carries 8 units, 2 cycles at 4 per cycle (the whole tile would
    take 8), so Q runs [4, 5). Q's record on core 1 holds 8. A record of the whole tile there,
    and the transfer shortened to 1 cycle, are refused."""
    inst = instance([2, 1], [(0, 1, ROW)], [0, 1])
    inst = replace(inst, output=np.array([4 * ROW, 0]), capacity=np.array([64, 64]))
    tr = required_transfers(inst, np.array([0, 1]))
    assert tr.data.tolist() == [ROW] and tr.cycles.tolist() == [2]
    for sched in (memory_list_schedule(inst), routed_list_schedule(inst)):
        assert check(inst, sched).ok
        assert sched.start.tolist() == [0, 4] and sched.tstart.tolist() == [2]
        assert sched.tend.tolist() == [4]
    sched = memory_list_schedule(inst)
    mem = sched.memory
    assert np.c_[mem.core, mem.tensor, mem.bits].tolist() == [[0, 0, 32], [1, 0, 8]]
    whole = replace(mem, bits=np.array([32, 32]))
    bad = violations(inst, sched, memory=whole)
    assert bad == ["record of output of 0 on core 1 holds 32, but its copy there is 8 (what the "
                   "μops on that core read of the 32 of the tensor)"]  # fmt: skip
    bad = violations(inst, sched, tstart=np.array([3]))
    assert bad == ["transfer of output of 0 to core 1 takes 1 cycles, less than 2"]
    # without ``output`` the edge carries the whole output: 8, the tile's size is unknown
    assert required_transfers(replace(inst, output=None), np.array([0, 1])).data.tolist() == [8]
    res = solve(replace(inst, capacity=None), "joint", time_limit=10)
    assert res.objective == 5 and check(inst, res.solution).ok


def evicting() -> tuple:
    """P (μop 0, core 0, output 4 rows = 32) is read by Q (μop 1) and Q2 (μop 3) on core 1, one
    row each: core 1's copy is 16. Q → Y → Q2 on core 1, whose memory holds 16; Y reads a
    weight W of 16. The copy comes over [1, 5), Q runs [5, 6); Y's weight needs all of core
    1, so the copy (which Q2 still needs) is evicted: it holds 2 of P's 4 rows, so the whole
    output is written back from P's core 0 over [1, 17) (32 at 2 per cycle on the off-chip
    link), P's copy there staying until the write-back ends. W comes over [17, 25), Y runs
    [25, 26), Q2's 16 come back from DRAM over [26, 34), Q2 runs [34, 35)."""
    edges = [(0, 1, ROW), (0, 3, ROW), (1, 2, 0), (2, 3, 0)]
    inst = instance([1, 1, 1, 1], edges, [0, 1, 1, 1], dram=[(16, [2])])
    inst = replace(inst, output=np.array([4 * ROW, 0, 0, 0]), capacity=np.array([64, 16]))
    return inst, memory_list_schedule(inst, "latency")


def test_a_partial_copy_is_evicted_by_writing_back_from_the_producer_by_hand():
    inst, sched = evicting()
    assert check(inst, sched).ok
    assert sched.start.tolist() == [0, 5, 25, 34]
    assert sched.tstart.tolist() == [1, 17] and sched.tend.tolist() == [5, 25]
    mv, mem = sched.moves, sched.memory
    assert [MOVE_KINDS[k] for k in mv.kind] == ["evict", "refetch"]
    assert mv.src_core.tolist() == [0, -1] and mv.dst_core.tolist() == [-1, 1]
    assert mv.tstart.tolist() == [1, 26] and mv.tend.tolist() == [17, 34]
    assert move_bits(inst, sched).tolist() == [32, 16]  # the whole output; core 1's copy
    records = np.c_[mem.core, mem.tensor, mem.bits, mem.alloc, mem.free].tolist()
    assert records == [[0, 0, 32, 0, 17], [1, 0, 16, 1, 6], [1, -1, 16, 17, 26],
                       [1, 0, 16, 26, 35]]  # fmt: skip


def test_verify_refuses_what_a_partial_copy_cannot_do():
    inst, sched = evicting()
    mv, mem = sched.moves, sched.memory
    # the write-back from core 1, whose copy has 2 of P's 4 rows
    wrong = replace(mv, src_core=np.array([1, -1]))
    bad = violations(inst, sched, moves=wrong)
    assert ("evict of output of 0 from core 1: core 1 holds 16 of the output's 32 (what its "
            "μops read), and a write-back writes the whole output") in bad  # fmt: skip
    # P's copy dropped before its write-back is over
    early = replace(mem, free=np.array([16, 6, 26, 35]))
    bad = violations(inst, sched, memory=early)
    assert bad == ["evict of output of 0 from core 0: its data is not resident while it is "
                   "written back"]  # fmt: skip
    # the re-fetch timed for one row (4 cycles) where core 1's copy is 2 rows (8)
    short = replace(mv, tend=np.array([17, 30]))
    bad = violations(inst, sched, moves=short, start=np.array([0, 5, 25, 30]))
    assert bad == ["refetch of output of 0 to core 1 takes 4 cycles, less than 8"]
    # the write-back timed for the partial copy (8 cycles) instead of the whole output (16)
    quick = replace(mv, tend=np.array([9, 34]))
    assert "evict of output of 0 from core 0 takes 8 cycles, less than 16" in violations(
        inst, sched, moves=quick
    )
    # the re-fetched record sized as the whole output
    fat = replace(mem, bits=np.array([32, 16, 16, 32]))
    bad = violations(inst, sched, memory=fat)
    assert "record of output of 0 on core 1 holds 32, but its copy there is 16" in bad[0]


def test_a_whole_copy_is_written_back_from_its_own_core():
    """The same graph with P's output 16 (two rows): Q and Q2 read all of it, so core 1's copy
    is whole and is written back from core 1 itself (after Q, over [6, 14)), where P's copy was
    dropped once sent (at 5)."""
    inst, _ = evicting()
    whole = replace(inst, output=np.array([16, 0, 0, 0]))
    sched = memory_list_schedule(whole, "latency")
    assert check(whole, sched).ok
    assert required_transfers(whole, sched.core).data.tolist() == [16, 16]
    mv, mem = sched.moves, sched.memory
    assert [MOVE_KINDS[k] for k in mv.kind] == ["evict", "refetch"]
    assert mv.src_core.tolist() == [1, -1] and mv.tstart.tolist()[0] == 6
    assert mem.free[(mem.core == 0) & (mem.tensor == 0)].tolist() == [5]
