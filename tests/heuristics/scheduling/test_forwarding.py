"""Forwarding of DRAM tensors between cores (``RoutedInstance.forward``): the memory-aware list
takes a core's copy from another core that holds it where that arrives sooner, verify checks
the forward against the records, the bounds stay valid, and the files keep it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import SHARED, needs_shared, run_cli
from test_memory_list import instance

from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.io import load_instance, write_instance
from npusched.methods import solve
from npusched.problem.scheduling.routed import FORWARD, MOVE_KINDS, Moves, Residency
from npusched.verify import check


def shared_weight(forward: bool):
    """A weight of 8 read by μop 0 on core 0 and μop 1 on core 1 (one cycle each); DRAM's one
    off-chip link carries 2 a cycle, the links between the cores 4."""
    inst = instance([1, 1], [], [0, 1], dram=[(8, [0, 1])], capacity=[100, 100])
    return replace(inst, forward=forward)


def test_a_copy_comes_from_the_core_that_holds_it_by_hand():
    """Without forwarding the two fetches share the off-chip link, [0, 4) and [4, 8): μop 1
    runs [8, 9). With it core 0's copy (there from 4) goes to core 1 over [4, 6), 8 / 4
    cycles, in place of the fetch from DRAM, and μop 1 runs [6, 7). Core 0 keeps its copy
    until it is sent (its record ends at 6, after μop 0 at 5)."""
    plain = memory_list_schedule(shared_weight(False))
    assert check(shared_weight(False), plain).ok and plain.makespan(shared_weight(False)) == 9
    inst = shared_weight(True)
    sched = memory_list_schedule(inst)
    assert check(inst, sched).ok and sched.makespan(inst) == 7
    mv = sched.moves
    assert [MOVE_KINDS[k] for k in mv.kind] == ["forward"]
    assert (mv.src_core[0], mv.dst_core[0], mv.tstart[0], mv.tend[0]) == (0, 1, 4, 6)
    assert sorted(sched.tstart.tolist()) == [-1, 0]  # core 1's fetch is replaced
    mem = sched.memory
    on0 = mem.core == 0
    assert mem.free[on0].tolist() == [6]
    assert inst.lower_bound() <= 7
    rep = check(shared_weight(False), sched)
    assert not rep.ok and any("does not allow" in v for v in rep.violations)


def _moved(sched, **fields):
    """``sched`` with its one move's fields replaced."""
    mv = sched.moves
    rows = {k: getattr(mv, k).copy() for k in ("kind", "tensor", "src_core", "dst_core",
                                               "tstart", "tend")}  # fmt: skip
    for k, v in fields.items():
        rows[k][0] = v
    return replace(sched, moves=Moves(**rows))


def test_verify_refuses_a_forward_that_breaks_a_rule():
    """A forward that starts before the source's copy has come, one shorter than its data
    takes on the route, one whose source copy is freed while it is sent, and a forward of
    an activation are all refused, each with its reason."""
    inst = shared_weight(True)
    sched = memory_list_schedule(inst)
    early = _moved(sched, tstart=2, tend=4)
    assert any("not resident and ready on core" in v for v in check(inst, early).violations)
    short = _moved(sched, tend=5)
    assert any("takes 1 cycles, less than 2" in v for v in check(inst, short).violations)
    mem = sched.memory
    free = mem.free.copy()
    free[mem.core == 0] = 5
    gone = replace(sched, memory=Residency(mem.core, mem.tensor, mem.bits, mem.alloc, free))
    assert any("while it is sent" in v for v in check(inst, gone).violations)
    rep = check(inst, _moved(sched, tensor=0))
    assert not rep.ok and any("forward" in v for v in rep.violations)


def test_joint_on_a_forwarding_instance_claims_no_bound_its_model_cannot_give():
    """``joint``'s model has no forwards, so its optimum (9: two fetches) is no bound here: the
    result keeps the forwarding list's 7 and reports the instance's own bound, never above
    the schedule it returns."""
    inst = replace(shared_weight(True), allowed=None)
    warm = solve(inst, "list").solution
    res = solve(inst, "joint", warm_start=warm, time_limit=10)
    assert check(inst, res.solution).ok and res.objective <= 7
    assert res.bound is not None and res.bound <= inst.lower_bound() <= res.objective
    assert all(p.bound is None or p.bound <= inst.lower_bound() for p in res.trace)


def test_forward_round_trips_through_the_files(tmp_path):
    """The instance keeps ``forward``; the solution writes the move as a transfer of kind
    forward from core to core, and ``verify`` reads it back and accepts it; a file that drops
    it is refused (core 1's copy then comes by no transfer)."""
    inst = shared_weight(True)
    path, sol = tmp_path / "inst.json", tmp_path / "sol.json"
    write_instance(inst, path)
    assert load_instance(path).forward and json.loads(path.read_text())["forward"] is True
    r = run_cli("solve", path, "--method", "list", "--out", sol)
    assert r.returncode == 0, r.stderr
    assert "1 DRAM tensors forwarded between cores" in r.stdout
    data = json.loads(sol.read_text())
    fw = [t for t in data["transfers"] if t.get("kind") == "forward"]
    assert len(fw) == 1 and (fw[0]["src_core"], fw[0]["dst_core"]) == (0, 1)
    assert run_cli("verify", path, sol).returncode == 0
    k = data["transfers"].index(fw[0])
    bad = json.loads(json.dumps(data))
    bad["transfers"][k]["src_core"] = 9  # the DRAM core: a forward goes from a core
    sol.write_text(json.dumps(bad))
    r = run_cli("verify", path, sol)
    assert r.returncode == 2 and f"transfers/{k}" in r.stderr
    assert "a forward from a core" in r.stderr and "Traceback" not in r.stderr
    data["transfers"] = [t for t in data["transfers"] if t.get("kind") != "forward"]
    sol.write_text(json.dumps(data))
    r = run_cli("verify", path, sol)
    assert r.returncode == 1 and "needed but not scheduled" in r.stdout + r.stderr


@needs_shared
@pytest.mark.parametrize("workload", ["attention_head", "swiglu_64_128_256"])
def test_stream_accelerators_forward(workload):
    """Stream's accelerators let cores forward (Stream sends a tensor from the cores that hold
    it). On ``simba``, whose off-chip port is a quarter of a NoC link, the list's schedule
    verifies, forwards, and is shorter than the same list without forwarding."""
    from npusched.arch import load_arch
    from npusched.partition.api import partition_network, resolve_network

    oss = SHARED / "stream-oss"
    inst = partition_network(resolve_network(str(oss / "workload" / f"{workload}.onnx")),
                             load_arch(oss / "hardware" / "simba.yaml"), "stream",
                             precision="workload")  # fmt: skip
    assert inst.forward
    res = solve(inst, "list", threads=2)
    assert check(inst, res.solution).ok and res.bound <= res.objective
    assert (res.solution.moves.kind == FORWARD).any()
    plain = replace(inst, forward=False)
    alone = solve(plain, "list", threads=2)
    assert check(plain, alone.solution).ok and res.objective < alone.objective


def test_a_fetch_booked_before_an_earlier_copy_becomes_a_forward_by_hand():
    """Placed in the order P, Q, R, T, S (a given priority): R on core 1 reads weight W (8), but
    core 1's memory (8) holds P's output until Q ends at 20, so W comes over the off-chip link
    at [20, 24). S on core 0, placed later, gets W over the idle link at [0, 4). Core 1's
    fetch then starts after core 0's copy is there: it becomes a forward from core 0, [20, 22)
    at 4 a cycle, and the off-chip link carries W once (``Lifetimes.share``)."""
    import numpy as np

    inst = replace(instance([10, 10, 1, 1, 1], [(0, 1, 8), (3, 4, 1)], [1, 1, 1, 0, 0],
                            dram=[(8, [2, 4])], capacity=[100, 8]), forward=True)  # fmt: skip
    sched = memory_list_schedule(inst, np.arange(5))
    assert check(inst, sched).ok
    assert sched.start.tolist() == [0, 10, 24, 0, 4]
    mv = sched.moves
    assert [(MOVE_KINDS[k], s, d, a, b) for k, s, d, a, b in zip(
        mv.kind, mv.src_core, mv.dst_core, mv.tstart, mv.tend, strict=True)] == [
        ("forward", 0, 1, 20, 22)]  # fmt: skip
    from npusched.problem.scheduling.routed import required_transfers

    tr = required_transfers(inst, sched.core)
    offchip = [(int(a), int(b)) for t, (a, b) in enumerate(zip(sched.tstart, sched.tend,
               strict=True)) if b >= 0 and 2 in tr.route[t]]  # fmt: skip
    assert offchip == [(0, 4)]  # W over the off-chip link once
