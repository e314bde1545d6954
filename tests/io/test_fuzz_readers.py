"""A fuzzer over every reader: any bytes give a valid object or an ``InputError``, nothing else.

Inputs are valid files mutated by hypothesis (bytes flipped, cut, inserted, slices repeated),
arbitrary binary, and valid JSON with one value replaced by a hostile one (huge, negative,
fractional, a string, null, a deep list). ``FUZZ_EXAMPLES=1000`` runs a longer search (48 s).
The malformed files run through the command line are in ``tests/data/bad``
(``tests/cli/test_bad_corpus.py``).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npusched.arch import load_arch
from npusched.common.errors import InputError
from npusched.io import load_instance, read_instance, read_solution, read_stream
from npusched.io.mspcd import read_mspcd
from npusched.io.placement_json import read_qaplib
from npusched.io.stg import read_stg
from npusched.partition.api import resolve_network

GOOD = ROOT / "instances" / "examples" / "twelve.json"
STG = b"2\n0 0 0\n1 2 1 0\n2 3 1 1\n3 0 1 2\n"
TD = b"3\n1 5 1 2 4\n2 6 1 3 2\n3 7 0\n"
DAT = b"2\n\n0 1\n1 0\n\n0 3\n3 0\n"
STREAM = json.dumps({"schema": "stream_instance/v1", "cores": [], "cns": []}).encode()
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", 60))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def _onnx() -> bytes:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 4, 4])], [w],
    )  # fmt: skip
    return onnx.helper.make_model(graph).SerializeToString()


def _solution() -> bytes:
    from npusched.heuristics.scheduling.list_scheduling import list_schedule
    from npusched.io import solution_to_dict
    from npusched.methods.scheduling import heuristic_result

    inst = read_instance(GOOD)
    res = heuristic_result("list", inst, list_schedule(inst))  # type: ignore[arg-type]
    return json.dumps(solution_to_dict(inst, res, str(GOOD)), default=int).encode()


READERS: dict[str, tuple[str, Callable[[], bytes], Callable[[Path], Any]]] = {
    "instance": (".json", GOOD.read_bytes, load_instance),
    "instance_gz": (".json.gz", lambda: gzip.compress(GOOD.read_bytes()), load_instance),
    "solution": (".json", _solution, lambda p: read_solution(p, read_instance(GOOD))),
    "stg": (".stg", lambda: STG, lambda p: read_stg(p, 2)),
    "mspcd": (".td", lambda: TD, lambda p: read_mspcd(p, 4)),
    "qaplib": (".dat", lambda: DAT, read_qaplib),
    "stream": (".json", lambda: STREAM, read_stream),
    "network": (
        ".json",
        (ROOT / "npusched/workload/zoo/lenet.json").read_bytes,
        lambda p: resolve_network(str(p)),
    ),  # fmt: skip
    "onnx": (".onnx", _onnx, lambda p: resolve_network(str(p))),
    "arch": (".json", (ROOT / "npusched/arch/data/klotski-3x3.json").read_bytes, load_arch),
}


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    """``base`` with a few random edits: flip, cut, insert, repeat."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "repeat", "truncate"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[at : at + draw(st.integers(1, 16))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "repeat":
            data[at:at] = data[at : at + draw(st.integers(1, 32))]
        else:
            del data[at:]
    return bytes(data)


HOSTILE = st.sampled_from(
    [2**70, -(2**70), 2**41, -1, 0.5, 1e300, "30", None, True, [], {}, [[[[[]]]]]]
)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a scalar of a JSON document."""
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in _paths(v, (*prefix, k))]
    if isinstance(doc, list):
        return [p for k, v in enumerate(doc) for p in _paths(v, (*prefix, k))]
    return [prefix]


@st.composite
def hostile_json(draw: st.DrawFn, base: bytes) -> bytes:
    """Valid JSON with one scalar replaced by a hostile value."""
    doc = json.loads(base)
    paths = _paths(doc)
    if not paths or paths == [()]:
        return base
    *head, last = draw(st.sampled_from(paths))
    node = doc
    for key in head:
        node = node[key]
    node[last] = draw(HOSTILE)
    return json.dumps(doc).encode()


def _read(tmp_path: Path, suffix: str, reader: Callable[[Path], Any], data: bytes) -> None:
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(data)
    try:
        assert reader(path) is not None
    except InputError as err:
        assert str(path) in str(err) and "\n" not in str(err)


@pytest.mark.parametrize("name", list(READERS))
@FUZZ
@given(data=st.data())
def test_mutated_files_give_an_object_or_input_error(tmp_path, name, data):
    suffix, base, reader = READERS[name]
    raw = data.draw(st.one_of(mutated(base()), st.binary(max_size=512)))
    _read(tmp_path, suffix, reader, raw)


@pytest.mark.parametrize("name", [k for k, v in READERS.items() if v[0] == ".json"])
@FUZZ
@given(data=st.data())
def test_hostile_values_give_an_object_or_input_error(tmp_path, name, data):
    suffix, base, reader = READERS[name]
    _read(tmp_path, suffix, reader, data.draw(hostile_json(base())))
