"""bench.stream_lut without Stream: Stream's equations read into npusched's tiles, its spatial
mappings into npusched's loop names, the causes named, and one pair priced from a LUT extract
written here (its figures are Stream 2.1.1's for swiglu_1_16_32 on tpu_like_quad_core)."""

from __future__ import annotations

import json
import sys

from conftest import SHARED, needs_shared

from npusched.bench.stream_lut import (
    cause,
    main,
    parse_equation,
    stream_lut,
    stream_mapping,
    tile_of,
)
from npusched.costmodel import TileShape
from npusched.costmodel.zigzag import ZigZagBreakdown

OSS = SHARED / "stream-oss"
CONV = {"type": "Conv", "equation": "O[d0][d6][d2][d1] = A[d0][d5][d7][d8] * B[d6][d5][d4][d3]",
        "loop_sizes": {"D0": 1, "D1": 2, "D2": 28, "D3": 7, "D4": 7, "D5": 3, "D6": 32},
        "relations": [["D7", 2, "D2", 1, "D4"], ["D8", 2, "D1", 1, "D3"]],
        "spatial_mapping": {"D1": {"D1": 2.0, "D2": 4.0, "D6": 4.0}, "D2": {"D4": 7.0, "D5": 3.0}},
        "array": ["D1", "D2"]}  # fmt: skip
GEMM = {"type": "Gemm", "equation": "O[d0][d2] = A[d0][d1] * B[d1][d2]",
        "loop_sizes": {"D0": 1, "D1": 16, "D2": 8}, "relations": [], "core_id": 0,
        "core": "tpu_like", "latency": 4.0, "precision": {"A": 16, "B": 16, "O_final": 16, "O": 32},
        "spatial_mapping": {"D1": {"D2": 8.0}, "D2": {"D1": 16.0}}, "utilization": 1.0,
        "ideal_temporal_cycle": 1.0, "cycles_per_op": 1.0, "array": ["D1", "D2"]}  # fmt: skip
SILU = {"type": "Silu", "equation": "O[d0][d1] = A[d0][d1]", "loop_sizes": {"D0": 1, "D1": 32},
        "relations": [], "core_id": 5, "core": "simd", "latency": 4.0,
        "precision": {"A": 16, "O_final": 16, "O": 16}, "spatial_mapping": {"D1": {"D1": 32.0}},
        "utilization": 1.0, "ideal_temporal_cycle": 4.0, "cycles_per_op": 4.0,
        "array": ["D1"]}  # fmt: skip


def test_equations_read_per_operand():
    assert parse_equation("O[d0][d2] = A[d0][d1] * B[d1][d2]") == [["D0", "D2"], ["D0", "D1"],
                                                                   ["D1", "D2"]]  # fmt: skip
    assert parse_equation("O[d0][d1] = A[d0][d1] * B[]") == [["D0", "D1"], ["D0", "D1"], []]


def test_a_strided_convolution_becomes_its_tile():
    shape, names = tile_of(CONV, cnn=True)
    assert shape == TileShape("conv", 32, 3, 28, 2, 7, 7, SY=2, SX=2)
    assert names == {"D0": "OY", "D1": "OX", "D2": "OY", "D3": "FX", "D4": "FY", "D5": "C",
                     "D6": "K"}  # fmt: skip
    # Stream's mixed unrolling, in npusched's loop names on the same array dimensions
    assert stream_mapping(CONV, names) == {"D1": ["OX, 2", "OY, 4", "K, 4"],
                                           "D2": ["FY, 7", "C, 3"]}  # fmt: skip


def test_gemm_fc_pooling_reduction_and_eltwise_tiles():
    assert tile_of(GEMM, cnn=False)[0] == TileShape("gemm", 8, 16, 1, 1)  # partition.tensor's
    fc = {**GEMM, "equation": "O[d0][d2] = A[d1] * B[d1][d2]"}
    assert tile_of(fc, cnn=True)[0] == TileShape("fc", 8, 16)
    pool = {"type": "MaxPool", "equation": "O[d0][d1][d2][d3] = A[d0][d1][d6][d7]",
            "loop_sizes": {"D0": 1, "D1": 32, "D2": 56, "D3": 1, "D4": 3, "D5": 3},
            "relations": [["D6", 2, "D2", 1, "D4"], ["D7", 2, "D3", 1, "D5"]]}  # fmt: skip
    assert tile_of(pool, cnn=True)[0] == TileShape("pool", 32, 1, 56, 1, 3, 3, SY=2, SX=2)
    gap = {"type": "GlobalAveragePool", "equation": "O[d0][d1][d2][d3] = A[d0][d1][d4][d5]",
           "loop_sizes": {"D0": 1, "D1": 64, "D2": 1, "D3": 1, "D4": 7, "D5": 7},
           "relations": []}  # fmt: skip
    assert tile_of(gap, cnn=True)[0] == TileShape("pool", 64, FY=7, FX=7)
    red = {"type": "ReduceMax", "equation": "O[d0] = A[d0][d1]",
           "loop_sizes": {"D0": 32, "D1": 128}, "relations": []}  # fmt: skip
    assert tile_of(red, cnn=False)[0] == TileShape("pool", 32, FX=128)
    relu = {"type": "Relu", "equation": "O[d0][d1][d2][d3] = A[d0][d1][d2][d3]",
            "loop_sizes": {"D0": 1, "D1": 64, "D2": 28, "D3": 1}, "relations": []}  # fmt: skip
    assert tile_of(relu, cnn=True)[0] == TileShape("add", 64, 1, 28, 1, inputs=1)
    exp = {"type": "Exp", "equation": "O[d0][d1] = A[d0][d1] * B[d0]",
           "loop_sizes": {"D0": 128, "D1": 64}, "relations": []}  # fmt: skip
    assert tile_of(exp, cnn=False)[0] == TileShape("add", 64, 1, 1, 128, inputs=2, cycles_per_op=4)


def _zz(latency: int, ideal: float, util: float, source: str = "zigzag") -> ZigZagBreakdown:
    return ZigZagBreakdown(latency, float(latency), ideal, 0.0, 0.0, 0.0, util, source)


def test_causes_in_order():
    e = {"latency": 100.0, "utilization": 1.0, "ideal_temporal_cycle": 50.0, "cycles_per_op": 1}
    args = ((16, 8), False)
    assert cause(e, _zz(103, 50, 1), None, None, *args) == ""
    assert cause(e, _zz(50, 25, 1), _zz(101, 50, 1), None, *args).startswith("precision")
    unrolled = cause(e, _zz(300, 150, 0.25), _zz(300, 150, 0.25), _zz(98, 50, 1), *args)
    assert unrolled == "spatial unrolling (utilisation Stream 100%, npusched 25%)"
    assert cause(e, _zz(300, 150, 0.25), None, _zz(200, 100, 0.5), *args).startswith(
        "memory ports")  # fmt: skip
    assert cause(e, _zz(300, 150, 1), None, _zz(70, 50, 1), *args) == \
        "memory (stalls and loading: Stream 50, npusched 20)"  # fmt: skip
    assert cause({**e, "cycles_per_op": 4}, _zz(30, 25, 1), None, _zz(30, 25, 1),
                 *args).startswith("cycles per op")  # fmt: skip
    assert cause(e, _zz(9, 9, 1, "analytic fallback: add of 3 inputs"), None, None,
                 *args).startswith("no ZigZag form")  # fmt: skip


def test_live_path_reports_what_went_wrong():
    got = stream_lut(sys.executable, OSS / "hardware" / "tpu_like_quad_core.yaml",
                     OSS / "workload" / "swiglu_1_16_32.onnx")  # fmt: skip
    assert got["stream_failed"] == "ModuleNotFoundError" and got["entries"] == []


@needs_shared
def test_one_pair_from_a_saved_lut(tmp_path):
    luts = tmp_path / "luts"
    luts.mkdir()
    entries = [{**GEMM, "node": "Gemm_Left"}, {**GEMM, "node": "Gemm_Left", "core_id": 1},
               {**SILU, "node": "Silu"}]  # fmt: skip
    (luts / "swiglu_1_16_32__tpu_like_quad_core.json").write_text(json.dumps(
        {"cycles": 458.0, "stream_failed": None, "entries": entries}))  # fmt: skip
    out, doc = tmp_path / "rows.json", tmp_path / "doc.md"
    assert main(["--luts", str(luts), "--workloads", "swiglu_1_16_32", "--hardware",
                 "tpu_like_quad_core", "--cache", str(tmp_path / "zz"), "--json", str(out),
                 "--doc", str(doc)]) == 0  # fmt: skip
    gemm, silu = json.loads(out.read_text())
    assert (gemm["node"], gemm["cores"], gemm["tile"]) == ("Gemm_Left", 2, "gemm K8 C16 OY1 OX1")
    # both price the ONNX's bf16 operands (not the core's int8) on the core's own hierarchy
    assert gemm["npusched"] == 4 and gemm["within"] and not gemm["cause"]
    # Stream charges SiLU 4 cycles an element, and so does npusched's tile of it
    assert silu["within"] and "4 cycles/op" in silu["tile"] and not silu["cause"]
    assert "2 of 2 (100%)" in doc.read_text()
