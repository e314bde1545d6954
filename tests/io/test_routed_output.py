"""The instance JSON's per-μop ``output`` (the data a μop produces; its edges then carry what
their consumers read): written when the instance has it, read back, and malformed values
refused with the file and field named."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from npusched import Accelerator, SchedulingInstance, UopGraph
from npusched.io import InputError, read_instance, write_instance
from npusched.io.instance_json import instance_from_dict, instance_to_dict
from npusched.problem.scheduling.routed import Link, RoutedInstance, Topology, required_transfers


def halo() -> RoutedInstance:
    """P (core 0) makes 32 units; Q1 and Q2 on core 1 read 8 and 16 of them, L on core 0 24."""
    links = (Link(0, 0, 1, 4.0), Link(1, 1, 0, 4.0), Link(2, 9, None, 2.0, offchip=True))
    routes = {(0, 1): (0,), (1, 0): (1,), (9, 0): (2,), (9, 1): (2,), (0, 9): (2,), (1, 9): (2,)}
    g = UopGraph(np.array([2, 1, 1, 1]), np.array([0, 0, 0]), np.array([1, 2, 3]),
                 np.array([8, 16, 24]))  # fmt: skip
    base = SchedulingInstance(g, Accelerator.identical(2), name="halo")
    mask = np.array([[1, 0], [0, 1], [0, 1], [1, 0]], dtype=bool)
    return RoutedInstance(base, Topology(links, routes, 9), mask, output=np.array([32, 0, 0, 5]),
                          capacity=np.array([64, 40]), layer=np.array([0, 1, 1, 1]))  # fmt: skip


def test_round_trip_keeps_the_outputs(tmp_path):
    inst = halo()
    doc = instance_to_dict(inst)
    assert [u["output"] for u in doc["uops"]] == [32, 0, 0, 5]
    for back in (instance_from_dict(doc), _file(tmp_path, doc)):
        assert isinstance(back, RoutedInstance) and back.output.tolist() == [32, 0, 0, 5]
        core = np.array([0, 1, 1, 0])
        assert required_transfers(back, core).data.tolist() == [24]  # not the whole 32
        assert instance_to_dict(back) == doc
    plain = instance_to_dict(replace(inst, output=None))
    assert not any("output" in u for u in plain["uops"])  # files without it are unchanged
    assert instance_from_dict(plain).output is None


def _file(tmp_path, doc) -> RoutedInstance:
    path = tmp_path / "halo.json"
    path.write_text(json.dumps(doc))
    back = read_instance(path)
    write_instance(back, tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == doc
    return back


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda d: d["uops"][1].update(output=-1), "uops/1/output", "minimum"),
        (lambda d: d["uops"][1].update(output=3.5), "uops/1/output", "not of type 'integer'"),
        (lambda d: d["uops"][1].update(output="8"), "uops/1/output", "not of type 'integer'"),
        (lambda d: d["uops"][1].update(output=True), "uops/1/output", "not of type 'integer'"),
        (lambda d: d["uops"][1].update(output=2**41), "uops/1/output", "maximum"),
        (lambda d: d["uops"][2].pop("output"), "uops/2/output",
         "needs every μop's output when any μop has one"),
        (lambda d: d["uops"][0].update(output=23), "uops/0/output",
         "μop 0 outputs 23, but its edge to μop 3 (edges/2) carries 24"),
    ],
)  # fmt: skip
def test_a_bad_output_names_file_field_and_reason(mutate, field, reason):
    data = instance_to_dict(halo())
    mutate(data)
    with pytest.raises(InputError) as err:
        instance_from_dict(data, "bad.json")
    assert (err.value.path, err.value.field) == ("bad.json", field)
    assert reason in err.value.reason


def test_an_output_without_a_topology_is_refused():
    data = instance_to_dict(halo().base)
    data["uops"][0]["output"] = 32
    with pytest.raises(InputError) as err:
        instance_from_dict(data, "bad.json")
    assert err.value.field == "uops/0/output" and "need a topology" in err.value.reason


def test_cli_solves_and_verifies_partial_copies(tmp_path):
    """Through the command line: the solution file's transfer, re-fetch and records carry the
    copies (16 of P's 32 units on core 1, the write-back the whole 32 from P's core); verify
    reads it back, and refuses it once core 1's record claims the whole output."""
    from conftest import run_cli

    from npusched.problem.scheduling.routed import DramTensor

    # test_partial_copies.evicting(): P (core 0, output 32) read 8 + 8 by Q, Q2 on core 1
    # (room 16), Q → Y → Q2 there, Y reading a weight of 16
    links = (Link(0, 0, 1, 4.0), Link(1, 1, 0, 4.0), Link(2, 9, None, 2.0, offchip=True))
    routes = {(0, 1): (0,), (1, 0): (1,), (9, 0): (2,), (9, 1): (2,), (0, 9): (2,), (1, 9): (2,)}
    g = UopGraph(np.ones(4, np.int64), np.array([0, 0, 1, 2]), np.array([1, 3, 2, 3]),
                 np.array([8, 8, 0, 0]))  # fmt: skip
    mask = np.array([[1, 0], [0, 1], [0, 1], [0, 1]], dtype=bool)
    inst = RoutedInstance(SchedulingInstance(g, Accelerator.identical(2)),
                          Topology(links, routes, 9), mask, (DramTensor("W0", 16, np.array([2])),),
                          capacity=np.array([64, 16]), output=np.array([32, 0, 0, 0]))  # fmt: skip
    path, sol = tmp_path / "inst.json", tmp_path / "sol.json"
    write_instance(inst, path)
    r = run_cli("solve", path, "--method", "list", "--priority", "latency", "--out", sol)
    assert r.returncode == 0, r.stderr
    data = json.loads(sol.read_text())
    moved = [(t.get("kind", "transfer"), t["bits"]) for t in data["transfers"]]
    assert moved == [("transfer", 16), ("transfer", 16), ("evict", 32), ("refetch", 16)]
    assert [m["bits"] for m in data["memory"]] == [32, 16, 16, 16]
    assert run_cli("verify", path, sol).returncode == 0
    data["memory"][1]["bits"] = 32
    sol.write_text(json.dumps(data))
    r = run_cli("verify", path, sol)
    assert r.returncode == 1
    assert "record of output of 0 on core 1 holds 32, but its copy there is 16" in r.stdout
