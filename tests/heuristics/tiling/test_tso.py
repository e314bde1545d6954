"""TSO's tiling model (npusched.problem.tiling, npusched.heuristics.tiling): hand-checked
equations, the vectorised search against a brute-force loop over ``evaluate``, the paper's
orderings, and ``npusched tile``.

Paper: Sousa et al., "Tensor Slicing and Optimization for Multicore NPUs" (seed
``004_442fbcc29e97fffd.txt``).
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from npusched.arch import load_arch
from npusched.cli import build_parser
from npusched.cli import main as cli_main
from npusched.cli import tile as tile_cli
from npusched.common.errors import InputError
from npusched.costmodel import calc_data_transfer, tile_burst_count
from npusched.heuristics.tiling.search import layer_space, search_tso_layer
from npusched.problem.tiling import (
    TLE_SLICINGS,
    TLT_SCHEDULES,
    conv_geometry,
    evaluate,
    evaluate_geom,
    get_filters,
    nmp_params,
    plane_bursts,
    tle_slicing,
)
from npusched.workload import INPUT, Layer, Network
from npusched.workload.zoo import load_network, write_network

NMP = load_arch("tso-nmp-16")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---- the InceptionV3 example of §VI, by hand -----------------------------------------------

#: 5th conv of InceptionV3 (§VI): 80 IFMs of 73x73, 192 filters 80x3x3, stride 1, no padding.
C5 = Layer("c5", "conv", (INPUT,), 192, (3, 3), bias=False)
C5_IN = (80, 73, 73)


def test_algorithm2_slices_of_the_inception_example():
    geom = conv_geometry(C5, C5_IN)
    assert (geom.M, geom.R, geom.C) == (192, 71, 71)
    nmp = nmp_params(NMP)
    assert (nmp.E, nmp.P, nmp.mb0, nmp.mb1, nmp.mb2, nmp.e) == (4, 8, 8192, 8192, 8192, 2)
    got = {p: tle_slicing(p, geom, nmp) for p in TLE_SLICINGS}
    # Algorithm 2 with #TLE = 4: KS ceil(M/4), R; KS&OFM ceil(M/2), ceil(R/2); OFM M, ceil(R/4)
    assert (cdiv(192, 4), 71) == (got["KS"].TLE_W, got["KS"].TLE_R)
    assert (cdiv(192, 2), cdiv(71, 2)) == (got["KS&OFM"].TLE_W, got["KS&OFM"].TLE_R)
    assert (192, cdiv(71, 4)) == (got["OFM"].TLE_W, got["OFM"].TLE_R)
    for s in got.values():  # filters of the busiest TLT: ceil(TLE_W / #TLT)
        assert cdiv(s.TLE_W, 8) == s.F and s.P_a == 8 and s.E_a == 4


def test_inception_example_os_by_hand():
    """TSO-burst's IN tile of §VI, 14 x 4 x 73 (T_N, T_H, T_L): T_R = 2, T_C = 71."""
    b = evaluate(C5, C5_IN, NMP, "KS", "OS", 2, 71, 14, 6)
    assert b.feasible
    # eq. 1: T_H = (T_R - 1) S + K, T_L = (T_C - 1) S + K: the whole 73-wide row
    T_H, T_L = (2 - 1) * 1 + 3, (71 - 1) * 1 + 3
    assert (T_H, T_L) == (4, 73)
    # eq. 3-5 with E_a = 4 TLEs, P_a = 8 TLTs, F = 48 / 8 = 6 filters per TLT
    n_r, n_c, n_n, n_m = cdiv(71, 2), cdiv(71, 71), cdiv(80, 14), cdiv(6, 6)
    assert (b.alpha_in, b.alpha_w, b.alpha_out) == (
        4 * n_r * n_c * n_n * n_m,  # IN multicast: once per TLE
        4 * 8 * n_r * n_c * n_n * n_m,  # W: each TLT its own filters
        4 * 8 * n_r * n_c * n_m,
    )
    # Algorithm 4 at 17 B/cycle, CAS 14 cycles, 128 B bursts
    in_bytes, in_bursts = 14 * 4 * 73 * 2, 14 * cdiv(4 * 73 * 2, 128)  # = 70, as §VI says
    assert in_bursts == 70
    assert b.in_cycles == cdiv(in_bytes, 17) + in_bursts * 14
    w_bytes, w_bursts = 6 * 14 * 9 * 2, 6 * cdiv(14 * 9 * 2, 128)  # rows of T_N K^2, not whole
    assert b.w_cycles == cdiv(w_bytes, 17) + w_bursts * 14
    out_bytes, out_bursts = 6 * 2 * 71 * 2, 6 * cdiv(2 * 71 * 2, 128)  # full width: per channel
    assert b.out_cycles == cdiv(out_bytes, 17) + out_bursts * 14
    # eq. 7: Tile_MAC = T_N T_M ceil(T_R T_C K^2 / 8); eq. 8: the tiles one TLT runs
    tile_mac = 14 * 6 * cdiv(2 * 71 * 9, 8)
    assert b.mac_cycles == n_r * n_c * n_n * n_m * tile_mac
    # eq. 9 and eq. 6 (T_SW left out), 1 GHz
    dram = b.alpha_in * b.in_cycles + b.alpha_w * b.w_cycles + b.alpha_out * b.out_cycles
    assert b.dram_cycles == dram
    assert b.total_us == pytest.approx((b.mac_cycles + dram) / 1000, rel=1e-15)
    assert b.load_us + b.store_us + b.mac_us == pytest.approx(b.total_us, rel=1e-12)
    # TSO-noburst: the same counts, no CAS term
    v = evaluate(C5, C5_IN, NMP, "KS", "OS", 2, 71, 14, 6, model="noburst")
    assert (v.alpha_in, v.alpha_w, v.alpha_out) == (b.alpha_in, b.alpha_w, b.alpha_out)
    assert v.in_cycles == cdiv(in_bytes, 17) and v.total_us < b.total_us


def test_is_and_ws_counts_and_capacity():
    os_ = evaluate(C5, C5_IN, NMP, "KS", "OS", 2, 71, 14, 6)
    is_ = evaluate(C5, C5_IN, NMP, "KS", "IS", 2, 71, 14, 6)
    assert is_.feasible and is_.total_us == os_.total_us  # IS = OS with one filter tile
    bad = evaluate(C5, C5_IN, NMP, "KS", "IS", 2, 71, 14, 5)
    assert not bad.feasible and "IS holds all" in bad.reason and math.isinf(bad.total_us)
    # WS loads whole filters: 6 x 80 x 9 x 2 B = 8640 B > MB1
    ws6 = evaluate(C5, C5_IN, NMP, "KS", "WS", 2, 71, 14, 6)
    assert not ws6.feasible and "MB1" in ws6.reason
    ws = evaluate(C5, C5_IN, NMP, "KS", "WS", 2, 71, 14, 5)  # 7200 B fits
    n_r, n_n, n_m = cdiv(71, 2), cdiv(80, 14), cdiv(6, 5)
    assert (ws.alpha_in, ws.alpha_w, ws.alpha_out) == (
        4 * n_r * n_n * n_m,
        4 * 8 * n_m,  # eq. 5: each W tile loaded once
        4 * 8 * n_r * n_m,
    )
    assert ws.w_cycles == cdiv(5 * 80 * 9 * 2, 17) + cdiv(5 * 80 * 9 * 2, 128) * 14  # contiguous
    # eq. 2 at the edge: IN of 4096 16-bit elements fits MB0 (8 KiB), 4097+ does not
    one = Layer("p", "conv", (INPUT,), 8, (1, 1), bias=False)
    assert evaluate(one, (2, 64, 64), NMP, "KS", "OS", 64, 64, 1, 1).reason == ""
    over = evaluate(one, (2, 64, 64), NMP, "KS", "OS", 64, 64, 2, 1)
    assert not over.feasible and "MB0" in over.reason
    with pytest.raises(ValueError, match="outside"):
        evaluate(C5, C5_IN, NMP, "OFM", "OS", 19, 71, 14, 6)  # TLE_R = 18
    with pytest.raises(ValueError, match="unknown TLT"):
        evaluate(C5, C5_IN, NMP, "KS", "XS", 2, 71, 14, 6)


def test_get_filters_is_the_largest_fitting_evened_out():
    geom, nmp = conv_geometry(C5, C5_IN), nmp_params(NMP)
    sl = tle_slicing("OFM", geom, nmp)  # F = 24
    # MB2: T_M <= 8192 / (2 * 8 * 2) = 256; MB1: T_M <= 8192 / (40 * 9 * 2) = 11 -> 11 -> 3 tiles
    assert get_filters(geom, nmp, sl, "OS", 2, 8, 40) == cdiv(24, cdiv(24, 11)) == 8
    assert get_filters(geom, nmp, sl, "IS", 2, 8, 40) == 0  # cannot hold all 24
    assert get_filters(geom, nmp, sl, "IS", 2, 8, 18) == 24  # 24 * 18 * 18 = 7776 B
    assert get_filters(geom, nmp, sl, "WS", 2, 8, 1) == cdiv(24, cdiv(24, 5))  # 8192 // 1440


def test_depthwise_and_fc_geometry():
    dw = Layer("dw", "conv", (INPUT,), 16, (3, 3), pad=(1, 1, 1, 1), groups=16, bias=False)
    b = evaluate(dw, (16, 8, 8), NMP, "KS", "OS", 8, 8, 1, 1)
    # KS: TLE_W = 4 filters on 4 of 8 TLTs (F = 1); coupled: IN per TLT (no multicast), n_n = 1
    assert (b.alpha_in, b.alpha_w, b.alpha_out) == (4 * 4, 4 * 4, 4 * 4)
    # the 8x8 plane of one channel is one 128 B run; the padded 10x10 is not read
    assert b.in_cycles == cdiv(128, 17) + 1 * 14
    assert b.mac_cycles == 1 * cdiv(8 * 8 * 9, 8)  # C = 1 channel per filter
    wrong = evaluate(dw, (16, 8, 8), NMP, "OFM", "OS", 2, 8, 1, 2)  # T_N must be T_M here
    assert not wrong.feasible and "coupled" in wrong.reason
    fc = Layer("fc", "fc", (INPUT,), 10)
    g = conv_geometry(fc, (4, 5, 5))
    assert (g.N, g.H, g.L, g.M, g.R, g.C) == (100, 1, 1, 10, 1, 1)
    sl = tle_slicing("OFM", g, nmp_params(NMP))
    assert (sl.TLE_R, sl.E_a) == (1, 1)  # one output row: one TLE works
    with pytest.raises(ValueError, match="conv and fc"):
        conv_geometry(Layer("p", "maxpool", (INPUT,), kernel=(2, 2), stride=(2, 2)), (4, 8, 8))


def test_burst_counts_extend_the_costmodel():
    # §VI: 14 x 4 x 73 -> 70 bursts, 16 x 11 x 20 -> 176 (TSO-noburst's tile)
    assert plane_bursts(14, 4, 73, 73, 73, 2, 128) == 70
    assert plane_bursts(16, 11, 20, 73, 73, 2, 128) == 176
    # whole planes are contiguous across channels in NCHW: 3 x 4x4 x 2 B = 96 B, one burst
    assert plane_bursts(3, 4, 4, 4, 4, 2, 128) == 1 < tile_burst_count(3, 4, 4, 2, 128, 4)
    # otherwise it is the cost model's transfer
    b = evaluate(C5, C5_IN, NMP, "KS", "OS", 2, 71, 14, 6)
    assert b.in_cycles == calc_data_transfer(NMP, 14, 4, 73, row_elems=73)


# ---- the vectorised search against brute force -------------------------------------------


def small_arch(mb0: int, mb1: int, mb2: int, burst: int):
    cores = tuple(
        dataclasses.replace(
            c, buffers={"MB0": mb0, "MB1": mb1, "MB2": mb2}, memory_bytes=mb0 + mb1 + mb2
        )
        for c in NMP.cores
    )
    assert NMP.dram is not None
    return dataclasses.replace(
        NMP, cores=cores, dram=dataclasses.replace(NMP.dram, burst_bytes=burst)
    )


@st.composite
def small_layers(draw):
    kind = draw(st.sampled_from(["dense", "dense", "depthwise", "grouped", "fc"]))
    h, w = draw(st.integers(2, 8)), draw(st.integers(2, 8))
    k = draw(st.integers(1, min(3, h, w)))
    kernel = (k, draw(st.integers(1, min(3, w))))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pad = tuple(draw(st.integers(0, 1)) for _ in range(4))
    if kind == "fc":
        n = draw(st.integers(1, 3))
        return Layer("L", "fc", (INPUT,), draw(st.integers(1, 40))), (n, h, w)
    if kind == "depthwise":
        n = draw(st.integers(1, 12))
        mult = draw(st.integers(1, 3))
        layer = Layer("L", "conv", (INPUT,), n * mult, kernel, stride, pad, groups=n)
    elif kind == "grouped":
        g = draw(st.integers(2, 3))
        n = g * draw(st.integers(2, 3))
        layer = Layer("L", "conv", (INPUT,), g * draw(st.integers(1, 6)), kernel, stride, pad,
                      groups=g)  # fmt: skip
    else:
        n = draw(st.integers(1, 6))
        layer = Layer("L", "conv", (INPUT,), draw(st.integers(1, 40)), kernel, stride, pad)
    return layer, (n, h, w)


def brute_force(layer, shape, arch, model):
    """Algorithm 1 with Algorithm 3 as plain Python loops over ``evaluate``: every feasible
    candidate in TSO's order, and the first minimum of ``model``'s time."""
    geom, nmp = conv_geometry(layer, shape), nmp_params(arch)
    feasible, best = [], None
    for p in TLE_SLICINGS:
        sl = tle_slicing(p, geom, nmp)
        for q in TLT_SCHEDULES:
            for T_R in range(1, sl.TLE_R + 1):
                for T_C in range(1, geom.C + 1):
                    if geom.coupled:
                        pairs = [(cdiv(m, geom.mg), m) for m in range(1, sl.F + 1)]
                    else:
                        pairs = [
                            (n, get_filters(geom, nmp, sl, q, T_R, T_C, n))
                            for n in range(1, geom.Nf + 1)
                        ]
                    for T_N, T_M in pairs:
                        if T_M == 0:
                            continue
                        b = evaluate_geom(geom, nmp, p, q, T_R, T_C, T_N, T_M, model)
                        if not b.feasible:
                            continue
                        feasible.append((p, q, T_R, T_C, T_N, T_M, b.total_us))
                        if best is None or b.total_us < best[-1]:
                            best = feasible[-1]
    return feasible, best


GROUPED = Layer("L", "conv", (INPUT,), 6, (3, 3), (1, 1), (1, 1, 1, 1), groups=2)
DW2 = Layer("L", "conv", (INPUT,), 8, (3, 3), (2, 2), (1, 1, 1, 1), groups=4)
DENSE = Layer("L", "conv", (INPUT,), 20, (3, 3), (1, 1), (1, 1, 1, 1))
WIDE = Layer("L", "conv", (INPUT,), 48, (1, 1))  # OFM: F = 6, GetFilters evens out T_M


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(ly=(GROUPED, (4, 6, 6)), bufs=(96, 64, 80), burst=16, model="burst")
@example(ly=(DW2, (4, 8, 8)), bufs=(60, 40, 100), burst=8, model="noburst")
@example(ly=(DENSE, (6, 8, 8)), bufs=(8192, 8192, 8192), burst=128, model="burst")
@example(ly=(DENSE, (6, 8, 8)), bufs=(200, 30, 48), burst=16, model="noburst")
@example(ly=(DENSE, (6, 8, 8)), bufs=(16, 16, 16), burst=16, model="burst")  # nothing fits
@example(ly=(WIDE, (2, 8, 8)), bufs=(96, 64, 80), burst=16, model="burst")
@given(
    ly=small_layers(),
    bufs=st.sampled_from([(8192, 8192, 8192), (96, 64, 80), (60, 40, 100), (200, 30, 48)]),
    burst=st.sampled_from([8, 16, 128]),
    model=st.sampled_from(["burst", "noburst"]),
)
def test_vectorised_search_equals_brute_force(ly, bufs, burst, model):
    layer, shape = ly
    arch = small_arch(*bufs, burst)
    feasible, best = brute_force(layer, shape, arch, model)
    space = layer_space(layer, shape, arch, model)
    got = sorted(
        zip(
            (TLE_SLICINGS[i] for i in space.tle),
            (TLT_SCHEDULES[i] for i in space.tlt),
            space.T_R.tolist(),
            space.T_C.tolist(),
            space.T_N.tolist(),
            space.T_M.tolist(),
            space.time_us.tolist(),
            strict=True,
        )
    )
    assert got == sorted(feasible)  # same candidates, same times, to the last bit
    if best is None:
        with pytest.raises(ValueError, match="no tiling"):
            search_tso_layer(layer, shape, arch, model)
        return
    ch = search_tso_layer(layer, shape, arch, model)
    assert (ch.tle, ch.tlt, ch.T_R, ch.T_C, ch.T_N, ch.T_M) == best[:6]
    assert ch.objective_us == best[-1]
    assert feasible[space.best()] == best
    burst_time = evaluate(layer, shape, arch, *best[:6], model="burst").total_us
    assert ch.time_us == burst_time  # TSO-noburst's tiles are timed with the burst model
    assert ch.n_feasible == len(feasible)


# ---- the paper's orderings ------------------------------------------------------------------

REAL = [
    ("lenet", "C3"),
    ("mobilenetv2", "features.4.depthwise"),
    ("squeezenet", "fire2.expand3x3"),
    ("yolov2", "reorg"),
]


def real_layer(net_name: str, layer_name: str):
    net = load_network(net_name)
    layer = net.layer(layer_name)
    return layer, net.in_shapes(layer)[0]


@pytest.mark.parametrize(("net_name", "layer_name"), REAL)
def test_fixing_tle_or_tlt_never_beats_the_free_search(net_name, layer_name):
    layer, shape = real_layer(net_name, layer_name)
    free = search_tso_layer(layer, shape, NMP)
    by_tle = {p: search_tso_layer(layer, shape, NMP, fix_tle=p) for p in TLE_SLICINGS}
    by_tlt = {q: search_tso_layer(layer, shape, NMP, fix_tlt=q) for q in TLT_SCHEDULES}
    for c in [*by_tle.values(), *by_tlt.values()]:
        assert c.time_us >= free.time_us
    # Algorithm 1 is the minimum over the fixed strategies
    assert free.time_us == min(c.time_us for c in by_tle.values() if not c.fallback)
    assert free.time_us == min(c.time_us for c in by_tlt.values() if not c.fallback)
    assert by_tle[free.tle].time_us == free.time_us and by_tlt[free.tlt].time_us == free.time_us
    # IS is OS with all of a TLT's filters in one W tile, so OS is never slower
    assert by_tlt["OS"].time_us <= by_tlt["IS"].time_us


@pytest.mark.parametrize(("net_name", "layer_name"), REAL)
def test_burst_aware_tiles_are_never_slower(net_name, layer_name):
    """Table I / Fig. 8: TSO-burst's choice runs at least as fast as TSO-noburst's (both timed
    with the burst model), and the volume model never charges more than the burst model."""
    layer, shape = real_layer(net_name, layer_name)
    burst = layer_space(layer, shape, NMP, "burst")
    volume = layer_space(layer, shape, NMP, "noburst")
    assert np.array_equal(burst.burst_us, volume.burst_us)
    assert np.all(volume.time_us <= burst.time_us)
    b, nb = (
        search_tso_layer(layer, shape, NMP, "burst"),
        search_tso_layer(layer, shape, NMP, "noburst"),
    )
    assert b.time_us <= nb.time_us
    assert nb.objective_us <= b.objective_us  # volume optimum <= burst optimum
    assert b.time_us == burst.burst_us.min()


# ---- npusched tile ---------------------------------------------------------------------------


def tile_args(*argv: str):
    return build_parser().parse_args(["tile", *argv])


def test_cli_json_shape(capsys):
    args = tile_args("--network", "lenet", "--arch", "tso-nmp-16", "--json", "--workers", "1")
    assert tile_cli.run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"network", "arch", "model", "total_time_us", "search_seconds", "layers"}
    assert (out["network"], out["arch"], out["model"]) == ("lenet", "tso-nmp-16", "burst")
    assert [r["name"] for r in out["layers"]] == ["C1", "C3", "C5", "F6", "output"]
    for r in out["layers"]:
        assert set(r) == {"name", "tle", "tlt", "T_R", "T_C", "T_N", "T_M", "time_us"}
        assert r["tle"] in TLE_SLICINGS and r["tlt"] in TLT_SCHEDULES
    assert out["total_time_us"] == pytest.approx(sum(r["time_us"] for r in out["layers"]))
    args = tile_args("--network", "lenet", "--arch", "tso-nmp-16", "--json", "--workers", "1",
                     "--fix-tle", "OFM", "--model", "noburst")  # fmt: skip
    assert tile_cli.run(args) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["model"] == "noburst" and {r["tle"] for r in fixed["layers"]} == {"OFM"}
    assert fixed["total_time_us"] >= out["total_time_us"]


def test_cli_exact_fills_the_columns(monkeypatch, capsys):
    """--exact calls solve(TsoLayer, "tso-exact") per layer, warm-started from the search's
    choice, with the CLI's time limit and threads."""
    import npusched.methods
    from npusched.solvers.result import Result, Status

    calls = []

    def solve(problem, method, backend, *, time_limit, threads, warm_start):
        calls.append((problem.name, problem.model, method, backend, time_limit, threads))
        assert warm_start.name == problem.name and problem.fix_tle is None
        res = Result(Status.FEASIBLE, method, backend)
        res.stats["objective_us"] = warm_start.time_us
        return res

    monkeypatch.setattr(npusched.methods, "solve", solve)
    args = tile_args("--network", "lenet", "--arch", "tso-nmp-16", "--json", "--workers", "1",
                     "--exact", "--time-limit", "2", "--threads", "3")  # fmt: skip
    assert tile_cli.run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c[0] for c in calls] == [r["name"] for r in out["layers"]]
    assert calls[0][1:] == ("burst", "tso-exact", "cpsat", 2.0, 3)
    for r in out["layers"]:
        assert r["exact_status"] == "feasible" and r["exact_time_us"] == r["time_us"]


def test_cli_errors_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:  # argparse: a bad choice
        cli_main(["tile", "--network", "lenet", "--arch", "tso-nmp-16", "--fix-tlt", "XS"])
    assert exc.value.code == 2
    with pytest.raises(InputError):
        tile_cli.run(tile_args("--network", "nonet", "--arch", "tso-nmp-16"))
    assert cli_main(["tile", "--network", "nonet", "--arch", "tso-nmp-16"]) == 2
    assert cli_main(["tile", "--network", "lenet", "--arch", "nope"]) == 2
    assert cli_main(["tile", "--network", "lenet", "--arch", "klotski-3x3"]) == 2
    pool_only = Network("pools", (3, 8, 8), (Layer("p", "maxpool", (INPUT,), kernel=(2, 2)),))
    path = tmp_path / "pools.json"
    write_network(pool_only, path)
    with pytest.raises(ValueError, match="no conv or fc"):
        tile_cli.run(tile_args("--network", str(path), "--arch", "tso-nmp-16"))
    assert cli_main(["tile", "--network", str(path), "--arch", "tso-nmp-16"]) == 2
    assert "no conv or fc" in capsys.readouterr().err


def test_main_cli_tile_json_and_errors():
    """`npusched tile` through the main command: the JSON fields of the issue, exit 2 on bad
    input without a traceback."""
    import json

    from conftest import run_cli

    r = run_cli("tile", "--network", "lenet", "--arch", "tso-nmp-16", "--json", "--workers", "1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {"network", "arch", "model", "total_time_us", "search_seconds", "layers"} <= set(out)
    keys = {"name", "tle", "tlt", "T_R", "T_C", "T_N", "T_M", "time_us"}
    assert all(keys <= set(layer) for layer in out["layers"])
    assert abs(sum(layer["time_us"] for layer in out["layers"]) - out["total_time_us"]) < 1e-6
    r = run_cli("tile", "--network", "nosuch", "--arch", "tso-nmp-16")
    assert r.returncode == 2 and "nosuch" in r.stderr and "Traceback" not in r.stderr
