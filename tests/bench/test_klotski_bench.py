"""The Tables I–III bench on a small network: verified rows, the paper's columns, the doc block."""

from __future__ import annotations

import json

from npusched.bench import klotski


def test_rows_and_doc_block(tmp_path):
    doc = tmp_path / "results.md"
    doc.write_text("# prose before\n<!-- tables -->\nold\n<!-- /tables -->\nprose after\n")
    rows = tmp_path / "rows.json"
    code = klotski.main(["--networks", "lenet", "--meshes", "3x3", "--budget", "3",
                         "--final-time-limit", "1", "--threads", "1", "--json", str(rows),
                         "--doc", str(doc)])  # fmt: skip
    assert code == 0
    text = doc.read_text()
    assert text.startswith("# prose before\n") and text.endswith("prose after\n")
    assert "old" not in text and "| lenet | baseline 1 | " in text
    (row,) = json.loads(rows.read_text())
    assert row["evaluations"] == 3 and row["time_limit"] is None  # no paper figures for LeNet
    assert row["klotski"] <= row["baseline1"] and row["baseline1_uops"] <= row["uops"]
    # the space bound holds for every schedule of every shape, so for all three
    assert 0 < row["space_bound"] <= min(row["klotski"], row["baseline1"], row["baseline2"])
    assert row["space_bound"] <= row["bound"]  # Klotski's own shape is one of the space's
    assert "headroom over baseline 2" in text and "more than" in text
    assert row["klotski_hur"] > 1  # on LeNet Klotski keeps more cores busy than one per layer


def test_paper_figures_are_the_tables():
    assert len(klotski.PAPER) == 15
    for (net, mesh), p in klotski.PAPER.items():
        assert net in klotski.NETWORKS and mesh in klotski.MESHES
        assert p[4] < p[1] < p[0]  # Klotski beats baseline 2 beats baseline 1 in every row
