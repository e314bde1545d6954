"""Check a schedule with routed transfers (:mod:`npusched.problem.scheduling.routed`) without
trusting the method that produced it."""

from __future__ import annotations

from typing import Any

import numpy as np

from npusched.problem.scheduling.routed import (
    EVICT,
    FORWARD,
    Residency,
    RoutedInstance,
    RoutedSchedule,
    Transfers,
    required_transfers,
)
from npusched.problem.scheduling.schedule import Schedule
from npusched.verify.scheduling.memory import memory_violations, move_name, move_routes
from npusched.verify.scheduling.schedule import VerifyReport, verify


def verify_routed(
    inst: RoutedInstance, sched: RoutedSchedule, claimed_makespan: float | None = None
) -> VerifyReport:
    """Check ``sched`` against ``inst``.

    On top of :func:`~npusched.verify.scheduling.schedule.verify` (one start and core per μop,
    precedence,
    no overlap on a core, recomputed makespan): every μop runs on an allowed core; the transfers
    are exactly those the assignment needs (:func:`required_transfers`), each lasting at least
    ``⌈data / min bandwidth⌉`` for the copy it carries (what the μops on its destination core
    read of the output: :meth:`~npusched.problem.scheduling.routed.RoutedInstance.copy_data`),
    starting at or after its producer's end (DRAM tensors at or after
    0) and ending at or before the start of every μop it serves (or, in a schedule with memory
    records, replaced by a re-fetch or, where the instance allows it, a forward from a core
    that holds the DRAM tensor); each link or bus carries one transfer at a time (half-open
    windows), moves included. A schedule with its own
    ``memory`` records (one that evicts) is checked against them
    (:func:`~npusched.verify.scheduling.memory.memory_violations`: inputs resident, transfer
    space allocated, write-backs before re-fetches); only instances whose memories can bind
    (:attr:`~npusched.problem.scheduling.routed.RoutedInstance.memory_binds`) write data
    back (a copy that reaches a core through DRAM needs one). With a
    memory capacity: no core holds more than its capacity at any instant
    (:func:`over_capacity`).
    """
    base = verify(inst.base, Schedule(sched.start, sched.core), claimed_makespan)
    if base.makespan is None:
        return base
    bad = base.violations
    ids, cores = inst.graph.ids, inst.accelerator.cores
    for i in np.flatnonzero(~inst.mask[np.arange(inst.n), sched.core]):
        bad.append(f"μop {ids[i]} runs on core {cores[sched.core[i]].id}, which it may not use")
    tr = required_transfers(inst, sched.core)
    if sched.tstart.shape != (tr.size,) or sched.tend.shape != (tr.size,):
        bad.append(
            f"the assignment needs {tr.size} transfers, the schedule times {sched.tstart.size}"
        )
        return base
    end = sched.end(inst)

    def name(t: int) -> str:
        s = int(tr.src[t])
        what = f"DRAM tensor {inst.dram[-1 - s].name}" if s < 0 else f"output of {ids[s]}"
        return f"transfer of {what} to core {cores[tr.dst_core[t]].id}"

    refetched = _refetched(sched)
    for t in range(tr.size):
        s, ts, te = int(tr.src[t]), int(sched.tstart[t]), int(sched.tend[t])
        if ts < 0 and te < 0:
            if tr.key(t) not in refetched:  # else a re-fetch or forward brought the data
                bad.append(f"{name(t)} is needed but not scheduled")
            continue
        if te - ts < tr.cycles[t]:
            bad.append(f"{name(t)} takes {te - ts} cycles, less than {tr.cycles[t]}")
        release = 0 if s < 0 else int(end[s])
        if ts < release:
            bad.append(f"{name(t)} starts at {ts}, before {release}")
        late = tr.serves[t][sched.start[tr.serves[t]] < te]
        for j in late[:3].tolist():
            bad.append(f"{name(t)} ends at {te}, after μop {ids[j]} starts at {sched.start[j]}")
    bad += _link_clashes(inst, sched, tr, name)
    if sched.memory is not None:
        bad += memory_violations(inst, sched, tr, name)
    elif sched.evicts:
        bad.append("the schedule moves data (evicts or forwards it) but records no memory")
    if sched.moves is not None and (sched.moves.kind == FORWARD).any() and not inst.forward:
        bad.append("the schedule forwards DRAM tensors between cores, but the instance does not "
                   "allow it (its forward is off)")  # fmt: skip
    if sched.moves is not None and (sched.moves.kind == EVICT).any() and not inst.memory_binds:
        bad.append("the schedule writes data back to DRAM, but every core can hold all the data "
                   "at once (an eviction makes room, and there is always room)")  # fmt: skip
    if inst.capacity is not None:
        bad += over_capacity(inst, sched)
    base.noc_cost = int(sum(len(r) for r in tr.route))
    base.noc_bytes_hops = int(sum(len(r) * int(d) for r, d in zip(tr.route, tr.data, strict=True)))
    return base


def residency(inst: RoutedInstance, sched: RoutedSchedule) -> Residency:
    """What each core holds under ``sched``: the schedule's own ``memory`` records when it has
    them (a schedule that evicts), else what Stream's lifetime rules (§III-F) give.

    A producer's output lives on its core (whole) from its start until its last local consumer
    ends and its last outgoing transfer is done; a received output (the copy its transfer
    carries) or DRAM tensor lives on the receiving core from the start of its transfer until the
    last μop it serves ends. Data of ``streamed``
    μops (operands too large for the core, read from and written to DRAM) takes no space: their
    outputs, and copies that serve only them.
    """
    if sched.memory is not None:
        return sched.memory
    g = inst.graph
    end = sched.end(inst)
    tr = required_transfers(inst, sched.core)
    output = inst.output_data
    until = end.copy()
    local = (sched.core[g.src] == sched.core[g.dst]) & (g.bytes > 0)
    np.maximum.at(until, g.src[local], end[g.dst[local]])
    out_tr = tr.src >= 0
    np.maximum.at(until, tr.src[out_tr], sched.tend[out_tr])
    served = np.array([end[s].max() for s in tr.serves], dtype=np.int64)
    streamed = inst.is_streamed
    made = (output > 0) & ~streamed
    kept = np.array([not streamed[s].all() for s in tr.serves], dtype=bool)
    return Residency(
        np.concatenate([sched.core[made], tr.dst_core[kept]]),
        np.concatenate([np.flatnonzero(made), tr.src[kept]]),
        np.concatenate([output[made], tr.data[kept]]),
        np.concatenate([sched.start[made], sched.tstart[kept]]),
        np.concatenate([until[made], served[kept]]),
    )


def memory_peaks(inst: RoutedInstance, sched: RoutedSchedule) -> np.ndarray:
    """Peak data resident on each core under ``sched`` (:func:`residency`)."""
    res = residency(inst, sched)
    return np.array(
        [max(0, int(res.usage(k)[1].max(initial=0))) for k in range(inst.m)], dtype=np.int64
    )


def over_capacity(inst: RoutedInstance, sched: RoutedSchedule) -> list[str]:
    """Cores whose resident data (:func:`residency`) exceeds their capacity at some instant: the
    first such instant of each, with what is held then."""
    assert inst.capacity is not None
    res, out = residency(inst, sched), []
    for k in range(inst.m):
        t, level = res.usage(k)
        over = np.flatnonzero(level > inst.capacity[k])
        if over.size:
            j = int(over[0])
            out.append(
                f"core {inst.accelerator.cores[k].id} holds {int(level[j])} {inst.data_unit} from "
                f"cycle {int(t[j])}, over its capacity of {int(inst.capacity[k])}"
            )
    return out


def _refetched(sched: RoutedSchedule) -> set[tuple[int, int]]:
    """(tensor, core) pairs a re-fetch or a forward brings in, in a schedule with memory
    records."""
    mv = sched.moves
    if mv is None or sched.memory is None:
        return set()
    on = mv.kind != EVICT
    return set(zip(mv.tensor[on].tolist(), mv.dst_core[on].tolist(), strict=True))


def _link_clashes(
    inst: RoutedInstance, sched: RoutedSchedule, tr: Transfers, name: Any
) -> list[str]:
    """Links (buses) carrying two transfers at once, or more than their lanes: the required
    ones and the eviction moves."""
    routes = list(tr.route) + move_routes(inst, sched)
    mv = sched.moves
    ts = np.concatenate([sched.tstart, mv.tstart]) if mv is not None else sched.tstart
    te = np.concatenate([sched.tend, mv.tend]) if mv is not None else sched.tend

    def label(t: int) -> str:
        return name(t) if t < tr.size else move_name(inst, sched, t - tr.size)

    use_t, use_r = [], []
    for t, route in enumerate(routes):
        for x in route:
            use_t.append(t)
            use_r.append(int(inst.topology.resource_of[x]))
    if not use_t:
        return []
    ut, ur = np.asarray(use_t), np.asarray(use_r)
    busy = te[ut] > ts[ut]
    ut, ur = ut[busy], ur[busy]
    lanes = inst.topology.lanes
    wide = lanes[ur] > 1
    bad = _crowded(inst, ut[wide], ur[wide], ts, te)
    ut, ur = ut[~wide], ur[~wide]
    order = np.lexsort((ts[ut], ur))
    ut, ur = ut[order], ur[order]
    same = ur[1:] == ur[:-1]
    clash = np.flatnonzero(same & (ts[ut[1:]] < te[ut[:-1]]))
    links = inst.topology.links
    for k in clash[:20].tolist():
        a, b = int(ut[k]), int(ut[k + 1])
        on = [links[x].id for x in routes[a] if inst.topology.resource_of[x] == ur[k]]
        bad.append(
            f"link {on[0]}: {label(a)} [{ts[a]}, {te[a]}) and {label(b)} [{ts[b]}, {te[b]}) overlap"
        )
    return bad


def _crowded(inst: RoutedInstance, ut: np.ndarray, ur: np.ndarray, ts: np.ndarray,
             te: np.ndarray) -> list[str]:  # fmt: skip
    """Resources of more than one lane (uses ``ut`` of transfers on resources ``ur``) that carry
    more transfers at once than their lanes: a sweep over starts and ends, ends first at one
    instant, per resource (each resource's events sum to 0, so one running sum serves all)."""
    if not ut.size:
        return []
    when = np.concatenate([ts[ut], te[ut]])
    delta = np.concatenate([np.ones(ut.size, np.int64), -np.ones(ut.size, np.int64)])
    res = np.concatenate([ur, ur])
    order = np.lexsort((delta, when, res))
    level = np.cumsum(delta[order])
    lanes = inst.topology.lanes[res[order]]
    out = []
    for k in np.flatnonzero(level > lanes)[:20].tolist():
        r = int(res[order][k])
        link = next(ln.id for x, ln in enumerate(inst.topology.links)
                    if inst.topology.resource_of[x] == r)  # fmt: skip
        out.append(f"link {link}: {int(level[k])} transfers at cycle {int(when[order][k])}, "
                   f"over its {int(lanes[k])} lanes")
    return out
