"""``python -m npusched.bench.stream``: every scheduler's row on an export, verified with memory,
the GA's rows, and the table written between the markers of a Markdown file."""

from __future__ import annotations

import pytest
from conftest import ROOT

from npusched.bench.stream import main, run_export

MINI = ROOT / "tests" / "data" / "good" / "stream_mini.json"


def test_rows_are_verified_with_memory_and_written_into_the_doc(tmp_path, capsys):
    rows = run_export(MINI, time_limit=2, threads=1, ga=(2, 4))
    assert [(r["allocation"], r["method"]) for r in rows][1:5] == [
        ("Stream's", "list, memory, latency priority"),
        ("Stream's", "list, memory, memory priority"),
        ("Stream's", "joint, memory, 2 s"),
        ("Stream's", "lns, memory, 2 s"),
    ]
    assert [r["allocation"] for r in rows[5:7]] == ["Stream's, memories x0.1"] * 2
    assert [r["allocation"] for r in rows[7:]] == ["GA's best"] * 3 + ["exact model's (LNS)"]
    assert rows[-1]["makespan"] <= rows[7]["makespan"]  # the LNS starts from the GA's best
    for r in rows[1:]:
        assert r["ok"] and r["makespan"] >= r["bound"] and len(r["moves"]) == 2
        assert all(p <= c for p, c in zip(r["peaks"], r["capacity"], strict=True))
    doc = tmp_path / "results.md"
    doc.write_text("# prose\n<!-- tables -->\nold\n<!-- /tables -->\nafter\n")
    assert main([str(MINI), "--time-limit", "2", "--threads", "1", "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("# prose\n") and text.endswith("after\n") and "old" not in text
    assert text.count("| stream_mini |") == 7 == capsys.readouterr().out.count("| stream_mini |")
    with pytest.raises(SystemExit):
        main([str(MINI), "--ga", "3"])
