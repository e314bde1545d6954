"""bench.stream_oss on one small pair: Stream's reference figure beside a verified schedule, the
bound terms below it, and the live path's subprocess where Stream is not installed."""

from __future__ import annotations

import json
import sys

from conftest import SHARED, needs_shared

from npusched.arch import load_arch
from npusched.bench.stream_oss import main, stream_live, terms
from npusched.methods import solve
from npusched.partition.api import partition_network, resolve_network
from npusched.verify import check

OSS = SHARED / "stream-oss"


@needs_shared
def test_one_pair_against_the_reference(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# t\n\n<!-- tables -->\n<!-- /tables -->\n")
    out = tmp_path / "rows.json"
    assert main(["--workloads", "swiglu_1_16_32", "--hardware", "tpu_like_quad_core",
                 "--time-limit", "3", "--json", str(out), "--doc", str(doc)]) == 0
    (row,) = json.loads(out.read_text())
    ref = next(r for r in json.loads((OSS / "reference.json").read_text())
               if r["workload"] == "swiglu_1_16_32" and r["hardware"] == "tpu_like_quad_core")
    assert row["stream_cycles"] == ref["cycles"] and row["verified"]
    assert row["bound"] <= row["makespan"] <= row["list"]
    assert row["ratio"] == row["makespan"] / ref["cycles"]
    assert "swiglu_1_16_32" in doc.read_text()


@needs_shared
def test_bound_terms_lie_below_an_optimal_schedule():
    inst = partition_network(resolve_network(str(OSS / "workload" / "swiglu_64_128_256.onnx")),
                             load_arch(OSS / "hardware" / "tpu_like_quad_core.yaml"), "stream",
                             cn={"M": 32})
    res = solve(inst, "list")
    assert check(inst, res.solution).ok
    parts = terms(inst)
    assert parts["dram"] > 0 and all(v <= res.objective for v in parts.values())
    # the port carries at least every weight once: 3 x 128 x 256 bytes at 8 B/cycle
    assert parts["dram"] >= 3 * 128 * 256 / 8


@needs_shared
def test_live_path_reports_what_went_wrong():
    row = stream_live(sys.executable, OSS / "hardware" / "tpu_like_quad_core.yaml",
                      OSS / "workload" / "swiglu_1_16_32.onnx")
    assert row["cycles"] is None and row["stream_failed"] == "ModuleNotFoundError"
    assert row["wall_s"] >= 0


@needs_shared
def test_a_pair_stream_cannot_allocate_gets_the_verified_list(tmp_path):
    import shutil

    data = tmp_path / "oss"
    shutil.copytree(OSS / "hardware", data / "hardware")
    (data / "workload").mkdir()
    shutil.copy(OSS / "workload" / "swiglu_1_16_32.onnx", data / "workload")
    (data / "reference.json").write_text(json.dumps([
        {"workload": "swiglu_1_16_32", "hardware": "simba", "cycles": None, "wall_s": 3.0,
         "stream_failed": "InfeasibleAllocationError"}]))  # fmt: skip
    out, doc = tmp_path / "rows.json", tmp_path / "doc.md"
    assert main(["--data", str(data), "--json", str(out)]) == 0
    assert json.loads(out.read_text()) == []  # skipped without --infeasible
    assert main(["--data", str(data), "--infeasible", "--json", str(out), "--doc", str(doc)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["verified"] and row["stream_cycles"] is None and row["makespan"] >= row["bound"]
    assert "no allocation" in doc.read_text()


@needs_shared
def test_at_equal_time_joint_gets_what_is_left_of_streams_wall(tmp_path, capsys):
    import shutil

    import pytest

    data = tmp_path / "oss"
    shutil.copytree(OSS / "hardware", data / "hardware")
    (data / "workload").mkdir()
    shutil.copy(OSS / "workload" / "swiglu_1_16_32.onnx", data / "workload")
    out = tmp_path / "rows.json"
    for wall in (0.0, 30.0):  # nothing left: the list's schedule; else a limit below the wall
        (data / "reference.json").write_text(json.dumps([
            {"workload": "swiglu_1_16_32", "hardware": "tpu_like_quad_core", "cycles": 458.0,
             "wall_s": wall, "stream_failed": None}]))  # fmt: skip
        assert main(["--data", str(data), "--time-limit", "stream", "--json", str(out)]) == 0
        (row,) = json.loads(out.read_text())
        assert row["verified"] and row["joint_limit_s"] <= max(wall - row["search_s"], 0) + 0.1
        assert row["cuts_tried"] >= 1
        assert row["default_list"] is None or row["default_list"] >= row["list"]
        if wall == 0:
            assert row["joint_limit_s"] == 0 and row["makespan"] == row["list"]
    (data / "reference.json").write_text(json.dumps([  # a hand-made entry without a wall
        {"workload": "swiglu_1_16_32", "hardware": "tpu_like_quad_core", "cycles": 458.0}]))
    assert main(["--data", str(data), "--time-limit", "stream", "--json", str(out)]) == 0
    assert json.loads(out.read_text()) == []
    assert "wall_s: --time-limit stream" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--data", str(data), "--time-limit", "soon"])
    assert "seconds or 'stream'" in capsys.readouterr().err


@needs_shared
def test_the_mlp_at_other_lengths_keeps_its_graph_and_scales_its_macs(tmp_path):
    """``mlp_at``: the LLaMA MLP at 512 tokens has twice the 256-token file's MACs (three
    GEMMs of T × 4 096 × 14 336) and the same weights; both import."""
    from npusched.bench.stream_oss import MLP, mlp_at

    base = resolve_network(str(OSS / "workload" / f"{MLP}.onnx"))
    longer = resolve_network(str(mlp_at(512, OSS, tmp_path)))
    assert longer.macs() == 2 * base.macs() >= 3 * 512 * 4096 * 14336
    assert longer.params() == base.params() == 3 * 4096 * 14336


@needs_shared
def test_bad_options_name_the_option_and_what_is_there(capsys):
    """A token count that is not a positive integer, an accelerator or a workload that the data
    folder does not have, or a folder without ``reference.json``: a usage error (exit 2) naming
    the option, no traceback."""
    import pytest

    for argv, said in ((["--mlp-tokens", "abc"], "comma-separated integers"),
                       (["--mlp-tokens", "512,0"], "positive"),
                       (["--hardware", "simba,tpu_v9"], "no tpu_v9 in"),
                       (["--workloads", "gpt5"], "no gpt5 in"),
                       (["--data", "/nonexistent"], "reference.json")):  # fmt: skip
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err
