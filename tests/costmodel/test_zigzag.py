"""ZigZag cost model: Stream's own tile latencies reproduced from the arch (the Stream exports'
cost_per_core), the generated description, the disk cache (hits without ZigZag, corrupt entries
recomputed), the time-limit fallback, and the arch fields named when ZigZag rejects a core."""

import json
import logging
import sys
from dataclasses import replace

import pytest
from conftest import SHARED, needs_shared

from npusched.arch import Register, load_arch
from npusched.costmodel import TileShape, cost_model
from npusched.costmodel import zigzag as zz
from npusched.costmodel import zigzag_input as zi
from npusched.costmodel import zigzag_run as zr
from npusched.costmodel.compute import split_unrolling
from npusched.costmodel.roofline import Roofline

STREAM = load_arch("stream-hetero")
TPU, SIMD = STREAM.cores[0], STREAM.cores[5]
SMALL = TileShape("conv", 8, 8, 2, 4, 3, 3)  # ~0.05 s at lpf 2


@pytest.fixture
def counted(monkeypatch):
    """The ZigZag evaluations made in this process."""
    calls = []
    real = zr.evaluate

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(zr, "evaluate", counting)
    return calls


# --- Stream's numbers ------------------------------------------------------------------------

# (export, CN name, tile, core): Stream's CNs whose data fit the core's SRAM (no DRAM level);
# add tiles: Stream's element-wise dims (B, H, D, K) are our (B, OY, OX, K)
REPRODUCED = [
    ("resnet18", "/layer1/layer1.0/conv1/Conv", TileShape("conv", 16, 64, 1, 56, 3, 3), 0),
    ("resnet18", "/layer2/layer2.0/conv1/Conv", TileShape("conv", 32, 64, 1, 28, 3, 3, 2, 2), 0),
    ("resnet18", "/layer2/layer2.0/conv2/Conv", TileShape("conv", 32, 128, 1, 28, 3, 3), 0),
    (
        "resnet18",
        "/layer2/layer2.0/downsample/downsample.0/Conv",
        TileShape("conv", 32, 64, 1, 28, 1, 1, 2, 2),
        0,
    ),
    ("resnet18", "/layer1/layer1.0/Add", TileShape("add", 56, 1, 64, 1, inputs=2), 5),
    ("tiny_res16", "conv1", TileShape("conv", 8, 16, 1, 16, 3, 3), 0),
    ("tiny_res16", "conv3_shortcut", TileShape("conv", 8, 32, 1, 16), 0),
    ("tiny_res16", "add", TileShape("add", 16, 1, 32, 1, inputs=2), 5),
]


@pytest.fixture(scope="module")
def exports():
    out = {}
    for name in ("resnet18", "tiny_res16"):
        with open(SHARED / "stream" / f"{name}_tpu_quad_core_fused.json") as f:
            out[name] = json.load(f)["cns"]
    return out


@pytest.fixture(scope="module")
def stream_cost(tmp_path_factory):
    return zz.ZigZagCost(STREAM, cache_dir=tmp_path_factory.mktemp("zz"))  # Stream's lpf 6


@needs_shared
@pytest.mark.parametrize(("export", "cn", "shape", "core"), REPRODUCED)
def test_reproduces_stream_export(exports, stream_cost, export, cn, shape, core):
    """The generated description gives the latency Stream's ZigZag gave this CN (its operand
    sizes identify the tile)."""
    bits = {"O": shape.K * shape.OY * shape.OX * 8}
    if shape.kind == "conv":
        bits["W"] = shape.K * shape.C * shape.FY * shape.FX * 8
    costs = [
        next(iter(c["cost_per_core"].values()))
        for c in exports[export]
        if c["name"] == cn and all(c["operands"][op]["size_bits"] == b for op, b in bits.items())
    ]
    assert costs and not costs[0]["too_large_operands"]
    got = stream_cost.explain(shape, STREAM.cores[core])
    assert got.source == "zigzag"
    assert got.latency == costs[0]["latency"]
    assert got.ideal_temporal_cycle == costs[0]["ideal_temporal_cycle"]
    assert got.latency_total2 == got.ideal_temporal_cycle + got.stall_slack_comb + (
        got.data_onloading_cycle + got.data_offloading_cycle
    )


def test_stream_layer1_tile_breakdown(stream_cost):
    """ResNet-18's layer-1 tile on Stream's TPU-like core: 1008 + 0 + 18 + 1 = 1027 cycles
    (Stream's export), half the array's K rows busy."""
    got = stream_cost.explain(TileShape("conv", 16, 64, 1, 56, 3, 3), TPU)
    assert (got.latency, got.ideal_temporal_cycle, got.stall_slack_comb) == (1027, 1008, 0)
    assert (got.data_onloading_cycle, got.data_offloading_cycle) == (18, 1)
    assert got.spatial_utilization == pytest.approx(0.5)


# --- the generated description ---------------------------------------------------------------


def test_description_of_stream_tpu_core():
    """Stream's tpu_like.yaml: W register of 1024 bits per PE at 8 bits/cycle, a 16-bit O
    register served over D2 (C) with two port pairs, a 16 Mbit SRAM of 2048 bits/cycle."""
    acc = zi.accelerator_dict(STREAM, TPU)
    arr = acc["operational_array"]
    assert (arr["dimensions"], arr["sizes"]) == (["D1", "D2"], [32, 32])
    mem = acc["memories"]
    assert list(mem) == ["reg_W", "reg_O", "sram"]
    assert (mem["reg_W"]["size"], mem["reg_W"]["served_dimensions"]) == (1024, [])
    assert {p["bandwidth_max"] for p in mem["reg_W"]["ports"]} == {8}
    assert (mem["reg_O"]["size"], mem["reg_O"]["served_dimensions"]) == (16, ["D2"])
    assert [p["allocation"] for p in mem["reg_O"]["ports"]] == [
        ["O, tl"],
        ["O, fh"],
        ["O, th"],
        ["O, fl"],
    ]
    assert (mem["sram"]["size"], mem["sram"]["served_dimensions"]) == (16777216, ["D1", "D2"])
    assert {p["bandwidth_max"] for p in mem["sram"]["ports"]} == {2048}
    layer, mapping = zi.layer_dict(TileShape("conv", 16, 64, 1, 56, 3, 3), TPU, STREAM)
    assert layer["operand_precision"] == {"W": 8, "I": 8, "O": 16, "O_final": 8}
    # Stream's loop names: K is d6, C d5 (O[d0][d6][d2][d1] += I[d0][d5][d7][d8] * W[d6]...)
    assert layer["equation"] == "O[d0][d6][d2][d1]+=I[d0][d5][d7][d8]*W[d6][d5][d4][d3]"
    assert mapping["spatial_mapping"] == {"D1": ["D6, 32"], "D2": ["D5, 32"]}


def test_a_unary_operator_has_one_operand_as_stream_writes_it():
    for shape in (TileShape("add", 8, 1, 3, 3), TileShape("concat", 8, 1, 3, 3),
                  TileShape("pool", 8, 1, 3, 3, 2, 2, 2, 2)):
        layer, mapping = zi.layer_dict(shape, SIMD, STREAM)
        assert "W[" not in layer["equation"] and "W" not in layer["operand_precision"]
        assert set(mapping["memory_operand_links"]) == {"O", "I"}
    layer, _ = zi.layer_dict(TileShape("add", 8, 1, 3, 3, inputs=2), SIMD, STREAM)
    assert layer["equation"] == "O[d0][d1][d2][d3]+=I[d0][d1][d2][d3]*W[d0][d1][d2][d3]"


def test_flexer_core_gets_its_share_of_the_shared_buffer():
    arch = load_arch("flexer-arch5")
    assert arch.cores[0].memory_bytes is None
    size = zi.accelerator_dict(arch, arch.cores[0])["memories"]["sram"]["size"]
    assert size == arch.shared_buffer_bytes // len(arch.cores) * 8


def test_grouped_unrolling_key_becomes_a_mixed_unrolling():
    """TSO's ``OY*OX*FY*FX`` on 16 MACs: the per-tile factors with the fewest steps."""
    core = load_arch("tso-nmp-8").cores[0]
    split = split_unrolling
    # 2 steps either way (the flattened count): the larger factor on the first loop
    assert split(16, [("OY", 4), ("OX", 8), ("FY", 1), ("FX", 1)]) == [
        ("OY", 4),
        ("OX", 4),
        ("FY", 1),
        ("FX", 1),
    ]
    # 2 * 2 * 9 = 36 steps (flattened: ceil(441 / 16) = 28; OY 7 x FY 2 and the like take more)
    assert split(16, [("OY", 7), ("OX", 7), ("FY", 3), ("FX", 3)]) == [
        ("OY", 4),
        ("OX", 4),
        ("FY", 1),
        ("FX", 1),
    ]
    assert split(16, [("OY", 1), ("OX", 8), ("FY", 1), ("FX", 2)]) == [
        ("OY", 1),
        ("OX", 8),
        ("FY", 1),
        ("FX", 2),
    ]
    dims = {"K": 4, "C": 2, "OY": 1, "OX": 5, "FY": 3, "FX": 3}
    assert zi.spatial_mapping(core, dims) == {"D1": ["OX, 5", "FY, 3"]}  # 3 steps


def test_depthwise_channels_use_the_k_rows():
    _, mapping = zi.layer_dict(TileShape("dwconv", 32, 1, 4, 4, 3, 3, in_channels=32), TPU, STREAM)
    assert mapping["spatial_mapping"] == {"D1": ["G, 32"], "D2": []}


def test_input_extent_is_the_tiles():
    """No padding: ZigZag loads the IY x IX inputs of the tile (a stride that skips rows or
    columns: only those read)."""
    from zigzag.datatypes import LayerOperand
    from zigzag.parser.workload_factory import LayerNodeFactory

    for shape, inputs in [
        (TileShape("conv", 4, 3, 5, 6, 3, 3, 2, 2), 3 * 11 * 13),
        (TileShape("conv", 4, 3, 5, 6, 3, 3, 1, 1, 2, 2), 3 * 9 * 10),
        (TileShape("conv", 4, 3, 5, 6, 1, 1, 2, 2), 3 * 5 * 6),  # 1x1 stride 2: every 2nd
    ]:
        layer, mapping = zi.layer_dict(shape, TPU, STREAM)
        node = LayerNodeFactory(layer, [mapping]).create()
        assert node.operand_size_elem[LayerOperand("I")] == inputs
        if shape.FX > 1:
            assert shape.elements()["I"] == inputs


# --- every kind ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape",
    [
        TileShape("dwconv", 8, 1, 3, 3, 3, 3, in_channels=8),
        TileShape("conv", 8, 4, 2, 2, 3, 3, in_channels=16),  # 4 groups
        TileShape("fc", 40, 64),
        TileShape("pool", 8, 1, 3, 3, 2, 2, 2, 2),
        TileShape("add", 8, 1, 3, 3, inputs=2),
        TileShape("add", 8, 1, 3, 3),
        TileShape("concat", 8, 1, 3, 3),
    ],
    ids=lambda s: s.kind,
)
def test_every_kind_runs_through_zigzag(tmp_path, shape):
    cost = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=2)
    got = cost.explain(shape, TPU)
    assert got.source == "zigzag" and not cost.fallbacks
    assert got.latency >= got.ideal_temporal_cycle > 0


def test_add_of_three_inputs_falls_back(tmp_path):
    cost = zz.ZigZagCost(STREAM, cache_dir=tmp_path)
    shape = TileShape("add", 8, 1, 3, 3, inputs=3)
    got = cost.explain(shape, SIMD)
    assert got.fallback and got.source.startswith("analytic fallback: add of 3 inputs")
    assert got.latency == Roofline(STREAM).latency(shape, SIMD)
    assert [s for s, _ in cost.fallbacks] == [shape]
    assert not list(tmp_path.iterdir())


# --- cache -----------------------------------------------------------------------------------


def test_second_instance_reads_the_cache(tmp_path, counted):
    first = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=2)
    lat = first.latency(SMALL, TPU)
    assert len(counted) == 1
    assert first.latency(SMALL, STREAM.cores[1]) == lat  # an equal core: the memory's answer
    assert len(counted) == 1
    (entry,) = tmp_path.iterdir()
    assert entry.suffix == ".json" and json.loads(entry.read_text())["key"] == entry.stem
    second = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=2)
    got = second.explain(SMALL, TPU)
    assert (got.latency, got.source, len(counted)) == (lat, "cache", 1)
    other = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=3)  # another search: new key
    assert other.explain(SMALL, TPU).source == "zigzag" and len(counted) == 2


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda e: "{not json",
        lambda e: "",
        lambda e: json.dumps(e)[:40],
        lambda e: json.dumps({**e, "key": "0" * 64}),
        lambda e: json.dumps({**e, "result": {**e["result"], "latency_total2": -5}}),
        lambda e: json.dumps({**e, "result": {**e["result"], "latency_total2": 0}}),
        lambda e: json.dumps(
            {**e, "result": {k: v for k, v in e["result"].items() if k != "stall_slack_comb"}}
        ),
        lambda e: json.dumps({**e, "result": {**e["result"], "ideal_temporal_cycle": "1"}}),
        lambda e: json.dumps([e]),
    ],
    ids=[
        "bad-json",
        "empty",
        "truncated",
        "other-key",
        "negative",
        "zero",
        "missing-field",
        "string",
        "not-an-object",
    ],
)
def test_corrupt_entry_is_recomputed_and_rewritten(tmp_path, counted, corrupt):
    lat = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=2).latency(SMALL, TPU)
    (path,) = tmp_path.iterdir()
    good = json.loads(path.read_text())
    path.write_text(corrupt(good))
    again = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=2)
    got = again.explain(SMALL, TPU)
    assert (got.latency, got.source, len(counted)) == (lat, "zigzag", 2)
    assert json.loads(path.read_text())["result"] == good["result"]
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


# --- time limit ------------------------------------------------------------------------------


def test_time_limit_falls_back_to_the_roofline(tmp_path, monkeypatch):
    """A ZigZag call stopped at its limit: the analytic latency, a recorded fallback, and
    nothing in the cache (no entry, no temporary file); nothing in the working directory."""
    cache, work = tmp_path / "cache", tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    cost = zz.ZigZagCost(STREAM, cache_dir=cache, time_limit=0.05)  # lpf 6: ~1.5 s
    shape = TileShape("conv", 16, 64, 1, 56, 3, 3)
    got = cost.explain(shape, TPU)
    assert got.fallback and "time limit of 0.05 s" in got.source
    assert got.latency == Roofline(STREAM).latency(shape, TPU)
    assert cost.fallbacks == [(shape, got.source.removeprefix("analytic fallback: "))]
    assert cost.latency(shape, TPU) == got.latency and len(cost.fallbacks) == 1
    assert not cache.exists() or not list(cache.iterdir())
    assert not list(tmp_path.rglob("*.tmp")) and not list(work.iterdir())


def test_time_limit_runs_zigzag_in_a_child(tmp_path):
    cost = zz.ZigZagCost(STREAM, cache_dir=tmp_path, time_limit=60, lpf_limit=2)
    got = cost.explain(SMALL, TPU)
    assert got.source == "zigzag" and not cost.fallbacks
    assert len(list(tmp_path.glob("*.json"))) == 1 and not list(tmp_path.glob("*.tmp"))


# --- rejected descriptions -------------------------------------------------------------------


def _with_registers(**regs):
    return replace(TPU, registers={**TPU.registers, **regs})


@pytest.mark.parametrize(
    ("core", "pattern"),
    [
        (
            _with_registers(W=Register(0, 1)),
            r"cores/0/registers/W: ZigZag rejects a 0-byte W "
            r"register: it cannot hold one 8-bit weight",
        ),
        (_with_registers(O=Register(1, 2, ("C",))), r"cores/0/registers/O: .* one 16-bit partial"),
        (
            _with_registers(W=Register(128, 0.1)),  # 0.8 bits: not rounded up to 1
            r"cores/0/registers/W/bandwidth_bytes_per_cycle: ZigZag rejects a bandwidth of 0.8 "
            r"bits/cycle",
        ),
        (
            replace(TPU, sram_read_bytes_per_cycle=0.05),
            r"cores/0/sram_read_bytes_per_cycle: ZigZag rejects a bandwidth of 0.4",
        ),
    ],
    ids=["W-register-0", "O-register-too-small", "register-bandwidth", "sram-bandwidth"],
)
def test_rejected_core_names_the_field(tmp_path, counted, core, pattern):
    cost = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=2)
    with pytest.raises(ValueError, match=pattern) as err:
        cost.latency(SMALL, core)
    assert "\n" not in str(err.value) and not counted


def test_register_check_is_zigzags(tmp_path):
    """Without the check, ZigZag itself finds no loop ordering for a 1-byte O register."""
    core = _with_registers(O=Register(1, 2, ("C",)))
    layer, mapping = zi.layer_dict(SMALL, core, STREAM)
    status, (kind, _) = zr.attempt(zi.accelerator_dict(STREAM, core), layer, mapping, "loma", 2)
    assert (status, kind) == ("error", "no_loop_ordering")


@pytest.mark.parametrize("time_limit", [None, 30])
def test_tile_larger_than_the_sram(tmp_path, time_limit):
    """An fc tile of 4 MB of weights on a 2 MB core (in this process, or in a child)."""
    cost = zz.ZigZagCost(STREAM, cache_dir=tmp_path, time_limit=time_limit)
    with pytest.raises(ValueError) as err:
        cost.latency(TileShape("fc", 4096, 1024), TPU)
    assert str(err.value).startswith(
        "cores/0/memory_bytes: the fc K4096 C1024 tile does not fit the core's SRAM: its "
        "operands need 4203520 bytes (W 4194304, I 1024, O 8192), the SRAM holds 2097152"
    )
    (entry,) = tmp_path.iterdir()  # ZigZag's rejection is cached: the same error, no call
    assert json.loads(entry.read_text())["rejected"][0] == "no_loop_ordering"
    again = zz.ZigZagCost(STREAM, cache_dir=tmp_path, time_limit=time_limit)
    with pytest.raises(ValueError) as second:
        again.latency(TileShape("fc", 4096, 1024), TPU)
    assert str(second.value) == str(err.value) and again.stats["cache"] == 1


def test_a_tile_too_large_for_the_sram_falls_back_where_asked(tmp_path):
    """``too_large="fallback"`` (a partition's, as Stream falls back where ZigZag rejects a CN
    on a core): the analytic latency, the reason recorded; ZigZag's other rejections stay
    errors; and the cached rejection is read back the same way."""
    shape = TileShape("fc", 4096, 1024)
    for attempt in ("fresh", "cached"):
        cost = zz.ZigZagCost(STREAM, cache_dir=tmp_path, too_large="fallback")
        got = cost.explain(shape, TPU)
        assert got.latency == Roofline(STREAM).latency(shape, TPU), attempt
        assert got.source.startswith("analytic fallback: the fc K4096 C1024 tile does not fit")
        assert [s for s, _ in cost.fallbacks] == [shape]
        assert cost.stats["cache"] == (attempt == "cached")
    small = _with_registers(O=Register(1, 2, ("C",)))  # a 1-byte O register: still the arch's
    with pytest.raises(ValueError, match="registers/O"):
        zz.ZigZagCost(STREAM, cache_dir=tmp_path, too_large="fallback").latency(SMALL, small)
    with pytest.raises(ValueError, match="too_large is 'raise' or 'fallback'"):
        zz.ZigZagCost(STREAM, cache_dir=tmp_path, too_large="ignore")


def test_shared_buffer_share_is_named(tmp_path):
    arch = load_arch("flexer-arch1")
    cost = zz.ZigZagCost(arch, cache_dir=tmp_path)
    with pytest.raises(ValueError, match=r"^shared_buffer_bytes: the fc K1024 C512 tile does not"):
        cost.latency(TileShape("fc", 1024, 512), arch.cores[1])


# --- plumbing --------------------------------------------------------------------------------


def test_factory_options_and_bad_options(tmp_path):
    cost = cost_model("zigzag", STREAM, cache_dir=tmp_path, time_limit=5, lpf_limit=2)
    assert isinstance(cost, zz.ZigZagCost) and cost.name == "zigzag"
    assert (cost.time_limit, cost.lpf_limit, cost.cache_dir) == (5, 2, tmp_path)
    for bad in ({"engine": "tabu"}, {"time_limit": 0}, {"lpf_limit": 0}):
        with pytest.raises(ValueError):
            zz.ZigZagCost(STREAM, cache_dir=tmp_path, **bad)


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("NPUSCHED_CACHE", str(tmp_path))
    assert zz.ZigZagCost(STREAM).cache_dir == tmp_path / "zigzag"
    monkeypatch.delenv("NPUSCHED_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert zz.ZigZagCost(STREAM).cache_dir == tmp_path / "home" / ".cache" / "npusched" / "zigzag"


def test_missing_zigzag_gives_the_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "zigzag", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'zigzag-dse"):
        cost_model("zigzag", STREAM)


def test_quiet_and_leaves_no_files(tmp_path, monkeypatch, caplog, capfd):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with caplog.at_level(logging.DEBUG):
        zz.ZigZagCost(STREAM, cache_dir=tmp_path / "cache", lpf_limit=2).latency(SMALL, TPU)
    assert not [r for r in caplog.records if r.name.startswith("zigzag")]
    out, err = capfd.readouterr()
    assert out == err == ""
    assert not list(work.iterdir())
    assert logging.getLogger("zigzag").propagate  # restored


def test_validator_and_assertion_rejections_name_the_field():
    """What ZigZag's validator logs (CRITICAL) and its zero-bandwidth assertion become."""
    layer, mapping = zi.layer_dict(SMALL, TPU, STREAM)
    acc = zi.accelerator_dict(STREAM, TPU)
    acc["memories"]["reg_W"]["served_dimensions"] = ["D7"]
    status, (kind, message) = zr.attempt(acc, layer, mapping, "loma", 2)
    assert (status, kind) == ("error", "invalid") and "served dimension D7" in message
    assert zi.field_of(message, 0, STREAM, TPU) == "cores/0/registers/W"
    acc = zi.accelerator_dict(STREAM, TPU)
    for port in acc["memories"]["sram"]["ports"]:
        port["bandwidth_min"] = port["bandwidth_max"] = 0
    status, (kind, message) = zr.attempt(acc, layer, mapping, "loma", 2)
    assert (status, kind) == ("error", "AssertionError")
    assert zi.field_of(message, 0, STREAM, TPU).startswith("cores/0/sram_")


# --- the SRAM's size and the cache -----------------------------------------------------------

FLEXER = load_arch("flexer-arch5")


def _shared(kib: int):
    return replace(FLEXER, shared_buffer_bytes=kib * 1024 * len(FLEXER.cores))


@pytest.mark.parametrize(
    "shape",
    [
        TileShape("conv", 16, 32, 4, 8, 3, 3),
        TileShape("conv", 48, 32, 8, 28, 3, 3),  # 44 KiB: most of the smaller share
        TileShape("conv", 96, 8, 8, 28, 1, 1, 2, 2),
        TileShape("fc", 64, 256),
    ],
    ids=["conv", "conv-large", "conv-stride2", "fc"],
)
def test_the_sram_size_does_not_change_zigzags_answer_once_the_tile_fits(tmp_path, shape):
    """What lets shares that hold a tile share its cache entry: ZigZag itself, called for 64
    and for 1024 KiB per core, gives the same latency and parts."""
    small = zz.ZigZagCost(_shared(64), cache_dir=tmp_path / "a", lpf_limit=2)
    large = zz.ZigZagCost(_shared(1024), cache_dir=tmp_path / "b", lpf_limit=2)
    a, b = small.explain(shape, small.arch.cores[0]), large.explain(shape, large.arch.cores[0])
    assert (a.source, b.source) == ("zigzag", "zigzag")
    assert a.latency_total2 == b.latency_total2 and a.latency == b.latency


def test_shares_that_hold_the_tile_share_its_entry_and_one_too_small_does_not(tmp_path, counted):
    shape = TileShape("conv", 48, 32, 8, 28, 3, 3)  # 44 928 bytes
    first = zz.ZigZagCost(_shared(512), cache_dir=tmp_path, lpf_limit=2)
    lat = first.latency(shape, first.arch.cores[0])
    other = zz.ZigZagCost(_shared(64), cache_dir=tmp_path, lpf_limit=2)
    got = other.explain(shape, other.arch.cores[0])
    assert (got.latency, got.source, len(counted)) == (lat, "cache", 1)
    small = zz.ZigZagCost(_shared(32), cache_dir=tmp_path, lpf_limit=2)
    with pytest.raises(ValueError, match="does not fit"):
        small.latency(shape, small.arch.cores[0])
    assert len(counted) == 2  # ZigZag asked: the fitting tile's answer was not served
    entries = [json.loads(p.read_text()) for p in tmp_path.iterdir()]
    assert sorted("rejected" in e for e in entries) == [False, True]


def test_a_searched_core_leaves_the_spatial_mapping_to_zigzag(tmp_path):
    searched = replace(TPU, unrolling="searched")
    shape = TileShape("conv", 4, 64, 2, 16, 3, 3)  # K = 4 wastes most of the 32 K rows
    _, mapping = zi.layer_dict(shape, searched, STREAM)
    assert mapping["spatial_mapping"] == {}
    cost = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=2)
    got, fixed = cost.explain(shape, searched), cost.explain(shape, TPU)
    assert got.source == fixed.source == "zigzag"
    assert got.spatial_utilization > fixed.spatial_utilization
    assert got.latency < fixed.latency


@needs_shared
def test_a_stream_core_is_priced_on_its_own_description(tmp_path):
    arch = load_arch(SHARED / "stream-oss" / "hardware" / "tpu_like_quad_core.yaml")
    core = arch.cores[0]
    acc = zi.own_description(core)
    assert acc is not None and "accumulator_bits" not in acc
    assert set(acc["memories"]) == {"rf_128B", "rf_4B", "sram_2MB"}  # its whole hierarchy
    shape = TileShape("fc", 64, 64)
    layer, mapping = zi.layer_dict(shape, core, arch)
    assert layer["operand_precision"]["O"] == 32  # the core's int32 accumulator
    assert zi.layer_dict(TileShape("add", 8, 1, 2, 2, inputs=2), core, arch)[0][
        "operand_precision"]["O"] == arch.precision_bits  # not a MAC operator
    got = zz.ZigZagCost(arch, cache_dir=tmp_path, lpf_limit=2).explain(shape, core)
    assert got.source == "zigzag" and got.latency >= 1
    assert zi.own_description(TPU) is None


def test_cycles_per_op_multiply_zigzags_compute(tmp_path):
    cost = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=2)
    one, four = (TileShape("add", 64, 1, 1, 4, cycles_per_op=c) for c in (1, 4))
    assert "cycles_per_op" not in zi.layer_dict(one, SIMD, STREAM)[0]
    a, b = cost.explain(one, SIMD), cost.explain(four, SIMD)
    assert b.source == "zigzag" and b.ideal_temporal_cycle == 4 * a.ideal_temporal_cycle
    assert b.latency > a.latency


def test_a_gemm_tile_is_given_to_zigzag_as_stream_writes_a_matmul(tmp_path):
    shape = TileShape("gemm", 64, 48, 2, 16)  # 64 columns over 48, 2 heads x 16 rows
    layer, mapping = zi.layer_dict(shape, TPU, STREAM)
    assert layer["equation"] == "O[d0][d1]+=I[d0][d2]*W[d2][d1]"
    assert dict(zip(layer["loop_dims"], layer["loop_sizes"], strict=True)) == {
        "D0": 32, "D1": 64, "D2": 48}
    assert mapping["spatial_mapping"] == {"D1": ["D1, 32"], "D2": ["D2, 32"]}  # TPU's K, C
    cost = zz.ZigZagCost(STREAM, cache_dir=tmp_path, lpf_limit=2)
    conv = TileShape("conv", 64, 48, 2, 16)  # the same MACs as a 1 x 1 convolution
    assert cost.explain(shape, TPU).ideal_temporal_cycle == cost.explain(
        conv, TPU).ideal_temporal_cycle == 2 * 2 * 32
    assert Roofline(STREAM).latency(shape, TPU) == Roofline(STREAM).latency(conv, TPU)
