"""The machine view: one ``orchestrate`` call reads its arch once (issue: one seam per format,
the arch read once into the view that flows down), and a partition made through a view is the
partition made from the arch."""

import numpy as np
import pytest

import npusched.problem.scheduling.machine_view as mv
from npusched.arch import load_arch
from npusched.partition.api import partition_network
from npusched.problem.scheduling.machine_view import MachineView
from npusched.search.orchestrate import orchestrate
from npusched.verify import check
from npusched.workload.zoo import load_network


@pytest.fixture
def derivations(monkeypatch):
    """Counts of each derivation from an arch that the view makes."""
    counts = {"topology": 0, "capacities": 0, "accelerator": 0, "cost_model": 0}

    def counted(key, fn):
        def wrapper(*args, **kwargs):
            counts[key] += 1
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(mv, "machine_topology", counted("topology", mv.machine_topology))
    monkeypatch.setattr(mv, "capacities", counted("capacities", mv.capacities))
    monkeypatch.setattr(mv, "cost_model", counted("cost_model", mv.cost_model))
    acc = mv.Accelerator

    class Counted(acc):  # type: ignore[misc, valid-type]
        @classmethod
        def from_arch(cls, arch, comm_delays=True):
            counts["accelerator"] += 1
            return acc.from_arch(arch, comm_delays)

    monkeypatch.setattr(mv, "Accelerator", Counted)
    return counts


def test_one_orchestrate_call_derives_the_machine_once(derivations):
    net, arch = load_network("lenet"), load_arch("klotski-3x3")
    out = orchestrate(net, arch, budget=3, time_limit=20, final_time_limit=2, progress=False,
                      bounds=False)  # fmt: skip
    assert len(out.search.evaluations) >= 2  # several partitions were built
    assert derivations == {"topology": 1, "capacities": 1, "accelerator": 1, "cost_model": 1}
    assert check(out.instance, out.schedule).ok


def test_a_partition_through_a_view_equals_the_partition_from_the_arch():
    net, arch = load_network("lenet"), load_arch("klotski-3x3")
    view = MachineView.of(arch)
    assert MachineView.of(view) is view
    for s in [(14, 14, 16, 16), (7, 7, 8, 8)]:
        a = partition_network(net, arch, "klotski", s=s)
        b = partition_network(net, view, "klotski", s=s)
        assert a.n == b.n and a.name == b.name
        for x, y in [(a.graph.src, b.graph.src), (a.graph.bytes, b.graph.bytes),
                     (a.duration, b.duration), (a.capacity, b.capacity)]:  # fmt: skip
            assert np.array_equal(x, y)
    assert b.topology is view.topology  # shared, not rebuilt


def test_a_view_prices_other_widths_apart_and_keeps_each():
    view = MachineView.of(load_arch("klotski-3x3"))
    bits = view.arch.precision_bits
    assert view.priced(bits) is view
    wide = view.priced(2 * bits)
    assert wide is view.priced(2 * bits) and wide.elem_bytes == 2 * view.elem_bytes
    assert not view.capacity.flags.writeable
