"""``python -m npusched.bench.memory_scaling``: verified rows and the growth columns."""

from __future__ import annotations

from npusched.bench.memory_scaling import main, measure, table


def test_rows_verify_and_growth_is_printed(capsys):
    rows = [measure(4, 6), measure(8, 6)]
    assert all(r["ok"] for r in rows) and rows[1]["n"] > rows[0]["n"]
    lines = table(rows)
    assert len(lines) == 4 and lines[2].endswith("| – | – | 0 | 0 | 0 | ok |")
    assert main(["--layers", "3,6", "--width", "5"]) == 0
    assert capsys.readouterr().out.count("| ok |") == 2


def test_evicting_rows_verify():
    rows = [measure(4, 6, evict=True), measure(8, 6, evict=True)]
    assert all(r["ok"] for r in rows)
    assert all(r["refetch"] > 0 for r in rows)  # memories of one μop's data evict
    assert main(["--layers", "3", "--width", "5", "--evict"]) == 0


def test_forwarding_rows_verify_and_forward():
    rows = [measure(4, 6, evict=True, forward=True), measure(8, 6, evict=True, forward=True)]
    assert all(r["ok"] for r in rows) and any(r["forward"] > 0 for r in rows)
    assert main(["--layers", "3", "--width", "5", "--evict", "--forward"]) == 0
