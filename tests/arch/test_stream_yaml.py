"""Stream's accelerator YAMLs read as archs (npusched.arch.stream_yaml): all nine examples load
and give a machine whose routes agree with a plain reading of the file; bad files name the file
and field."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
import yaml
from conftest import SHARED, needs_shared, run_cli

from npusched.arch import arch_from_dict, arch_to_dict, load_arch
from npusched.common.errors import InputError
from npusched.partition.api import partition_network, resolve_network
from npusched.problem.scheduling.machine import capacities, machine_topology
from npusched.verify import check

HW = SHARED / "stream-oss" / "hardware"
EXAMPLES = sorted(p.name for p in HW.glob("*.yaml")) if HW.is_dir() else []


def _plain(path):
    """The file as Stream states it: compute, other and off-chip core ids, and each ordered
    pair's carrier (the later core_connectivity entry: Stream's graph keeps one edge a pair)."""
    data = yaml.safe_load(path.read_text())
    kinds, files = {}, {}
    for cid, ref in data["cores"].items():
        f = path.parent / ref if (path.parent / ref).is_file() else path.parent / "cores" / ref
        files[int(cid)] = yaml.safe_load(f.read_text())
        kinds[int(cid)] = files[int(cid)].get("type", "compute").split(".")[-1]
    carrier = {}
    for text in data.get("core_memory_sharing", []):
        group = [int(x) for x in text.split(",")]
        top = [m for m in files[group[0]]["memories"].values() if "I1" in m["operands"]][-1]
        bw = max(q["bandwidth_max"] for q in top["ports"] if q["type"] != "write")
        if kinds[group[0]] == "compute":  # a bus at the shared memory's read rate
            data["core_connectivity"].append({"type": "bus", "cores": group, "bandwidth": bw})
            continue
        put = max(q["bandwidth_max"] for q in top["ports"] if q["type"] != "read")
        sharers = [c for c in group if kinds[c] == "compute"]
        for c in sharers:  # the memory core's ports split among its compute cores
            carrier[(group[0], c)] = ("link", bw / len(sharers) / 8)
            carrier[(c, group[0])] = ("link", put / len(sharers) / 8)
    for e in data["core_connectivity"]:
        for a in e["cores"]:
            for b in e["cores"]:
                if a != b:
                    carrier[(a, b)] = (e.get("type", "link"), e["bandwidth"] / 8)
    return data, kinds, carrier


@needs_shared
def test_the_nine_examples_are_all_there():
    assert len(EXAMPLES) == 9


@needs_shared
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_loads_with_routes_stream_would_take(name):
    path = HW / name
    arch = load_arch(path)
    data, kinds, carrier = _plain(path)
    assert [c.id for c in arch.cores] == [k for k, v in sorted(kinds.items()) if v == "compute"]
    topo = machine_topology(arch)
    off = data["offchip_core_id"]
    assert topo.dram == off
    # one hop graph of the carriers; Stream's unloaded cost is the sum of 1 / bandwidth
    g = nx.DiGraph()
    for (a, b), (_, bw) in carrier.items():
        g.add_edge(a, b, w=1.0 / bw)
    ends = [c.id for c in arch.cores]
    for a in ends + [off]:
        for b in ends + [off]:
            if a == b or (a == off and b == off):
                continue
            route = topo.route(a, b)
            links = [topo.links[k] for k in route if topo.links[k].name != "dram port"]
            cost = sum(1.0 / ln.bandwidth for ln in links)
            h = g.copy()
            h.remove_edges_from([e for e in g.edges if off in e and a != off and b != off] +
                                [(off, v) for v in g.successors(off) if a != off] +
                                [(u, off) for u in g.predecessors(off) if b != off])
            best = nx.shortest_path_length(h, a, b, weight="w")
            assert cost == pytest.approx(best)
            assert all(ln.receiver != off or b == off for ln in links)  # DRAM relays nothing
            for ln in links:  # each hop on the entry that carries it, at its bandwidth
                kind, bw = carrier[(ln.sender, ln.receiver)]
                assert ln.bandwidth == pytest.approx(bw)
                assert (ln.bus_id >= 0) == (kind == "bus")


@needs_shared
def test_tpu_like_quad_core_reads_as_stream_does():
    arch = load_arch(HW / "tpu_like_quad_core.yaml")
    topo = machine_topology(arch)
    # the bus comes after the links, so it carries 0 -> 1 (Stream's later edge): 128 bit/cycle
    (k,) = topo.route(0, 1)
    assert topo.links[k].bus_id >= 0 and topo.links[k].bandwidth == 16
    assert arch.dram is not None and arch.dram_bytes_per_cycle() == 64 / 8  # offchip.yaml port
    assert capacities(arch).tolist() == [2 ** 24 // 8] * 4 + [2 ** 20 // 8] * 2
    assert arch.precision_bits == 8
    # a DRAM transfer holds the port and the bus: ceil(bytes / the slower)
    assert topo.cycles(1000, topo.route(topo.dram, 2)) == 125


@needs_shared
def test_shared_memory_is_split_and_joined_by_a_bus():
    arch = load_arch(HW / "fusemax.yaml")
    assert capacities(arch).tolist() == [2 ** 24 // 8 // 2] * 2
    topo = machine_topology(arch)
    (k,) = topo.route(0, 1)
    assert topo.links[k].bus_id >= 0 and topo.links[k].bandwidth == 8192 / 8
    assert any("core_memory_sharing" in a for a in arch.assumptions)


@needs_shared
@pytest.mark.parametrize("path", sorted(HW.glob("*.yaml")) if HW.is_dir() else [],
                         ids=lambda p: p.stem)  # fmt: skip
def test_the_dram_port_carries_as_many_transfers_as_its_bandwidth_holds(path):
    """The off-chip port's lanes times the fastest rate of a route through it stay within its
    bandwidth, and one more lane would not (TPU v7: four HBM links of 1 675 B per cycle under a
    port of 6 700; a port as slow as its links has one lane)."""
    topo = machine_topology(load_arch(path))
    (port,) = [k for k, ln in enumerate(topo.links) if ln.offchip]
    ways = [r for (a, b), r in topo.routes.items() if topo.dram in (a, b)]
    assert all(port in r for r in ways)
    rate = max(min(topo.links[k].bandwidth for k in r) for r in ways)
    lanes, bw = topo.links[port].lanes, topo.links[port].bandwidth
    assert lanes * rate <= bw + 1e-9 and ((lanes + 1) * rate > bw or lanes == 1 and rate >= bw)
    if path.stem == "tpu_v7_ironwood":
        assert lanes == 4


@needs_shared
def test_arch_json_round_trip_keeps_buses_routers_and_dram_node():
    arch = load_arch(HW / "tpu_v7_ironwood.yaml")
    again = arch_from_dict(json.loads(json.dumps(arch_to_dict(arch))))
    assert again == arch
    assert machine_topology(again).routes == machine_topology(arch).routes


@needs_shared
def test_a_cnn_on_a_stream_accelerator_is_partitioned_and_scheduled():
    from npusched.methods import solve

    net = resolve_network(str(SHARED / "stream-oss" / "workload" / "2conv_1_8_32_32_16_32_3.onnx"))
    inst = partition_network(net, load_arch(HW / "tpu_like_quad_core.yaml"), "stream")
    res = solve(inst, "list")
    assert check(inst, res.solution).ok


def _write(tmp_path, top, core=None):
    core = core or {"name": "c", "type": "zigzag.compute",
                    "memories": {"sram": {"size": 8192, "operands": ["I1", "I2", "O"],
                                          "ports": [{"name": "p", "type": "read_write",
                                                     "bandwidth_max": 64}]}},
                    "operational_array": {"dimensions": ["D1", "D2"], "sizes": [4, 4]}}
    off = {"name": "dram", "type": "zigzag.offchip",
           "memories": {"dram": {"size": 10**9, "operands": ["I1", "I2", "O"],
                                 "ports": [{"name": "rw", "type": "read_write",
                                            "bandwidth_max": 32}]}},
           "operational_array": {"dimensions": ["D1"], "sizes": [0]}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(core))
    (tmp_path / "off.yaml").write_text(yaml.safe_dump(off))
    base = {"name": "t", "cores": {0: "c.yaml", 1: "c.yaml", 2: "off.yaml"}, "offchip_core_id": 2,
            "core_connectivity": [{"type": "link", "cores": [0, 1], "bandwidth": 32},
                                  {"type": "bus", "cores": [0, 1, 2], "bandwidth": 64}]}
    base.update(top)
    path = tmp_path / "acc.yaml"
    path.write_text(yaml.safe_dump(base))
    return path


def test_a_small_accelerator_of_our_own(tmp_path):
    arch = load_arch(_write(tmp_path, {}))
    assert [c.pe_unroll for c in arch.cores] == [{"K": 4, "C": 4}] * 2
    assert [c.unrolling for c in arch.cores] == ["searched"] * 2  # no dataflows: ZigZag's search
    assert capacities(arch).tolist() == [1024, 1024]
    topo = machine_topology(arch)
    assert topo.links[topo.route(0, 1)[0]].bandwidth == 8  # the bus listed after the link
    assert topo.cycles(40, topo.route(0, 2)) == 10  # port 4 B/cycle, bus 8 B/cycle


@pytest.mark.parametrize(
    ("top", "field"),
    [
        ({"cores": {0: "c.yaml", 2: "off.yaml"}}, "cores"),
        ({"cores": {0: "c.yaml", 1: "nowhere.yaml", 2: "off.yaml"}}, "cores/1"),
        ({"offchip_core_id": 1}, "offchip_core_id"),
        ({"core_connectivity": [{"cores": [0, 1], "bandwidth": -1}]},
         "core_connectivity/0/bandwidth"),
        ({"core_connectivity": [{"type": "bus", "cores": [0, 1, 2], "bandwidth": 64},
                                {"type": "link", "cores": [0, 1], "bandwidth": 32}]},
         "core_connectivity/1"),
        ({"core_connectivity": [{"type": "link", "cores": [0, 1, 2], "bandwidth": 32}]},
         "core_connectivity/0/cores"),
        ({"core_memory_sharing": ["0, 7"]}, "core_memory_sharing/0"),
    ],
)
def test_bad_accelerators_name_file_and_field(tmp_path, top, field):
    path = _write(tmp_path, top)
    with pytest.raises(InputError) as err:
        load_arch(path)
    assert err.value.field == field and str(path) in str(err.value)


def test_bad_core_file_and_bad_yaml(tmp_path):
    path = _write(tmp_path, {}, core={"name": "c", "memories": {}, "operational_array": {}})
    with pytest.raises(InputError, match="c.yaml: memories"):
        load_arch(path)
    path.write_text("name: [unclosed\n")
    with pytest.raises(InputError, match="not YAML"):
        load_arch(path)


def test_info_describes_an_accelerator_and_a_network(tmp_path):
    path = _write(tmp_path, {})
    out = run_cli("info", path, "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert [c["pes"] for c in info["cores"]] == [16, 16] and info["dram"]["node"] == 2
    assert [c["unrolling"] for c in info["cores"]] == ["searched"] * 2  # no dataflows
    assert info["forwarding"] is True  # Stream sends a tensor from the cores that hold it
    # LeNet-5's MACs by hand: 6·28²·25 + 16·10²·150 + 120·400 (conv) + 120·84 + 84·10 (fc)
    out = run_cli("info", "lenet", "--json")
    assert json.loads(out.stdout)["total_macs"] == 117_600 + 240_000 + 48_000 + 10_080 + 840
    (tmp_path / "bad").mkdir()
    bad = run_cli("info", _write(tmp_path / "bad", {"offchip_core_id": 0}))
    assert bad.returncode != 0 and "offchip_core_id" in bad.stderr
    assert "Traceback" not in bad.stderr
    table = run_cli("info", path)
    assert table.returncode == 0 and "bus0" in table.stdout and "forwarding:" in table.stdout


def test_machine_of_a_links_arch_keeps_its_routes_with_one_bandwidth():
    arch = load_arch("stream-hetero")
    topo = machine_topology(arch)
    g = nx.DiGraph([(a, b) for a, b in arch.noc.links])
    for a in (c.id for c in arch.cores):
        for b in (c.id for c in arch.cores):
            if a != b:
                assert len(topo.route(a, b)) == nx.shortest_path_length(g, a, b)
    assert np.unique(topo.resource_of).size == topo.num_resources


def test_a_core_with_dataflows_keeps_its_unrolling_fixed(tmp_path):
    core = {"name": "c", "type": "zigzag.compute", "dataflows": {"D1": ["K, 4"], "D2": ["C, 4"]},
            "memories": {"sram": {"size": 8192, "operands": ["I1", "I2", "O"],
                                  "ports": [{"name": "p", "type": "read_write",
                                             "bandwidth_max": 64}]}},
            "operational_array": {"dimensions": ["D1", "D2"], "sizes": [4, 4]}}
    arch = load_arch(_write(tmp_path, {}, core))
    assert [c.unrolling for c in arch.cores] == ["fixed"] * 2


@needs_shared
def test_each_core_keeps_its_own_zigzag_description():
    arch = load_arch(HW / "simba.yaml")
    core = arch.cores[0]
    assert core.zigzag is not None and core.zigzag["accumulator_bits"] == 24  # int24
    assert set(core.zigzag) == {"name", "memories", "operational_array", "accumulator_bits"}
    assert "banks" not in core.zigzag  # Stream's own field, not ZigZag's
    again = arch_from_dict(json.loads(json.dumps(arch_to_dict(arch))))
    assert again.cores[0].zigzag == core.zigzag
