"""Routed instances in the columnar form (above ``COMPACT_ABOVE`` μops, or asked for): written,
read back to the same instance, and malformed columns refused with the field named."""

from __future__ import annotations

import json

import numpy as np
import pytest

from npusched import Accelerator, SchedulingInstance, UopGraph
from npusched.io import InputError, read_instance, write_instance
from npusched.io.columnar import COMPACT_ABOVE
from npusched.io.instance_json import instance_from_dict, instance_to_dict
from npusched.problem.scheduling.routed import DramTensor, Link, RoutedInstance, Topology


def chain(n: int, fixed: bool = True) -> RoutedInstance:
    """``n`` μops in a chain on two cores with a DRAM core 9 (its port of two lanes), each
    reading 8 of its predecessor's 16 units; every tenth μop reads a DRAM tensor; alternate
    cores when ``fixed``, else free."""
    links = (Link(0, 0, 1, 4.0), Link(1, 1, 0, 4.0),
             Link(2, 9, None, 2.0, offchip=True, lanes=2))  # fmt: skip
    routes = {(0, 1): (0,), (1, 0): (1,), (9, 0): (2,), (9, 1): (2,), (0, 9): (2,), (1, 9): (2,)}
    i = np.arange(n - 1)
    g = UopGraph(np.full(n, 3), i, i + 1, np.full(n - 1, 8), tuple(f"u{k}" for k in range(n)))
    base = SchedulingInstance(g, Accelerator.identical(2), name="chain")
    mask = np.ones((n, 2), dtype=bool)
    if fixed:
        mask[np.arange(n), np.arange(n) % 2] = False
    dram = tuple(DramTensor(f"w{k}", 4 + k % 7, np.array([k])) for k in range(0, n, 10))
    streamed = np.zeros(n, dtype=bool)
    streamed[::13] = True
    return RoutedInstance(
        base, Topology(links, routes, 9), mask, dram, preferred=1 - np.arange(n) % 2,
        capacity=np.array([10_000, 20_000]), layer=np.arange(n) // 5, streamed=streamed,
        output=np.full(n, 16),
    )  # fmt: skip


def same(a: RoutedInstance, b: RoutedInstance) -> None:
    assert a.graph.ids == b.graph.ids
    for name in ("allowed", "preferred", "capacity", "layer", "streamed", "output"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert [(t.name, t.data, t.consumers.tolist()) for t in a.dram] == [
        (t.name, t.data, t.consumers.tolist()) for t in b.dram
    ]
    assert np.array_equal(a.graph.src, b.graph.src) and np.array_equal(a.graph.bytes, b.graph.bytes)
    assert a.topology.routes == b.topology.routes and a.topology.dram == b.topology.dram
    assert a.topology.links == b.topology.links  # lanes included


@pytest.mark.parametrize("fixed", [True, False])
def test_columnar_round_trip_equals_the_row_form(tmp_path, fixed):
    inst = chain(40, fixed)
    rows, cols = instance_to_dict(inst, compact=False), instance_to_dict(inst, compact=True)
    assert isinstance(rows["uops"], list) and isinstance(cols["uops"], dict)
    assert ("allowed_cores" in cols["uops"]) == fixed
    path = tmp_path / "c.json"
    write_instance(inst, path, compact=True)
    for back in (instance_from_dict(rows), instance_from_dict(json.loads(path.read_text()))):
        assert isinstance(back, RoutedInstance)
        same(inst, back)


def test_a_routed_instance_above_the_threshold_is_written_and_read(tmp_path):
    inst = chain(COMPACT_ABOVE + 5)
    path = tmp_path / "big.json.gz"
    write_instance(inst, path)  # was a TypeError: the columnar base walked as rows
    back = read_instance(path)
    assert isinstance(back, RoutedInstance) and back.n == inst.n
    same(inst, back)


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda u, d: u.update(preferred_core=[0] * 39 + [7]), "uops.preferred_core[39]"),
        (lambda u, d: u.update(allowed_cores=u["allowed_cores"][:-1]), "uops.allowed_count"),
        (lambda u, d: u.pop("allowed_count"), "uops.allowed_cores"),
        (lambda u, d: u.update(output=[16] * 39), "uops.output"),
        (lambda u, d: u.update(output=[16] * 38 + [2, 16]), "uops.output[38]"),
        (lambda u, d: u.update(layer=[-1] * 40), "uops.layer[0]"),
        (lambda u, d: d["dram_tensors"].update(consumers=["nobody"] * 4),
         "dram_tensors.consumers[0]"),
        (lambda u, d: d["dram_tensors"].update(consumer_count=[2, 1, 1, 1]),
         "dram_tensors.consumer_count"),
    ],
)  # fmt: skip
def test_bad_columns_name_their_field(change, field):
    doc = json.loads(json.dumps(instance_to_dict(chain(40), compact=True), default=_plain))
    change(doc["uops"], doc)
    with pytest.raises(InputError) as err:
        instance_from_dict(doc, "bad.json")
    assert err.value.field == field and err.value.path == "bad.json"


def test_lanes_on_a_bus_are_refused():
    doc = json.loads(json.dumps(instance_to_dict(chain(40), compact=True), default=_plain))
    doc["topology"]["links"][0].update(bus_id=0, lanes=2)
    with pytest.raises(InputError, match="lanes must be 1 on a bus") as err:
        instance_from_dict(doc, "bad.json")
    assert err.value.field == "topology"


def test_routed_columns_without_a_topology_are_refused():
    doc = json.loads(json.dumps(instance_to_dict(chain(40), compact=True), default=_plain))
    for key in ("topology", "dram_tensors", "data_unit", "memory_capacity"):
        doc.pop(key)
    with pytest.raises(InputError) as err:
        instance_from_dict(doc, "bad.json")
    assert err.value.field == "topology"


def _plain(value):
    return value.tolist()
