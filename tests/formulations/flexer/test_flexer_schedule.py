"""CP-SAT schedules of small tiled layers (npusched.formulations.flexer.schedule)."""

from __future__ import annotations

import pytest

from npusched.formulations.flexer.schedule import schedule_exact
from npusched.heuristics.flexer.ooo import ooo_schedule
from npusched.heuristics.flexer.search import lat_bound
from npusched.heuristics.flexer.static import static_schedule
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.settings import Settings
from npusched.solvers.result import Status
from npusched.verify.flexer import verify_flexer
from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network

UNROLL = {"K": 32, "C": 32}


def small(tiles, c=64, k=64, hw=8):
    conv = Layer("conv", "conv", (INPUT,), out_channels=k, kernel=(3, 3), pad=(1, 1, 1, 1))
    net = Network("small", (c, hw, hw), (conv,))
    return tiled_conv(net, conv, tiles, UNROLL)


@pytest.mark.parametrize(
    ("tiles", "n", "prefetch"),
    [((32, 8, 4, 32), 2, False), ((32, 4, 4, 32), 4, False), ((64, 4, 4, 32), 4, True)],
)
def test_optimal_schedule_verifies_and_beats_the_heuristics(tiles, n, prefetch):
    p = small(tiles)
    cap = int(p.data_bytes.sum())  # every tile fits at once
    ooo = ooo_schedule(p, n, cap, 8, prefetch=prefetch)
    res = schedule_exact(p, n, cap, 8, prefetch=prefetch, time_limit=20, hint=ooo)
    assert res.stats["all_fit"] and res.solution is not None
    rep = verify_flexer(res.solution)
    assert rep.ok, rep.violations[:5]
    assert rep.latency == res.objective == res.solution.latency
    assert res.solution.transfer_bytes == sum(p.onchip_bytes().values())
    s = Settings(n_npus=n, capacity=cap, bandwidth=8, prefetch=prefetch)
    assert res.objective >= lat_bound(p, s)
    assert res.status is Status.OPTIMAL  # these instances are proved in about a second
    assert res.bound == res.objective
    static = static_schedule(p, n, cap, 8, loop_order="K,OY,OX,C", stationary="WS")
    assert res.objective <= ooo.latency and res.objective <= static.latency


def test_infeasible_and_time_limit():
    p = small((64, 8, 8, 64))
    res = schedule_exact(p, 2, int(p.data_bytes.max()) - 1, 8, time_limit=10)
    assert res.status is Status.INFEASIBLE and res.solution is None and not res.stats["all_fit"]
    p = small((32, 4, 4, 32))  # 16 operations on 2 NPUs: not proved within a second
    res = schedule_exact(p, 2, int(p.data_bytes.sum()), 8, time_limit=1.0)
    assert res.runtime_s < 3.0
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT_NO_SOLUTION)
    if res.solution is not None:
        assert verify_flexer(res.solution).ok


def test_tight_buffer_still_verifies():
    p = small((32, 8, 4, 32))
    cap = int(p.data_bytes.sum()) * 3 // 5  # not every tile at once
    res = schedule_exact(p, 2, cap, 8, time_limit=20)
    assert not res.stats["all_fit"]
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE, Status.INFEASIBLE)
    if res.solution is not None:
        rep = verify_flexer(res.solution)
        assert rep.ok, rep.violations[:5]
        assert rep.peak_bytes <= cap


def test_bad_input():
    with pytest.raises(ValueError, match="positive"):
        schedule_exact(small((32, 8, 8, 32)), 0, 10**6, 8)
