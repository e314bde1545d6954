"""The malformed-input corpus (``tests/data/bad``, written by ``tools/make_bad_corpus.py``) through
the command line: each file ends in one ``npusched: error:`` line naming it, exit 2, no traceback
and nothing written."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from npusched.cli.main import main

BAD = ROOT / "tests" / "data" / "bad"
CASES = json.loads((BAD / "MANIFEST.json").read_text())


def test_the_corpus_is_large_and_complete():
    assert len(CASES) >= 60
    assert {c["file"] for c in CASES} == {p.name for p in BAD.iterdir()} - {"MANIFEST.json"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["file"])
def test_bad_file_is_one_line_exit_2_nothing_written(case, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the manifest names the good instance from the repository root
    out = tmp_path / "out.json"
    path = BAD / case["file"]
    argv = [a.format(file=path, out=out) for a in case["args"]]
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("npusched: error:"), err
    assert case["file"] in lines[0], err
    assert not out.exists()
