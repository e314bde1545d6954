"""The large-instance bench runs the CLI steps as a user would (smallest case only here)."""

from __future__ import annotations

from npusched.bench.instance_io import main


def test_smallest_case(capsys, tmp_path):
    assert main(["--max-uops", "5000", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for step in ("partition -o .json", "partition -o .json.gz", "info (read)", "verify"):
        assert step in out
    assert "| klotski-4x4 s=14,14,64,64 |   4791 |" in out
    assert (tmp_path / "i.json.gz").read_bytes()[:2] == b"\x1f\x8b"
