"""``flexer-lns``: the re-timing model of a Flexer schedule and its large-neighbourhood search
(npusched.formulations.flexer.retime). Every schedule is re-checked by ``verify_flexer``."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from npusched.formulations.flexer.retime import RetimeModel, latency_floor, retime_lns
from npusched.heuristics.flexer.beam import beam_schedule
from npusched.heuristics.flexer.explain import time_split
from npusched.heuristics.flexer.ooo import DATAFLOWS, NoFit, ooo_schedule
from npusched.heuristics.flexer.retiming import compact, structure
from npusched.heuristics.flexer.static import static_schedule
from npusched.methods.registry import solve
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.layer import FlexerInstance, Residency
from npusched.problem.flexer.settings import FlexerLayer, Settings
from npusched.solvers.result import Status
from npusched.verify.flexer import verify_flexer
from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network

UNROLL = {"K": 32, "C": 32}


def small_net(c: int = 64, k: int = 64, hw: int = 8) -> Network:
    conv = Layer("conv", "conv", (INPUT,), out_channels=k, kernel=(3, 3), pad=(1, 1, 1, 1))
    return Network("small", (c, hw, hw), (conv,))


def layer(tiles, c=64, k=64, hw=8):
    net = small_net(c, k, hw)
    return tiled_conv(net, net.layers[0], tiles, UNROLL, fill_drain=16)


def same_decisions(a, b) -> None:
    """Re-timing keeps what moves: the same transfers (kind, tile, bytes) and residencies
    (tile, size), so the same bytes."""
    key = sorted((t.kind, t.data, t.nbytes, t.dtype) for t in a.transfers)
    assert key == sorted((t.kind, t.data, t.nbytes, t.dtype) for t in b.transfers)
    assert a.transfer_bytes == b.transfer_bytes


def solve_model(model: RetimeModel, seconds: float = 5.0):
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 2
    return solver.solve(model.model), solver


def fixed(model: RetimeModel) -> RetimeModel:
    """The model with every decision fixed to its start schedule's values."""
    s, md = model.sched, model.model
    for o in range(s.problem.n_ops):
        md.add(model.s[o] == int(s.start[o]))
        md.add(model.x[o][int(s.npu[o])] == 1)
    for i, t in enumerate(s.transfers):
        md.add(model.tau[i] == t.start)
    for r, res in enumerate(model.st.residencies):
        md.add(model.addr[r] == res.addr)
    return model


SCHEDULERS = {
    "ooo": lambda p, n, cap, bw, pf: ooo_schedule(p, n, cap, bw, prefetch=pf, dataflow="WS"),
    "beam": lambda p, n, cap, bw, pf: beam_schedule(p, n, cap, bw, width=2, depth=2,
                                                    prefetch=pf),  # fmt: skip
    "static": lambda p, n, cap, bw, pf: static_schedule(
        p, n, cap, bw, loop_order="C,K,OY,OX", stationary="IS", prefetch=pf
    ),
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tiles=st.sampled_from([(32, 4, 4, 32), (32, 8, 4, 32), (64, 4, 8, 32), (32, 4, 8, 64)]),
    n=st.sampled_from([1, 2, 4]),
    room=st.floats(1.1, 3.0),
    bw=st.sampled_from([4, 16]),
    kind=st.sampled_from(sorted(SCHEDULERS)),
    prefetch=st.booleans(),
    window=st.integers(1, 6),
    seed=st.integers(0, 10),
)
def test_start_is_feasible_and_every_answer_verifies(tiles, n, room, bw, kind, prefetch,
                                                     window, seed):  # fmt: skip
    """On random layers under buffer pressure (spills, reloads, partial sums written back),
    from each scheduler: the start schedule satisfies the model (fixed to it, it is feasible,
    for the whole model and for a random window), and what CP-SAT returns verifies, is no
    longer, and moves the same tiles."""
    p = layer(tiles)
    cap = int(room * 3 * max(p.footprint(o) for o in range(p.n_ops)))
    try:
        start = SCHEDULERS[kind](p, n, cap, bw, prefetch)
    except NoFit:
        return
    assert verify_flexer(start).ok
    tight = compact(start, structure(start, prefetch))  # the engine's, earliest in its orders
    assert verify_flexer(tight).ok and tight.latency <= start.latency
    same_decisions(tight, start)
    assert sum(time_split(tight).values()) == tight.latency * n
    sets = sorted(start.order, key=lambda ops: min(int(start.start[o]) for o in ops))
    first = np.random.default_rng(seed).integers(0, max(1, len(sets) - window + 1))
    free = [o for ops in sets[first : first + window] for o in ops]
    for ops in (None, free):
        status, _ = solve_model(fixed(RetimeModel(start, prefetch, ops)))
        assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        model = RetimeModel(start, prefetch, ops)
        status, solver = solve_model(model, 2.0)
        assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        out = model.decode(solver)
        rep = verify_flexer(out)
        assert rep.ok, rep.violations[:5]
        assert out.latency == rep.latency <= start.latency
        assert out.latency >= latency_floor(start, prefetch)
        same_decisions(out, start)
        assert sum(time_split(out).values()) == out.latency * n  # its waits explain it
        if ops is not None:  # outside the window: same NPU, and earlier events at their times
            keep = np.setdiff1d(np.arange(p.n_ops), free)
            assert (out.npu[keep] == start.npu[keep]).all()


def test_lns_shortens_a_greedy_schedule_and_proves_small_ones():
    """The greedy's schedule of a layer with idle NPUs gets shorter; on a tiny layer the whole
    model is solved and the search says it is the shortest re-timing."""
    p = layer((32, 4, 4, 32))
    cap = int(2.0 * 3 * max(p.footprint(o) for o in range(p.n_ops)))
    start = ooo_schedule(p, 2, cap, 8, dataflow="WS")
    out = retime_lns(start, time_limit=20, window=2, threads=2, seed=1)
    assert verify_flexer(out.schedule).ok
    assert out.schedule.latency < start.latency and out.improved >= 1
    assert [pt.incumbent for pt in out.trace] == sorted(
        (pt.incumbent for pt in out.trace), reverse=True
    )
    assert out.trace[0].incumbent == start.latency
    assert out.trace[-1].incumbent == out.schedule.latency
    tiny = layer((64, 8, 8, 32))  # 2 operations
    s = ooo_schedule(tiny, 2, int(tiny.data_bytes.sum()), 8)
    done = retime_lns(s, time_limit=20, threads=2)
    assert done.proved and verify_flexer(done.schedule).ok


def test_lns_stops_at_the_floor_and_at_its_limits():
    p = layer((32, 4, 4, 32))
    start = ooo_schedule(p, 1, 10**8, 10**6)  # one NPU, a fast channel: no idle time
    out = retime_lns(start, time_limit=5)
    if start.latency == latency_floor(start, False):
        assert out.proved and out.rounds == 0
    big = layer((32, 2, 2, 32), c=128, k=128, hw=16)  # 512 operations
    start = ooo_schedule(big, 4, int(3 * max(big.footprint(o) for o in range(big.n_ops))), 4)
    t0 = time.perf_counter()
    out = retime_lns(start, time_limit=1.5, threads=2)
    assert time.perf_counter() - t0 < 1.5 + 2.0  # one round's model building past the limit
    assert verify_flexer(out.schedule).ok and out.schedule.latency <= start.latency
    assert retime_lns(start, rounds=1, time_limit=None, round_limit=0.2).rounds == 1


@pytest.mark.parametrize(
    "kwargs", [{"rounds": 0}, {"window": 0}, {"round_limit": 0.0}, {"round_limit": -1.0}]
)
def test_bad_lns_arguments(kwargs):
    p = layer((64, 8, 8, 64))
    start = ooo_schedule(p, 2, 10**8, 8)
    with pytest.raises(ValueError, match="must be positive"):
        retime_lns(start, **kwargs)


def test_a_schedule_outside_the_time_model_is_a_clear_error():
    p = layer((32, 8, 8, 32))
    s = ooo_schedule(p, 2, 10**8, 8)
    s.residencies = [Residency(r.data, r.addr, r.size, r.start, r.start + 1)
                     for r in s.residencies]  # fmt: skip
    with pytest.raises(ValueError, match="lies outside every residency"):
        structure(s, False)


def test_solve_lns_on_a_tiled_layer_and_on_a_network_layer():
    """``solve(FlexerInstance, "flexer-lns")`` re-times its warm start (default the greedy's
    schedule), bounded by a bound that holds for every schedule; ``solve(FlexerLayer, …)`` is
    the beam's search re-timed: never worse than the beam by the paper's metric."""
    p = layer((32, 4, 4, 32))
    cap = int(2.0 * 3 * max(p.footprint(o) for o in range(p.n_ops)))
    inst = FlexerInstance(p, 2, cap, 8)
    warm = ooo_schedule(p, 2, cap, 8, dataflow=next(iter(DATAFLOWS)))
    res = solve(inst, "flexer-lns", time_limit=5, threads=2, warm_start=warm)
    assert res.solution is not None and verify_flexer(res.solution).ok
    assert res.objective == res.solution.latency <= warm.latency
    assert res.bound is not None and res.bound <= res.objective
    assert res.stats["lns_start_latency"] == warm.latency
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL)
    net = small_net(96, 96, 8)
    problem = FlexerLayer(net, net.layers[0], Settings(2, 40_000, 8, max_ops=32, beam_width=2))
    beam = solve(problem, "flexer-beam", time_limit=60)
    lns = solve(problem, "flexer-lns", time_limit=60, threads=2, seconds=2)
    assert verify_flexer(lns.solution).ok
    assert lns.objective <= beam.objective and lns.stats["tiling"] == beam.stats["tiling"]
    assert lns.stats["latency"] == lns.solution.latency
    with pytest.raises(ValueError, match="starts from beam or ooo"):
        solve(problem, "flexer-lns", start="static")
