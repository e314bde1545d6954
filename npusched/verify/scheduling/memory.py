"""Check a routed schedule against its own ``memory`` records and eviction moves (Stream §III-E,
§III-F), without trusting the method that produced them.

A record ``(c, s, b, [α, ω))`` says core ``c`` holds ``b`` units of tensor ``s`` (a producer's
output, or a DRAM tensor) over ``[α, ω)``. Data *arrives* in a record by the production of ``s``
on ``c`` (``[start, end)`` of the producer), by the required transfer of ``s`` into ``c``, or by
a re-fetch from DRAM or a forward from another core; it is *ready* from the earliest such
arrival's end. The checks:

0. every record holds the size of the copy it is (a copy carries what its readers read,
   :meth:`~npusched.problem.scheduling.routed.RoutedInstance.held_data` under the schedule's
   allocation: a DRAM tensor and a producer's output on its own core whole, elsewhere what the
   μops on that core read of it) and ends no earlier than it begins; the records of one tensor
   on one core do not overlap;
1. every arrival that takes space lies inside a record of its tensor on its core (the
   destination's space is allocated from the transfer's start; a producer's output from its
   start). A streamed μop reads its operands as they come, without space: a required transfer
   that serves only streamed μops, and a re-fetch into a core where a streamed μop reads the
   tensor, may come without a record (it then makes no record ready: it counts for streamed
   μops only, check 6);
2. every μop that keeps its operands on its core (not ``streamed``) has each of its inputs
   (data producers and DRAM tensors) in a record that is ready by its start and lasts until its
   end;
3. every send (a required transfer of a buffered output, an eviction write-back, a forward of
   a DRAM tensor) reads a record of its tensor on its source core that is ready by the send's
   start and lasts until its end;
   a write-back writes the whole output, so its source core must hold all of it (the
   producer's core, or one whose copy is whole): a partial copy cannot be written back;
4. an activation is re-fetched only after a write-back of it to DRAM has ended; DRAM tensors
   are always in DRAM;
5. every move lasts at least ``⌈data / min bandwidth⌉`` on its route (a write-back's data: the
   whole output; a re-fetch's or a forward's: the copy its destination holds, as in 0);
6. every input of a streamed μop has come by its start: a buffered output of a μop on the
   same core is held over its run (ready by its start, as in 2) or re-fetched by its start;
   data from another core or from DRAM comes by its required transfer (whose timing
   :func:`~npusched.verify.scheduling.routed.verify_routed` checks) or, where a re-fetch
   or a forward replaces that, by one that ends by its start.

Capacity over the records is :func:`~npusched.verify.scheduling.routed.over_capacity`'s.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from npusched.problem.scheduling.routed import (
    EVICT,
    FORWARD,
    MOVE_KINDS,
    REFETCH,
    RoutedInstance,
    RoutedSchedule,
    Transfers,
    move_direction_ok,
)

NEVER = np.iinfo(np.int64).max


def move_routes(inst: RoutedInstance, sched: RoutedSchedule) -> list[tuple[int, ...]]:
    """The link route of each of the schedule's eviction moves (``-1``: the DRAM core)."""
    mv = sched.moves
    if mv is None:
        return []
    return [inst.route(a, b) for a, b in zip(mv.src_core.tolist(), mv.dst_core.tolist(),
                                             strict=True)]  # fmt: skip


def move_bits(inst: RoutedInstance, sched: RoutedSchedule) -> np.ndarray:
    """The data each move carries: a write-back the producer's whole output, a re-fetch or a
    forward the copy its destination core holds under the schedule's allocation (the DRAM
    tensor, the whole output into the producer's core, else what the μops there read of
    it)."""
    mv = sched.moves
    if mv is None:
        return np.zeros(0, dtype=np.int64)
    held = inst.held_data(sched.core, mv.tensor, np.maximum(mv.dst_core, 0))
    return np.where(mv.kind == EVICT, inst.tensor_data(mv.tensor), held).astype(np.int64)


def tensor_name(inst: RoutedInstance, s: int) -> str:
    return f"DRAM tensor {inst.dram[-1 - s].name}" if s < 0 else f"output of {inst.graph.ids[s]}"


def move_name(inst: RoutedInstance, sched: RoutedSchedule, k: int) -> str:
    """How messages name eviction move ``k``."""
    mv = sched.moves
    assert mv is not None
    cores = inst.accelerator.cores
    a, b = int(mv.src_core[k]), int(mv.dst_core[k])
    where = f"from core {cores[a].id}" if b < 0 else f"to core {cores[b].id}"
    if a >= 0 and b >= 0:
        where = f"from core {cores[a].id} to core {cores[b].id}"
    return f"{MOVE_KINDS[int(mv.kind[k])]} of {tensor_name(inst, int(mv.tensor[k]))} {where}"


class _Records:
    """The records of one schedule by (core, tensor), with each record's ready time."""

    def __init__(self, sched: RoutedSchedule) -> None:
        mem = sched.memory
        assert mem is not None
        self.mem = mem
        self.by: dict[tuple[int, int], list[int]] = defaultdict(list)
        for r, key in enumerate(zip(mem.core.tolist(), mem.tensor.tolist(), strict=True)):
            self.by[key].append(r)
        self.ready = np.full(mem.core.size, NEVER, dtype=np.int64)

    def malformed(self, inst: RoutedInstance, core: np.ndarray) -> list[str]:
        """Records whose size is not that of the copy they hold under the allocation ``core``,
        or that end before they begin."""
        m, bad, cores = self.mem, [], inst.accelerator.cores
        whole = inst.tensor_data(m.tensor)
        size = inst.held_data(core, m.tensor, m.core)
        for r in np.flatnonzero((m.bits != size) | (m.free < m.alloc))[:20].tolist():
            what = f"record of {tensor_name(inst, int(m.tensor[r]))} on core {cores[m.core[r]].id}"
            if m.bits[r] != size[r] and size[r] == whole[r]:
                bad.append(f"{what} holds {int(m.bits[r])}, but the tensor is {int(size[r])}")
            elif m.bits[r] != size[r]:
                bad.append(f"{what} holds {int(m.bits[r])}, but its copy there is "
                           f"{int(size[r])} (what the μops on that core read of the "
                           f"{int(whole[r])} of the tensor)")  # fmt: skip
            else:
                bad.append(f"{what} is freed at {int(m.free[r])}, before {int(m.alloc[r])}")
        return bad

    def overlaps(self, inst: RoutedInstance) -> list[str]:
        """Records of one tensor on one core that overlap (a core holds one copy at a time)."""
        m, bad = self.mem, []
        for (c, s), rs in self.by.items():
            rs = sorted(rs, key=lambda r: int(m.alloc[r]))
            for r, q in zip(rs, rs[1:], strict=False):
                if m.alloc[q] < m.free[r]:
                    on = inst.accelerator.cores[c].id
                    bad.append(f"{tensor_name(inst, s)} is held twice on core {on} from cycle "
                               f"{int(m.alloc[q])}")  # fmt: skip
        return bad

    def holding(self, c: int, s: int, a: int, b: int) -> int | None:
        """A record of ``s`` on ``c`` over all of ``[a, b)``."""
        m = self.mem
        for r in self.by.get((c, s), ()):
            if m.alloc[r] <= a and m.free[r] >= b:
                return r
        return None

    def arrive(self, c: int, s: int, a: int, b: int) -> bool:
        r = self.holding(c, s, a, b)
        if r is None:
            return False
        self.ready[r] = min(self.ready[r], b)
        return True

    def serves(self, c: int, s: int, a: int, b: int) -> bool:
        """Ready by ``a`` and held until ``b``."""
        m = self.mem
        return any(
            m.alloc[r] <= a and m.free[r] >= b and self.ready[r] <= a
            for r in self.by.get((c, s), ())
        )


def memory_violations(
    inst: RoutedInstance, sched: RoutedSchedule, tr: Transfers, name: Any
) -> list[str]:
    """Checks 1–6 of the module docstring; ``name(t)`` names required transfer ``t``."""
    cores, ids = inst.accelerator.cores, inst.graph.ids
    mv = sched.moves
    recs = _Records(sched)
    bad = recs.malformed(inst, sched.core) + recs.overlaps(inst)
    streamed = inst.is_streamed
    start, end, core = sched.start, sched.end(inst), sched.core
    buffered = (inst.output_data > 0) & ~streamed
    for p in np.flatnonzero(buffered).tolist():  # 1: arrivals
        c = int(core[p])
        if not recs.arrive(c, p, int(start[p]), int(end[p])):
            bad.append(f"output of {ids[p]}: no record on core {cores[c].id} over its run")
    for t in range(tr.size):
        if sched.tstart[t] >= 0 and not streamed[tr.serves[t]].all():
            s, c = tr.key(t)
            if not recs.arrive(c, s, int(sched.tstart[t]), int(sched.tend[t])):
                bad.append(f"{name(t)}: no space allocated on its core from its start")
    moves = range(mv.size) if mv is not None else range(0)
    inputs = _input_sets(inst)
    passing = {(s, int(core[q])) for q, srcs in inputs.items() if streamed[q] for s in srcs}
    for k in moves:
        assert mv is not None
        s, c = int(mv.tensor[k]), int(mv.dst_core[k])
        if (
            mv.kind[k] != EVICT
            and not recs.arrive(c, s, int(mv.tstart[k]), int(mv.tend[k]))
            and (s, c) not in passing
        ):
            bad.append(f"{move_name(inst, sched, k)}: no space allocated from its start")
    bad += _inputs(inst, sched, recs, inputs)
    bad += _streamed_inputs(inst, sched, tr, recs, inputs)
    for t in range(tr.size):  # 3: sends
        s = int(tr.src[t])
        ts, te = int(sched.tstart[t]), int(sched.tend[t])
        if ts >= 0 and s >= 0 and buffered[s] and not recs.serves(int(core[s]), s, ts, te):
            bad.append(f"{name(t)}: its data is not resident on core {cores[core[s]].id} "
                       "while it is sent")  # fmt: skip
    written: defaultdict[int, int] = defaultdict(lambda: int(NEVER))
    bits = move_bits(inst, sched)
    at_source = (  # the copy each move's source core holds (a write-back's must be whole)
        inst.held_data(core, mv.tensor, np.maximum(mv.src_core, 0)) if mv is not None else bits
    )
    for k in moves:
        assert mv is not None
        s, a, ts, te = int(mv.tensor[k]), int(mv.src_core[k]), int(mv.tstart[k]), int(mv.tend[k])
        label = move_name(inst, sched, k)
        if not move_direction_ok(int(mv.kind[k]), s, a, int(mv.dst_core[k])):
            bad.append(f"{label}: a write-back goes from a core to DRAM with an output, a "
                       "re-fetch from DRAM to a core, a forward from a core to another with "
                       "a DRAM tensor")  # fmt: skip
            continue
        if mv.kind[k] == EVICT:
            if not recs.serves(a, s, ts, te):
                bad.append(f"{label}: its data is not resident while it is written back")
            held = int(at_source[k])
            if held != int(bits[k]):
                bad.append(f"{label}: core {cores[a].id} holds {held} of the output's "
                           f"{int(bits[k])} (what its μops read), and a write-back writes the "
                           "whole output")  # fmt: skip
            written[s] = min(written[s], te)
        if mv.kind[k] == FORWARD and not recs.serves(a, s, ts, te):
            bad.append(f"{label}: its data is not resident and ready on core {cores[a].id} "
                       "while it is sent")  # fmt: skip
        cyc = inst.topology.cycles(int(bits[k]), inst.route(a, int(mv.dst_core[k])))
        if te - ts < cyc:
            bad.append(f"{label} takes {te - ts} cycles, less than {cyc}")
    for k in moves:  # 4: re-fetched activations were written back first
        assert mv is not None
        s = int(mv.tensor[k])
        if mv.kind[k] == REFETCH and s >= 0 and written[s] > mv.tstart[k]:
            bad.append(f"{move_name(inst, sched, k)} starts at {int(mv.tstart[k])}, before "
                       "the tensor is written back to DRAM")  # fmt: skip
    return bad[:100]


def _input_sets(inst: RoutedInstance) -> dict[int, set[int]]:
    """The tensors each μop reads: its data producers and its DRAM tensors (``-1 - k``)."""
    g = inst.graph
    inputs: dict[int, set[int]] = defaultdict(set)
    data = g.bytes > 0
    for p, q in zip(g.src[data].tolist(), g.dst[data].tolist(), strict=True):
        inputs[q].add(p)
    for k, tensor in enumerate(inst.dram):
        if tensor.data > 0:
            for q in tensor.consumers.tolist():
                inputs[q].add(-1 - k)
    return inputs


def _inputs(
    inst: RoutedInstance, sched: RoutedSchedule, recs: _Records, inputs: dict[int, set[int]]
) -> list[str]:
    """Check 2: the inputs of every buffered μop are resident and ready while it runs."""
    ids, cores = inst.graph.ids, inst.accelerator.cores
    start, end, core = sched.start, sched.end(inst), sched.core
    streamed = inst.is_streamed
    bad = []
    for q, srcs in inputs.items():
        if streamed[q]:
            continue
        c, a, b = int(core[q]), int(start[q]), int(end[q])
        for s in sorted(srcs):
            if s >= 0 and streamed[s] and core[s] == c:
                continue  # a streamed producer's output stays in DRAM
            if not recs.serves(c, s, a, b):
                what = tensor_name(inst, s)
                bad.append(f"μop {ids[q]} on core {cores[c].id}: its input {what} is not "
                           f"resident and ready over [{a}, {b})")  # fmt: skip
    return bad


def _streamed_inputs(
    inst: RoutedInstance,
    sched: RoutedSchedule,
    tr: Transfers,
    recs: _Records,
    inputs: dict[int, set[int]],
) -> list[str]:
    """Check 6: the inputs of every streamed μop have come by its start."""
    ids, cores = inst.graph.ids, inst.accelerator.cores
    start, end, core = sched.start, sched.end(inst), sched.core
    streamed, mv = inst.is_streamed, sched.moves
    came: dict[tuple[int, int], int] = {}  # (tensor, core) -> end of its first re-fetch there
    if mv is not None:
        for k in np.flatnonzero(mv.kind != EVICT).tolist():
            key = (int(mv.tensor[k]), int(mv.dst_core[k]))
            came[key] = min(came.get(key, int(NEVER)), int(mv.tend[k]))
    replaced = {tr.key(t) for t in range(tr.size) if sched.tstart[t] < 0 and sched.tend[t] < 0}
    bad = []
    for q in np.flatnonzero(streamed).tolist():
        c, a, b = int(core[q]), int(start[q]), int(end[q])
        for s in sorted(inputs.get(q, ())):
            fetched = came.get((s, c), int(NEVER)) <= a
            what = f"streamed μop {ids[q]} on core {cores[c].id}: its input {tensor_name(inst, s)}"
            if s >= 0 and core[s] == c:
                if not (streamed[s] or fetched or recs.serves(c, s, a, b)):
                    bad.append(f"{what} is neither resident over [{a}, {b}) nor re-fetched by "
                               f"{a}")  # fmt: skip
            elif (s, c) in replaced and (s, c) in came and not fetched:
                bad.append(f"{what} is re-fetched in place of its transfer, but not by {a}")
    return bad
