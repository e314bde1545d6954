"""Columnar instances and .json.gz: the same instances as the row form, and clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

from npusched.bench.generate import layered_dag
from npusched.io import read_instance, write_instance
from npusched.io.instance_json import instance_to_dict
from npusched.problem import Accelerator, SchedulingInstance, UopGraph


def _same(a: SchedulingInstance, b: SchedulingInstance) -> None:
    ga, gb = a.graph, b.graph
    assert ga.ids == gb.ids
    for name in ("latency", "src", "dst", "bytes"):
        assert np.array_equal(getattr(ga, name), getattr(gb, name)), name
    assert a.accelerator == b.accelerator and a.name == b.name and a.source == b.source
    assert vars(a.reference) == vars(b.reference)
    assert (a.latency_table is None) == (b.latency_table is None)
    if a.latency_table is not None:
        assert np.array_equal(a.latency_table, b.latency_table)


def _instances() -> list[SchedulingInstance]:
    mesh = layered_dag(5, 4, (2, 3), hop_latency=2, link_bandwidth=4.0, seed=1)
    g = UopGraph(
        np.array([3, 4, 5]), np.array([0, 1]), np.array([2, 2]), np.array([8, 0]), ("a", "b", "c")
    )
    table = np.array([[3, 6], [4, 8], [5, 9]])
    hetero = SchedulingInstance(g, Accelerator.identical(2), table, "hetero")
    return [mesh, hetero]


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_rows_and_columns_load_identically(tmp_path, suffix):
    for k, inst in enumerate(_instances()):
        rows, cols = tmp_path / f"r{k}{suffix}", tmp_path / f"c{k}{suffix}"
        write_instance(inst, rows, compact=False)
        write_instance(inst, cols, compact=True)
        a, b = read_instance(rows), read_instance(cols)
        _same(a, inst)
        _same(b, inst)
        if suffix == ".json":
            assert isinstance(json.loads(cols.read_text())["uops"], dict)
            assert isinstance(json.loads(rows.read_text())["uops"], list)
        else:
            assert rows.read_bytes()[:2] == b"\x1f\x8b"  # gzip magic


def test_small_instances_keep_the_row_form():
    assert isinstance(instance_to_dict(_instances()[0])["uops"], list)


def _plain(doc):
    """The document with its numpy columns as lists (what a JSON file holds)."""
    return json.loads(json.dumps(doc, default=lambda a: a.tolist()))


def _columnar(tmp_path, **change) -> str:
    """The first instance in columnar form with ``part__field`` replaced by ``make(n)``."""
    doc = _plain(instance_to_dict(_instances()[0], compact=True))
    n = len(doc["uops"]["id"])
    for key, make in change.items():
        part, field = key.split("__")
        doc[part][field] = make(n)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize(
    "change,field,reason",
    [
        ({"uops__latency": lambda n: [1, 2]}, "uops.latency", "has 2 entries"),
        ({"edges__dst": lambda n: [0]}, "edges.dst", "has 1 entries"),
        ({"uops__latency": lambda n: [1, -1] + [1] * (n - 2)}, "uops.latency[1]", ">= 0"),
        ({"uops__latency": lambda n: [1.5] * n}, "uops.latency[0]", "must be an integer, got 1.5"),
        ({"uops__id": lambda n: [0] * n}, "uops.id[1]", "duplicate μop id 0"),
        ({"uops__id": lambda n: ["a", *range(1, n)]}, "uops.id", "all integers or all strings"),
    ],
)
def test_bad_columns_name_the_field(tmp_path, change, field, reason):
    path = _columnar(tmp_path, **change)
    proc = run_cli("info", path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"npusched: error: {path}: {field}")
    assert reason in proc.stderr


def test_unknown_edge_end(tmp_path):
    doc = _plain(instance_to_dict(_instances()[0], compact=True))
    doc["edges"]["src"][3] = 999
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    proc = run_cli("solve", path, "--method", "list", "--out", tmp_path / "s.json")
    assert proc.returncode == 2
    assert f"{path}: edges.src[3]: no μop has id 999" in proc.stderr
    assert not (tmp_path / "s.json").exists()


def test_bad_gzip_is_an_input_error(tmp_path):
    path = tmp_path / "x.json.gz"
    path.write_bytes(b"not gzip at all")
    proc = run_cli("info", path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"npusched: error: {path}: (file):" in proc.stderr
