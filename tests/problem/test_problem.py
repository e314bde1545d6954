import json

import numpy as np
import pytest
from conftest import ROOT, make_instance

from npusched import Accelerator, Core, UopGraph
from npusched.io import InputError, read_instance, write_instance
from npusched.io.instance_json import instance_from_dict, instance_to_dict, schema


def test_cycle_is_rejected_with_the_uops_named():
    with pytest.raises(ValueError, match="cycle"):
        UopGraph(np.ones(3), np.array([0, 1, 2]), np.array([1, 2, 0]), np.zeros(3))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"latency": [-1, 1], "src": [0], "dst": [1]}, "negative"),
        ({"latency": [1, 1], "src": [0], "dst": [2]}, "out of range"),
        ({"latency": [1, 1], "src": [0], "dst": [0]}, "self-loop"),
    ],
)
def test_graph_validates_itself(kwargs, match):
    n_e = len(kwargs["src"])
    with pytest.raises(ValueError, match=match):
        UopGraph(
            np.array(kwargs["latency"]),
            np.array(kwargs["src"]),
            np.array(kwargs["dst"]),
            np.zeros(n_e),
        )


def test_accelerator_validates_itself():
    with pytest.raises(ValueError, match="duplicate"):
        Accelerator((Core(0), Core(0)))
    with pytest.raises(ValueError, match="mesh"):
        Accelerator((Core(0, coord=(0, 3)),), mesh=(2, 2))
    with pytest.raises(ValueError, match="speed"):
        Core(0, speed=0)


def test_speed_gives_per_core_durations():
    g = UopGraph(np.array([4, 3]), np.array([0]), np.array([1]), np.array([16]))
    from npusched import SchedulingInstance

    inst = SchedulingInstance(g, Accelerator((Core(0, speed=1.0), Core(1, speed=2.0))))
    assert inst.duration.tolist() == [[4, 2], [3, 2]]
    assert not inst.identical_cores


def test_json_round_trip_keeps_everything(tmp_path, diamond):
    table = make_instance([2, 3], [(0, 1)], 2, table=[[2, 5], [3, 1]], name="het")
    for inst in (diamond, table):
        path = tmp_path / f"{inst.name}.json"
        write_instance(inst, path)
        back = read_instance(path)
        assert back.graph.ids == inst.graph.ids
        assert (back.duration == inst.duration).all()
        assert back.graph.src.tolist() == inst.graph.src.tolist()
        assert back.graph.bytes.tolist() == inst.graph.bytes.tolist()
        assert instance_to_dict(back) == instance_to_dict(inst)


def test_published_schema_is_the_one_the_reader_uses():
    published = json.loads((ROOT / "instances" / "schema" / "instance.schema.json").read_text())
    assert published == schema()


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda d: d["uops"][1].pop("latency"), "uops/1", "'latency' is a required property"),
        (lambda d: d["uops"][0].update(latency=-2), "uops/0/latency", "minimum"),
        (lambda d: d["edges"][0].update(dst=99), "edges/0/dst", "no μop has id 99"),
        (lambda d: d["uops"][1].update(id=d["uops"][0]["id"]), "uops/1/id", "duplicate"),
        (lambda d: d.update(cores=[]), "cores", "should be non-empty"),
        (lambda d: d["edges"].append({"src": 4, "dst": 0}), "edges", "cycle"),
    ],
)
def test_invalid_instance_names_file_field_and_reason(diamond, mutate, field, reason):
    data = instance_to_dict(diamond)
    mutate(data)
    with pytest.raises(InputError) as err:
        instance_from_dict(data, "bad.json")
    assert err.value.path == "bad.json"
    assert err.value.field == field
    assert reason in err.value.reason


def test_release_load_bound_by_hand_and_against_every_threshold():
    from npusched.problem.scheduling.dag import release_load_bound

    # a fork: 0 → {1, 2, 3, 4}, each 10 cycles on 2 cores: critical path 20, load 25, optimum 30
    fork = make_instance([10] * 5, [(0, k) for k in range(1, 5)], 2)
    assert fork.lower_bound() == 30
    # and reversed in time (a join), through the tails
    join = make_instance([10] * 5, [(k, 0) for k in range(1, 5)], 2)
    assert join.lower_bound() == 30
    rng = np.random.default_rng(0)
    for _ in range(50):
        r, w, m = rng.integers(0, 30, 8), rng.integers(0, 20, 8), int(rng.integers(1, 4))
        want = max(int(t + -(-w[r >= t].sum() // m)) for t in r)
        assert release_load_bound(r, w, m) == want
    assert release_load_bound(np.zeros(0, np.int64), np.zeros(0, np.int64), 2) == 0
