"""Chrome/Perfetto trace export: every μop and every transfer on its track with its own times."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from conftest import run_cli

from npusched.bench.generate import layered_dag
from npusched.io.stream import read_stream
from npusched.io.trace import CORES, DRAM, LINKS, trace_events
from npusched.methods import solve
from npusched.problem.scheduling.routed import required_transfers
from npusched.verify import check
from npusched.verify.scheduling.schedule import edge_delays

GOOD_STREAM = Path(__file__).resolve().parents[1] / "data" / "good" / "stream_mini.json"


def _spans(trace, pid):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == pid]


def test_noc_schedule_μops_and_arrivals_match_the_schedule():
    inst = layered_dag(5, 4, (2, 2), seed=3, hop_latency=3)
    sched = solve(inst, "list").solution
    assert check(inst, sched).ok
    trace = json.loads(json.dumps(trace_events(inst, sched)))  # plain JSON all through
    ops = _spans(trace, CORES)
    end = sched.end(inst)
    assert sorted(int(e["args"]["uop"]) for e in ops) == sorted(inst.graph.ids)
    for e in ops:
        i = inst.graph.ids.index(e["args"]["uop"])
        assert (e["ts"], e["ts"] + e["dur"], e["tid"]) == (sched.start[i], end[i], sched.core[i])
    delay = edge_delays(inst, sched)
    moves = _spans(trace, LINKS)
    assert len(moves) == int((delay > 0).sum()) > 0
    for e in moves:  # from the producer's end to the arrival, on the consumer's core track
        p, q = (inst.graph.ids.index(int(x)) for x in e["name"].split(" -> "))
        k = int(np.flatnonzero((inst.graph.src == p) & (inst.graph.dst == q))[0])
        assert (e["ts"], e["dur"], e["tid"]) == (end[p], delay[k], sched.core[q])
        assert e["ts"] + e["dur"] <= sched.start[q]
    named = {(e["pid"], e.get("tid")) for e in trace["traceEvents"] if e["ph"] == "M"}
    assert all((CORES, k) in named for k in range(inst.m))


def test_routed_transfers_on_every_link_of_their_route_and_dram_on_its_port():
    inst = read_stream(GOOD_STREAM)
    res = solve(inst, "joint", time_limit=10)
    assert check(inst, res.solution).ok
    sched = res.solution
    trace = trace_events(inst, sched)
    tr = required_transfers(inst, sched.core)
    links, dram = _spans(trace, LINKS), _spans(trace, DRAM)
    topo = inst.topology
    expected = sum(len({int(topo.resource_of[k]) for k in route}) for route in tr.route)
    assert len(links) + len(dram) == expected > 0
    windows = {(int(a), int(b)) for a, b in zip(sched.tstart, sched.tend, strict=True)}
    assert {(e["ts"], e["ts"] + e["dur"]) for e in links + dram} <= windows
    offchip = {int(topo.resource_of[k]) for k, ln in enumerate(topo.links) if ln.offchip}
    assert {e["tid"] for e in dram} <= offchip and not {e["tid"] for e in links} & offchip
    assert len(dram) == int((tr.src < 0).sum())  # one DRAM fetch per tensor and core


def test_cli_trace_opens_as_json_and_a_bad_path_writes_nothing(tmp_path):
    out = tmp_path / "t.json"
    proc = run_cli("solve", GOOD_STREAM, "--method", "list", "--trace", out)
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(out.read_text())
    assert trace["traceEvents"] and "cycle" in trace["otherData"]["time_unit"]
    bad = run_cli("solve", GOOD_STREAM, "--method", "list", "--trace", tmp_path / "t.json" / "x")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
