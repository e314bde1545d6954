"""Flexer's methods behind ``solve()`` (npusched.methods.flexer): each equals the direct call it
wraps on a small layer, every schedule it returns verifies, and unknown options raise."""

from __future__ import annotations

import pytest

from npusched import solve
from npusched.formulations.flexer.offline import offline_bound
from npusched.formulations.flexer.schedule import schedule_exact
from npusched.formulations.flexer.spill import solve_spill_exact
from npusched.heuristics.flexer.ooo import ooo_schedule
from npusched.heuristics.flexer.search import search_layer
from npusched.methods.flexer import search_network, verify_choices
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.layer import FlexerInstance, SpillRequest
from npusched.problem.flexer.residency import ResidencyPlan, ResidencyProblem, index_order
from npusched.problem.flexer.settings import FlexerLayer, Settings
from npusched.solvers.result import Status
from npusched.verify.flexer import verify_flexer
from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network

UNROLL = {"K": 32, "C": 32}


def small_net(c: int = 64, k: int = 64, hw: int = 8) -> Network:
    conv = Layer("conv", "conv", (INPUT,), out_channels=k, kernel=(3, 3), pad=(1, 1, 1, 1))
    return Network("small", (c, hw, hw), (conv,))


def settings() -> Settings:
    return Settings(n_npus=2, capacity=96 * 1024, bandwidth=16, max_ops=16)


@pytest.mark.parametrize("kind", ["ooo", "static"])
def test_layer_search_equals_search_layer(kind):
    net = small_net()
    s = settings()
    res = solve(FlexerLayer(net, net.layers[0], s), f"flexer-{kind}", time_limit=None)
    direct = search_layer(net, net.layers[0], s, kind)
    assert res.status is Status.FEASIBLE and res.method == f"flexer-{kind}"
    assert res.objective == direct.objective and res.bound == direct.bound
    assert res.stats["tiling"] == direct.stats["tiling"]
    assert res.stats["dataflow"] == direct.stats["dataflow"]
    assert res.solution is not None and verify_flexer(res.solution).ok
    assert res.solution.metric() == res.objective


def test_ooo_params_override_the_settings():
    net = small_net()
    s = settings()
    res = solve(FlexerLayer(net, net.layers[0], s), "flexer-ooo", priority="min-spill")
    direct = search_layer(
        net, net.layers[0], Settings(**{**s.__dict__, "priority": "min-spill"}), "ooo"
    )
    assert res.objective == direct.objective
    with pytest.raises(ValueError, match="priority"):
        solve(FlexerLayer(net, net.layers[0], s), "flexer-ooo", priority="fastest")


def test_cpsat_equals_schedule_exact():
    net = small_net()
    p = tiled_conv(net, net.layers[0], (32, 8, 4, 32), UNROLL)
    cap = int(p.data_bytes.sum())
    heur = ooo_schedule(p, 2, cap, 8)
    res = solve(FlexerInstance(p, 2, cap, 8), "flexer-cpsat", time_limit=20, warm_start=heur)
    direct = schedule_exact(p, 2, cap, 8, time_limit=20, hint=heur)
    assert res.status is direct.status is Status.OPTIMAL
    assert res.objective == direct.objective == res.bound
    assert res.solution is not None and verify_flexer(res.solution).ok
    assert res.stats["all_fit"]
    with pytest.raises(ValueError, match="warm start"):
        solve(FlexerInstance(p, 2, cap, 8), "flexer-cpsat", warm_start="not a schedule")


def test_spill_equals_solve_spill_exact():
    m = (
        [4, 2, 2, 8, 4],
        [0, 3, 1, 2, 0],
        [True, True, True, False, True],
        [False, True, True, True, True],
        5,
    )
    res = solve(SpillRequest(*m), "flexer-spill")
    direct = solve_spill_exact(*m)
    assert res.status is direct.status is Status.OPTIMAL
    assert res.solution == direct.solution and res.stats["key"] == direct.stats["key"]
    assert solve(SpillRequest(*m), "flexer-spill", "cbc").solution == res.solution


def test_offline_equals_offline_bound():
    net = small_net()
    p = tiled_conv(net, net.layers[0], (32, 4, 4, 32), UNROLL)
    order = index_order(p, 2)
    cap = int(p.data_bytes.sum()) // 2
    res = solve(ResidencyProblem(p, order, cap), "flexer-offline", "cbc")
    direct = offline_bound(p, order, cap, backend="cbc")
    assert res.status is direct.status is Status.OPTIMAL
    assert res.objective == direct.objective and res.bound == direct.bound
    assert isinstance(res.solution, ResidencyPlan)
    assert res.solution.gaps.over_capacity(res.solution.kept, cap).size == 0
    cont = solve(ResidencyProblem(p, order, cap), "flexer-offline", "cpsat", contiguous=True)
    assert cont.objective is not None and cont.objective >= res.objective


def test_unknown_options_raise():
    net = small_net()
    problem = FlexerLayer(net, net.layers[0], settings())
    with pytest.raises(ValueError, match="no option"):
        solve(problem, "flexer-static", priority="default")
    with pytest.raises(ValueError, match="no option"):
        solve(SpillRequest([1], [0], [True], [False], 1), "flexer-spill", contiguous=True)


def test_network_search_verifies():
    net = small_net()
    res = search_network(net, settings(), workers=1)
    assert res.complete and res.distinct == 1
    assert verify_choices(res) == 2
    out = res.to_json()
    assert out["total"]["compared_layers"] == 1
    tot = out["total"]
    assert tot["latency_bound"] == res.layers[0].ooo.stats["latency_bound"] > 0
    assert out["layers"][0]["latency_bound"] == tot["latency_bound"]
    assert tot["speedup"] <= tot["speedup_bound"] == tot["static_latency"] / tot["latency_bound"]
    assert out["layers"][0]["tiling"] == list(res.layers[0].ooo.stats["tiling"])


def test_zigzag_settings_carry_their_lpf_limit(monkeypatch):
    from npusched.arch import load_arch
    from npusched.costmodel.models import ComputeSteps
    from npusched.heuristics.flexer import search

    arch = load_arch("flexer-arch5")
    asked = []
    monkeypatch.setattr(search, "_cost", lambda *a: asked.append(a) or ComputeSteps())
    net = small_net()
    s = Settings.from_arch(arch, cost="zigzag", lpf_limit=3, max_ops=16)
    search.layer_problem(net, net.layers[0], (32, 8, 8, 32), s)
    assert asked and asked[0][2] == 3
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="lpf_limit"):
            Settings.from_arch(arch, cost="zigzag", lpf_limit=bad)
