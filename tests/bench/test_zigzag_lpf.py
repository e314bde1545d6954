"""bench.zigzag_lpf: ZigZag under two LOMA limits on tile shapes of the sweep's tilings."""

from __future__ import annotations

import pytest

from npusched.arch import load_arch
from npusched.bench.flexer_sweep import sweep_arch
from npusched.bench.zigzag_lpf import main, sweep_shapes
from npusched.problem.flexer.settings import Settings


def test_shapes_are_those_of_viable_tilings_and_distinct():
    small = Settings.from_arch(sweep_arch(load_arch("flexer-arch5"), 2, 128, 32), max_ops=4)
    large = Settings.from_arch(sweep_arch(load_arch("flexer-arch5"), 2, 1024, 32), max_ops=4)
    few, many = sweep_shapes(["squeezenet"], small), sweep_shapes(["squeezenet"], large)
    assert len({s.key() for s in many}) == len(many) > 0
    assert {s.key() for s in few} < {s.key() for s in many}  # a larger buffer fits more


def test_a_small_comparison_prints_one_row_per_limit(capsys):
    argv = ["--networks", "squeezenet", "--sample", "3", "--limits", "2,1", "--max-ops", "4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "3 drawn (seed 0)" in out
    cells = [line.split("|") for line in out.splitlines() if line.startswith("|")]
    rows = ["|".join(c) for c in cells if c[1].strip().isdigit()]
    assert [r.split("|")[1].strip() for r in rows] == ["1", "2"]
    assert rows[1].split("|")[3].strip() == rows[1].split("|")[2].strip()  # 2 equals itself


@pytest.mark.parametrize("args", [["--limits", "0"], ["--limits", "2.5"], ["--sample", "-1"],
                                  ["--networks", "nosuchnet"]])  # fmt: skip
def test_bad_values_are_one_line_errors(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:")


def test_a_fallback_answer_leaves_the_shape_out_of_every_row(monkeypatch):
    """A shape ZigZag answers with the analytic fallback (no ``latency_total2``) under one
    limit is compared under none, and counted as left out."""
    from dataclasses import replace

    from npusched.bench import zigzag_lpf
    from npusched.costmodel.zigzag import ZigZagCost

    settings = Settings.from_arch(sweep_arch(load_arch("flexer-arch5"), 2, 1024, 32), max_ops=4)
    shapes = sweep_shapes(["squeezenet"], settings)[:3]
    real = ZigZagCost.explain

    def explain(self, shape, core):
        got = real(self, shape, core)
        if shape.key() == shapes[0].key() and self.lpf_limit == 1:
            return replace(got, latency_total2=None, source="analytic fallback: test")
        return got

    monkeypatch.setattr(ZigZagCost, "explain", explain)
    rows = zigzag_lpf.compare(shapes, [1, 2])
    assert [r["shapes"] for r in rows] == [2, 2]
    assert all(r["left_out"] == 1 for r in rows)
