"""Argument types: numbers that JSON cannot hold are refused with argparse's one-line error."""

from __future__ import annotations

import argparse

import pytest

from npusched.cli.args import finite_float, positive_float


@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "Infinity", "1e999"])
def test_non_finite_refused(text: str) -> None:
    for kind in (finite_float, positive_float):
        with pytest.raises(argparse.ArgumentTypeError, match="finite"):
            kind(text)


def test_values() -> None:
    assert finite_float("-2.5") == -2.5 and positive_float("1e3") == 1000.0
    with pytest.raises(argparse.ArgumentTypeError, match="positive"):
        positive_float("0")
    with pytest.raises(argparse.ArgumentTypeError, match="number"):
        finite_float("ten")


def test_output_paths(tmp_path):
    from npusched.cli.args import output_dir, output_file

    assert output_file(str(tmp_path / "new" / "deeper" / "x.json")).endswith("x.json")
    with pytest.raises(argparse.ArgumentTypeError, match="is a folder"):
        output_file(str(tmp_path))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(argparse.ArgumentTypeError, match="is a file, not a folder"):
        output_file(str(blocker / "x.json"))
    with pytest.raises(argparse.ArgumentTypeError, match="is a file, not a folder"):
        output_dir(str(blocker))
    assert output_dir(str(tmp_path / "out")) == str(tmp_path / "out")


def test_written_files_follow_the_umask(tmp_path):
    import os

    from npusched.common.jsonio import write_json

    old = os.umask(0o022)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
