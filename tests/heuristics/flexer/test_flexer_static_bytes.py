"""static_bytes: a static schedule's bytes without its times, equal to the timed schedule's."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from npusched.heuristics.flexer.ooo import NoFit, Pruned
from npusched.heuristics.flexer.search import lat_bound, search_layer
from npusched.heuristics.flexer.static import static_bytes, static_schedule
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.settings import STATIONARITY, Settings
from npusched.verify.flexer import verify_flexer
from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network

UNROLL = {"K": 32, "C": 32}
ORDERS = [",".join(p) for p in itertools.permutations(("K", "OY", "OX", "C"))]


def conv(c: int, k: int, hw: int, kernel: int) -> Network:
    pad = kernel // 2
    layer = Layer("conv", "conv", (INPUT,), out_channels=k, kernel=(kernel, kernel), pad=(pad,) * 4)
    return Network("small", (c, hw, hw), (layer,))


@settings(max_examples=60, deadline=None)
@given(
    c=st.sampled_from([32, 64, 96]),
    k=st.sampled_from([32, 64, 96]),
    hw=st.sampled_from([4, 7, 12]),
    kernel=st.sampled_from([1, 3]),
    tiles=st.tuples(
        st.sampled_from([32, 64]), st.integers(1, 6), st.integers(1, 6), st.sampled_from([16, 32])
    ),
    n=st.integers(1, 4),
    slack=st.floats(0.5, 6.0),
    order=st.sampled_from(ORDERS),
    stationary=st.sampled_from(STATIONARITY),
    bw=st.sampled_from([1.0, 8.0, 256.0]),
    prefetch=st.booleans(),
)
@example(  # partial sums spilled and reloaded: bytes beyond each tile once
    c=96, k=64, hw=12, kernel=3, tiles=(32, 3, 3, 32), n=2, slack=1.0, order="C,K,OY,OX",
    stationary="IS", bw=8.0, prefetch=False,
)  # fmt: skip
def test_static_bytes_are_the_timed_schedules(
    c, k, hw, kernel, tiles, n, slack, order, stationary, bw, prefetch
):
    """The bytes of the untimed replay equal the timed schedule's transfers, the schedule
    verifies, and the bandwidth (which moves every time) does not change them."""
    net = conv(c, k, hw, kernel)
    p = tiled_conv(net, net.layers[0], tiles, UNROLL)
    cap = int(slack * n * max(p.footprint(o) for o in range(p.n_ops)))
    try:
        sched = static_schedule(
            p, n, cap, bw, loop_order=order, stationary=stationary, prefetch=prefetch
        )
    except NoFit:
        with pytest.raises(NoFit):
            static_bytes(p, n, cap, bw, loop_order=order, stationary=stationary)
        return
    assert verify_flexer(sched).ok
    got = static_bytes(p, n, cap, bw, loop_order=order, stationary=stationary)
    assert got == sched.transfer_bytes
    assert got == static_bytes(p, n, cap, 2 * bw + 1, loop_order=order, stationary=stationary)
    s = Settings(n_npus=n, capacity=cap, bandwidth=bw, prefetch=prefetch)
    lat = lat_bound(p, s)
    # the bound never prunes the order it bounds, and prunes once the best is below it
    assert static_bytes(p, n, cap, bw, loop_order=order, stationary=stationary,
                        stop_above=(lat, lat * got + 1)) == got  # fmt: skip
    with pytest.raises(Pruned):
        static_bytes(p, n, cap, bw, loop_order=order, stationary=stationary,
                     stop_above=(lat, lat * got))  # fmt: skip


def test_the_replay_sees_spills_and_reloads():
    """The example above moves bytes beyond each tile once (so the equality covers spills)."""
    net = conv(96, 64, 12, 3)
    p = tiled_conv(net, net.layers[0], (32, 3, 3, 32), UNROLL)
    cap = int(1.0 * 2 * max(p.footprint(o) for o in range(p.n_ops)))
    got = static_bytes(p, 2, cap, 8.0, loop_order="C,K,OY,OX", stationary="IS")
    assert got > sum(p.onchip_bytes().values())
    sched = static_schedule(p, 2, cap, 8.0, loop_order="C,K,OY,OX", stationary="IS")
    assert sched.bytes_by_type()["psum"] > 0 and got == sched.transfer_bytes


@pytest.mark.parametrize("metric", ["latency*bytes", "bytes", "latency"])
def test_the_static_search_is_unchanged_by_the_bytes_bound(metric, monkeypatch):
    """The static search with the bound finds the schedule the search without it finds (the
    bound only sets aside orders that cannot beat the best), and times fewer schedules."""
    import npusched.heuristics.flexer.search as search

    net = conv(96, 64, 16, 3)
    s = Settings(n_npus=2, capacity=48 * 1024, bandwidth=8, max_ops=96, metric=metric)
    timed: list[int] = []
    real = search.run

    def counting(*args, **kwargs):
        timed.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "run", counting)
    fast = search_layer(net, net.layers[0], s, "static")
    n_fast = len(timed)
    monkeypatch.setattr(search, "_static_may_win", lambda *a: True)
    timed.clear()
    slow = search_layer(net, net.layers[0], s, "static")
    assert fast.objective == slow.objective and fast.stats["tiling"] == slow.stats["tiling"]
    assert fast.stats["dataflow"] == slow.stats["dataflow"]
    assert fast.solution is not None and verify_flexer(fast.solution).ok
    if metric != "latency":
        assert n_fast < len(timed)
