"""Offline residency bound for a fixed Flexer order (npusched.formulations.flexer.offline)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest

from npusched.bench.flexer_offline import main as bench_main
from npusched.formulations.flexer.offline import BACKENDS, ResidencyModel, offline_bound
from npusched.heuristics.flexer.residency import belady_bytes, belady_plan, contiguous_plan
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.layer import IN, OT, WT, TiledConv
from npusched.problem.flexer.residency import ResidencyPlan, index_order, use_gaps
from npusched.solvers.result import Result, Status
from npusched.workload.zoo import load_network


def plan_of(r: Result) -> ResidencyPlan:
    """The residency plan a result holds (asserts it holds one)."""
    assert isinstance(r.solution, ResidencyPlan), r.summary()
    return r.solution


def conv_of(types, sizes, outs, ops) -> TiledConv:
    """A :class:`TiledConv` from explicit data tiles and operations ``(in, wt, ot, c)`` (an
    operation with ``c > 0`` follows its partial-sum predecessor in index order)."""
    a = np.array(ops, np.int64)
    return TiledConv(
        "toy",
        (1, 1, 1, 1),
        np.array(types, np.int64),
        np.array(sizes, np.int64),
        np.array(outs, np.int64),
        a[:, 0],
        a[:, 1],
        a[:, 2],
        a[:, 3],
        np.ones(len(ops), np.int64),
    )


def chain3() -> TiledConv:
    """4 tiles: IN0 (2 B), WT0 (3 B), WT1 (3 B), OT0 (4 B partial sum, 1 B out); one chain
    ``(IN0, WT0), (IN0, WT1), (IN0, WT0)``. Mandatory 2 + 3 + 3 + 1 = 9; the only gap is WT0
    across step 1, whose demand is 2 + 3 + 4 = 9."""
    return conv_of(
        [IN, WT, WT, OT], [2, 3, 3, 4], [0, 0, 0, 1], [(0, 1, 3, 0), (0, 2, 3, 1), (0, 1, 3, 2)]
    )


def psum_vs_input() -> TiledConv:
    """5 tiles: IN0 (4), IN1 (2), WT0 (1), OT0, OT1 (4 B partial sums, 1 B out). Ops
    o0 = (IN0, WT0, OT0, c0), o1 = (IN0, WT0, OT0, c1), o2 = (IN1, WT0, OT1, c0), issued
    o0, o2, o1. Step 1 (demand 2 + 1 + 4 = 7) is spanned by IN0 (4 B, reload 4) and the partial
    sum OT0 (4 B, write-back + reload 8). Mandatory 4 + 2 + 1 + 1 + 1 = 9."""
    return conv_of(
        [IN, IN, WT, OT, OT],
        [4, 2, 1, 4, 4],
        [0, 0, 0, 1, 1],
        [(0, 2, 3, 0), (0, 2, 3, 1), (1, 2, 4, 0)],
    )


PSUM_ORDER = [(0,), (2,), (1,)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("capacity", "expected"), [(12, 9), (11, 12)])
def test_chain3_by_hand(backend: str, capacity: int, expected: int) -> None:
    # capacity 12 leaves 3 B at step 1: WT0 stays; 11 B: WT0 is reloaded (+3)
    r = offline_bound(chain3(), [(0,), (1,), (2,)], capacity, backend=backend)
    assert r.status is Status.OPTIMAL
    assert r.objective == expected and r.bound == pytest.approx(expected)
    assert r.stats["mandatory"] == 9


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("capacity", "expected", "kept_in0", "kept_ot0"),
    [
        (15, 9, True, True),  # 8 B free at step 1: both stay
        (11, 13, False, True),  # 4 B free: keep the partial sum (saves 8), reload IN0 (+4)
        (10, 21, False, False),  # 3 B free: neither fits, 4 + 8 more
    ],
)
def test_psum_vs_input_by_hand(
    backend: str, capacity: int, expected: int, kept_in0: bool, kept_ot0: bool
) -> None:
    p = psum_vs_input()
    r = offline_bound(p, PSUM_ORDER, capacity, backend=backend)
    assert r.status is Status.OPTIMAL and r.objective == expected
    assert r.bound is not None and r.bound == pytest.approx(expected)
    assert plan_of(r).kept is not None
    gaps = plan_of(r).gaps
    kept = {int(d): bool(k) for d, k in zip(gaps.data, plan_of(r).kept, strict=True) if d in (0, 3)}
    assert kept[0] is kept_in0 and kept[3] is kept_ot0
    assert belady_bytes(p, PSUM_ORDER, capacity) == expected  # ties evict the cheaper IN0


def test_psum_vs_input_contiguous() -> None:
    p = psum_vs_input()
    for capacity, expected in ((15, 9), (11, 13), (10, 21)):
        r = offline_bound(p, PSUM_ORDER, capacity, backend="cpsat", contiguous=True)
        assert r.status is Status.OPTIMAL and r.objective == expected
        assert plan_of(r).address is not None and plan_of(r).kept is not None
        assert plan_of(r).gaps.overlaps(plan_of(r).kept, plan_of(r).address, capacity) == []


def test_gaps_of_an_order() -> None:
    g = use_gaps(psum_vs_input(), PSUM_ORDER)
    assert g.n_steps == 3 and g.demand.tolist() == [9, 7, 9]
    # gaps: IN0 (0, 2), WT0 (0, 1), WT0 (1, 2), OT0 (0, 2)
    assert list(zip(g.data.tolist(), g.first.tolist(), g.last.tolist(), strict=True)) == [
        (0, 0, 2),
        (2, 0, 1),
        (2, 1, 2),
        (3, 0, 2),
    ]
    assert g.cost.tolist() == [4, 1, 1, 8] and g.span.tolist() == [1, 0, 0, 1]
    model = ResidencyModel(g, 11)
    assert model.model.num_vars == 2 and model.model.num_rows == 1  # WT0's gaps are kept for free


def test_invalid_orders_and_arguments() -> None:
    p = psum_vs_input()
    with pytest.raises(ValueError, match="not issued"):
        use_gaps(p, [(0,), (2,)])
    with pytest.raises(ValueError, match="twice"):
        use_gaps(p, [(0,), (2, 0), (1,)])
    with pytest.raises(ValueError, match="predecessor"):
        use_gaps(p, [(1,), (0,), (2,)])
    with pytest.raises(ValueError, match="empty"):
        use_gaps(p, [(0, 1, 2), ()])
    use_gaps(p, [(0, 1), (2,)])  # a chain segment may share a set
    with pytest.raises(ValueError, match="backend"):
        offline_bound(p, PSUM_ORDER, 15, backend="gurobi")
    with pytest.raises(ValueError, match="cpsat"):
        offline_bound(p, PSUM_ORDER, 15, contiguous=True)
    with pytest.raises(ValueError, match="needs 9 bytes"):
        belady_bytes(p, PSUM_ORDER, 8)
    r = offline_bound(p, PSUM_ORDER, 8)
    assert r.status is Status.INFEASIBLE and r.objective is None and "needs 9 bytes" in r.message


# ---- random tiny instances against brute force --------------------------------------------------


def random_conv(rng: np.random.Generator) -> tuple[TiledConv, list[tuple[int, ...]], int]:
    """A tiled-conv-shaped DFG (``n_y = 1``) with random tile sizes, a random issue order
    respecting the partial-sum chains cut into sets of 1 or 2, and a capacity between the peak
    demand and what keeping every gap needs."""
    nk, nx, nc = (int(v) for v in rng.integers(1, [4, 4, 4]))
    n_in, n_wt, n_ot = nc * nx, nk * nc, nk * nx
    types = [IN] * n_in + [WT] * n_wt + [OT] * n_ot
    sizes = rng.integers(1, 10, n_in + n_wt + n_ot)
    outs = np.where(np.array(types) == OT, rng.integers(1, 10, len(types)), 0)
    outs = np.minimum(outs, sizes)
    ops = [
        (c * nx + x, n_in + k * nc + c, n_in + n_wt + k * nx + x, c)
        for k in range(nk)
        for x in range(nx)
        for c in range(nc)
    ]
    p = conv_of(types, sizes, outs, ops)
    issued: list[int] = []
    ready = {o for o, op in enumerate(ops) if op[3] == 0}
    while ready:
        o = int(rng.choice(sorted(ready)))
        ready.remove(o)
        issued.append(o)
        if ops[o][3] < nc - 1:
            ready.add(o + 1)
    n = int(rng.integers(1, 3))
    order = [tuple(issued[i : i + n]) for i in range(0, len(issued), n)]
    g = use_gaps(p, order)
    peak = int(g.demand.max())
    keep_all = int((g.demand + g.occupancy(np.ones(g.n_gaps, bool))).max())
    return p, order, peak + int(rng.uniform(0, 0.8) * (keep_all - peak))


def brute_force(p: TiledConv, order: Sequence[Sequence[int]], capacity: int) -> int:
    """Least bytes over every keep/evict choice, computed from the order alone."""
    steps: dict[int, set[int]] = {}
    demand = []
    for t, ops in enumerate(order):
        used = {int(d) for o in ops for d in (p.op_in[o], p.op_wt[o], p.op_ot[o])}
        for d in used:
            steps.setdefault(d, set()).add(t)
        demand.append(sum(int(p.data_bytes[d]) for d in used))
    base = sum(int(p.out_bytes[d] if p.data_type[d] == OT else p.data_bytes[d]) for d in steps)
    gaps = []
    for d, ts in steps.items():
        s = sorted(ts)
        for a, b in itertools.pairwise(s):
            cost = int(p.data_bytes[d]) * (2 if p.data_type[d] == OT else 1)
            if b > a + 1:  # a gap without inner steps is kept at no cost
                gaps.append((a, b, int(p.data_bytes[d]), cost))
    assert len(gaps) <= 14, "instance too large to enumerate"
    best = None
    for keep in itertools.product((False, True), repeat=len(gaps)):
        load = list(demand)
        for k, (a, b, size, _) in zip(keep, gaps, strict=True):
            if k:
                for t in range(a + 1, b):
                    load[t] += size
        if max(load) <= capacity:
            cost = base + sum(g[3] for k, g in zip(keep, gaps, strict=True) if not k)
            best = cost if best is None else min(best, cost)
    assert best is not None
    return best


def _instances(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    count = 0
    while count < n:
        p, order, capacity = random_conv(rng)
        g = use_gaps(p, order)
        if 2 <= int((g.span > 0).sum()) <= 12:
            count += 1
            yield p, order, capacity


@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_random_tiny_equals_brute_force(backend: str) -> None:
    strict = 0
    for p, order, capacity in _instances(60):
        exact = brute_force(p, order, capacity)
        r = offline_bound(p, order, capacity, backend=backend, time_limit=10)
        assert r.status is Status.OPTIMAL, r.message
        assert r.objective == exact
        assert r.bound is not None and r.bound <= exact + 1e-6
        plan = belady_plan(p, order, capacity)
        assert plan.gaps.over_capacity(plan.kept, capacity).size == 0
        assert exact <= plan.bytes
        assert r.stats["hint_bytes"] is not None and exact <= r.stats["hint_bytes"] <= plan.bytes
        strict += exact < plan.bytes
    assert strict > 0  # Belady is not optimal with unequal sizes


def test_cbc_on_random_tiny() -> None:
    for p, order, capacity in _instances(5, seed=1):
        r = offline_bound(p, order, capacity, backend="cbc", time_limit=10)
        assert r.status is Status.OPTIMAL and r.objective == brute_force(p, order, capacity)


def test_contiguous_at_least_non_contiguous() -> None:
    for p, order, capacity in _instances(12, seed=2):
        flat = offline_bound(p, order, capacity)
        cont = offline_bound(p, order, capacity, backend="cpsat", contiguous=True, time_limit=10)
        assert flat.objective is not None and cont.objective is not None
        assert cont.status in (Status.OPTIMAL, Status.FEASIBLE), cont.message
        assert cont.objective >= flat.objective
        cp = plan_of(cont)
        assert cp.address is not None
        assert cp.gaps.overlaps(cp.kept, cp.address, capacity) == []
        plan = contiguous_plan(p, order, capacity)
        assert plan.address is not None
        assert plan.gaps.overlaps(plan.kept, plan.address, capacity) == []
        assert cont.objective <= plan.bytes


def conv_from_steps(
    sizes: list[int], steps: list[list[int]]
) -> tuple[TiledConv, list[tuple[int, ...]]]:
    """Input tiles of ``sizes`` used at the given steps (one operation per step reading three of
    them, a second one for the rest; no partial sums)."""
    ops: list[tuple[int, int, int, int]] = []
    order: list[tuple[int, ...]] = []
    for used in steps:
        ids = []
        for i in range(0, len(used), 3):
            trip = (used[i:] + used)[:3]
            ids.append(len(ops))
            ops.append((trip[0], trip[1], trip[2], 0))
        order.append(tuple(ids))
    return conv_of([IN] * len(sizes), sizes, [0] * len(sizes), ops), order


def test_fragmentation_costs_a_reload() -> None:
    # found by random search: every step is full (8 B) except one and every tile fits if it may
    # move, but the blocks d (3), f (3) and i (4) cannot all stay put around the unit tiles b,
    # e, g, h: one unit tile is reloaded elsewhere (+1 B). CP-SAT proves it.
    a, b, c, d, e, f, g, h, i, j = range(10)
    sizes = [2, 1, 2, 3, 1, 3, 1, 1, 4, 2]
    steps = [[a, b, c, d], [b, d, e, f], [b, e, f, g], [b, e, g, h, i], [b, h, i, j]]
    p, order = conv_from_steps(sizes, steps)
    assert use_gaps(p, order).demand.tolist() == [8, 8, 6, 8, 8]
    flat = offline_bound(p, order, 8)
    assert flat.objective == flat.stats["mandatory"] == sum(sizes)
    cont = offline_bound(p, order, 8, backend="cpsat", contiguous=True)
    assert cont.status is Status.OPTIMAL and cont.objective == sum(sizes) + 1
    assert contiguous_plan(p, order, 8).bytes >= cont.objective


def test_overlaps_detects_clashes() -> None:
    g = use_gaps(psum_vs_input(), PSUM_ORDER)
    kept = np.ones(g.n_gaps, bool)
    assert g.overlaps(kept, np.zeros(g.n_uses, np.int64), 100) != []
    plan = contiguous_plan(psum_vs_input(), PSUM_ORDER, 15)
    assert plan.address is not None
    moved = plan.address.copy()
    moved[0] += 1  # IN0's first use no longer matches its kept gap
    assert any("moves" in m for m in g.overlaps(plan.kept, moved, 15))


# ---- a real layer -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def conv3_2() -> TiledConv:
    net = load_network("vgg16")
    layer = next(layer for layer in net.layers if layer.name == "conv3_2")
    return tiled_conv(net, layer, (64, 14, 14, 64), {"K": 32, "C": 32})


def test_unlimited_capacity_is_onchip(conv3_2: TiledConv) -> None:
    order = index_order(conv3_2, 2)
    capacity = int(conv3_2.data_bytes.sum())
    r = offline_bound(conv3_2, order, capacity)
    total = sum(conv3_2.onchip_bytes().values())
    assert r.status is Status.OPTIMAL and r.objective == total == r.stats["mandatory"]
    assert plan_of(r).kept is not None and plan_of(r).kept.all()
    assert belady_bytes(conv3_2, order, capacity) == total


def test_vgg16_layer_solves_fast(conv3_2: TiledConv) -> None:
    order = index_order(conv3_2, 2)
    capacity = 256 * 1024
    r = offline_bound(conv3_2, order, capacity, time_limit=20)
    assert r.status is Status.OPTIMAL, r.summary()
    assert r.runtime_s < 10
    assert r.objective is not None and r.bound is not None and r.stats["bound_source"] == "solver"
    assert r.bound <= r.objective <= belady_bytes(conv3_2, order, capacity)
    assert r.stats["mandatory"] == sum(conv3_2.onchip_bytes().values()) < r.objective
    assert r.stats["variables"] > 100 and r.stats["rows"] <= r.stats["steps"]
    assert plan_of(r).gaps.over_capacity(plan_of(r).kept, capacity).size == 0


def test_bench_runs(capsys: pytest.CaptureFixture[str]) -> None:
    code = bench_main(
        ["--layers", "vgg16:conv3_2:64,14,14,64", "--npus", "2,4", "--time-limit", "10"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "conv3_2" in out and "Belady" in out and "does not fit" in out  # n = 4: 257 KiB
