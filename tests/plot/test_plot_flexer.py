"""Flexer plots (memory map, Fig. 10 / 11 / 12) render real PNGs from a hand-built schedule whose
reload counts, buffer snapshots and sharing degrees are checked against hand-computed values."""

import math

import numpy as np
import pytest
from matplotlib.patches import Rectangle

from npusched.plot.flexer import (
    ablation,
    memory_map,
    memory_snapshots,
    normalise,
    reload_histogram,
    residency_blocks,
    sharing_counts,
    sharing_profile,
    snapshot,
    spatial_reuse,
    tile_label,
    transfer_breakdown,
)
from npusched.problem.flexer.layer import (
    FlexerSchedule,
    Residency,
    TiledConv,
    Transfer,
    TransferKind,
)

PNG = b"\x89PNG\r\n\x1a\n"


def _problem() -> TiledConv:
    """Counts (n_k, n_y, n_x, n_c) = (2, 1, 1, 2): operations o = 2k + c. Data tiles: IN0, IN1
    (0, 1; 100 B), WT (2 + 2k + c; 50 B), OT (6 + k; 40 B partial sums, 10 B outputs)."""
    k, c = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    return TiledConv(
        name="toy",
        counts=(2, 1, 1, 2),
        data_type=np.array([0, 0, 1, 1, 1, 1, 2, 2]),
        data_bytes=np.array([100, 100, 50, 50, 50, 50, 40, 40]),
        out_bytes=np.array([0, 0, 0, 0, 0, 0, 10, 10]),
        op_in=c,
        op_wt=2 + 2 * k + c,
        op_ot=6 + k,
        op_c=c,
        latency=np.full(4, 10),
    )


def _schedule() -> FlexerSchedule:
    """o0 NPU0 [10, 20) and o2 NPU1 [15, 25) share IN0; o1 NPU0 [40, 50) and o3 NPU1 [45, 55)
    share IN1. OT7 is spilled (psum writeback) and reloaded; IN1 is loaded, evicted and loaded
    again — two moves each."""
    ld: TransferKind = "load"
    wb: TransferKind = "writeback"
    transfers = [
        Transfer(ld, 0, 100, 0, 4, "input"),
        Transfer(ld, 2, 50, 4, 6, "weight"),
        Transfer(ld, 4, 50, 6, 8, "weight"),
        Transfer(wb, 7, 40, 25, 27, "psum"),
        Transfer(ld, 1, 100, 27, 31, "input"),
        Transfer(ld, 1, 100, 34, 38, "input"),
        Transfer(ld, 3, 50, 38, 40, "weight"),
        Transfer(ld, 5, 50, 40, 42, "weight"),
        Transfer(ld, 7, 40, 42, 44, "psum"),
        Transfer(wb, 6, 10, 50, 52, "output"),
        Transfer(wb, 7, 10, 55, 57, "output"),
    ]
    residencies = [
        Residency(0, 0, 100, 0, 25),
        Residency(2, 100, 50, 4, 20),
        Residency(4, 150, 50, 6, 25),
        Residency(6, 200, 40, 10, 52),  # partial until o1 ends at 50, then the output
        Residency(7, 240, 40, 15, 27),  # partial, spilled
        Residency(1, 0, 100, 27, 32),  # evicted …
        Residency(1, 0, 100, 34, 55),  # … and reloaded
        Residency(3, 100, 50, 38, 50),
        Residency(5, 150, 50, 40, 55),
        Residency(7, 240, 40, 42, 57),  # partial until o3 ends at 55
    ]
    return FlexerSchedule(
        problem=_problem(),
        n_npus=2,
        capacity=300,
        bandwidth=25.0,
        npu=np.array([0, 0, 1, 1]),
        start=np.array([10, 40, 15, 45]),
        end=np.array([20, 50, 25, 55]),
        transfers=transfers,
        residencies=residencies,
        order=[(0, 2), (1, 3)],
        method="hand",
    )


def _heights(fig) -> list[float]:
    return [p.get_height() for p in fig.axes[0].patches if isinstance(p, Rectangle)]


def _is_png(path) -> bool:
    data = path.read_bytes()
    return data[:8] == PNG and len(data) > 1000


def test_reload_histogram_by_hand():
    s = _schedule()
    h = reload_histogram(s)
    assert h == {
        "input": {1: 100, 2: 200},
        "weight": {1: 200},
        "psum": {2: 80},
        "output": {1: 20},
    }
    assert {c: sum(v.values()) for c, v in h.items()} == s.bytes_by_type()
    assert reload_histogram(s.problem) == {
        "input": {1: 200},
        "weight": {1: 200},
        "psum": {},
        "output": {1: 20},
    }


def test_memory_blocks_and_snapshots():
    s = _schedule()
    b = residency_blocks(s)
    # 10 residencies; OT6's and the second OT7's are cut at the end of their chains
    assert len(b["start"]) == 12
    assert np.bincount(b["cat"], minlength=4).tolist() == [3, 4, 3, 2]
    out = b["cat"] == 3
    assert sorted(zip(b["data"][out].tolist(), b["start"][out].tolist(), strict=True)) == [
        (6, 50),
        (7, 55),
    ]
    assert snapshot(s, 17) == [
        (0, 100, "input", 0),
        (100, 50, "weight", 2),
        (150, 50, "weight", 4),
        (200, 40, "psum", 6),
        (240, 40, "psum", 7),
    ]
    assert snapshot(s, 33) == [(200, 40, "psum", 6)]
    assert snapshot(s, 51) == [
        (0, 100, "input", 1),
        (150, 50, "weight", 5),
        (200, 40, "output", 6),
        (240, 40, "psum", 7),
    ]
    assert [tile_label(s.problem, d) for d in (0, 1, 2, 5, 6, 7)] == [
        "IN0",
        "IN1",
        "WT0",
        "WT3",
        "OT0",
        "OT1",
    ]


def test_sharing_by_hand():
    s = _schedule()
    counts = sharing_counts(s)
    assert counts == {"IN": {1: 20, 2: 10}, "WT": {1: 40}, "OT": {1: 40}}
    busy = int((s.end - s.start).sum())
    for per in counts.values():
        assert sum(k * c for k, c in per.items()) == busy
    bp, prof = sharing_profile(s)
    assert bp.tolist() == [10, 15, 20, 25, 40, 45, 50, 55]
    assert prof["IN"].tolist() == [0, 2, 0, 0, 0, 2, 0]
    assert not prof["WT"].any() and not prof["OT"].any()


def test_normalise_and_geomean(tmp_path):
    table = {
        "VGG16/arch1": {"default": 10.0, "Priority1": 12.0, "MemPolicy2": 8.0},
        "ResNet50/arch6": {"default": 4.0, "Priority1": 4.0, "MemPolicy2": 6.0},
    }
    norm = normalise(table)
    assert norm["VGG16/arch1"] == pytest.approx({"default": 1, "Priority1": 1.2, "MemPolicy2": 0.8})
    assert norm["ResNet50/arch6"]["MemPolicy2"] == pytest.approx(1.5)
    fig = ablation(table, path=tmp_path / "ablation.png")
    assert _is_png(tmp_path / "ablation.png")
    heights = _heights(fig)
    # three policies × (two groups + geomean), policy by policy
    assert len(heights) == 9
    assert heights[5] == pytest.approx(math.sqrt(1.2))  # Priority1 geomean
    assert heights[8] == pytest.approx(math.sqrt(0.8 * 1.5))  # MemPolicy2 geomean
    with pytest.raises(ValueError, match="default"):
        normalise({"x": {"Priority1": 1.0}})


def test_plots_write_pngs(tmp_path):
    s = _schedule()
    memory_map(s, times=[17, 33, 51], path=tmp_path / "map.png")
    memory_snapshots(s, [17, 33, 51], path=tmp_path / "snap.png")
    fig = transfer_breakdown({"on-chip": s.problem, "Flexer": s}, path=tmp_path / "transfers.png")
    # bar heights in MiB add up to the bytes moved
    total = sum(_heights(fig)) * (1 << 20)
    assert total == pytest.approx(420 + s.transfer_bytes)
    spatial_reuse(s, path=tmp_path / "reuse.png")
    for name in ("map.png", "snap.png", "transfers.png", "reuse.png"):
        assert _is_png(tmp_path / name), name


def test_memory_map_many_residencies_and_given_axes(tmp_path):
    """Thousands of residencies draw through collections; plots also draw into a caller's axes."""
    import matplotlib.pyplot as plt

    s = _schedule()
    rng = np.random.default_rng(0)
    n = 5000
    start = rng.integers(0, 10_000, n)
    res = [
        Residency(int(d), int(a), 20, int(t), int(t) + 50)
        for d, a, t in zip(rng.integers(0, 8, n), rng.integers(0, 280, n), start, strict=True)
    ]
    big = FlexerSchedule(s.problem, 2, 300, 25.0, s.npu, s.start, s.end, s.transfers, res, s.order)
    assert len(residency_blocks(big)["start"]) >= n
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    memory_map(big, ax=axes[0, 0])
    transfer_breakdown({"Flexer": s}, ax=axes[0, 1])
    spatial_reuse(s, ax=axes[1, 0])
    out = ablation({"g": {"default": 2.0, "p": 1.0}}, ax=axes[1, 1], path=tmp_path / "all.png")
    assert out is fig and _is_png(tmp_path / "all.png")
