"""``flexer-beam`` (npusched.heuristics.flexer.beam): every schedule verifies, none is worse than
the greedy's on the same tiling and dataflow by the metric, width = depth = 1 is the greedy, the
searches and ``solve()`` run it, a deadline stops it with the best verified schedule marked
incomplete, and bad widths or depths are refused (the bench: one line, exit 2)."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from npusched import solve
from npusched.bench.flexer import main as bench_main
from npusched.heuristics.flexer import engine
from npusched.heuristics.flexer.beam import beam_schedule
from npusched.heuristics.flexer.ooo import DATAFLOWS, NoFit, ooo_schedule
from npusched.heuristics.flexer.search import search_layer
from npusched.methods.flexer import search_network, verify_choices
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.settings import FlexerLayer, Settings
from npusched.solvers.result import Status
from npusched.verify.flexer import verify_flexer
from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network

UNROLL = {"K": 32, "C": 32}


def net_of(c: int, k: int, hw: int, kernel: int = 3) -> Network:
    pad = kernel // 2
    conv = Layer("conv", "conv", (INPUT,), out_channels=k, kernel=(kernel, kernel), pad=(pad,) * 4)
    return Network("small", (c, hw, hw), (conv,))


def verified(sched):
    rep = verify_flexer(sched)
    assert rep.ok, rep.violations[:5]
    assert (rep.latency, rep.transfer_bytes) == (sched.latency, sched.transfer_bytes)
    assert sorted(o for ops in sched.order for o in ops) == list(range(sched.problem.n_ops))
    return sched


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("dataflow", list(DATAFLOWS))
def test_beam_verifies_and_is_never_worse_than_the_greedy(n, dataflow):
    net = net_of(96, 96, 16)
    p = tiled_conv(net, net.layers[0], (32, 8, 8, 32), UNROLL)  # 36 ops
    cap = 3 * p.footprint(0) * n // 2  # little more than one set's operands: spills
    greedy = ooo_schedule(p, n, cap, 8, dataflow=dataflow)
    for w, d in [(2, 1), (3, 2), (4, 3)]:
        b = verified(beam_schedule(p, n, cap, 8, width=w, depth=d, dataflow=dataflow))
        assert b.metric() <= greedy.metric()


@settings(max_examples=25, deadline=None)
@example(c=64, k=96, hw=12, th=2, n=2, room=2.0, w=2, d=1, prefetch=False)  # NoFit off the greedy
@given(
    c=st.sampled_from([32, 64, 96]),
    k=st.sampled_from([32, 64, 96]),
    hw=st.sampled_from([4, 8, 12]),
    th=st.sampled_from([2, 4, 8]),
    n=st.integers(1, 4),
    room=st.floats(1.0, 4.0),
    w=st.integers(1, 4),
    d=st.integers(1, 3),
    prefetch=st.booleans(),
)
def test_random_layers_beam_verifies_and_beats_or_ties_the_greedy(
    c, k, hw, th, n, room, w, d, prefetch
):
    net = net_of(c, k, hw)
    p = tiled_conv(net, net.layers[0], (32, th, th, 32), UNROLL)
    cap = int(room * max(p.footprint(o) for o in range(p.n_ops)))
    try:
        greedy = ooo_schedule(p, n, cap, 8, prefetch=prefetch)
    except NoFit:
        return
    b = verified(beam_schedule(p, n, cap, 8, width=w, depth=d, prefetch=prefetch))
    assert b.metric() <= greedy.metric()


def test_width_and_depth_one_is_the_greedy():
    net = net_of(64, 64, 8)
    p = tiled_conv(net, net.layers[0], (32, 4, 4, 32), UNROLL)
    for n, df in itertools.product([2, 4], DATAFLOWS):
        g = ooo_schedule(p, n, 2 * p.footprint(0) * n, 8, dataflow=df)
        b = beam_schedule(p, n, 2 * p.footprint(0) * n, 8, width=1, depth=1, dataflow=df)
        assert b.order == g.order and (b.start == g.start).all()
        assert b.transfers == g.transfers


def small_settings(**kw) -> Settings:
    return Settings(n_npus=2, capacity=96 * 1024, bandwidth=16, max_ops=16, **kw)


@pytest.mark.parametrize("top", [0, 1, 16])
def test_solve_beam_is_verified_and_at_least_as_good_as_ooo(top):
    net = net_of(64, 64, 8)
    problem = FlexerLayer(net, net.layers[0], small_settings())
    beam = solve(problem, "flexer-beam", time_limit=None, width=3, depth=2, top=top)
    greedy = solve(problem, "flexer-ooo", time_limit=None)
    assert beam.status is Status.FEASIBLE and beam.method == "flexer-beam"
    assert beam.stats["complete"]
    assert beam.solution is not None and verify_flexer(beam.solution).ok
    assert beam.solution.metric() == beam.objective <= greedy.objective
    s = small_settings(beam_width=3, beam_depth=2, beam_top=top)
    assert search_layer(net, net.layers[0], s, "beam").objective == beam.objective


def test_search_network_runs_the_beam_with_the_static_baseline():
    net = net_of(64, 64, 8)
    res = search_network(net, small_settings(), kinds=("beam", "static"), workers=1)
    assert res.layers[0].ooo is not None and res.layers[0].ooo.method == "flexer-beam"
    assert verify_choices(res) == 2
    with pytest.raises(ValueError, match="kinds"):
        search_network(net, small_settings(), kinds=("ooo", "beam"), workers=1)


class _Clock:
    """``time.time()`` that passes the deadline after ``ticks`` readings."""

    def __init__(self, ticks: int) -> None:
        self.ticks = ticks

    def time(self) -> float:
        self.ticks -= 1
        return 0.0 if self.ticks > 0 else 1e12


@pytest.mark.parametrize("ticks, found", [(1, False), (40, True)])
def test_a_deadline_returns_the_best_verified_schedule_marked_incomplete(monkeypatch, ticks, found):
    net = net_of(64, 64, 8)
    monkeypatch.setattr(engine, "time", _Clock(ticks))  # the schedules' clock only
    r = search_layer(net, net.layers[0], small_settings(), "beam", deadline=time.time() + 3600)
    assert not r.stats["complete"]
    assert (r.solution is not None) is found
    if r.solution is None:
        assert r.status is Status.TIME_LIMIT_NO_SOLUTION
    else:
        assert r.status is Status.FEASIBLE and verify_flexer(r.solution).ok
        assert r.solution.metric() == r.objective


def test_bad_width_or_depth():
    net = net_of(64, 64, 8)
    p = tiled_conv(net, net.layers[0], (32, 4, 4, 32), UNROLL)
    for w, d in [(0, 2), (2, 0), (-1, -1)]:
        with pytest.raises(ValueError, match="width and depth"):
            beam_schedule(p, 2, 10**6, 8, width=w, depth=d)
        with pytest.raises(ValueError, match="width and depth"):
            small_settings(beam_width=w, beam_depth=d)
    problem = FlexerLayer(net, net.layers[0], small_settings())
    with pytest.raises(ValueError, match="beam width"):
        solve(problem, "flexer-beam", width=0)
    with pytest.raises(ValueError, match="top"):
        solve(problem, "flexer-beam", top=-1)
    with pytest.raises(ValueError, match="beam_top"):
        small_settings(beam_top=-1)


@pytest.mark.parametrize(
    "flag, value", [("--beam-width", "0"), ("--beam-depth", "0"), ("--beam-top", "-1")]
)
def test_bench_refuses_a_bad_beam_in_one_line(capsys, flag, value):
    argv = ["explain", "--network", "resnet50", "--arch", "arch5", "--scheduler", "beam"]
    assert bench_main([*argv, flag, value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must be >= " in err
