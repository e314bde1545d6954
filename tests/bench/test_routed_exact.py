"""``python -m npusched.bench.routed_exact``: every row verified, the doc block written, bad
options refused."""

from __future__ import annotations

from npusched.bench.routed_exact import generated, main, run_one, table


def test_a_quick_run_verifies_and_writes_the_doc(tmp_path, capsys):
    doc = tmp_path / "results_routed.md"
    doc.write_text("# Routed\n\n<!-- tables -->\nold\n<!-- /tables -->\n")
    assert main(["--quick", "--time-limit", "3", "--doc", str(doc), "--json",
                 str(tmp_path / "rows.json")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.count("| ok |") == 3 and "FAILED" not in out
    text = doc.read_text()
    assert "old" not in text and "proven optimal within 3 s" in text


def test_rows_report_what_the_solver_returned():
    name, inst = generated(quick=True)[1]  # the tight variant: its memory binds
    row = run_one(name, inst, 5, 2)
    assert row["verified"] and row["binds"]
    assert row["bound"] <= row["exact"] <= row["list"]
    assert (row["status"] == "optimal") == (row["bound"] >= row["exact"])
    assert any("| optimal |" in ln or "| feasible |" in ln for ln in table([row], 5))


def test_bad_options_exit_2(capsys):
    assert main(["--time-limit", "0"]) == 2
    assert "time-limit" in capsys.readouterr().err
