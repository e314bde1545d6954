"""Memory residency under Stream's lifetime rules, and the per-core memory trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from npusched.io.stream import read_stream
from npusched.methods import solve
from npusched.plot import memory_trace
from npusched.verify import check
from npusched.verify.scheduling.routed import memory_peaks, residency

GOOD_STREAM = Path(__file__).resolve().parents[1] / "data" / "good" / "stream_mini.json"


def test_residency_holds_every_input_while_its_μops_run_and_matches_the_peaks(tmp_path):
    inst = read_stream(GOOD_STREAM)
    sched = solve(inst, "joint", time_limit=10).solution
    assert check(inst, sched).ok
    res = residency(inst, sched)
    assert (res.alloc <= res.free).all() and (res.bits > 0).all()
    end = sched.end(inst)
    g = inst.graph
    for e in np.flatnonzero(g.bytes > 0):  # the producer's output is on the consumer's core
        p, q = int(g.src[e]), int(g.dst[e])
        held = (res.tensor == p) & (res.core == sched.core[q])
        assert ((res.alloc[held] <= sched.start[q]) & (res.free[held] >= end[q])).any()
    for k, tensor in enumerate(inst.dram):  # a DRAM tensor is on every core that uses it
        for i in tensor.consumers.tolist():
            held = (res.tensor == -1 - k) & (res.core == sched.core[i])
            assert ((res.alloc[held] <= sched.start[i]) & (res.free[held] >= end[i])).any()
    for k in range(inst.m):  # the step function's peak is a sum of overlapping intervals
        t, level = res.usage(k)
        peak_at = t[int(np.argmax(level))] if level.size else 0
        live = (res.core == k) & (res.alloc <= peak_at) & (res.free > peak_at)
        assert memory_peaks(inst, sched)[k] == max(0, int(res.bits[live].sum()))
    out = tmp_path / "mem.png"
    memory_trace(inst, sched, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
