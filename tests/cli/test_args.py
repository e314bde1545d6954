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
