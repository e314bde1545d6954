"""Memory-aware list scheduling under memory pressure: capacities stepped down to the smallest
feasible ones (one unit less and some μop's own operands no longer fit its core, so the
instance refuses to be built) on both Stream exports and on a Klotski partition given a DRAM
core; every schedule of both priorities verifies, none deadlocks (every core has a route to
DRAM), and the small memories do make the list evict.

The issue: with the ResNet-18 export's four TPU cores cut to 3 % of Stream's memories, the
list re-fetched evicted outputs towards core 5, whose CN 3780 streams its operands (Stream's
``too_large_operands``), without a memory record, and verify refused that: a re-fetch had to
take space even where the transfer it replaces need not. Streamed μops also made the list
deadlock with a route to DRAM (found by the property test below): re-fetches for them took
space, and they kept their inputs."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from conftest import SHARED, needs_shared
from hypothesis import given, settings
from hypothesis import strategies as st
from test_memory_list import instance, memory_instances

from npusched.arch import load_arch
from npusched.heuristics.scheduling.memory_list import MemoryDeadlock, memory_list_schedule
from npusched.io import read_stream
from npusched.methods.routed import with_allocation
from npusched.partition.api import partition_network, resolve_network
from npusched.problem.scheduling.routed import (
    EVICT,
    MOVE_KINDS,
    REFETCH,
    RoutedInstance,
    RoutedSchedule,
    required_transfers,
)
from npusched.verify import check
from npusched.verify.scheduling.routed import memory_peaks

TPU = (0, 1, 2, 3)
"""The exports' TPU-like cores; cores 4 and 5 are the pooling and SIMD cores."""

PRIORITIES = ("latency", "memory")


def cut(inst: RoutedInstance, cores, share) -> RoutedInstance:
    """``inst`` with the memories of ``cores`` cut to ``share`` of theirs: a float rounds down
    (as ``(capacity * share).astype(np.int64)``), a :class:`Fraction` up (exactly)."""
    cap, exact = inst.capacity.copy(), isinstance(share, Fraction)
    for c in cores:
        cap[c] = math.ceil(int(cap[c]) * share) if exact else int(cap[c] * share)
    return replace(inst, capacity=cap)


def smallest(inst: RoutedInstance, cores) -> Fraction:
    """The smallest common share of the memories of ``cores`` that still holds the operands of
    every μop placed on them."""
    core, need = np.argmax(inst.mask, axis=1), inst.operand_data()
    on = np.isin(core, cores)
    return max(
        Fraction(int(n), int(inst.capacity[c])) for n, c in zip(need[on], core[on], strict=True)
    )


def assert_smallest(inst: RoutedInstance, cores, share: Fraction) -> RoutedInstance:
    """The instance at ``share`` builds and one unit less on every core of ``cores`` does not;
    returns the instance."""
    tight = cut(inst, cores, share)
    less = tight.capacity.copy()
    less[list(cores)] -= 1
    with pytest.raises(ValueError, match="needs .* resident"):
        replace(tight, capacity=less)
    return tight


def schedule(inst: RoutedInstance, priority: str) -> tuple[RoutedSchedule, int, int, float]:
    """The list's schedule (never a deadlock: every core has a route to DRAM), verified, with
    its write-backs, re-fetches and the seconds it took."""
    assert inst.can_write_back
    t0 = time.perf_counter()
    sched = memory_list_schedule(inst, priority)
    seconds = time.perf_counter() - t0
    rep = check(inst, sched)
    assert rep.ok, rep.violations[:5]
    assert (memory_peaks(inst, sched) <= inst.capacity).all()
    assert sched.makespan(inst) >= inst.lower_bound()  # its prefetch term binds under pressure
    kind = sched.moves.kind
    return sched, int((kind == EVICT).sum()), int((kind == REFETCH).sum()), seconds


def unrecorded_refetches(sched: RoutedSchedule) -> list[tuple[int, int]]:
    """(tensor, core) of the re-fetches that lie in no memory record (data that passes into
    streamed μops)."""
    mv, m, out = sched.moves, sched.memory, []
    for k in np.flatnonzero(mv.kind == REFETCH).tolist():
        s, c, a, b = (int(x[k]) for x in (mv.tensor, mv.dst_core, mv.tstart, mv.tend))
        if not ((m.core == c) & (m.tensor == s) & (m.alloc <= a) & (m.free >= b)).any():
            out.append((s, c))
    return out


def drop_moves(sched: RoutedSchedule, keep: np.ndarray) -> RoutedSchedule:
    mv = sched.moves
    fields = ("kind", "tensor", "src_core", "dst_core", "tstart", "tend")
    return replace(sched, moves=replace(mv, **{f: getattr(mv, f)[keep] for f in fields}))


def test_a_refetch_towards_a_streamed_consumer_takes_no_space_by_hand():
    """The issue in small. Core 0 (room 16) runs P1, P2 (outputs 8) and X (reads P1 and a
    weight of 8); S on core 1 streams its input P2 and waits for X. P2 is written back over
    [2, 6) to make room for X's weight ([6, 10), X [10, 11)); S's copy of P2 then comes from
    DRAM over [10, 14) in place of the transfer from core 0, with no space on core 1, as that
    transfer would have had: S runs [14, 15) (latency priority; memory priority places X
    first and evicts nothing). The same schedule is refused where S keeps its operands, and
    where S starts before the re-fetch has ended."""
    inst = instance([1, 1, 1, 1], [(0, 2, 8), (1, 3, 8), (2, 3, 0)], [0, 0, 0, 1],
                    dram=[(8, [2])], capacity=[16, 16])  # fmt: skip
    inst = replace(inst, streamed=np.array([False, False, False, True]))
    sched = memory_list_schedule(inst, "latency")
    assert check(inst, sched).ok
    assert sched.start.tolist() == [0, 1, 10, 14]
    assert sched.tstart.tolist() == [-1, 6]  # P2 to core 1: replaced by the re-fetch
    mv = sched.moves
    assert [MOVE_KINDS[k] for k in mv.kind] == ["evict", "refetch"]
    assert mv.dst_core.tolist() == [-1, 1] and mv.tstart.tolist() == [2, 10]
    assert unrecorded_refetches(sched) == [(1, 1)]
    assert (sched.memory.core == 0).all()
    assert check(inst, memory_list_schedule(inst, "memory")).ok  # X first: nothing evicted
    buffered = replace(inst, streamed=None)
    rep = check(buffered, sched)
    assert "refetch of output of 1 to core 1: no space allocated from its start" in rep.violations
    early = check(inst, replace(sched, start=np.array([0, 1, 10, 12])))
    assert early.violations == ["streamed μop 3 on core 1: its input output of 1 is re-fetched "
                                "in place of its transfer, but not by 12"]  # fmt: skip


def test_a_streamed_consumer_reads_an_evicted_local_input_as_it_comes_by_hand():
    """P1, P2 (outputs 8) and S, which streams both, on core 0 with room 8: P2 needs P1's
    room, so P1 is written back over [1, 5) and P2 runs [5, 6). S gets P1 from DRAM over
    [5, 9) without space and reads P2 in place: S runs [9, 10). The list used to fetch P1 into
    space and keep P2 for S: a deadlock with a route to DRAM. Without the re-fetch, or without
    P2 held over its run, S is refused."""
    inst = instance([1, 1, 1], [(0, 2, 8), (1, 2, 8)], [0, 0, 0])
    inst = replace(inst, streamed=np.array([False, False, True]), capacity=np.array([8, 8]))
    for priority in PRIORITIES:
        sched = memory_list_schedule(inst, priority)
        assert check(inst, sched).ok and sched.start.tolist() == [0, 5, 9]
        mv = sched.moves
        assert [MOVE_KINDS[k] for k in mv.kind] == ["evict", "refetch"]
        assert mv.tstart.tolist() == [1, 5] and mv.tend.tolist() == [5, 9]
        assert unrecorded_refetches(sched) == [(0, 0)]
        assert memory_peaks(inst, sched).tolist() == [8, 0]
    rep = check(inst, drop_moves(sched, sched.moves.kind == EVICT))
    assert rep.violations == ["streamed μop 2 on core 0: its input output of 0 is neither "
                              "resident over [9, 10) nor re-fetched by 9"]  # fmt: skip
    mem = sched.memory
    short = replace(sched, memory=replace(mem, free=np.where(mem.tensor == 1, 9, mem.free)))
    rep = check(inst, short)
    assert "its input output of 1 is neither resident over [9, 10)" in rep.violations[0]


def test_a_streamed_consumer_receives_shared_copies_one_at_a_time_by_hand():
    """P1, P2 (outputs 8) on core 1 are read by S (streamed) on core 0 and by Q1, Q2 (which
    keep their operands, after S) there; core 0 holds 8. The required transfers of P1 and P2
    into core 0 serve Q1 and Q2 too, so each takes space: P1 comes over [1, 3) and is written
    back over [3, 7) to make room for P2 ([7, 9)); S runs [9, 10), Q2 reads P2 in place
    ([10, 11)) and Q1 fetches P1 again ([11, 15), Q1 [15, 16)). The list used to need both
    copies at once: a deadlock."""
    edges = [(0, 2, 8), (1, 2, 8), (0, 3, 8), (1, 4, 8), (2, 3, 0), (2, 4, 0)]
    inst = instance([1] * 5, edges, [1, 1, 0, 0, 0])
    inst = replace(inst, streamed=np.array([False, False, True, False, False]),
                   capacity=np.array([8, 16]))  # fmt: skip
    for priority in PRIORITIES:
        sched = memory_list_schedule(inst, priority)
        assert check(inst, sched).ok
        assert sched.start.tolist() == [0, 1, 9, 15, 10]
        assert sched.tstart.tolist() == [1, 7] and sched.tend.tolist() == [3, 9]
        mv = sched.moves
        assert [MOVE_KINDS[k] for k in mv.kind] == ["evict", "refetch"]
        assert mv.src_core.tolist() == [0, -1] and mv.tstart.tolist() == [3, 11]
        assert memory_peaks(inst, sched).tolist() == [8, 16]


@st.composite
def streamed_instances(draw):
    """:func:`memory_instances` with streamed μops and memories of their largest operand set
    up to 6 units more (tight: the list evicts often)."""
    inst = draw(memory_instances())
    streamed = np.array(draw(st.lists(st.booleans(), min_size=inst.n, max_size=inst.n)))
    inst = replace(inst, capacity=None, streamed=streamed)
    need = int(inst.operand_data().max(initial=0))
    room = [max(need + draw(st.integers(0, 6)), 1) for _ in range(2)]
    return replace(inst, capacity=np.array(room))


@settings(max_examples=300, deadline=None)
@given(streamed_instances(), st.sampled_from(PRIORITIES))
def test_streamed_schedules_verify_and_never_deadlock(inst, priority):
    """With streamed μops too, every instance gets a schedule (a route to DRAM) that verifies."""
    schedule(inst, priority)


@needs_shared
@pytest.mark.parametrize("cores", [TPU, tuple(range(6))], ids=["tpu", "all"])
def test_tiny_res16_stepped_down(cores):
    """TinyResNet-16's memories stepped down to the smallest feasible share, both priorities:
    every schedule verifies; at the smallest share the binding core is full at some instant,
    and with the TPU cores alone cut the list evicts (cutting all cores, the SIMD core binds
    first, at 1.2 %, where the TPU cores still hold enough)."""
    inst = read_stream(SHARED / "stream" / "tiny_res16_tpu_quad_core_fused.json")
    low = smallest(inst, cores)
    assert float(low) == pytest.approx(0.00189 if cores == TPU else 0.01172, abs=1e-5)
    tight = assert_smallest(inst, cores, low)
    for share in [1.0, 0.1, 0.01, 0.003, 0.002]:
        if share < low:
            with pytest.raises(ValueError, match="needs .* resident"):
                cut(inst, cores, share)
            continue
        for priority in PRIORITIES:
            _, back, again, _ = schedule(cut(inst, cores, share), priority)
            assert share < 0.01 or back == again == 0
    for priority in PRIORITIES:
        sched, back, again, _ = schedule(tight, priority)
        assert (memory_peaks(tight, sched) == tight.capacity).any()
        assert (back > 0 and again > 0) == (cores == TPU)


@pytest.fixture(scope="module")
def resnet18() -> RoutedInstance:
    path = SHARED / "stream" / "resnet18_tpu_quad_core_fused.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return read_stream(path)


@needs_shared
def test_resnet18_tpu_memories_at_3_percent(resnet18):
    """The issue's case: the TPU cores at 3 % of Stream's memories (10 % evicts no
    activation). The schedule verifies, with its re-fetches towards core 5's streamed CNs
    passing into them without space."""
    inst = cut(resnet18, TPU, 0.03)
    assert inst.capacity.tolist()[:4] == [503316] * 4
    sched, back, again, _ = schedule(inst, "latency")
    assert back > 1000 and again > 5000
    passing = unrecorded_refetches(sched)
    assert {c for _, c in passing} == {5} and len(passing) > 100
    streamed = resnet18.is_streamed
    on5 = np.flatnonzero((sched.core == 5) & streamed)
    assert resnet18.graph.ids.index(3780) in on5.tolist()


@needs_shared
@pytest.mark.parametrize("priority", PRIORITIES)
def test_resnet18_at_the_smallest_tpu_memories(resnet18, priority):
    """The TPU cores at the smallest feasible share (2.3 %): both priorities verify and
    evict."""
    low = smallest(resnet18, TPU)
    assert float(low) == pytest.approx(0.02313, abs=1e-5)
    tight = assert_smallest(resnet18, TPU, low)
    sched, back, again, _ = schedule(tight, priority)
    assert back > 1000 and again > 5000
    assert (memory_peaks(tight, sched) == tight.capacity).any()


def test_a_klotski_partition_stepped_down():
    """LeNet cut by Klotski (s = 2, 2, 8, 8: 338 μops) on the 3 × 3 mesh of the machine model
    (DRAM behind four corner controllers, weights and input boxes in DRAM, halo copies), on the
    priority list's allocation: memories from 64 times the largest operand set under that
    allocation down to it, the smallest feasible; both priorities verify at every step, and
    evict at the smallest (at 64 times, nothing)."""
    part = partition_network(resolve_network("lenet"), load_arch("klotski-3x3"), "klotski",
                             s=(2, 2, 8, 8))  # fmt: skip
    assert isinstance(part, RoutedInstance) and part.output is not None
    inst = with_allocation(replace(part, capacity=None))
    assert inst.preferred is not None
    inst = inst.restricted(inst.preferred)
    need = int(inst.operand_data(inst.preferred).max())
    inst = replace(inst, capacity=np.full(inst.m, 64 * need))
    cores = tuple(range(inst.m))
    low = smallest(inst, cores)  # a μop alone needs less than its core's copies under it
    assert low < Fraction(1, 64)
    assert_smallest(inst, cores, low)
    under = replace(inst, capacity=inst.capacity // 64 - 1)  # builds, but the copies do not fit
    with pytest.raises(MemoryDeadlock, match="under this allocation"):
        memory_list_schedule(under, "latency")
    for times in (64, 4, 2, Fraction(9, 8), 1):
        for priority in PRIORITIES:
            _, back, again, _ = schedule(cut(inst, cores, Fraction(times, 64)), priority)
            if times == 64:
                assert back == again == 0
            elif times == 1:
                assert back > 0 and again > 0


@st.composite
def partial_instances(draw):
    """Random DAGs of up to 13 μops on the two cores of :func:`instance` (dense: each pair an
    edge with chance 1/2, so outputs have several readers per core; early μops mostly on core
    0, later ones mostly on core 1, so that many copies cross), up to two weights, whose
    edges carry what their consumers read of larger outputs (each μop's output up to 16 units
    above its largest edge, sinks' too): copies on other cores are partial, a producer's own
    whole; memories of the largest operand set under the allocation up to 6 units more (tight:
    the list evicts often). Some μops are streamed, among those whose every copy is whole (a
    streamed producer has no copy to write a partial one back from)."""
    n = draw(st.integers(1, 13))
    latency = draw(st.lists(st.integers(1, 6), min_size=n, max_size=n))
    edges = [(i, j, draw(st.sampled_from([0, 4, 8, 12])))
             for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]  # fmt: skip
    split = draw(st.integers(0, n))  # mostly producers on core 0, their readers on core 1
    flip = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    core = np.array([int(i >= split) ^ int(f == 0) for i, f in enumerate(flip)])
    dram = [(draw(st.integers(1, 16)), sorted(draw(st.sets(st.integers(0, n - 1), min_size=1))))
            for _ in range(draw(st.integers(0, 2)))]  # fmt: skip
    inst = instance(latency, edges, core, dram)
    extra = np.array(draw(st.lists(st.integers(0, 16), min_size=n, max_size=n)))
    inst = replace(inst, output=inst.output_data + extra)
    whole = np.ones(n, dtype=bool)
    tr = required_transfers(inst, core)
    out = tr.src >= 0
    whole[tr.src[out][tr.data[out] < inst.output_data[tr.src[out]]]] = False
    flags = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    if draw(st.integers(0, 3)) == 0:
        inst = replace(inst, streamed=flags & whole)
    need = int(inst.operand_data(core).max(initial=0))
    room = [max(need + draw(st.integers(0, 6)), 1) for _ in range(2)]
    return replace(inst, capacity=np.array(room))


@settings(max_examples=400, deadline=None)
@given(partial_instances(), st.sampled_from(PRIORITIES))
def test_partial_copies_under_tight_memories_verify_and_never_deadlock(inst, priority):
    """With partial copies every instance gets a schedule (a route to DRAM: a partial copy is
    evicted by writing the whole output back from its producer's core) that verifies: record
    sizes, transfer and move durations by the copies, write-backs from whole copies only."""
    sched, _, _, _ = schedule(inst, priority)
    tr = required_transfers(inst, sched.core)
    out = tr.src >= 0
    assert (tr.data[out] <= inst.output_data[tr.src[out]]).all()


def test_the_partial_property_test_draws_what_it_claims(monkeypatch):
    """The strategy makes partial copies, and the list evicts some of them before their output
    is in DRAM (writing it back from the producer's core; rarely, as the list evicts the oldest
    data first, mostly producers' own copies: a few in a hundred runs, the case by hand in
    test_partial_copies.py)."""
    from npusched.heuristics.scheduling import memory_list

    found = {"partial": 0, "evicted": 0}
    evict = memory_list._Scheduler.evict

    def counting(self, key):
        found["evicted"] += int(key in self.partial and key[0] not in self.in_dram)
        evict(self, key)

    monkeypatch.setattr(memory_list._Scheduler, "evict", counting)

    @settings(max_examples=600, deadline=None, database=None, derandomize=True)
    @given(partial_instances(), st.sampled_from(PRIORITIES))
    def probe(inst, priority):
        sched = schedule(inst, priority)[0]
        tr = required_transfers(inst, sched.core)
        out = tr.src >= 0
        found["partial"] += int((tr.data[out] < inst.output_data[tr.src[out]]).any())

    probe()
    assert found["partial"] > 300 and found["evicted"] >= 3, found
