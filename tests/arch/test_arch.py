"""Architectures as JSON (npusched/arch/v1): every shipped file loads, validates, converts, and
carries the numbers of its paper; bad files raise InputError naming the field."""

import copy
import dataclasses
import importlib.util
import json
import math

import numpy as np
import pytest
from conftest import ROOT, SHARED, needs_shared

from npusched.arch import (
    arch_from_dict,
    arch_to_dict,
    list_archs,
    load_arch,
    read_arch,
    write_arch,
)
from npusched.common.jsonio import load_schema, validate
from npusched.costmodel import noc_cycles
from npusched.io import InputError
from npusched.problem import Accelerator

EXPECTED = {
    "klotski-3x3",
    "klotski-4x4",
    "klotski-5x5",
    *(f"flexer-arch{k}" for k in range(1, 9)),
    "tso-nmp-16",
    "tso-nmp-8",
    "stream-hetero",
}


def test_shipped_archs_are_the_expected_ones():
    assert set(list_archs()) == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_arch_loads_validates_round_trips_and_converts(name, tmp_path):
    arch = load_arch(name)
    assert arch.name == name
    data = arch_to_dict(arch)
    validate(data, "arch.schema.json", name)
    assert arch_from_dict(data) == arch
    assert arch.source.paper and arch.source.where and arch.source.seed
    write_arch(arch, tmp_path / "a.json")
    assert read_arch(tmp_path / "a.json") == arch
    assert load_arch(tmp_path / "a.json") == arch
    acc = Accelerator.from_arch(arch)
    assert isinstance(acc, Accelerator)
    assert [c.id for c in acc.cores] == [c.id for c in arch.cores]
    assert (acc.mesh is None) == (arch.mesh is None)
    for c in arch.cores:
        assert c.num_pes >= 1
        assert sum(c.buffers.values()) <= (c.memory_bytes or 0) or not c.buffers


def test_schema_has_the_format_id():
    assert load_schema("arch.schema.json")["$id"] == "npusched/arch/v1"


def test_generator_matches_shipped_files():
    spec = importlib.util.spec_from_file_location("make_archs", ROOT / "tools" / "make_archs.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--check"]) == 0


# --- the papers' numbers ---------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 4, 5])
def test_klotski(n):
    arch = load_arch(f"klotski-{n}x{n}")
    assert arch.m == n * n and arch.mesh == (n, n)
    assert arch.frequency_hz == 1e9 and arch.precision_bits == 32
    for c in arch.cores:
        assert c.pe_unroll == {"K": 14, "C": 12} and c.num_pes == 12 * 14
        assert c.memory_bytes == 6000 * 1024  # 5.86 MB per individual accelerator
        assert round(c.memory_bytes / 2**20, 2) == 5.86
    assert arch.noc.bandwidth_bytes_per_cycle == 512 and arch.noc.topology == "mesh"
    assert arch.noc.flit_bits == 192 and arch.noc.packet_bytes == 8
    acc = Accelerator.from_arch(arch)
    ref = Accelerator.mesh_grid(n, n, 1, 512)
    assert [c.coord for c in acc.cores] == [c.coord for c in ref.cores]
    assert acc.hop_latency == 1 and acc.link_bandwidth == 512
    assert Accelerator.from_arch(arch, comm_delays=False).has_comm_delays is False


def test_klotski_comm_delay_equals_noc_cycles():
    arch = load_arch("klotski-4x4")
    acc = Accelerator.from_arch(arch)
    hops = acc.hops()
    for nbytes in (0, 1, 512, 513, 10_000):
        delay = acc.comm_delay(hops, np.full_like(hops, nbytes))
        for i in range(acc.m):
            for j in range(acc.m):
                assert delay[i, j] == noc_cycles(
                    nbytes, int(hops[i, j]), arch.noc.bandwidth_bytes_per_cycle, 1
                )


FLEXER_TABLE1 = {  # Flexer Table 1: cores, on-chip memory (KB), bandwidth
    1: (2, 256, 32),
    2: (2, 256, 64),
    3: (2, 512, 32),
    4: (2, 512, 64),
    5: (4, 256, 32),
    6: (4, 256, 64),
    7: (4, 512, 32),
    8: (4, 512, 64),
}


@pytest.mark.parametrize("k", sorted(FLEXER_TABLE1))
def test_flexer_table1(k):
    cores, mem, bw = FLEXER_TABLE1[k]
    arch = load_arch(f"flexer-arch{k}")
    assert arch.m == cores and arch.shared_buffer_bytes == mem * 1024
    assert arch.dram_bytes_per_cycle() == bw
    assert arch.frequency_hz == 1e9
    assert all(c.num_pes == 32 * 32 and c.memory_bytes is None for c in arch.cores)
    assert arch.mesh is None and Accelerator.from_arch(arch).m == cores


@pytest.mark.parametrize(("bits", "macs"), [(16, 8), (8, 16)])
def test_tso_nmp(bits, macs):
    arch = load_arch(f"tso-nmp-{bits}")
    assert arch.m == 32 and arch.precision_bits == bits
    assert {c.cluster for c in arch.cores} == {0, 1, 2, 3}
    assert all(sum(c.cluster == e for c in arch.cores) == 8 for e in range(4))
    for c in arch.cores:
        assert c.buffers == {"MB0": 8192, "MB1": 8192, "MB2": 8192}
        assert c.memory_bytes == 24 * 1024 and c.pe_unroll == {"OY*OX*FY*FX": macs}
    # Sec. III: peak 256 / 512 GMAC/s for 16 / 8 bit with all 32 TLTs at 1 GHz
    assert arch.frequency_hz is not None
    peak = sum(c.num_pes for c in arch.cores) * arch.frequency_hz
    assert peak == {16: 256e9, 8: 512e9}[bits]
    assert arch.dram is not None and arch.dram.burst_bytes == 128
    assert arch.dram_bytes_per_cycle() == pytest.approx(17.0)
    assert arch.dram_cas_cycles() == 14


def test_stream_hetero():
    arch = load_arch("stream-hetero")
    kinds = [c.kind for c in arch.cores]
    assert kinds == ["tpu_like"] * 4 + ["pooling", "simd"]
    assert arch.frequency_hz is None and arch.precision_bits == 8
    assert arch.dram_bytes_per_cycle() == 8 and arch.dram_cas_cycles() == 0
    assert Accelerator.from_arch(arch).mesh is None


@needs_shared
def test_stream_hetero_matches_the_stream_export():
    data = json.loads((SHARED / "stream" / "tiny_res16_tpu_quad_core_fused.json").read_text())
    arch = load_arch("stream-hetero")
    compute = [c for c in data["cores"] if not c["is_offchip"]]
    assert [c["id"] for c in compute] == [c.id for c in arch.cores]
    for ours, theirs in zip(arch.cores, compute, strict=True):
        assert ours.num_pes == theirs["total_pe_units"]
        assert sorted(ours.pe_unroll.values()) == sorted(theirs["pe_array_dims"].values())
        assert ours.memory_bytes == theirs["top_memories"][0]["size_bits"] // 8
    links = data["links"]
    core_links = {lk["bandwidth_bits_per_cycle"] for lk in links if not lk["is_offchip_link"]}
    dram_links = {lk["bandwidth_bits_per_cycle"] for lk in links if lk["is_offchip_link"]}
    assert arch.noc.bandwidth_bytes_per_cycle is not None
    assert core_links == {8 * arch.noc.bandwidth_bytes_per_cycle}
    assert dram_links == {8 * arch.dram_bytes_per_cycle()}


# --- bad files -------------------------------------------------------------------------------


def _bad(tmp_path, edit):
    data = copy.deepcopy(arch_to_dict(load_arch("klotski-3x3")))
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        load_arch(path)
    assert err.value.path == str(path)
    return err.value.field


def _set(path, value):
    def edit(data):
        *head, last = path
        node = data
        for key in head:
            node = node[key]
        node[last] = value

    return edit


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("cores", 0, "pe_unroll", "K"), 0, "cores/0/pe_unroll/K"),
        (("cores", 2, "memory_bytes"), -1, "cores/2/memory_bytes"),
        (("noc", "topology"), "torus", "noc/topology"),
        (("noc", "bandwidth_bytes_per_cycle"), "fast", "noc/bandwidth_bytes_per_cycle"),
        (("precision_bits",), 0, "precision_bits"),
        (("format",), "npusched/arch/v0", "format"),
        (("cores", 1, "id"), 0, "cores/1/id"),
        (("cores", 8, "coord"), [3, 0], "cores/8/coord"),
        (("cores", 4, "coord"), [0, 0], "cores"),
        (("cores", 0, "buffers"), {"sram": 10**9}, "cores/0/buffers"),
        (("dram",), {"kind": "DDR"}, "dram"),
        (("dram", "controllers"), [0, 99], "dram/controllers/1"),
        (("noc", "routing"), "zigzag", "noc/routing"),
        (("noc", "links"), [[0, 0]], "noc/links/0"),
        (("cores", 0, "registers"), {"W": -1}, "cores/0/registers/W"),
        (("cores", 0, "sram_read_bytes_per_cycle"), 0, "cores/0/sram_read_bytes_per_cycle"),
    ],
)
def test_bad_arch_names_the_field(tmp_path, path, value, field):
    assert _bad(tmp_path, _set(path, value)) == field


def test_bad_arch_unknown_dimension_and_missing_field(tmp_path):
    field = _bad(tmp_path, _set(("cores", 0, "pe_unroll"), {"Q": 4}))
    assert field.startswith("cores/0/pe_unroll")
    assert _bad(tmp_path, lambda d: d["cores"][3].pop("coord")) == "cores/3/coord"
    assert _bad(tmp_path, lambda d: d.pop("noc")) == "(top level)"
    assert _bad(tmp_path, _set(("cores", 0, "pe_unroll"), {"K": 2, "K*C": 2})) == (
        "cores/0/pe_unroll"
    )


def test_unreadable_and_unknown(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(InputError):
        load_arch(p)
    with pytest.raises(ValueError, match="unknown architecture"):
        load_arch("no-such-arch")
    with pytest.raises(InputError):
        load_arch(tmp_path / "missing.json")


def test_dram_conversions():
    arch = load_arch("tso-nmp-16")
    assert arch.dram is not None
    fast = dataclasses.replace(arch, frequency_hz=2e9)
    assert fast.dram_bytes_per_cycle() == pytest.approx(8.5)
    assert fast.dram_cas_cycles() == 28
    assert math.isclose(arch.element_bytes, 2)
    with pytest.raises(ValueError, match="no DRAM"):
        dataclasses.replace(load_arch("klotski-3x3"), dram=None).dram_bytes_per_cycle()


MACHINE_FIELDS = (
    "noc/bandwidth_bytes_per_cycle",
    "noc/hop_latency_cycles",
    "noc/packet_header_bits",
    "dram/bandwidth_bytes_per_cycle",
    "dram/bandwidth_bytes_per_s",
    "dram/controllers",
    "cores/registers",
    "cores/sram_read_bytes_per_cycle",
    "cores/sram_write_bytes_per_cycle",
)


STRICT = set(MACHINE_FIELDS) - {"noc/bandwidth_bytes_per_cycle", "dram/bandwidth_bytes_per_s",
                                 "dram/bandwidth_bytes_per_cycle"}  # fmt: skip
"""Values no paper gives: each needs its own citation or assumption."""


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_machine_model_value_has_a_source_or_an_assumption(name):
    """DESIGN.md: parameters the papers do not give are named fields, cited or assumed."""
    arch = load_arch(name)
    data = arch_to_dict(arch)
    assumed = " ".join(a.split(":")[0] for a in arch.assumptions)
    for path in MACHINE_FIELDS:
        node = data
        for key in path.split("/"):
            node = node[0] if key != "cores" and isinstance(node, list) else node
            node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            continue
        head = path.split("/")[0]
        loose = path not in STRICT and head in arch.source.fields  # the paper's own section
        assert path in arch.source.fields or path in assumed or loose, (
            f"{name}: {path} = {node} has neither a source nor an assumption"
        )


def test_payload_rate_from_packets_and_flits():
    noc = load_arch("klotski-4x4").noc
    assert noc.payload_bytes_per_cycle() == pytest.approx(512 * 64 / 192)
    bigger = dataclasses.replace(noc, packet_header_bits=192)  # 256 bits: two flits a packet
    assert bigger.payload_bytes_per_cycle() == pytest.approx(512 * 64 / 384)
    assert dataclasses.replace(noc, flit_bits=None).payload_bytes_per_cycle() == 512
