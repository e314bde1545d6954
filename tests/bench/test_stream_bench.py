"""``python -m npusched.bench.stream``: every scheduler's row on an export, verified with memory,
and the table written between the markers of a Markdown file."""

from __future__ import annotations

from conftest import ROOT

from npusched.bench.stream import main, run_export

MINI = ROOT / "tests" / "data" / "good" / "stream_mini.json"


def test_rows_are_verified_with_memory_and_written_into_the_doc(tmp_path, capsys):
    rows = run_export(MINI, time_limit=5, threads=1)
    assert [r["method"] for r in rows][1:] == [
        "list, memory, latency priority",
        "list, memory, memory priority",
        "joint, memory, 5 s",
        "lns, memory, 5 s",
    ]
    for r in rows[1:]:
        assert r["ok"] and r["makespan"] >= r["bound"]
    doc = tmp_path / "results.md"
    doc.write_text("# prose\n<!-- tables -->\nold\n<!-- /tables -->\nafter\n")
    assert main([str(MINI), "--time-limit", "2", "--threads", "1", "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("# prose\n") and text.endswith("after\n") and "old" not in text
    assert text.count("| stream_mini |") == 5 == capsys.readouterr().out.count("| stream_mini |")
