"""``solve(TsoLayer, "tso-enum" | "tso-exact")`` and ``tile_network`` (npusched.methods.tiling):
one Result per layer, equal to TSO's enumeration, every solution re-checked by the verifier."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import pytest

from npusched import solve
from npusched.arch import load_arch
from npusched.heuristics.tiling.search import conv_layers, search_tso_layer
from npusched.methods.tiling import TsoEnumParams, TsoExactParams, tile_network
from npusched.problem.tiling import TsoLayer
from npusched.solvers.result import Status
from npusched.verify.tiling import verify_tiling
from npusched.workload import INPUT, Layer
from npusched.workload.zoo import load_network

ARCH = load_arch("tso-nmp-16")
LENET = conv_layers(load_network("lenet"))
DW = (Layer("dw", "conv", (INPUT,), 16, (3, 3), pad=(1, 1, 1, 1), groups=16), (16, 10, 10))


def _problem(layer, shape, model="burst", **fix):
    return TsoLayer.from_layer(layer, shape, ARCH, model, **fix)


def _verified(problem, r, tso_space=True):
    assert r.solution is not None
    verify_tiling(problem, r.solution, r.objective, tso_space).raise_if_failed()
    return r.solution


@pytest.mark.parametrize("model", ["burst", "noburst"])
@pytest.mark.parametrize("layer,shape", [*LENET, DW], ids=[*(ly.name for ly, _ in LENET), "dw"])
def test_enum_and_exact_equal_the_enumeration(layer, shape, model):
    p = _problem(layer, shape, model)
    lc = search_tso_layer(layer, shape, ARCH, model)
    enum = solve(p, "tso-enum")
    assert enum.status == Status.OPTIMAL and enum.method == "tso-enum"
    assert enum.objective == enum.bound and enum.gap == 0
    assert "exhaustive" in enum.message
    assert _verified(p, enum) == lc
    cycles = enum.objective
    for backend in ("cpsat", "highs"):
        ex = solve(p, "tso-exact", backend, time_limit=20.0)
        assert ex.status == Status.OPTIMAL, (backend, ex.message)
        assert (ex.method, ex.backend) == ("tso-exact", backend)
        assert ex.objective == pytest.approx(cycles, abs=1e-6)
        assert ex.bound == pytest.approx(cycles, abs=1e-6)
        assert _verified(p, ex).objective_us == lc.objective_us


def test_exact_honours_the_fixed_strategy_and_the_warm_start():
    layer, shape = LENET[1]
    p = _problem(layer, shape, fix_tle="OFM")
    enum = solve(p, "tso-enum")
    assert _verified(p, enum).tle == "OFM"
    ex = solve(p, "tso-exact", warm_start=enum.solution, time_limit=20.0)
    assert ex.status == Status.OPTIMAL and ex.objective == enum.objective
    assert {o["tle"] for o in ex.stats["pairs"]} == {"OFM"} and len(ex.stats["pairs"]) == 3
    assert ex.stats["warm_cycles"] == enum.objective
    free = solve(p, "tso-exact", space="free", use_cutoff=False, warm=False, time_limit=20.0)
    assert free.objective <= ex.objective
    _verified(p, free, tso_space=False)


def test_params_and_errors():
    p = _problem(*LENET[0])
    with pytest.raises(ValueError, match="no option"):
        solve(p, "tso-enum", space="free")
    with pytest.raises(ValueError, match="no option"):
        solve(p, "tso-exact", bogus=1)
    with pytest.raises(ValueError):
        solve(p, "tso-exact", params=TsoEnumParams())
    with pytest.raises(ValueError):
        solve(p, "tso-exact", "gurobi")
    with pytest.raises(ValueError, match="unknown DRAM model"):
        _problem(*LENET[0], model="fast")
    with pytest.raises(ValueError, match="unknown TLE"):
        _problem(*LENET[0], fix_tle="XX")
    assert solve(p).method == "tso-enum"  # the default for a TsoLayer
    r = solve(p, "tso-exact", params=TsoExactParams(warm_mode="hint"), time_limit=20.0)
    assert r.status == Status.OPTIMAL and sum(o["hinted"] for o in r.stats["pairs"]) == 1
    _verified(p, r)


def test_infeasible_layer():
    p = _problem(Layer("huge", "conv", (INPUT,), 4, (1, 5000)), (1, 1, 9000))
    r = solve(p, "tso-enum")
    assert r.status == Status.INFEASIBLE and r.solution is None and r.objective is None
    assert solve(p, "tso-exact", "highs").status == Status.INFEASIBLE


def test_network_parallel_equals_sequential():
    net = load_network("lenet")
    seq = tile_network(net, ARCH, workers=1)
    with ThreadPoolExecutor(2) as ex:
        par = tile_network(net, ARCH, executor=ex)
    pool = tile_network(net, ARCH, "burst", workers=2)
    assert [lc.name for lc in seq.layers] == ["C1", "C3", "C5", "F6", "output"]
    assert all(r.method == "tso-enum" and r.status == Status.OPTIMAL for r in seq.results)
    for other in (par, pool):
        assert [dataclasses.astuple(x) for x in other.layers] == [
            dataclasses.astuple(x) for x in seq.layers
        ]
    for (layer, shape), r in zip(LENET, seq.results, strict=True):
        _verified(_problem(layer, shape), r)
    assert seq.total_time_us == pytest.approx(sum(lc.time_us for lc in seq.layers))
    nb = tile_network(net, ARCH, "noburst", workers=1)
    assert seq.total_time_us <= nb.total_time_us
    with pytest.raises(ValueError, match="unknown TLE"):
        tile_network(net, ARCH, fix_tle="XX", workers=1)


def test_layers_equal_but_for_their_name_share_one_search():
    """ResNet-50 repeats its blocks' convolutions: each repeat gets, under its own name, what a
    search of its own finds (and that choice verifies on its own problem)."""
    net = load_network("resnet50")
    tiled = tile_network(net, ARCH, workers=1)
    layers = conv_layers(net)
    assert [lc.name for lc in tiled.layers] == [ly.name for ly, _ in layers]
    seen: set[TsoLayer] = set()
    repeats = 0
    for (layer, shape), r in zip(layers, tiled.results, strict=True):
        p = TsoLayer.from_layer(layer, shape, ARCH)
        key = dataclasses.replace(p, geom=dataclasses.replace(p.geom, name=""))
        if key in seen:
            repeats += 1
            own = solve(p, "tso-enum")
            assert dataclasses.astuple(r.solution) == dataclasses.astuple(own.solution)
            assert r.objective == own.objective
            _verified(p, r)
        seen.add(key)
    assert repeats >= 20
