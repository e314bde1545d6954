"""The Flexer sweep over NPUs × global buffer × DRAM bandwidth (issue 25, item 2)."""

from __future__ import annotations

import json

import matplotlib.image as mpimg
import numpy as np
import pytest

from npusched.arch import load_arch
from npusched.bench import flexer_sweep
from npusched.bench.flexer_sweep import (
    BASE_ARCH,
    common_ratios,
    main,
    positive_list,
    regime,
    sweep_arch,
)
from npusched.costmodel.zigzag_input import sram_bits
from npusched.methods.flexer import OOO_KINDS
from npusched.plot.flexer_sweep import sweep_grid, sweep_heatmaps
from npusched.problem.flexer.settings import Settings


def test_sweep_arch_replaces_the_three_axes_only():
    """The swept architecture is the base one with its NPU count, buffer and bandwidth
    replaced, and the cost model sees the same buffer (ZigZag's SRAM per NPU: its share)."""
    base = load_arch(BASE_ARCH)
    arch = sweep_arch(base, 2, 128, 4.5)
    s, b = Settings.from_arch(arch), Settings.from_arch(base)
    assert (s.n_npus, s.capacity, s.bandwidth) == (2, 128 * 1024, 4.5)
    assert s.unroll == b.unroll and arch.cores[1].pe_unroll == base.cores[0].pe_unroll
    assert sram_bits(arch, arch.cores[0], 0)[0] == 64 * 1024 * 8


def test_common_ratios_are_over_the_layers_every_cell_compares():
    rows = [
        {"network": "n", "cost": "c", "layers": {"a": [1, 10, 2, 10], "b": [1, 1, 9, 9]}},
        {"network": "n", "cost": "c", "layers": {"a": [2, 10, 3, 20]}},
        {"network": "m", "cost": "c", "layers": {}},
    ]
    common_ratios(rows)
    assert [r["common"] for r in rows] == [1, 1, 0]
    assert (rows[0]["common_speedup"], rows[0]["common_reduction"]) == (2.0, 1.0)
    assert (rows[1]["common_speedup"], rows[1]["common_reduction"]) == (1.5, 2.0)
    assert rows[2]["common_speedup"] is None


def test_a_small_sweep_writes_rows_a_heat_map_and_the_regime(tmp_path, capsys):
    """Two buffers × two bandwidths on 2 NPUs: one verified row per cell with positive ratios,
    a PNG per network and cost model, and the regime line that names its cells."""
    out, png = tmp_path / "rows.json", tmp_path / "sweep.png"
    argv = ["--networks", "squeezenet", "--costs", "analytic", "--npus", "2",
            "--buffers", "128,512", "--dram", "4,64", "--max-ops", "8", "--workers", "1",
            "--json", str(out), "--plot", str(png)]  # fmt: skip
    assert main(argv) == 0
    rows = json.loads(out.read_text())
    assert [(r["buffer_kib"], r["dram"]) for r in rows] == [(128, 4), (128, 64), (512, 4),
                                                           (512, 64)]  # fmt: skip
    for r in rows:
        assert r["compared"] > 0 and r["verified"] > 0
        assert r["speedup"] > 0 and r["transfer_reduction"] > 0
        assert r["common"] == len(set.intersection(*(set(x["layers"]) for x in rows)))
        assert r["common"] <= r["compared"] == len(r["layers"])
    drawn = tmp_path / "sweep-squeezenet-analytic.png"
    assert mpimg.imread(drawn).shape[0] > 100
    if rows[0]["common"]:
        assert mpimg.imread(tmp_path / "sweep-squeezenet-analytic-common.png").shape[0] > 100
    text = capsys.readouterr().out
    assert "squeezenet, analytic: speedup ≥ 1.2 in" in text and "of 4 cells" in text
    assert "squeezenet, analytic: common_speedup ≥ 1.2 in" in text


def test_regime_names_the_cells_at_the_threshold():
    rows = [{"network": "n", "cost": "c", "npus": 2, "buffer_kib": b, "dram": d, "speedup": s,
             "transfer_reduction": 1.0} for b, d, s in ((128, 4, 1.3), (256, 4, 1.1))]  # fmt: skip
    line = regime(rows, 1.2)
    assert "speedup ≥ 1.2 in 1 of 2 cells (2 NPUs, 128 KiB, 4 B/cycle)" in line
    assert "best 1.300×" in line
    assert "0 of 2 cells (none)" in regime(rows, 1.5)


def _row(n: int, b: int, d: int) -> dict:
    speed = None if (n, b, d) == (4, 128, 32) else 1 + b / 1000 - d / 100  # no ratio there
    return {"network": "n", "cost": "c", "npus": n, "buffer_kib": b, "dram": d,
            "speedup": speed, "transfer_reduction": None if speed is None else 1.0}  # fmt: skip


def test_grid_and_heat_map_of_rows(tmp_path):
    """Missing cells and cells without a ratio are NaN in the grid and blank in the map; the
    regime leaves the latter out."""
    cells = [(n, b, d) for n in (2, 4) for b in (128, 256) for d in (8, 32)]
    rows = [_row(*c) for c in cells if c != (4, 256, 32)]
    buffers, drams, grid = sweep_grid(rows, 4, "speedup")
    assert buffers == [128, 256] and drams == [8, 32]
    assert np.isnan(grid[1, 1]) and np.isnan(grid[0, 1])
    assert grid[0, 0] == pytest.approx(1 + 0.128 - 0.08)
    assert "in 0 of 6 cells" in regime(rows, 1.2)
    assert sweep_heatmaps(rows, tmp_path / "h.png") == tmp_path / "h.png"
    with pytest.raises(ValueError, match="no sweep rows"):
        sweep_heatmaps([], None)


@pytest.mark.parametrize(
    ("args", "word"),
    [(["--dram", "4,0"], "--dram"), (["--buffers", "-1"], "--buffers"),
     (["--npus", "2.5"], "--npus"), (["--npus", "x"], "--npus"),
     (["--buffers", "inf"], "--buffers"), (["--dram", "nan"], "--dram"),
     (["--costs", "gpu"], "--costs"), (["--networks", "nosuchnet"], "nosuchnet"),
     (["--lpf-limit", "0"], "--lpf-limit")],
)  # fmt: skip
def test_bad_sweep_values_are_one_line_errors(args, word, capsys):
    assert main([*args, "--plot", ""]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:") and word in err


def test_positive_list():
    assert positive_list("1,2.5", "--x") == [1.0, 2.5]
    with pytest.raises(ValueError, match="--x: every value must be a finite number > 0"):
        positive_list("", "--x")


def test_resume_takes_earlier_cells_and_searches_the_rest(tmp_path, capsys, monkeypatch):
    """A second run with ``--resume`` copies the cells the first wrote (identical rows, no
    search) and searches only the new one; a bad resume file is a one-line error."""
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    base = ["--networks", "squeezenet", "--costs", "analytic", "--npus", "2", "--buffers", "512",
            "--max-ops", "8", "--workers", "1", "--plot", ""]  # fmt: skip
    assert main([*base, "--dram", "8", "--json", str(first)]) == 0
    old = json.loads(first.read_text())
    searched = []
    cell = flexer_sweep.sweep_cell

    def counted(*a):
        searched.append(a[1].dram_bytes_per_cycle())
        return cell(*a)

    monkeypatch.setattr(flexer_sweep, "sweep_cell", counted)
    assert main([*base, "--dram", "8,16", "--json", str(second), "--resume", str(first)]) == 0
    rows = json.loads(second.read_text())
    assert searched == [16] and [r["dram"] for r in rows] == [8, 16]
    assert {k: v for k, v in rows[0].items() if "common" not in k} == {
        k: v for k, v in old[0].items() if "common" not in k
    }
    assert rows[1]["verified"] > 0 and rows[1]["scheduler"] == "ooo" and rows[1]["max_ops"] == 8
    capsys.readouterr()
    good = rows[0]
    bads = ['{"a": 1}', '[{"network": "x"}]', "[1]", "[{"] + [
        json.dumps([{**good, **change}])
        for change in ({"speedup": "fast"}, {"npus": True}, {"layers": {"c1": [1, 2, 3]}},
                       {"layers": {"c1": [1, 2, 3, -4]}}, {"layers": "c1"}, {"network": 3},
                       {"verified": None})
    ]  # fmt: skip
    for bad in bads:
        (tmp_path / "bad.json").write_text(bad)
        assert main([*base, "--dram", "8", "--resume", str(tmp_path / "bad.json")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "bad.json" in err
    doc = tmp_path / "doc.md"
    doc.write_text("intro\n<!-- sweep -->\nold\n<!-- /sweep -->\nend\n")
    argv = [*base, "--dram", "8,16", "--resume", str(second), "--doc", str(doc)]
    assert main(argv) == 0
    text = doc.read_text()
    assert "2 cells, 0 searched in" in text and "2 taken from --resume" in text
    assert text.startswith("intro\n<!-- sweep -->") and "old" not in text and text.endswith("end\n")


def test_a_stopped_sweep_goes_on_with_its_own_json_as_resume(tmp_path, monkeypatch):
    """``--json F --resume F``: the cells F holds are kept, the rest searched, F holds all."""
    rows_file = tmp_path / "rows.json"
    base = ["--networks", "squeezenet", "--costs", "analytic", "--npus", "2", "--buffers", "512",
            "--max-ops", "8", "--workers", "1", "--plot", "", "--json", str(rows_file)]  # fmt: skip
    assert main([*base, "--dram", "8"]) == 0
    searched = []
    cell = flexer_sweep.sweep_cell
    monkeypatch.setattr(flexer_sweep, "sweep_cell",
                        lambda *a: searched.append(a[1].dram_bytes_per_cycle()) or cell(*a))
    assert main([*base, "--dram", "8,16", "--resume", str(rows_file)]) == 0
    assert searched == [16]
    assert [r["dram"] for r in json.loads(rows_file.read_text())] == [8, 16]


def test_every_out_of_order_search_can_be_swept(capsys):
    """``--scheduler`` offers the three OoO searches of ``search_network`` and nothing else."""
    for kind in OOO_KINDS:
        assert flexer_sweep._parse(["--scheduler", kind]).scheduler == kind
    with pytest.raises(SystemExit):
        flexer_sweep._parse(["--scheduler", "static"])
    assert "invalid choice" in capsys.readouterr().err


def test_zigzag_cells_are_keyed_by_their_lpf_limit():
    row = {"network": "vgg16", "cost": "zigzag", "npus": 2, "buffer_kib": 128, "dram": 4,
           "scheduler": "ooo", "max_ops": 256}  # fmt: skip
    assert flexer_sweep.cell_key(row) == flexer_sweep.cell_key({**row, "lpf_limit": 6})
    assert flexer_sweep.cell_key(row) != flexer_sweep.cell_key({**row, "lpf_limit": 3})
    analytic = {**row, "cost": "analytic"}
    assert flexer_sweep.cell_key(analytic) == flexer_sweep.cell_key({**analytic, "lpf_limit": 3})
