"""A copy carries what its readers read (RoutedInstance.output, copy_data, held_data): the rule by
hand, the instance's own checks, and Stream's exports unchanged (every edge there carries the
producer's whole output, so every copy is whole)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import SHARED, needs_shared

from npusched import Accelerator, SchedulingInstance, UopGraph
from npusched.io import read_stream
from npusched.methods import solve
from npusched.problem.scheduling.routed import (
    DramTensor,
    Link,
    RoutedInstance,
    Topology,
    required_transfers,
)

ROW = 8
"""Data units of one row of a producer's output tile."""


def halo(output=None, capacity=None) -> RoutedInstance:
    """Producer P (μop 0, core 0) and its readers on core 1: Q1 reads 1 row, Q2 2 rows, and on
    core 0 L reads 3 rows; links 0↔1 carry 4 units per cycle, DRAM core 9 behind a shared
    off-chip link of 2. ``output``: P's tile (4 rows); None: the old rule."""
    links = (Link(0, 0, 1, 4.0), Link(1, 1, 0, 4.0), Link(2, 9, None, 2.0, offchip=True))
    routes = {(0, 1): (0,), (1, 0): (1,), (9, 0): (2,), (9, 1): (2,), (0, 9): (2,), (1, 9): (2,)}
    g = UopGraph(np.array([2, 1, 1, 1]), np.array([0, 0, 0]), np.array([1, 2, 3]),
                 np.array([1 * ROW, 2 * ROW, 3 * ROW]))  # fmt: skip
    base = SchedulingInstance(g, Accelerator.identical(2))
    mask = np.array([[1, 0], [0, 1], [0, 1], [1, 0]], dtype=bool)
    out = None if output is None else np.array([output, 0, 0, 0])
    cap = None if capacity is None else np.array(capacity)
    return RoutedInstance(base, Topology(links, routes, 9), mask, (), output=out, capacity=cap)


def test_a_copy_holds_what_its_readers_read_by_hand():
    """P's tile is 4 rows (32). Core 1's copy is what Q1 and Q2 read: 3 rows (24), sent in 6
    cycles instead of 8; L, on P's core, reads P's own (whole) copy. Without ``output`` every
    edge carries the whole output (the largest edge, 3 rows): core 1 gets 24 too, but as the
    whole output."""
    inst = halo(output=4 * ROW)
    core = np.array([0, 1, 1, 0])
    tr = required_transfers(inst, core)
    assert tr.data.tolist() == [3 * ROW] and tr.cycles.tolist() == [6]
    assert tr.serves[0].tolist() == [1, 2]
    assert inst.output_data.tolist() == [32, 0, 0, 0]
    assert inst.read_data.tolist() == [8, 16, 24]
    assert inst.copy_data([0, 0, 0], [8, 40, 0]).tolist() == [8, 32, 0]  # capped by the tile
    assert [inst.copy_data(0, r) for r in (8, 40, 0)] == [8, 32, 0]  # one at a time: ints
    assert type(inst.copy_data(0, 40)) is int
    held = inst.held_data(core, [0, 0, 0, 0], [0, 1, 1, 1]).tolist()
    assert held == [32, 24, 24, 24]
    moved = inst.held_data(np.array([0, 1, 0, 0]), [0, 0], [0, 1]).tolist()
    assert moved == [32, 8]  # Q2 moved to core 0: core 1 keeps Q1's row only
    old = halo()
    assert old.output_data.tolist() == [24, 0, 0, 0] and old.read_data.tolist() == [24] * 3
    assert required_transfers(old, core).data.tolist() == [24]
    assert old.held_data(np.array([0, 1, 0, 0]), [0], [1]).tolist() == [24]


def test_operand_data_counts_what_each_uop_reads():
    """Alone, Q1 needs P's row it reads; under an allocation, the copy the core holds (Q2's rows
    too); L on P's core the whole tile; P its own tile."""
    inst = halo(output=4 * ROW)
    assert inst.operand_data().tolist() == [32, 8, 16, 24]
    assert inst.operand_data(np.array([0, 1, 1, 0])).tolist() == [32, 24, 24, 32]
    assert halo().operand_data().tolist() == [24, 24, 24, 24]  # the old rule: whole outputs


def test_the_lower_bound_sends_no_more_than_the_consumer_reads():
    """P (2) → its one-row reader Q1 on the other core (1 row: 2 cycles) → 1: 5; with each
    edge carrying the whole tile (8 cycles) it would be 11."""
    links = (Link(0, 0, 1, 4.0), Link(1, 1, 0, 4.0))
    g = UopGraph(np.array([2, 1]), np.array([0]), np.array([1]), np.array([ROW]))
    base = SchedulingInstance(g, Accelerator.identical(2))
    mask = np.array([[1, 0], [0, 1]], dtype=bool)
    topo = Topology(links, {(0, 1): (0,), (1, 0): (1,)})
    inst = RoutedInstance(base, topo, mask, output=np.array([4 * ROW, 0]))
    assert inst.lower_bound() == 2 + 2 + 1
    whole = replace(inst, base=replace(base, graph=UopGraph(g.latency, g.src, g.dst,
                                                             np.array([4 * ROW]))))  # fmt: skip
    assert whole.lower_bound() == 2 + 8 + 1
    res = solve(inst, "list")
    assert res.objective == 5


@pytest.mark.parametrize(
    ("output", "match"),
    [
        ([32, 0, 0], "one integer per μop"),
        ([32, 0, 0, -1], "μop 3: negative output -1"),
        ([23, 0, 0, 0], "μop 0: its edge to μop 3 carries 24, more than its output 23"),
        ([32.5, 0, 0, 0], "one integer per μop, got float64 values"),
    ],
)
def test_the_output_checks_itself(output, match):
    with pytest.raises(ValueError, match=match):
        replace(halo(), output=np.array(output))


def test_memories_too_small_for_a_uops_copies():
    """Alone Q1 needs 8 of core 1; under the allocation its copy holds 24 (Q2's rows too): the
    instance builds with room 16, but the memory-aware list refuses the allocation at once. With
    room 24: P [0, 2), its 3 rows to core 1 over [2, 8), Q1 [8, 9), Q2 [9, 10)."""
    from npusched.heuristics.scheduling.memory_list import MemoryDeadlock, memory_list_schedule

    with pytest.raises(ValueError, match="core 1: μop 2 needs 16 .* holds 15"):
        halo(output=4 * ROW, capacity=[64, 15])
    inst = halo(output=4 * ROW, capacity=[64, 16])
    with pytest.raises(MemoryDeadlock, match="core 1: μop 1 needs 24 .* under this allocation"):
        memory_list_schedule(inst)
    sched = memory_list_schedule(replace(inst, capacity=np.array([64, 24])))
    assert sched.start.tolist() == [0, 8, 9, 2] and sched.tend.tolist() == [8]


def _stream(name: str) -> RoutedInstance:
    return read_stream(SHARED / "stream" / f"{name}_tpu_quad_core_fused.json")


@needs_shared
@pytest.mark.parametrize("name", ["tiny_res16", "resnet18"])
def test_stream_exports_are_unchanged(name):
    """Every edge of an export carries its producer's whole output: with that output given
    explicitly (the new rule then applies) every copy is still the whole output, and the
    transfers, the operand sizes, the bound and the list's schedule (memory-aware, Stream's
    allocation) are those of the instance without ``output``."""
    inst = _stream(name)
    assert inst.output is None
    g = inst.graph
    data = g.bytes > 0
    assert (g.bytes[data] == inst.output_data[g.src[data]]).all()
    given = replace(inst, output=np.array(inst.output_data))
    assert (given.read_data == inst.read_data).all()
    core = np.argmax(inst.mask, axis=1) if inst.preferred is None else inst.preferred
    a, b = required_transfers(inst, core), required_transfers(given, core)
    out = a.src >= 0
    assert (a.data[out] == inst.output_data[a.src[out]]).all()  # every copy is whole
    assert (a.data == b.data).all() and (a.cycles == b.cycles).all() and a.src.size > 100
    assert (inst.operand_data() == given.operand_data()).all()
    assert (given.operand_data(core) == given.operand_data()).all()
    assert inst.lower_bound() == given.lower_bound()
    one, two = solve(inst, "list"), solve(given, "list")
    s, t = one.solution, two.solution
    assert one.objective == two.objective and one.status == two.status
    for f in ("start", "core", "tstart", "tend"):
        assert (getattr(s, f) == getattr(t, f)).all()
    assert (s.memory.bits == t.memory.bits).all() and s.moves.size == t.moves.size


@needs_shared
def test_stream_export_under_eviction_is_unchanged():
    """TinyResNet-16's TPU cores at 0.3 % of their memories (the list evicts): the same
    schedule, records and moves with the output given explicitly."""
    inst = _stream("tiny_res16")
    cap = inst.capacity.copy()
    cap[:4] = (cap[:4] * 0.002).astype(np.int64) + 1
    from npusched.heuristics.scheduling.memory_list import memory_list_schedule

    tight = replace(inst, capacity=cap)
    s = memory_list_schedule(tight, "latency")
    t = memory_list_schedule(replace(tight, output=np.array(inst.output_data)), "latency")
    assert s.evicts
    for f in ("kind", "tensor", "src_core", "dst_core", "tstart", "tend"):
        assert (getattr(s.moves, f) == getattr(t.moves, f)).all()
    for f in ("core", "tensor", "bits", "alloc", "free"):
        assert (getattr(s.memory, f) == getattr(t.memory, f)).all()


def test_dram_tensors_and_the_rule_together():
    """A DRAM tensor is always whole on every core; held_data names it by ``-1 - k``."""
    inst = replace(halo(output=4 * ROW), dram=(DramTensor("W", 6, np.array([1, 3])),))
    assert inst.held_data(np.array([0, 1, 1, 0]), [-1, -1], [0, 1]).tolist() == [6, 6]
    assert inst.operand_data().tolist() == [32, 14, 16, 30]
