"""A schedule as a Chrome / Perfetto trace (the trace-event JSON format), to open in
ui.perfetto.dev or chrome://tracing.

One complete event (``"ph": "X"``) per μop on its core's track, and one per transfer:

- on a routed instance (:class:`~npusched.problem.scheduling.routed.RoutedInstance`), on the track
  of every link (bus) of its route over its window ``[tstart, tend)``; off-chip links are the
  DRAM port's tracks;
- on a NoC with transfer delays, from the producer's end to the data's arrival, on a track per
  receiving core.

Time unit: one cycle is written as one microsecond (the format's unit), so the viewer's "µs"
read as cycles; ``otherData`` says so. Tracks are named with metadata events.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from npusched.common.jsonio import write_json
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule, required_transfers
from npusched.problem.scheduling.schedule import Schedule
from npusched.verify.scheduling.memory import move_bits, move_name, move_routes
from npusched.verify.scheduling.schedule import edge_delays

CORES, LINKS, DRAM = 1, 2, 3
"""Process ids of the three groups of tracks: cores, on-chip links (or NoC arrivals), DRAM port."""


def _names(pid: int, process: str, threads: dict[int, str]) -> list[dict[str, Any]]:
    """Metadata events naming a group of tracks and its tracks, in order."""
    out: list[dict[str, Any]] = [
        {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": process}},
        {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}},
    ]
    for tid, name in threads.items():
        out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                    "args": {"name": name}})  # fmt: skip
        out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                    "args": {"sort_index": tid}})  # fmt: skip
    return out


def _span(pid: int, tid: int, name: str, start: int, end: int, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "ts": start, "dur": end - start,
            "args": args}  # fmt: skip


def trace_events(
    instance: SchedulingInstance | RoutedInstance, schedule: Schedule | RoutedSchedule
) -> dict[str, Any]:
    """The trace of ``schedule`` (module docstring) as a JSON-ready dict."""
    routed = instance if isinstance(instance, RoutedInstance) else None
    base = routed.base if routed is not None else instance
    assert isinstance(base, SchedulingInstance)
    ids, cores = base.graph.ids, base.accelerator.cores
    plain = Schedule(schedule.start, schedule.core)
    end = plain.end(base)
    events = _names(CORES, "cores", {k: f"core {c.id} {c.name}".strip()
                                     for k, c in enumerate(cores)})  # fmt: skip
    for i, (s, e, k) in enumerate(zip(plain.start.tolist(), end.tolist(), plain.core.tolist(),
                                      strict=True)):  # fmt: skip
        events.append(_span(CORES, k, str(ids[i]), s, e, uop=ids[i]))
    if routed is not None and isinstance(schedule, RoutedSchedule):
        events += _link_events(routed, schedule)
    elif base.accelerator.has_comm_delays and base.graph.num_edges:
        events += _arrival_events(base, plain, end)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "instance": base.name,
            "time_unit": "1 us in the viewer = 1 cycle",
            "makespan_cycles": int(end.max()),
        },  # fmt: skip
    }


def _link_events(inst: RoutedInstance, sched: RoutedSchedule) -> list[dict[str, Any]]:
    """Each transfer on every link (bus) of its route; off-chip links under the DRAM port."""
    topo, ids = inst.topology, inst.graph.ids
    tr = required_transfers(inst, sched.core)
    offchip = {int(topo.resource_of[k]) for k, ln in enumerate(topo.links) if ln.offchip}
    names: dict[int, list[str]] = {}
    for k, ln in enumerate(topo.links):
        names.setdefault(int(topo.resource_of[k]), []).append(
            ln.name or f"{ln.sender}->{'any' if ln.receiver is None else ln.receiver}"
        )
    label = {r: ("bus " if len(v) > 1 else "link ") + ", ".join(v) for r, v in names.items()}
    events = _names(LINKS, "links", {r: label[r] for r in sorted(names) if r not in offchip})
    events += _names(DRAM, "DRAM port", {r: label[r] for r in sorted(offchip)})
    core_id = [c.id for c in inst.base.accelerator.cores]
    spans = []
    for t in range(tr.size):
        if sched.tstart[t] >= 0:
            src = int(tr.src[t])
            what = str(ids[src]) if src >= 0 else inst.dram[-1 - src].name
            name = f"{what} -> core {core_id[int(tr.dst_core[t])]}"
            spans.append((name, tr.route[t], int(sched.tstart[t]), int(sched.tend[t]),
                          int(tr.data[t])))  # fmt: skip
    mv, bits = sched.moves, move_bits(inst, sched)
    for k, route in enumerate(move_routes(inst, sched)):
        assert mv is not None
        spans.append((move_name(inst, sched, k), route, int(mv.tstart[k]), int(mv.tend[k]),
                      int(bits[k])))  # fmt: skip
    for name, route, ts, te, data in spans:
        for r in sorted({int(topo.resource_of[x]) for x in route}):
            pid = DRAM if r in offchip else LINKS
            events.append(_span(pid, r, name, ts, te, data=data))
    return events


def _arrival_events(
    inst: SchedulingInstance, sched: Schedule, end: np.ndarray
) -> list[dict[str, Any]]:
    """Each edge between cores, from the producer's end to the data's arrival (NoC delays)."""
    g, ids = inst.graph, inst.graph.ids
    delay = edge_delays(inst, sched)
    moving = np.flatnonzero(delay > 0)
    cores = inst.accelerator.cores
    events = _names(LINKS, "NoC arrivals", {k: f"to core {c.id}" for k, c in enumerate(cores)})
    for e in moving.tolist():
        p, q = int(g.src[e]), int(g.dst[e])
        start = int(end[p])
        events.append(_span(LINKS, int(sched.core[q]), f"{ids[p]} -> {ids[q]}", start,
                            start + int(delay[e]), bytes=int(g.bytes[e])))  # fmt: skip
    return events


def write_trace(
    path: str | Path,
    instance: SchedulingInstance | RoutedInstance,
    schedule: Schedule | RoutedSchedule,
) -> None:
    """Write :func:`trace_events` to ``path`` (compact JSON, never half-written)."""
    write_json(path, trace_events(instance, schedule), indent=None)
