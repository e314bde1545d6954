"""MSPCD (.td): reading, the store-and-forward delay model on hypercubes and meshes, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SHARED, needs_shared, run_cli

from npusched.io import load_instance, read_instance, write_instance
from npusched.io.mspcd import read_mspcd
from npusched.methods import solve
from npusched.problem import Schedule
from npusched.problem.scheduling.accelerator import Accelerator
from npusched.verify import check, verify

TINY = """3
1 5 2  2 7   3 4
2 3 0
3 2 0
"""


def test_tiny_hypercube_delays_by_hand(tmp_path):
    """Task 1 (5) → 2 with c = 7 and → 3 with c = 4 on the 2-cube: cores 0 and 3 differ in two
    bits, so task 3 on core 3 may start at 5 + 4·2 = 13, task 2 on core 1 at 5 + 7·1 = 12."""
    path = tmp_path / "tiny_x_4.td"
    path.write_text(TINY)
    inst = read_mspcd(path, procs=4)
    acc = inst.accelerator
    assert (acc.topology, acc.delay_model, inst.m) == ("hypercube", "per_hop", 4)
    assert acc.hops()[0].tolist() == [0, 1, 1, 2]
    assert inst.graph.bytes.tolist() == [7, 4] and inst.graph.ids == (1, 2, 3)
    assert inst.reference.optimum is None  # not an ogra file: no construction optimum
    core = np.array([0, 1, 3])
    ok = verify(inst, Schedule(np.array([0, 12, 13]), core))
    assert ok.ok and ok.makespan == 15 and ok.noc_cost == 1 + 2
    late = verify(inst, Schedule(np.array([0, 11, 13]), core))
    assert not late.ok and "by 12" in late.violations[0]
    assert not verify(inst, Schedule(np.array([0, 12, 12]), core)).ok
    assert verify(inst, Schedule(np.array([0, 5, 8]), np.zeros(3, np.int64))).ok  # one core


def test_delay_model_and_symmetries():
    cube = Accelerator.hypercube_nodes(3)
    assert cube.comm_delay(np.array([0, 1, 3]), np.array([9, 9, 9])).tolist() == [0, 9, 27]
    assert len(cube.symmetries()) == 2**3 * 6
    for perm in cube.symmetries():  # automorphisms keep every hop count
        assert (cube.hops()[np.ix_(perm, perm)] == cube.hops()).all()
    mesh = Accelerator.mesh_grid(2, 3, delay_model="per_hop")
    assert mesh.has_comm_delays and mesh.comm_delay(np.array([3]), np.array([5])).tolist() == [15]
    bw = Accelerator.mesh_grid(2, 2, hop_latency=2, link_bandwidth=4.0)
    assert bw.comm_delay(np.array([0, 2]), np.array([9, 9])).tolist() == [0, 2 * 2 + 3]
    with pytest.raises(ValueError, match="per_hop"):
        Accelerator.identical(4).__class__(Accelerator.identical(4).cores, delay_model="per_hop")
    with pytest.raises(ValueError, match="delay model"):
        Accelerator.mesh_grid(2, 2, delay_model="wormhole")


def test_json_round_trip(tmp_path):
    path = tmp_path / "tiny_x_8.td"
    path.write_text(TINY)
    inst = load_instance(path, 8)
    out = tmp_path / "tiny.json"
    write_instance(inst, out)
    back = read_instance(out)
    assert back.accelerator == inst.accelerator
    assert (back.accelerator.hops() == inst.accelerator.hops()).all()
    assert back.graph.bytes.tolist() == inst.graph.bytes.tolist()


@pytest.mark.parametrize(
    "text,reason",
    [
        ("3\n1 5 1 2 7\n2 3 0\n", "has 2 task lines"),
        ("2\n1 5 1 3 7\n2 3 0\n", "successor 3 of task 1 is not in 2..2"),
        ("2\n1 5 0\n2 3 1 1 4\n", "successor 1 of task 2"),
        ("2\n1 -5 0\n2 3 0\n", "has time -5, outside 0..2^40"),
        (f"2\n1 {2**41} 0\n2 3 0\n", "outside 0..2^40"),
        ("2\n1 5 0\n2 x 0\n", "'x' is not an integer"),
        ("2\n1 5 2 2 7\n2 3 0\n", "lists 1 successor pairs, not 2"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path, text, reason):
    path = tmp_path / "ogra2_10_4.td"
    path.write_text(text)
    out = tmp_path / "out.json"
    proc = run_cli("convert", "mspcd", path, "-o", out)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"npusched: error: {path}: line ")
    assert reason in proc.stderr
    assert not out.exists()


@needs_shared
def test_shared_graphs_list_and_joint(tmp_path):
    """The six shared graphs: network from p, optimum 600; list schedules verify; on one graph per
    network the joint model's schedule verifies and its bound never passes the optimum."""
    files = sorted((SHARED / "mspcd").glob("ogra50_*.td"))
    assert len(files) == 6
    for f in files:
        inst = read_mspcd(f)
        p = int(f.stem.split("_")[-1])
        assert inst.n == 50 and inst.m == p and inst.reference.optimum == 600
        assert inst.accelerator.topology == ("hypercube" if p == 4 else "mesh")
        for method in ("list", "etf"):
            res = solve(inst, method)
            rep = check(inst, res.solution)
            assert rep.ok and rep.makespan == res.objective >= 600
    for f in (files[0], files[1]):
        inst = read_mspcd(f)
        res = solve(inst, "joint", time_limit=5, threads=1)
        rep = check(inst, res.solution)
        assert rep.ok and rep.makespan >= 600
        assert res.bound is not None and res.bound <= 600


@needs_shared
def test_cli_convert_solve_verify(tmp_path):
    src = SHARED / "mspcd" / "ogra50_10_9.td"
    inst, sol = tmp_path / "i.json", tmp_path / "s.json"
    proc = run_cli("convert", "mspcd", src, "-o", inst)
    assert proc.returncode == 0 and "3x3 mesh" in proc.stdout and "optimum 600" in proc.stdout
    proc = run_cli("solve", inst, "--method", "list", "--out", sol)
    assert proc.returncode == 0 and "verify=ok" in proc.stdout
    assert run_cli("verify", inst, sol).returncode == 0


@needs_shared
def test_bench_table(capsys):
    """The bench verifies every schedule and prints one row per graph and the mean gaps."""
    from npusched.bench.mspcd import main

    assert main([str(SHARED / "mspcd" / "ogra50_90_4.td"), "--time-limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "| ogra50_90_4_p4 | 4 | hypercube | 600 |" in out
    assert "mean gap to the optimum, joint:" in out and "of 1 graphs" in out
