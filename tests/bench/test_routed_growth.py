"""``python -m npusched.bench.routed_growth``: the smallest case measured in its own process,
the growth block written, bad options refused."""

from __future__ import annotations

import pytest

from npusched.bench.routed_growth import main, table


def test_the_smallest_case_is_measured_and_written(tmp_path, capsys):
    doc = tmp_path / "results_routed.md"
    doc.write_text("# Routed\n\n<!-- growth -->\nold\n<!-- /growth -->\n")
    assert main(["--max-uops", "700", "--doc", str(doc)]) == 0
    out = capsys.readouterr().out
    assert "klotski-4x4 s=14,14,256,256" in out
    text = doc.read_text()
    assert "old" not in text and "| klotski-4x4 s=14,14,256,256 |" in text


def test_the_table_shows_growth_against_the_row_before():
    rows = [
        dict(case="a", n=100, E=200, partition=0.1, heads=0.01, bound=0.02, live=0.01,
             relax=0.0, model=0.5, peak_mb=80, lower_bound=10),
        dict(case="b", n=300, E=600, partition=0.2, heads=0.03, bound=0.06, live=0.03,
             relax=0.0, model=None, peak_mb=90, lower_bound=12),
    ]  # fmt: skip
    lines = table(rows)
    assert "| b | 300 | 600 | 3.00 |" in lines[3] and "| 3.00 |" in lines[3]
    assert lines[3].count("–") == 2  # no model above the cap: neither its time nor its growth


def test_bad_options_exit_2(capsys):
    with pytest.raises(SystemExit) as err:
        main(["--max-uops", "0"])
    assert err.value.code == 2 and "--max-uops" in capsys.readouterr().err
