"""Exact tiling models (npusched.formulations.tiling.exact) against TSO's enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from npusched.arch import load_arch
from npusched.formulations.tiling.exact import (
    MIP_MAX_BINARIES,
    CandidateChoiceMIP,
    TsoTileModel,
    bandwidth_fraction,
    cycles_of,
    solve_layer_cpsat,
    solve_layer_exact,
    solve_layer_mip,
)
from npusched.heuristics.tiling.search import combo_bests, conv_layers, layer_space, search_layer
from npusched.problem.tiling import (
    TLE_SLICINGS,
    TLT_SCHEDULES,
    conv_geometry,
    evaluate,
    evaluate_geom,
    get_filters,
    nmp_params,
    tle_slicing,
)
from npusched.solvers.result import Status
from npusched.workload import INPUT, Layer
from npusched.workload.zoo import load_network

ARCH = load_arch("tso-nmp-16")
NMP = nmp_params(ARCH)
MHZ = NMP.freq_hz / 1e6

#: Small convolutions covering every branch of the model: padding, stride, dilation, a kernel
#: wider than the input rows, depthwise (channel-coupled), grouped (groups run in turn), fc.
SMALL = [
    (Layer("c3x3", "conv", (INPUT,), 12, (3, 3), pad=(1, 1, 1, 1)), (5, 12, 12)),
    (Layer("s2", "conv", (INPUT,), 10, (3, 3), stride=(2, 2)), (6, 17, 15)),
    (Layer("dil", "conv", (INPUT,), 6, (3, 3), dilation=(2, 2)), (3, 13, 11)),
    (Layer("wide", "conv", (INPUT,), 20, (1, 1)), (9, 6, 90)),
    (Layer("dw", "conv", (INPUT,), 16, (3, 3), pad=(1, 1, 1, 1), groups=16), (16, 10, 10)),
    (Layer("grp", "conv", (INPUT,), 8, (3, 3), groups=2), (6, 9, 9)),
    (Layer("fc", "fc", (INPUT,), 30), (40, 1, 1)),
]


def _enum_cycles(layer, shape, model="burst") -> int:
    return round(search_layer(layer, shape, ARCH, model).objective_us * MHZ)


def _real(name: str, picks: list[str] | None = None):
    layers = conv_layers(load_network(name))
    if picks is None:
        return layers
    byname = {ly.name: (ly, sh) for ly, sh in layers}
    return [byname[p] for p in picks]


# ---- the encoding, candidate by candidate -----------------------------------------------------


@pytest.mark.parametrize("layer,shape", SMALL, ids=[ly.name for ly, _ in SMALL])
def test_model_objective_equals_evaluate_at_every_tile(layer, shape):
    """Fixing the tile sizes, the CP-SAT model's objective equals evaluate's cycles, and the tiles
    are feasible in the model exactly when evaluate says so (space "free": any T_M that fits;
    space "tso": only GetFilters' T_M)."""
    geom = conv_geometry(layer, shape)
    rng = np.random.default_rng(0)
    checked = 0
    for tle, tlt in [("KS", "OS"), ("OFM", "IS"), ("KS&OFM", "WS"), ("OFM", "OS")]:
        sl = tle_slicing(tle, geom, NMP)
        free = TsoTileModel(geom, NMP, tle, tlt, "burst", "free")
        tso = TsoTileModel(geom, NMP, tle, tlt, "burst", "tso")
        n_hi = -(-sl.F // geom.mg) if geom.coupled else geom.Nf
        for _ in range(12):
            t_m = int(rng.integers(1, sl.F + 1))
            t_n = -(-t_m // geom.mg) if geom.coupled else int(rng.integers(1, n_hi + 1))
            tiles = (
                int(rng.integers(1, sl.TLE_R + 1)),
                int(rng.integers(1, geom.C + 1)),
                t_n,
                t_m,
            )
            bd = evaluate_geom(geom, NMP, tle, tlt, *tiles, "burst")
            got = free.complete(tiles)
            assert (got is not None) == bd.feasible, (tle, tlt, tiles, bd.reason)
            if got is not None:
                assert got[1] == cycles_of(bd)
                assert NMP.us(got[1]) == bd.total_us
                checked += 1
            in_fits = bd.feasible or "IN tile" not in bd.reason
            if geom.coupled:
                want = bd.feasible
            else:
                gf = get_filters(geom, NMP, sl, tlt, *tiles[:3])
                want = gf == t_m and gf >= 1 and in_fits
            assert (tso.complete(tiles) is not None) == want, (tle, tlt, tiles)
    assert checked > 0


def test_noburst_objective_equals_evaluate():
    layer, shape = SMALL[1]
    geom = conv_geometry(layer, shape)
    m = TsoTileModel(geom, NMP, "KS", "OS", "noburst", "free")
    bd = evaluate_geom(geom, NMP, "KS", "OS", 3, 4, 2, 1, "noburst")
    got = m.complete((3, 4, 2, 1))
    assert bd.feasible and got is not None and got[1] == cycles_of(bd)
    assert got[1] < cycles_of(evaluate_geom(geom, NMP, "KS", "OS", 3, 4, 2, 1, "burst"))


# ---- optima against the enumeration -----------------------------------------------------------


def _check_against_enumeration(layer, shape) -> None:
    """Every pair solved cold (no hint, no cutoff): each pair's CP-SAT optimum equals the
    enumeration's best of that pair (combo_bests), the layer optimum equals search_layer's, and
    the decoded tiles re-evaluate to it."""
    ex = solve_layer_cpsat(layer, shape, ARCH, warm=None, use_cutoff=False, time_limit=20.0)
    bests = {(b.tle, b.tlt): b.burst for b in combo_bests(layer, shape, ARCH)}
    assert len(ex.combos) == 9
    for o in ex.combos:
        ref = bests[(o.tle, o.tlt)]
        if ref is None:
            assert o.status == Status.INFEASIBLE, (o.tle, o.tlt)
        else:
            assert o.status == Status.OPTIMAL, (o.tle, o.tlt, o.status)
            assert o.objective == ref[0], (o.tle, o.tlt)
    assert ex.result.status == Status.OPTIMAL
    assert ex.objective_cycles == _enum_cycles(layer, shape)
    assert ex.result.bound == ex.result.objective
    assert ex.choice is not None and ex.breakdown is not None
    bd = evaluate(layer, shape, ARCH, *ex.choice)
    assert bd.feasible and cycles_of(bd) == ex.objective_cycles
    assert bd.total_us == ex.result.objective


@pytest.mark.parametrize("layer,shape", SMALL, ids=[ly.name for ly, _ in SMALL])
def test_small_cold_optimum_equals_enumeration(layer, shape):
    _check_against_enumeration(layer, shape)


def test_lenet_cold_optimum_equals_enumeration():
    for layer, shape in _real("lenet"):
        _check_against_enumeration(layer, shape)


def test_resnet50_cold_optimum_equals_enumeration():
    for layer, shape in _real("resnet50", ["layer1.0.conv2", "fc"]):
        _check_against_enumeration(layer, shape)


@pytest.mark.parametrize(
    "layer,shape",
    _real("resnet50", ["conv1", "layer2.0.conv2", "layer3.0.downsample", "layer4.2.conv3"]),
    ids=["conv1", "layer2.0.conv2", "layer3.0.downsample", "layer4.2.conv3"],
)
def test_resnet50_warm_proves_enumeration(layer, shape):
    """Warm-started from the enumeration (default "cutoff"): CP-SAT certifies the warm start in
    its pair's model and proves every pair, its own included, has nothing cheaper; with "hint"
    the warm pair is solved hinted, without cutoff, to its optimum. The public entry point
    reports the same."""
    lc = search_layer(layer, shape, ARCH)
    enum = round(lc.objective_us * MHZ)
    ex = solve_layer_cpsat(layer, shape, ARCH, warm=lc, time_limit=20.0)
    assert ex.result.status == Status.OPTIMAL
    assert ex.objective_cycles == enum and ex.choice == (
        lc.tle,
        lc.tlt,
        lc.T_R,
        lc.T_C,
        lc.T_N,
        lc.T_M,
    )
    assert ex.result.bound == ex.result.objective
    assert (ex.combos[-1].tle, ex.combos[-1].tlt) == (lc.tle, lc.tlt)
    assert all(o.cutoff == enum - 1 and o.status == Status.INFEASIBLE for o in ex.combos)
    assert not any(o.hinted for o in ex.combos)
    hx = solve_layer_cpsat(layer, shape, ARCH, warm=lc, time_limit=20.0, warm_mode="hint")
    assert hx.result.status == Status.OPTIMAL and hx.objective_cycles == enum
    hinted = [o for o in hx.combos if o.hinted]
    assert len(hinted) == 1 and (hinted[0].tle, hinted[0].tlt) == (lc.tle, lc.tlt)
    assert hinted[0].cutoff is None and hinted[0].objective == enum
    us, status = solve_layer_exact(layer, shape, ARCH, "burst", lc, 20.0, 2)
    assert status == "optimal" and us == lc.objective_us


@pytest.mark.parametrize("layer,shape", SMALL[:2] + SMALL[4:5], ids=["c3x3", "s2", "dw"])
def test_noburst_optimum_equals_enumeration(layer, shape):
    ex = solve_layer_cpsat(layer, shape, ARCH, "noburst", warm=None, time_limit=20.0)
    assert ex.result.status == Status.OPTIMAL
    assert ex.objective_cycles == _enum_cycles(layer, shape, "noburst")
    bd = evaluate(layer, shape, ARCH, *ex.choice, model="noburst")  # type: ignore[misc]
    assert cycles_of(bd) == ex.objective_cycles


def test_free_filters_never_dearer_and_sometimes_cheaper():
    """space="free" is a superset of Algorithm 3's space: its optimum is never higher, and on
    LeNet's C5 (16 × 5 × 5 → 120 filters of 5 × 5) it is strictly lower: a T_M below
    GetFilters' largest fitting one is cheaper there (18174 vs 18276 cycles)."""
    cheaper = 0
    for layer, shape in [SMALL[0], SMALL[4], SMALL[6], *_real("lenet", ["C5"])]:
        tso = solve_layer_cpsat(layer, shape, ARCH, warm=None, use_cutoff=False)
        free = solve_layer_cpsat(layer, shape, ARCH, warm=None, use_cutoff=False, space="free")
        assert tso.result.status == free.result.status == Status.OPTIMAL
        assert free.objective_cycles is not None and tso.objective_cycles is not None
        assert free.objective_cycles <= tso.objective_cycles
        assert free.choice is not None
        bd = evaluate(layer, shape, ARCH, *free.choice)
        assert cycles_of(bd) == free.objective_cycles
        for a, b in zip(tso.combos, free.combos, strict=True):
            if a.objective is not None and b.objective is not None:
                cheaper += b.objective < a.objective
    assert cheaper >= 1


# ---- the MIP ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "layer,shape",
    SMALL + _real("lenet") + _real("resnet50", ["layer4.2.conv3"]),
    ids=[ly.name for ly, _ in SMALL]
    + ["lenet." + ly.name for ly, _ in _real("lenet")]
    + ["layer4.2.conv3"],
)
def test_mip_agrees(layer, shape):
    """The one-binary-per-candidate model on HiGHS finds the enumeration's optimum (binaries up
    to MIP_MAX_BINARIES candidates, the integral LP above), and its choice re-evaluates to it."""
    mip = solve_layer_mip(layer, shape, ARCH)
    n = mip.result.stats["candidates"]
    assert mip.result.stats["form"] == ("mip" if n <= MIP_MAX_BINARIES else "lp")
    assert mip.result.status == Status.OPTIMAL
    assert mip.result.backend == "highs"
    assert mip.objective_cycles == _enum_cycles(layer, shape)
    assert mip.result.bound is not None
    assert mip.result.bound == pytest.approx(mip.result.objective, abs=1e-6)
    assert mip.choice is not None
    assert cycles_of(evaluate(layer, shape, ARCH, *mip.choice)) == mip.objective_cycles


def test_mip_and_lp_forms_agree():
    layer, shape = SMALL[0]
    a = solve_layer_mip(layer, shape, ARCH, form="mip")
    b = solve_layer_mip(layer, shape, ARCH, form="lp")
    assert (a.result.stats["form"], b.result.stats["form"]) == ("mip", "lp")
    assert a.result.status == b.result.status == Status.OPTIMAL
    assert a.objective_cycles == b.objective_cycles == _enum_cycles(layer, shape)
    with pytest.raises(ValueError):
        solve_layer_mip(layer, shape, ARCH, form="qp")


def test_candidate_decode_rejects_fractions():
    layer, shape = SMALL[-1]
    m = CandidateChoiceMIP(layer_space(layer, shape, ARCH), NMP.freq_hz)
    x = np.zeros(m.x.size)
    x[3] = 1.0
    assert m.decode(x) == 3
    x[3], x[4] = 0.5, 0.5
    assert m.decode(x) is None


# ---- statuses as the solver returned them -----------------------------------------------------


def test_status_is_optimal_only_when_every_pair_is_closed():
    """A short limit on a layer that takes CP-SAT seconds: whatever happens, "optimal" means
    every pair returned OPTIMAL or INFEASIBLE, the bound never exceeds the objective, and an
    open pair leaves the status "feasible" (or no solution)."""
    layer, shape = _real("yolov2", ["conv3"])[0]
    for limit, warm in itertools.product((0.05, 2.0), (True, None)):
        ex = solve_layer_cpsat(layer, shape, ARCH, warm=warm, time_limit=limit)
        closed = all(o.status in (Status.OPTIMAL, Status.INFEASIBLE) for o in ex.combos)
        r = ex.result
        assert (r.status == Status.OPTIMAL) == (closed and r.objective is not None)
        if r.objective is not None:
            assert r.bound is not None and r.bound <= r.objective
        if not closed:
            assert r.status in (Status.FEASIBLE, Status.TIME_LIMIT_NO_SOLUTION)
            if r.objective is not None:
                assert r.bound < r.objective


def test_infeasible_layer():
    """A 1 × 5000 kernel: one IN row (≥ 5000 16-bit elements) and one filter overflow the
    8 KB MB0 and MB1 at any tile size, so every pair is infeasible; the enumeration agrees."""
    layer = Layer("huge", "conv", (INPUT,), 4, (1, 5000))
    shape = (1, 1, 9000)
    with pytest.raises(ValueError):
        search_layer(layer, shape, ARCH)
    ex = solve_layer_cpsat(layer, shape, ARCH)
    assert ex.result.status == Status.INFEASIBLE
    assert ex.result.objective is None and ex.choice is None
    assert solve_layer_exact(layer, shape, ARCH) == (math.inf, "infeasible")


def test_bandwidth_fraction():
    assert bandwidth_fraction(17.0) == 17
    assert bandwidth_fraction(12.8) == bandwidth_fraction(64 / 5)
    with pytest.raises(ValueError):
        bandwidth_fraction(math.pi)
    with pytest.raises(ValueError):
        bandwidth_fraction(0.0)


def test_unknown_arguments():
    geom = conv_geometry(*SMALL[0])
    with pytest.raises(ValueError):
        TsoTileModel(geom, NMP, "KS", "XS")
    with pytest.raises(ValueError):
        TsoTileModel(geom, NMP, "KS", "OS", space="huge")
    with pytest.raises(ValueError):
        solve_layer_cpsat(*SMALL[0], ARCH, warm_mode="guess")
    assert set(TLE_SLICINGS) == {"KS", "KS&OFM", "OFM"} and len(TLT_SCHEDULES) == 3
