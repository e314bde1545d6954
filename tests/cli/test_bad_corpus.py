"""The malformed-input corpus (``tests/data/bad``, written by ``tools/make_bad_corpus.py``) through
the command line: each file ends in one ``npusched: error:`` line naming it, exit 2, no traceback
and nothing written. ``compare`` documents another contract: a bad instance is one error row (its
message names the file), the other rows complete, the CSV is written, and the exit code is 1."""

from __future__ import annotations

import csv
import json

import pytest
from conftest import ROOT, run_cli

from npusched.cli.main import main

BAD = ROOT / "tests" / "data" / "bad"
CASES = json.loads((BAD / "MANIFEST.json").read_text())
VERBS = {
    "solve", "verify", "info", "convert", "partition", "tile", "flexer", "orchestrate", "allocate",
}  # fmt: skip
"""Every verb that reads a file (``compare``: its own test below; ``generate`` reads none)."""


def test_the_corpus_is_large_complete_and_reaches_every_reading_verb():
    assert len(CASES) >= 60
    assert {c["file"] for c in CASES} == {p.name for p in BAD.iterdir()} - {"MANIFEST.json"}
    assert {c["args"][0] for c in CASES} == VERBS
    converted = {c["args"][1] for c in CASES if c["args"][0] == "convert"}
    assert converted == {"stg", "qaplib", "mspcd", "stream"}


def _check(case: dict, err: str, code: int, out) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("npusched: error:"), err
    assert case["file"] in lines[0], err
    assert "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["file"])
def test_bad_file_is_one_line_exit_2_nothing_written(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the manifest names the valid files from the repository root
    out = tmp_path / "out.json"
    argv = [a.format(file=BAD / case["file"], out=out) for a in case["args"]]
    code = main(argv)
    _check(case, capsys.readouterr().err, code, out)


SUBPROCESS = ["inst_deep.json", "inst_utf16.json", "stg_binary.stg", "dat_negative_n.dat",
              "stream_size_bits_string.json", "net_garbage.onnx"]  # fmt: skip


@pytest.mark.parametrize("name", SUBPROCESS)
def test_bad_file_in_a_process_of_its_own(name, tmp_path):
    """A few cases as a user runs them (``python -m npusched``, its own interpreter state)."""
    case = next(c for c in CASES if c["file"] == name)
    out = tmp_path / "out.json"
    proc = run_cli(*(a.format(file=BAD / name, out=out) for a in case["args"]), cwd=ROOT)
    _check(case, proc.stderr, proc.returncode, out)
    assert not proc.stdout


COMPARE = ["inst_nan.json", "inst_cycle.json", "inst_truncated.json.gz", "col_latency_ragged.json",
           "stream_size_bits_string.json", "stg_word.stg", "inst_utf16.json"]  # fmt: skip


def test_compare_makes_each_bad_instance_an_error_row(tmp_path):
    good = ROOT / "instances" / "examples" / "twelve.json"
    table = tmp_path / "rows.csv"
    files = [good, *(BAD / name for name in COMPARE)]
    proc = run_cli("compare", *files, "--methods", "list", "--cores", "2", "--workers", "1",
                   "--quiet", "--csv", table)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = proc.stderr.strip().splitlines()
    assert len(errors) == len(COMPARE) and all(e.startswith("npusched: error:") for e in errors)
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == len(files)
    assert rows[0]["status"] != "error" and rows[0]["verified"] == "True"
    for name, row in zip(COMPARE, rows[1:], strict=True):
        assert row["status"] == "error" and name in row["message"], row
        assert "\n" not in row["message"]
