"""The transformer scale bench: a row per prefill length, the list only up to its cap."""

from npusched.bench.transformer_scale import main, run_case, table


def test_a_case_over_the_cap_says_so_and_the_table_shows_it(tmp_path):
    row = run_case(256, "klotski-4x4", list_max=0)
    assert row["uops"] > 10_000 and row["edges"] > row["uops"]
    assert row["list"] == "not run (over 0 μops)" and "makespan" not in row
    assert "not run (over 0 μops)" in table([row])
    doc = tmp_path / "d.md"
    doc.write_text("before\n<!-- scale -->\nold\n<!-- /scale -->\nafter\n")
    assert main(["--tokens", "256", "--list-max-uops", "0", "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert "old" not in text and "| 256 |" in text and text.startswith("before")
