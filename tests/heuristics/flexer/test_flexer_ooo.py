"""Flexer's DFG, memory manager, OoO scheduler, static baseline, search and CLI. Every schedule
is re-checked by :func:`npusched.verify.flexer.verify_flexer`."""

from __future__ import annotations

import contextlib
import itertools
import json

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from npusched.cli.main import main
from npusched.costmodel import compute_cycles
from npusched.heuristics.flexer import ooo as flexer
from npusched.heuristics.flexer.memory import FREE, Buffer
from npusched.heuristics.flexer.ooo import DATAFLOWS, NoFit, ooo_schedule
from npusched.heuristics.flexer.search import (
    STATIC_DATAFLOWS,
    distinct_dataflows,
    lat_bound,
    layer_problem,
    metric_bound,
    n_ops,
    run,
    search_layer,
    tiling_space,
)
from npusched.heuristics.flexer.static import static_schedule
from npusched.partition.flexer import tiled_conv
from npusched.partition.schemes import loop_order_rank
from npusched.problem.flexer.layer import IN, OT, WT, TiledConv, supports
from npusched.problem.flexer.settings import MEM_POLICIES, PRIORITIES, Settings
from npusched.solvers.result import Status
from npusched.verify.flexer import verify_flexer
from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network
from npusched.workload.zoo import load_network

UNROLL = {"K": 32, "C": 32}


def small_net(c: int = 64, k: int = 64, hw: int = 16, kernel: int = 3) -> Network:
    pad = kernel // 2
    conv = Layer("conv", "conv", (INPUT,), out_channels=k, kernel=(kernel, kernel), pad=(pad,) * 4)
    return Network("small", (c, hw, hw), (conv,))


def checked(sched, p: TiledConv):
    rep = verify_flexer(sched)
    assert rep.ok, rep.violations[:5]
    assert rep.latency == sched.latency
    assert rep.bytes_by_type == sched.bytes_by_type()
    once = p.onchip_bytes()
    assert sched.transfer_bytes >= sum(once.values())
    assert sched.bytes_by_type()["output"] == once["output"]
    assert sched.latency >= p.latency.sum() / sched.n_npus
    return sched


# ---- the DFG ----------------------------------------------------------------------------------


def test_tiled_conv_counts_and_sizes_by_hand():
    net = small_net(c=64, k=96, hw=16)
    p = tiled_conv(net, net.layers[0], (64, 8, 16, 32), UNROLL)
    assert p.counts == (2, 2, 1, 2)  # K 64+32, OY 8+8, OX 16, C 32+32
    assert p.n_ops == 8 and p.n_data == 4 + 4 + 4
    # IN (c, y, x): 32 channels × rows [0, 9) or [7, 16) (halo of 1) × 16 columns
    assert p.data_bytes[p.data_type == IN].tolist() == [32 * 9 * 16] * 4
    # WT (k, c): 64 or 32 output channels × 32 × 3 × 3
    assert sorted(p.data_bytes[p.data_type == WT].tolist()) == [32 * 32 * 9] * 2 + [64 * 32 * 9] * 2
    # OT (k, y, x) as 4-byte partial sums (n_c = 2), written once at 1 byte per element
    assert p.data_bytes[p.data_type == OT].tolist() == [64 * 8 * 16 * 4] * 2 + [32 * 8 * 16 * 4] * 2
    assert p.onchip_bytes()["output"] == 96 * 16 * 16
    # every op reads the IN of its (c, y, x), the WT of its (k, c) and its chain's OT
    for o in range(p.n_ops):
        i, w, t = p.operands(o)
        assert p.data_type[[i, w, t]].tolist() == [IN, WT, OT]
    assert p.pred(1) == 0 and p.pred(0) is None and p.last_in_chain(1)
    assert p.uses[p.data_type == OT].tolist() == [2] * 4


@given(
    st.sampled_from([1, 3]),
    st.sampled_from([16, 48, 80]),
    st.tuples(
        st.sampled_from([32, 64]), st.integers(1, 9), st.integers(1, 9), st.sampled_from([32, 64])
    ),
    st.integers(0, 100),
)
@settings(max_examples=25, deadline=None)
def test_latency_is_the_cost_model_plus_fill_and_drain(kernel, c, tiles, fill):
    """Every operation takes the cost model's cycles of its own tile shape plus ``fill_drain``."""
    net = small_net(c=c, k=80, hw=13, kernel=kernel)
    p = tiled_conv(net, net.layers[0], tiles, UNROLL, fill_drain=fill)
    nk, ny, nx, nc = p.counts
    k, y, x, cc = np.unravel_index(np.arange(p.n_ops), (nk, ny, nx, nc))
    tk, ty, tx, tc = p.tiles
    for o in range(p.n_ops):
        shape = {
            "K": min(tk, 80 - k[o] * tk),
            "OY": min(ty, 13 - y[o] * ty),
            "OX": min(tx, 13 - x[o] * tx),
            "C": min(tc, c - cc[o] * tc),
            "FY": kernel,
            "FX": kernel,
        }
        assert p.latency[o] == compute_cycles(shape, UNROLL) + fill
    with pytest.raises(ValueError, match="fill_drain"):
        tiled_conv(net, net.layers[0], tiles, UNROLL, fill_drain=-1)


def test_settings_fill_drain_defaults_to_rows_plus_columns():
    s = Settings(n_npus=2, capacity=1024, bandwidth=8)
    assert s.op_overhead == 64
    assert Settings(n_npus=2, capacity=1024, bandwidth=8, fill_drain=0).op_overhead == 0
    net = small_net()
    p0 = layer_problem(net, net.layers[0], (32, 8, 8, 32), Settings(2, 1024, 8, fill_drain=0))
    p = layer_problem(net, net.layers[0], (32, 8, 8, 32), s)
    assert (p.latency - p0.latency == 64).all()
    with pytest.raises(ValueError, match="fill_drain"):
        Settings(n_npus=2, capacity=1024, bandwidth=8, fill_drain=-5)


def test_only_dense_conv_and_fc():
    net = load_network("mobilenetv2")
    dw = next(ly for ly in net.layers if ly.op == "conv" and ly.groups > 1)
    with pytest.raises(ValueError, match="dense conv and fc"):
        tiled_conv(net, dw, (32, 4, 4, 32), UNROLL)


# ---- the memory manager -----------------------------------------------------------------------


def test_buffer_in_place_then_best_fit_then_algorithm2():
    buf = Buffer(100)
    uses = [5] * 10
    evicted: list[int] = []

    def evict(d: int) -> int:
        evicted.append(d)
        return 7

    for d, size in enumerate([20, 30, 10, 40]):
        buf.place(d, size, set(), uses, evict)
    assert [s[:2] for s in buf.segs] == [(20, 0), (30, 1), (10, 2), (40, 3)]
    buf.free(1, 3)
    buf.free(3, 4)
    buf.place(4, 30, set(), uses, evict)  # in place: the dead 30-byte block
    assert buf.segs[1][:2] == (30, 4)
    buf.place(5, 25, set(), uses, evict)  # best fit: the 40-byte hole, 15 left free
    assert [s[:2] for s in buf.segs] == [(20, 0), (30, 4), (10, 2), (25, 5), (15, FREE)]
    assert not evicted
    uses[0], uses[4], uses[2] = 1, 9, 1
    buf.place(6, 25, {5}, uses, evict)  # spill: block 0 + ... least fragmentation first
    # runs: [0,1] 50 → frag 25; [2, 5]: 5 pinned; [1] 30 → frag 5; [2]+free? 10 + pinned stop
    assert evicted == [4]
    assert buf.used() == 20 + 25 + 10 + 25


# ---- schedules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("priority", PRIORITIES)
@pytest.mark.parametrize("policy", MEM_POLICIES)
@pytest.mark.parametrize("n", [1, 2, 4])
def test_ooo_schedules_verify_under_pressure(priority, policy, n):
    net = small_net(c=96, k=96, hw=16)
    p = tiled_conv(net, net.layers[0], (32, 8, 8, 32), UNROLL)  # 3·2·2·3 = 36 ops
    cap = 3 * p.footprint(0) * n // 2  # room for little more than the operands of one set
    s = checked(ooo_schedule(p, n, cap, 8, priority=priority, mem_policy=policy), p)
    assert sorted(o for ops in s.order for o in ops) == list(range(p.n_ops))
    assert all(len(ops) <= n for ops in s.order)


def brute_select(e, cand, k, priority):
    """Algorithm 1's Get1stPrioritySet without shortcuts: every set of ``k`` ready operations,
    one per dataflow map (first occurrence, by a dict of rows), each dry-run; the first with
    the least key."""
    for size in range(k, 0, -1):
        combos = flexer._combinations(len(cand), size)
        maps: dict[tuple[int, ...], int] = {}
        if len(cand) > size:
            for i, row in enumerate(combos):
                ops = [cand[j] for j in row]
                key = []
                for t in (IN, WT, OT):
                    ids = [e.opd[o][t] for o in ops]
                    state = [
                        0 if d in e.res else (2 if t == OT and e.first[o] else 1)
                        for o, d in zip(ops, ids, strict=True)
                    ]
                    key += sorted(ids.count(d) + 16 * st for d, st in zip(ids, state, strict=True))
                maps.setdefault(tuple(key), i)
        rows = sorted(maps.values()) if maps else [0]
        best = None
        for i in rows:
            sc = flexer.score_set(e, [cand[j] for j in combos[i]])
            if sc is not None and (best is None or sc.key(priority) < best[0]):
                best = (sc.key(priority), i)
        if best is not None:
            return [cand[j] for j in combos[best[1]]]
    raise NoFit("nothing fits")


@pytest.mark.parametrize("priority", PRIORITIES)
@pytest.mark.parametrize("kernel", [1, 3])
def test_select_equals_trying_every_set(priority, kernel, monkeypatch):
    """_select's shortcuts (dataflow maps by sorting, dry runs ordered by a lower bound and
    stopped early) choose exactly the set that scoring every distinct map chooses."""
    calls = []
    select = flexer._select

    def both(e, cand, k, prio):
        got = select(e, cand, k, prio)
        assert got == brute_select(e, cand, k, prio)
        calls.append(len(cand))
        return got

    monkeypatch.setattr(flexer, "_select", both)
    net = small_net(c=96, k=96, hw=16, kernel=kernel)
    p = tiled_conv(net, net.layers[0], (32, 4, 8, 32), UNROLL)
    for n, slack in ((2, 1.5), (4, 1.2), (4, 3.0)):
        cap = int(slack * p.footprint(0) * n)
        with contextlib.suppress(NoFit):
            checked(ooo_schedule(p, n, cap, 8, priority=priority), p)
    assert len(calls) > 50 and max(calls) > 4


def test_psum_spills_happen_and_verify():
    net = small_net(c=128, k=128, hw=16)
    p = tiled_conv(net, net.layers[0], (32, 16, 16, 32), UNROLL)
    for df in DATAFLOWS:
        checked(ooo_schedule(p, 2, 2 * p.footprint(0) + 8192, 16, dataflow=df), p)
    st_ = checked(static_schedule(p, 2, 10**6, 16, loop_order="C,K,OY,OX", stationary="IS"), p)
    assert st_.bytes_by_type()["psum"] > 0  # C outermost with 2 OT slots: partial sums move


def test_inline_loads_occupy_the_npu():
    """Without prefetch an operation's loads run on its NPU's time (lat(l) + lat(o)); with
    prefetch the first set's loads may start before any NPU is free — both verify."""
    net = small_net(c=64, k=64, hw=16)
    p = tiled_conv(net, net.layers[0], (32, 8, 8, 32), UNROLL)
    inline = checked(ooo_schedule(p, 1, 10**8, 4), p)
    ahead = checked(ooo_schedule(p, 1, 10**8, 4, prefetch=True), p)
    # one NPU, inline: the NPU is busy with loads or compute, so latency ≥ Σ lat + Σ load time
    loads = sum(t.end - t.start for t in inline.transfers if t.kind == "load")
    assert inline.latency >= p.latency.sum() + loads
    assert ahead.latency <= inline.latency


def test_unlimited_buffer_moves_each_tile_once():
    net = small_net(c=64, k=64, hw=16)
    p = tiled_conv(net, net.layers[0], (32, 8, 8, 32), UNROLL)
    s = checked(ooo_schedule(p, 2, 10**8, 64), p)
    assert s.bytes_by_type() == p.onchip_bytes()
    assert (s.loads_per_tile()[p.data_type != OT] == 1).all()


@pytest.mark.parametrize(("order", "stat"), STATIC_DATAFLOWS[::7])
def test_static_schedules_verify(order, stat):
    net = small_net(c=64, k=64, hw=16)
    p = tiled_conv(net, net.layers[0], (32, 8, 8, 32), UNROLL)
    s = checked(static_schedule(p, 2, 4 * p.footprint(0), 16, loop_order=order, stationary=stat), p)
    issued = list(itertools.chain(*s.order))  # in loop order, two per set
    assert issued == np.argsort(loop_order_rank(p.counts, order)).tolist()
    assert [len(ops) for ops in s.order] == [2] * (p.n_ops // 2)


def test_no_fit_is_reported():
    net = small_net()
    p = tiled_conv(net, net.layers[0], (64, 16, 16, 64), UNROLL)
    with pytest.raises(NoFit):
        ooo_schedule(p, 2, p.footprint(0) - 1, 8)
    with pytest.raises(NoFit):
        static_schedule(p, 2, p.footprint(0) - 1, 8)


@settings(max_examples=25, deadline=None)
@given(
    c=st.sampled_from([16, 32, 64, 96]),
    k=st.sampled_from([32, 64, 96]),
    hw=st.sampled_from([4, 7, 12]),
    kernel=st.sampled_from([1, 3]),
    tiles=st.tuples(
        st.sampled_from([32, 64]), st.integers(2, 6), st.integers(2, 6), st.sampled_from([16, 32])
    ),
    n=st.integers(1, 4),
    slack=st.floats(1.0, 4.0),
    policy=st.sampled_from(MEM_POLICIES),
    prefetch=st.booleans(),
)
@example(  # a write-back and the reload of the same partial sum touching at one cycle
    c=96, k=64, hw=7, kernel=3, tiles=(32, 2, 6, 32), n=1, slack=1.890625, policy="flexer",
    prefetch=True,
)  # fmt: skip
def test_random_layers_verify(c, k, hw, kernel, tiles, n, slack, policy, prefetch):
    net = small_net(c=c, k=k, hw=hw, kernel=kernel)
    p = tiled_conv(net, net.layers[0], tiles, UNROLL)
    cap = int(slack * max(p.footprint(o) for o in range(p.n_ops)))
    with contextlib.suppress(NoFit):
        checked(ooo_schedule(p, n, cap, 8, mem_policy=policy, prefetch=prefetch), p)
    with contextlib.suppress(NoFit):
        sched = static_schedule(
            p, n, cap, 8, loop_order="OY,K,OX,C", stationary="WS", prefetch=prefetch
        )
        checked(sched, p)


# ---- the search --------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    c=st.sampled_from([32, 64, 96]),
    kernel=st.sampled_from([1, 3]),
    tiles=st.tuples(
        st.sampled_from([32, 64]), st.integers(1, 6), st.integers(1, 6), st.sampled_from([16, 32])
    ),
    n=st.integers(1, 4),
    bw=st.sampled_from([2.0, 8.0, 64.0]),
    prefetch=st.booleans(),
)
def test_bounds_never_prune_the_schedule_they_bound(c, kernel, tiles, n, bw, prefetch):
    """lat_bound and metric_bound are below every schedule's figures, and a schedule run
    against a best just above its own metric is never pruned (so the in-schedule bound
    Engine.latency_bound × bytes so far never exceeds the final latency × bytes)."""
    net = small_net(c=c, k=64, hw=8, kernel=kernel)
    p = tiled_conv(net, net.layers[0], tiles, UNROLL)
    cap = 2 * max(p.footprint(o) for o in range(p.n_ops))
    s = Settings(n_npus=n, capacity=cap, bandwidth=bw, prefetch=prefetch)
    for kind, df in (("ooo", "OS"), ("ooo", "IS"), ("static", "K,OY,OX,C/WS")):
        try:
            sched = run(p, s, kind, df)
        except NoFit:
            continue
        assert lat_bound(p, s) <= sched.latency
        assert metric_bound(p, s) <= sched.metric()
        again = run(p, s, kind, df, stop_above=(lat_bound(p, s), sched.metric() + 1))
        assert again.metric() == sched.metric()


def test_branch_and_bound_finds_the_exhaustive_best():
    net = small_net(c=64, k=64, hw=16)
    layer = net.layers[0]
    s = Settings(n_npus=2, capacity=96 * 1024, bandwidth=16, max_ops=64)
    ooo, static = (search_layer(net, layer, s, kind) for kind in ("ooo", "static"))
    best: dict[str, float] = {}
    bounds, shortest = [], np.inf
    for tiles in tiling_space(net, layer, s):
        p = layer_problem(net, layer, tiles, s)
        if p.n_ops > s.max_ops or max(p.footprint(o) for o in range(p.n_ops)) > s.capacity:
            continue
        assert lat_bound(p, s) >= p.latency.sum() / 2
        bounds.append(lat_bound(p, s))
        for kind, dfs in (
            ("ooo", list(DATAFLOWS)),
            ("static", [f"{o}/{x}" for o, x in STATIC_DATAFLOWS]),
        ):
            for df in dfs:
                try:
                    sched = run(p, s, kind, df)
                except NoFit:
                    continue
                best[kind] = min(best.get(kind, np.inf), sched.metric())
                shortest = min(shortest, sched.latency)
    for res in (ooo, static):  # the least bound of the tilings: no schedule is shorter
        assert res.stats["latency_bound"] == min(bounds) <= shortest
    for res, kind in ((ooo, "ooo"), (static, "static")):
        assert res.status is Status.FEASIBLE and res.solution is not None
        assert res.objective == best[kind] == res.solution.metric()
        assert verify_flexer(res.solution).ok
        assert res.bound is not None and res.bound <= res.objective
        assert res.stats["evaluated"] <= res.stats["tilings"]


# ---- the CLI -----------------------------------------------------------------------------------


def test_cli_json(capsys):
    rc = main(
        ["flexer", "--network", "vgg16", "--arch", "arch1", "--layers", "conv2_1",
         "--max-ops", "64", "--workers", "1", "--json"]
    )  # fmt: skip
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert {"network", "arch", "search_seconds", "layers", "total"} <= set(out)
    row = out["layers"][0]
    keys = {"name", "ooo_latency", "ooo_transfer_bytes", "static_latency",
            "static_transfer_bytes", "tiling", "dataflow"}  # fmt: skip
    assert keys <= set(row)
    assert row["name"] == "conv2_1" and out["verified_schedules"] >= 1
    assert row["static_latency"] is not None
    assert out["total"]["ooo_latency"] == row["ooo_latency"]
    assert out["total"]["compared_layers"] == 1
    assert out["complete"] is True and row["complete"] is True


def test_time_limit_stops_with_the_best_so_far(capsys):
    """A search cut by its time limit says so, and what it returns is still verified."""
    rc = main(
        ["flexer", "--network", "resnet50", "--arch", "arch5", "--layers", "layer1.0.conv3",
         "--max-ops", "0", "--fill-drain", "0", "--time-limit", "2", "--workers", "1", "--json"]
    )  # fmt: skip
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["complete"] is False and out["layers"][0]["complete"] is False
    assert out["search_seconds"] < 30
    assert out["layers"][0]["ooo_evaluated"] < out["layers"][0]["tilings"]
    rc = main(
        ["flexer", "--network", "resnet50", "--arch", "arch5", "--layers", "layer1.0.conv3",
         "--max-ops", "0", "--fill-drain", "0", "--time-limit", "2", "--workers", "1"]
    )  # fmt: skip
    assert rc == 0 and "not a complete search" in capsys.readouterr().out


def test_op_count_without_the_dfg():
    net = load_network("resnet50")
    s = Settings(n_npus=4, capacity=256 * 1024, bandwidth=32, max_ops=0)
    tiled = [x for x in net.layers if supports(x)]
    assert tiled[-1].op == "fc"
    for ly in [*tiled[::7], tiled[-1]]:
        for tiles in tiling_space(net, ly, s)[::5]:
            assert n_ops(net, ly, tiles) == layer_problem(net, ly, tiles, s).n_ops


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["--arch", "arch9"], "arch9"),
        (["--arch", "klotski-3x3"], "shared global buffer"),
        (["--arch", "arch1", "--layers", "nope"], "no layer nope"),
        (["--arch", "arch1", "--max-ops", "-1"], "--max-ops"),
        (["--arch", "arch1", "--time-limit", "0"], "--time-limit"),
        (["--arch", "arch1", "--fill-drain", "-1"], "--fill-drain"),
    ],
)
def test_cli_errors_exit_2(argv, msg, capsys):
    rc = main(["flexer", "--network", "vgg16", *argv])
    assert rc == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err


def test_static_pool_keeps_chain_order():
    """Two operations of one chain in one static set run in chain order."""
    net = small_net(c=64, k=32, hw=4)
    p = tiled_conv(net, net.layers[0], (32, 4, 4, 32), UNROLL)  # one chain of 2
    s = checked(static_schedule(p, 2, 10**6, 8, loop_order="K,OY,OX,C", stationary="OS"), p)
    assert s.start[1] >= s.end[0]
    assert list(itertools.chain(*s.order)) == [0, 1]


def test_bench_speed_rows(tmp_path):
    from npusched.bench.flexer import main as bench

    out = tmp_path / "speed.json"
    argv = ["speed", "--networks", "squeezenet", "--archs", "arch1", "--caps", "8",
            "--limit", "20", "--workers", "1", "--json", str(out)]  # fmt: skip
    assert bench(argv) == 0
    (row,) = json.loads(out.read_text())
    assert row["max_ops"] == 8 and row["distinct_layers"] > 5
    assert 0 < row["ooo_evaluated"] <= row["tilings"]
    assert row["static_evaluated"] <= row["tilings"]
    assert isinstance(row["complete"], bool)
    assert 1 <= row["largest_chosen_ops"] <= 8  # the cap holds for every chosen tiling


def test_bench_optimal_rows_are_verified(tmp_path):
    from npusched.bench.flexer import main as bench

    out = tmp_path / "optimal.json"
    argv = ["optimal", "--networks", "squeezenet", "--archs", "arch5", "--max-ops", "16",
            "--opt-ops", "8", "--time-limit", "5", "--workers", "1",
            "--json", str(out)]  # fmt: skip
    assert bench(argv) == 0
    rows = json.loads(out.read_text())
    assert rows and all(r["ops"] <= 8 for r in rows)
    for r in rows:
        assert r["verified"] is True
        assert r["bound"] <= r["cpsat_latency"]


@pytest.mark.parametrize("priority", PRIORITIES)
def test_unspilled_keys_are_unspilled_score_row_by_row(priority, monkeypatch):
    """The vectorized keys of every candidate set equal :func:`unspilled_score`'s, at every
    step of schedules under buffer pressure."""
    seen = []
    keys = flexer.unspilled_keys

    def both(e, window, sets, prio, used, state=None):
        cols = keys(e, window, sets, prio, used, state)
        for i, row in enumerate(sets):
            ops = [window[j] for j in row]
            assert tuple(c[i] for c in cols) == flexer.unspilled_score(e, ops, used).key(prio)
        seen.append(len(sets))
        return cols

    monkeypatch.setattr(flexer, "unspilled_keys", both)
    net = small_net(c=96, k=96, hw=16)
    p = tiled_conv(net, net.layers[0], (32, 4, 8, 32), UNROLL)
    for n, slack in ((2, 1.5), (4, 1.2)):
        with contextlib.suppress(NoFit):
            checked(ooo_schedule(p, n, int(slack * p.footprint(0) * n), 8, priority=priority), p)
    assert len(seen) > 20 and max(seen) > 1


def test_skipped_dataflows_repeat_a_schedule():
    """A dataflow :func:`distinct_dataflows` skips gives the schedule of the one kept for its
    class (loop orders equal but for one-tile dimensions), for both searches."""
    net = small_net(c=64, k=32, hw=8)
    p = tiled_conv(net, net.layers[0], (32, 4, 8, 32), UNROLL)  # one tile along K and OX
    static = [f"{o}/{s}" for o, s in STATIC_DATAFLOWS]
    kept = distinct_dataflows(p, static)
    assert len(kept) == 2 * 3  # orders of OY and C, times three stationarities
    for df in static[:24]:
        order, stat = df.split("/")
        twin = next(k for k in kept if k.endswith(stat) and [d for d in k.split("/")[0].split(",")
                    if d in ("OY", "C")] == [d for d in order.split(",") if d in ("OY", "C")])
        a = static_schedule(p, 2, 10**5, 8, loop_order=order, stationary=stat)
        b = static_schedule(p, 2, 10**5, 8, loop_order=twin.split("/")[0], stationary=stat)
        assert (a.start == b.start).all() and a.transfers == b.transfers
    assert distinct_dataflows(p, list(DATAFLOWS)) == ["OS", "WS"]  # WS, IS: C before OY
