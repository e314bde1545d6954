"""A fuzzer over every reader: any bytes give a valid object or an ``InputError``, nothing else.

Readers: instance JSON (row form, columnar form, routed, with μop outputs, ``.json.gz``),
placement JSON, solution JSON (of a DAG schedule and of a routed one), Kasahara ``.stg``, MSPCD
``.td``, QAPLIB ``.dat``, Stream export, network JSON, architecture JSON and ONNX. Inputs, drawn
by hypothesis from one valid file per reader:

- the valid file's bytes mutated (a byte flipped, a run cut, bytes inserted, a slice repeated,
  the tail cut off), random bytes and random text;
- the file re-encoded as UTF-16 (with and without a byte-order mark) or Latin-1;
- one number of the text replaced by a hostile token (huge, negative, fractional, a string, NaN,
  ``Infinity``, ``1e999``, 5 000 digits, a list, ...);
- (JSON) one value replaced by a hostile value, one key deleted, one value nested deep.

An ``InputError`` must name the file and be one line. ``FUZZ_EXAMPLES=1000`` runs a longer
search. The malformed files run through the command line are in ``tests/data/bad``
(``tests/cli/test_bad_corpus.py``).
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Callable
from functools import cache
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
GOOD_DIR = ROOT / "tests" / "data" / "good"  # a Stream export and its solution (make_bad_corpus)
STG = b"2\n0 0 0\n1 2 1 0\n2 3 1 1\n3 0 1 2\n"
TD = b"3\n1 5 1 2 4\n2 6 1 3 2\n3 7 0\n"
DAT = b"2\n\n0 1\n1 0\n\n0 3\n3 0\n"
PLACEMENT = {
    "format": "npusched/placement/v1",
    "name": "p",
    "mesh": {"rows": 2, "cols": 2},
    "cells": [0, 1, 3],
    "flow": [[0, 4, 1], [4, 0, 2], [1, 2, 0]],
    "reference": {"optimum": 9, "source": "hand"},
}
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", 100))
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


def _with_memory() -> bytes:
    """The small Stream export as an instance document with memory capacities, layers and a
    streamed μop."""
    from dataclasses import replace

    import numpy as np

    from npusched.io.instance_json import instance_to_dict

    inst = read_stream(GOOD_DIR / "stream_mini.json", memory=True)
    inst = replace(inst, streamed=np.arange(inst.n) == 0)
    return json.dumps(instance_to_dict(inst), default=lambda a: a.tolist()).encode()


def _routed() -> bytes:
    from npusched.bench.generate import layered_dag
    from npusched.io.instance_json import instance_to_dict
    from npusched.problem.scheduling.routed import RoutedInstance

    inst = RoutedInstance.from_mesh(layered_dag(2, 3, (2, 2), seed=3))
    return json.dumps(instance_to_dict(inst), default=lambda a: a.tolist()).encode()


def _with_output() -> bytes:
    """A routed mesh instance whose μops' outputs exceed their edges (edges carry what their
    consumers read), with memory capacities."""
    from dataclasses import replace

    import numpy as np

    from npusched.bench.generate import layered_dag
    from npusched.io.instance_json import instance_to_dict
    from npusched.problem.scheduling.routed import RoutedInstance

    inst = RoutedInstance.from_mesh(layered_dag(2, 3, (2, 2), seed=3))
    inst = replace(inst, output=inst.output_data + 5)
    inst = replace(inst, capacity=np.full(inst.m, 2 * int(inst.operand_data().max())))
    return json.dumps(instance_to_dict(inst), default=lambda a: a.tolist()).encode()


def _columnar() -> bytes:
    from npusched.io.instance_json import instance_to_dict

    doc = instance_to_dict(read_instance(GOOD), compact=True)
    return json.dumps(doc, default=lambda a: a.tolist()).encode()


def _solution() -> bytes:
    from npusched.heuristics.scheduling.list_scheduling import list_schedule
    from npusched.io import solution_to_dict
    from npusched.methods.scheduling import heuristic_result

    inst = read_instance(GOOD)
    res = heuristic_result("list", inst, list_schedule(inst))  # type: ignore[arg-type]
    return json.dumps(solution_to_dict(inst, res, str(GOOD)), default=int).encode()


Reader = tuple[str, Callable[[], bytes], Callable[[Path], Any]]
READERS: dict[str, Reader] = {
    "instance": (".json", GOOD.read_bytes, load_instance),
    "instance_columnar": (".json", _columnar, load_instance),
    "instance_gz": (".json.gz", lambda: gzip.compress(GOOD.read_bytes()), load_instance),
    "placement": (".json", lambda: json.dumps(PLACEMENT).encode(), load_instance),
    "instance_routed": (".json", _routed, load_instance),
    "solution": (".json", _solution, lambda p: read_solution(p, read_instance(GOOD))),
    "solution_routed": (
        ".json",
        (GOOD_DIR / "stream_mini_solution.json").read_bytes,
        lambda p: read_solution(p, read_stream(GOOD_DIR / "stream_mini.json")),
    ),
    "stg": (".stg", lambda: STG, lambda p: read_stg(p, 2)),
    "mspcd": (".td", lambda: TD, lambda p: read_mspcd(p, 4)),
    "qaplib": (".dat", lambda: DAT, read_qaplib),
    "stream": (".json", (GOOD_DIR / "stream_mini.json").read_bytes, read_stream),
    "stream_memory": (
        ".json",
        (GOOD_DIR / "stream_mini.json").read_bytes,
        lambda p: read_stream(p, memory=True),
    ),
    "instance_memory": (".json", _with_memory, load_instance),
    "instance_output": (".json", _with_output, load_instance),
    "network": (
        ".json",
        (ROOT / "npusched/workload/zoo/lenet.json").read_bytes,
        lambda p: resolve_network(str(p)),
    ),  # fmt: skip
    "onnx": (".onnx", _onnx, lambda p: resolve_network(str(p))),
    "arch": (".json", (ROOT / "npusched/arch/data/klotski-3x3.json").read_bytes, load_arch),
}
JSON_READERS = [k for k, v in READERS.items() if v[0] == ".json"]
TEXT_READERS = [k for k in READERS if k != "onnx"]


@cache
def base(name: str) -> bytes:
    """The valid file a reader's inputs are drawn from (it reads without error)."""
    return READERS[name][1]()


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few random edits: flip, cut, insert, repeat, truncate."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "insert", "repeat", "truncate"]))
        at = draw(st.integers(0, max(0, len(out) - 1)))
        if kind == "flip" and out:
            out[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del out[at : at + draw(st.integers(1, 16))]
        elif kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "repeat":
            out[at:at] = out[at : at + draw(st.integers(1, 32))]
        else:
            del out[at:]
    return bytes(out)


def reencoded(data: bytes) -> st.SearchStrategy[bytes]:
    """The text in another encoding than UTF-8."""
    text = data.decode("utf-8", "replace") + "\u00e9"  # Latin-1: not UTF-8 by this character
    return st.sampled_from(["utf-16", "utf-16-le", "utf-32", "latin-1"]).map(
        lambda enc: text.encode(enc, "replace")
    )


NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
TOKENS = [
    b"1e300", b"-1e300", b"1e999", b"-1e999", b"-5", b"0.5", b"3.0", b"NaN", b"Infinity",
    b"-Infinity", b"nan", b"inf", b'"big"', b"null", b"true", b"[]", b"{}", b"0x10",
    str(2**40 + 1).encode(), str(2**63).encode(), str(2**64 + 1).encode(), str(-(2**63)).encode(),
    b"9" * 40, b"9" * 5000, b"-0", b"1e-300", b"00", b"+1",
]  # fmt: skip
"""Hostile replacements for a number in a file's text."""


@st.composite
def token_replaced(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with one number (integer or float) replaced by a hostile token."""
    spans = [m.span() for m in NUMBER.finditer(data)]
    if not spans:
        return data
    a, b = draw(st.sampled_from(spans))
    return data[:a] + draw(st.sampled_from(TOKENS)) + data[b:]


def any_input(data: bytes) -> st.SearchStrategy[bytes]:
    return st.one_of(
        mutated(data),
        token_replaced(data),
        reencoded(data),
        st.binary(max_size=512),
        st.text(max_size=200).map(str.encode),
    )


HOSTILE = st.sampled_from(
    [2**70, -(2**70), 2**63, 2**41, -1, 0.5, 1e300, -1e300, "30", "big", "", None, True, [], {},
     [[[[[]]]]], {"a": {"b": {}}}, [1, [2]]]
)  # fmt: skip


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value of a JSON document (containers included)."""
    if isinstance(doc, dict):
        inner = [p for k, v in doc.items() for p in _paths(v, (*prefix, k))]
    elif isinstance(doc, list):
        inner = [p for k, v in enumerate(doc) for p in _paths(v, (*prefix, k))]
    else:
        inner = []
    return [prefix, *inner] if prefix else inner


_DEEP = object()


@st.composite
def edited_json(draw: st.DrawFn, data: bytes) -> bytes:
    """Valid JSON with one value replaced by a hostile one, nested deep, or its key deleted."""
    doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    paths = _paths(doc)
    if not paths:
        return data
    *head, last = draw(st.sampled_from(paths))
    node = doc
    for key in head:
        node = node[key]
    action = draw(st.sampled_from(["replace", "replace", "delete", "deep"]))
    if action == "delete" and isinstance(node, dict):
        del node[last]
        return json.dumps(doc).encode()
    if action == "deep":
        node[last] = _DEEP
        depth = draw(st.sampled_from([30, 2_000, 100_000]))
        opened, closed = (b"[" * depth, b"]" * depth) if draw(st.booleans()) else (
            b'{"a": ' * depth, b"}" * depth)  # fmt: skip
        text = json.dumps(doc, default=lambda _: "\x00deep").encode()
        return text.replace(b'"\\u0000deep"', opened + closed, 1)
    node[last] = draw(HOSTILE)
    return json.dumps(doc).encode()


def _read(tmp_path: Path, name: str, raw: bytes) -> None:
    suffix, _, reader = READERS[name]
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(gzip.compress(raw) if suffix == ".json.gz" and raw[:2] != b"\x1f\x8b" else raw)
    try:
        assert reader(path) is not None
    except InputError as err:
        assert str(path) in str(err) and "\n" not in str(err), str(err)


def test_the_bases_are_valid(tmp_path):
    for name in READERS:
        _read(tmp_path, name, base(name))
        suffix, _, reader = READERS[name]
        assert reader(tmp_path / f"fuzz{suffix}") is not None, name


@pytest.mark.parametrize("name", list(READERS))
@FUZZ
@given(data=st.data())
def test_any_bytes_give_an_object_or_input_error(tmp_path, name, data):
    raw = data.draw(any_input(base(name)) if name != "onnx" else st.one_of(
        mutated(base(name)), st.binary(max_size=512)))  # fmt: skip
    _read(tmp_path, name, raw)


@pytest.mark.parametrize("name", [*JSON_READERS, "instance_gz"])
@FUZZ
@given(data=st.data())
def test_edited_json_gives_an_object_or_input_error(tmp_path, name, data):
    _read(tmp_path, name, data.draw(edited_json(base(name))))
