"""InputError keeps its file, field and reason across a process boundary."""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from npusched.common.errors import InputError


def _fail(path: str) -> None:
    raise InputError(path, "edges[3].src", "unknown μop id 99")


def test_pickle_round_trip() -> None:
    err = pickle.loads(pickle.dumps(InputError("a.json", "uops", "empty")))
    assert isinstance(err, InputError)
    assert (err.path, err.field, err.reason) == ("a.json", "uops", "empty")
    assert str(err) == "a.json: uops: empty"


def test_crosses_a_process_pool() -> None:
    with ProcessPoolExecutor(1) as pool, pytest.raises(InputError) as exc:
        pool.submit(_fail, "bad/cycle.json").result()
    assert exc.value.field == "edges[3].src" and "bad/cycle.json" in str(exc.value)
