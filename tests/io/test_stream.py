"""Stream exports (``../shared/benchmarks/stream``): reader, CLI, schedules checked by verify."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import SHARED, needs_shared, run_cli

from npusched.common.errors import InputError
from npusched.io import load_instance, read_solution, read_stream
from npusched.io.instance_json import instance_from_dict, instance_to_dict
from npusched.io.solution_json import solution_to_dict
from npusched.methods import solve
from npusched.problem.scheduling.routed import RoutedInstance, required_transfers
from npusched.verify import check

TINY = SHARED / "stream" / "tiny_res16_tpu_quad_core_fused.json"
RESNET = SHARED / "stream" / "resnet18_tpu_quad_core_fused.json"
pytestmark = needs_shared


@pytest.fixture(scope="module")
def export() -> dict:
    return json.loads(TINY.read_text())


def test_reader_keeps_stream_structure(export):
    inst = read_stream(TINY)
    assert inst.n == len(export["cns"]) and inst.graph.num_edges == len(export["edges"])
    compute = [c["id"] for c in export["cores"] if not c["is_offchip"]]
    assert [c.id for c in inst.accelerator.cores] == compute
    assert inst.topology.dram == export["offchip_core_id"]
    assert len(inst.topology.links) == len(export["links"])
    # Stream's allocation, one core per CN; latencies from its cost table
    alloc = export["stream_solution"]["allocation"]
    for i, cn in enumerate(export["cns"]):
        (k,) = np.flatnonzero(inst.mask[i])
        assert inst.accelerator.cores[k].id == alloc[cn["key"]]
        assert inst.duration[i, k] == cn["cost_per_core"][str(alloc[cn["key"]])]["latency"]
    # every constant operand with data is in exactly one DRAM tensor; weights shared per group
    ops = [op for cn in export["cns"] for op in cn["operands"].values()]
    wanted = sum(1 for op in ops if op["constant"] and op["size_bits"])
    assert sum(t.consumers.size for t in inst.dram) == wanted
    for t in inst.dram:
        groups = {(export["cns"][i]["layer_id"], export["cns"][i]["group"]) for i in t.consumers}
        assert len(groups) == 1


def test_free_allocation_allows_possible_cores(export):
    inst = read_stream(TINY, free_allocation=True)
    for i, cn in enumerate(export["cns"]):
        ids = [inst.accelerator.cores[k].id for k in np.flatnonzero(inst.mask[i])]
        assert ids == sorted(cn["possible_cores"])
    assert inst.preferred is not None and inst.mask[np.arange(inst.n), inst.preferred].all()


def test_list_and_joint_verify_and_beat_streams_schedule():
    inst = read_stream(TINY)
    stream = inst.source["stream_makespan"]
    heur = solve(inst, "list")
    assert check(inst, heur.solution).ok
    exact = solve(inst, "joint", time_limit=5, threads=2)
    rep = check(inst, exact.solution)
    assert rep.ok and rep.makespan == exact.objective <= heur.objective
    assert inst.lower_bound() <= exact.bound <= exact.objective
    # the comparison the NoC issue asks for (goal: at most 0.8 x Stream's)
    assert exact.objective <= 0.8 * stream


def test_resnet18_list_schedule_verifies():
    inst = read_stream(RESNET)
    res = solve(inst, "list")
    rep = check(inst, res.solution)
    assert rep.ok and res.bound <= rep.makespan < inst.source["stream_makespan"]


def test_instance_and_solution_files_round_trip(tmp_path):
    inst = read_stream(TINY, free_allocation=True)
    back = instance_from_dict(instance_to_dict(inst))
    assert isinstance(back, RoutedInstance) and (back.mask == inst.mask).all()
    res = solve(inst, "list")
    data = solution_to_dict(inst, res, "tiny")
    dram = [t for t in data["transfers"] if t["src"] == "dram"]
    outs = [t for t in data["transfers"] if t["src"] != "dram"]
    assert dram and outs and all("dst" in t and "tensor" in t for t in dram)
    assert all("dst_core" in t and t["end"] - t["start"] > 0 for t in outs)
    path = tmp_path / "sol.json"
    path.write_text(json.dumps(data))
    sched, _ = read_solution(path, back)
    assert check(back, sched).ok and sched.makespan(back) == data["makespan"]


def test_cli_convert_solve_verify_and_tampering(tmp_path):
    inst_path, sol = tmp_path / "tiny.json", tmp_path / "sol.json"
    r = run_cli("convert", "stream", TINY, "-o", inst_path)
    assert r.returncode == 0, r.stderr
    r = run_cli("solve", inst_path, "--method", "list", "--out", sol, "--gantt", tmp_path / "g.png")
    assert r.returncode == 0 and "verify=ok" in r.stdout and "stream=22000" in r.stdout
    assert (tmp_path / "g.png").stat().st_size > 0
    assert run_cli("verify", inst_path, sol).returncode == 0
    data = json.loads(sol.read_text())
    # move one DRAM fetch onto another transfer's window on the same link
    link = data["transfers"][0]["links"][0]
    same = [t for t in data["transfers"] if link in t["links"]]
    same[1]["start"], same[1]["end"] = same[0]["start"], same[0]["end"]
    sol.write_text(json.dumps(data))
    r = run_cli("verify", inst_path, sol)
    assert r.returncode == 1 and "overlap" in r.stdout


def test_bad_export_names_file_and_field(tmp_path, export):
    bad = dict(export, cns=[dict(export["cns"][0], possible_cores=[42])] + export["cns"][1:])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(InputError, match="cns/0/possible_cores"):
        load_instance(path)
    out = tmp_path / "out.json"
    r = run_cli("convert", "stream", path, "-o", out)
    assert r.returncode == 2 and "bad.json: cns/0/possible_cores" in r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def test_required_transfers_recomputed_from_the_export(export):
    """With Stream's allocation, one output transfer per (producer, other core hosting a data
    consumer) and one DRAM fetch per (tensor, core), counted directly from the export."""
    inst = read_stream(TINY)
    tr = required_transfers(inst, np.argmax(inst.mask, axis=1))
    alloc = {cn["idx"]: cn["chosen_core"] for cn in export["cns"]}
    pairs = {
        (e["src"], alloc[e["dst"]])
        for e in export["edges"]
        if e["bits"] > 0 and alloc[e["src"]] != alloc[e["dst"]]
    }
    assert int((tr.src >= 0).sum()) == len(pairs)
    fetches = {
        (cn["layer_id"], cn["group"], cn["chosen_core"])
        if name == "W"
        else (cn["idx"], name, cn["chosen_core"])
        for cn in export["cns"]
        for name, op in cn["operands"].items()
        if op["constant"] and op["size_bits"] > 0
    }
    assert int((tr.src < 0).sum()) == len(fetches)
