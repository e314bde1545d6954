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
from npusched.heuristics.tiling.search import (
    combo_bests,
    conv_layers,
    layer_space,
    search_tso_layer,
)
from npusched.problem.tiling import (
    TLE_SLICINGS,
    TLT_SCHEDULES,
    TsoLayer,
    conv_geometry,
    evaluate,
    evaluate_geom,
    get_filters,
    nmp_params,
    tle_slicing,
)
from npusched.solvers.result import Status
from npusched.verify.tiling import verify_tiling
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
    return round(search_tso_layer(layer, shape, ARCH, model).objective_us * MHZ)


def _checked(layer, shape, r, model="burst", tso_space=True):
    """``r.solution`` re-checked by the verifier against the layer and ``r``'s cycles; its
    ``(tle, tlt, T_R, T_C, T_N, T_M)`` (``None`` without a solution)."""
    if r.solution is None:
        return None
    problem = TsoLayer.from_layer(layer, shape, ARCH, model)
    verify_tiling(problem, r.solution, r.stats["objective_cycles"], tso_space).raise_if_failed()
    return r.solution.choice


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
    enumeration's best of that pair (combo_bests), the layer optimum equals search_tso_layer's, and
    the decoded tiles re-evaluate to it."""
    ex = solve_layer_cpsat(layer, shape, ARCH, warm=None, use_cutoff=False, time_limit=20.0)
    bests = {(b.tle, b.tlt): b.burst for b in combo_bests(layer, shape, ARCH)}
    assert len(ex.stats["pairs"]) == 9
    for o in ex.stats["pairs"]:
        ref = bests[(o["tle"], o["tlt"])]
        if ref is None:
            assert o["status"] == Status.INFEASIBLE, (o["tle"], o["tlt"])
        else:
            assert o["status"] == Status.OPTIMAL, (o["tle"], o["tlt"], o["status"])
            assert o["objective_cycles"] == ref[0], (o["tle"], o["tlt"])
    assert ex.status == Status.OPTIMAL
    assert ex.objective == ex.stats["objective_cycles"] == _enum_cycles(layer, shape)
    assert ex.bound == ex.objective
    choice = _checked(layer, shape, ex)
    assert choice is not None
    bd = evaluate(layer, shape, ARCH, *choice)
    assert bd.feasible and cycles_of(bd) == ex.objective
    assert bd.total_us == ex.stats["objective_us"]


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
    lc = search_tso_layer(layer, shape, ARCH)
    enum = round(lc.objective_us * MHZ)
    ex = solve_layer_cpsat(layer, shape, ARCH, warm=lc, time_limit=20.0)
    assert ex.status == Status.OPTIMAL
    assert ex.objective == enum and _checked(layer, shape, ex) == (
        lc.tle,
        lc.tlt,
        lc.T_R,
        lc.T_C,
        lc.T_N,
        lc.T_M,
    )
    assert ex.bound == ex.objective
    pairs = ex.stats["pairs"]
    assert (pairs[-1]["tle"], pairs[-1]["tlt"]) == (lc.tle, lc.tlt)
    assert all(o["cutoff"] == enum - 1 and o["status"] == Status.INFEASIBLE for o in pairs)
    assert not any(o["hinted"] for o in pairs)
    hx = solve_layer_cpsat(layer, shape, ARCH, warm=lc, time_limit=20.0, warm_mode="hint")
    assert hx.status == Status.OPTIMAL and hx.objective == enum
    _checked(layer, shape, hx)
    hinted = [o for o in hx.stats["pairs"] if o["hinted"]]
    assert len(hinted) == 1 and (hinted[0]["tle"], hinted[0]["tlt"]) == (lc.tle, lc.tlt)
    assert hinted[0]["cutoff"] is None and hinted[0]["objective_cycles"] == enum
    us, status = solve_layer_exact(layer, shape, ARCH, "burst", lc, 20.0, 2)
    assert status == "optimal" and us == lc.objective_us


@pytest.mark.parametrize("layer,shape", SMALL[:2] + SMALL[4:5], ids=["c3x3", "s2", "dw"])
def test_noburst_optimum_equals_enumeration(layer, shape):
    ex = solve_layer_cpsat(layer, shape, ARCH, "noburst", warm=None, time_limit=20.0)
    assert ex.status == Status.OPTIMAL
    assert ex.objective == _enum_cycles(layer, shape, "noburst")
    choice = _checked(layer, shape, ex, "noburst")
    bd = evaluate(layer, shape, ARCH, *choice, model="noburst")  # type: ignore[misc]
    assert cycles_of(bd) == ex.objective


def test_free_filters_never_dearer_and_sometimes_cheaper():
    """space="free" is a superset of Algorithm 3's space: its optimum is never higher, and on
    LeNet's C5 (16 × 5 × 5 → 120 filters of 5 × 5) it is strictly lower: a T_M below
    GetFilters' largest fitting one is cheaper there (18174 vs 18276 cycles)."""
    cheaper = 0
    for layer, shape in [SMALL[0], SMALL[4], SMALL[6], *_real("lenet", ["C5"])]:
        tso = solve_layer_cpsat(layer, shape, ARCH, warm=None, use_cutoff=False)
        free = solve_layer_cpsat(layer, shape, ARCH, warm=None, use_cutoff=False, space="free")
        assert tso.status == free.status == Status.OPTIMAL
        assert free.objective is not None and tso.objective is not None
        assert free.objective <= tso.objective
        _checked(layer, shape, tso)
        choice = _checked(layer, shape, free, tso_space=False)
        assert choice is not None
        bd = evaluate(layer, shape, ARCH, *choice)
        assert cycles_of(bd) == free.objective
        for a, b in zip(tso.stats["pairs"], free.stats["pairs"], strict=True):
            oa, ob = a["objective_cycles"], b["objective_cycles"]
            if oa is not None and ob is not None:
                cheaper += ob < oa
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
    n = mip.stats["candidates"]
    assert mip.stats["form"] == ("mip" if n <= MIP_MAX_BINARIES else "lp")
    assert mip.status == Status.OPTIMAL
    assert mip.backend == "highs"
    assert mip.stats["objective_cycles"] == _enum_cycles(layer, shape)
    assert mip.bound is not None
    assert mip.bound == pytest.approx(mip.objective, abs=1e-6)
    choice = _checked(layer, shape, mip)
    assert choice is not None
    assert cycles_of(evaluate(layer, shape, ARCH, *choice)) == mip.stats["objective_cycles"]


def test_mip_and_lp_forms_agree():
    layer, shape = SMALL[0]
    a = solve_layer_mip(layer, shape, ARCH, form="mip")
    b = solve_layer_mip(layer, shape, ARCH, form="lp")
    assert (a.stats["form"], b.stats["form"]) == ("mip", "lp")
    assert a.status == b.status == Status.OPTIMAL
    assert a.stats["objective_cycles"] == b.stats["objective_cycles"] == _enum_cycles(layer, shape)
    _checked(layer, shape, a)
    _checked(layer, shape, b)
    with pytest.raises(ValueError):
        solve_layer_mip(layer, shape, ARCH, form="qp")


def test_candidate_decode_rejects_fractions():
    layer, shape = SMALL[-1]
    m = CandidateChoiceMIP(layer_space(layer, shape, ARCH), NMP.freq_hz)
    x = m.hint(3)
    assert m.model.satisfies(x) and m.decode(x) == 3
    x[3], x[4] = 0.5, 0.5
    assert m.decode(x) is None
    x[3] = 0.0
    assert not m.model.satisfies(x)  # the choose-one row fails


# ---- statuses as the solver returned them -----------------------------------------------------


def test_status_is_optimal_only_when_every_pair_is_closed():
    """A short limit on a layer that takes CP-SAT seconds: whatever happens, "optimal" means
    every pair returned OPTIMAL or INFEASIBLE, the bound never exceeds the objective, and an
    open pair leaves the status "feasible" (or no solution)."""
    layer, shape = _real("yolov2", ["conv3"])[0]
    for limit, warm in itertools.product((0.05, 2.0), (True, None)):
        ex = solve_layer_cpsat(layer, shape, ARCH, warm=warm, time_limit=limit)
        closed = all(o["status"] in ("optimal", "infeasible") for o in ex.stats["pairs"])
        r = ex
        _checked(layer, shape, r)
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
        search_tso_layer(layer, shape, ARCH)
    ex = solve_layer_cpsat(layer, shape, ARCH)
    assert ex.status == Status.INFEASIBLE
    assert ex.objective is None and ex.solution is None
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
