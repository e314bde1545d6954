"""Dynamic level scheduling (Sih and Lee 1993): a hand-checked choice, the heaps equal the plain
scan of every (ready μop, core) pair, verified schedules on random instances with delays and on
graphs with a known optimum, the restarts, and the ``dls`` method in ``solve`` and the CLI."""

import json

import numpy as np
import pytest
from conftest import SHARED, delay_instances, needs_shared, random_instances, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched import Accelerator, SchedulingInstance, UopGraph, solve, verify
from npusched.bench.generate import known_optimum
from npusched.heuristics.scheduling.dls import (
    RESTART_LIMIT,
    RESTARTS,
    dls_schedule,
    restarts_for,
    static_level,
)
from npusched.heuristics.scheduling.list_scheduling import etf_schedule
from npusched.methods import METHODS


def two_cores(latency, edges, amounts) -> SchedulingInstance:
    """Tasks on MSPCD's two linked processors (the 1-cube): delay = amount × 1 hop."""
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    graph = UopGraph(np.array(latency), src, dst, np.array(amounts, dtype=np.int64))
    return SchedulingInstance(graph, Accelerator.hypercube_nodes(1, delay_model="per_hop"))


def test_the_dynamic_level_prefers_a_later_start_of_a_higher_level():
    """Latencies 7, 6, 7, 3; edges 0 → 2 (amount 1) and 1 → 2 (amount 8); μop 3 alone.
    Static levels: SL = 14, 13, 7, 3.

    1. All cores free: DL(0, k) = 14 is largest; core 0 by index: μop 0 on core 0 [0, 7).
    2. TF = (7, 0): DL(1, 1) = 13 − 0 = 13 beats DL(1, 0) = 6 and DL(3, ·) ≤ 3: μop 1 on core 1
       [0, 6).
    3. TF = (7, 6). μop 2's data arrives on core 0 at max(7, 6 + 8) = 14, on core 1 at
       max(7 + 1, 6) = 8: DL(2, 0) = 7 − 14 = −7, DL(2, 1) = 7 − 8 = −1; DL(3, 0) = 3 − 7 = −4,
       DL(3, 1) = 3 − 6 = −3. μop 2 goes to core 1 at 8 although μop 3 could start there at 6.
    4. μop 3: DL(3, 0) = 3 − 7 = −4 > DL(3, 1) = 3 − 15: core 0 at 7 [7, 10). Makespan 15.

    Earliest-task-first takes μop 3 at 6 on core 1 in step 3 instead; μop 2 then starts at 9:
    makespan 16.
    """
    inst = two_cores([7, 6, 7, 3], [(0, 2), (1, 2)], [1, 8])
    assert static_level(inst).tolist() == [14, 13, 7, 3]
    for insertion in (False, True):
        sched = dls_schedule(inst, insertion=insertion, restarts=0)
        assert sched.start.tolist() == [0, 0, 8, 7]
        assert sched.core.tolist() == [0, 1, 1, 0]
        assert verify(inst, sched).ok and sched.makespan(inst) == 15
    etf = etf_schedule(inst)
    assert etf.start[3] == 6 and etf.core[3] == 1 and etf.makespan(inst) == 16


def test_insertion_fills_an_idle_gap():
    """Latencies 1, 7, 2, 5; edges 0 → 1 (amount 9), 0 → 3 (amount 1). SL = 8, 7, 2, 5.

    1. μop 0 on core 0 [0, 1).
    2. TF = (1, 0): DL(1, 0) = 7 − 1 = 6 (on core 1 its data arrives at 1 + 9) beats
       DL(3, 0) = 4, DL(3, 1) = 5 − 2 = 3, DL(2, 1) = 2: μop 1 on core 0 [1, 8).
    3. TF = (8, 0): DL(3, 1) = 5 − 2 = 3 beats DL(2, 1) = 2: μop 3 on core 1 [2, 7), which
       leaves core 1 idle in [0, 2).
    4. μop 2: DL(2, 1) = 2 − 7 = −5 beats DL(2, 0) = −6: core 1. Appended it starts at 7
       (makespan 9); with insertion it fills the gap [0, 2) (makespan 8).
    """
    inst = two_cores([1, 7, 2, 5], [(0, 1), (0, 3)], [9, 1])
    append = dls_schedule(inst, insertion=False, restarts=0)
    insert = dls_schedule(inst, insertion=True, restarts=0)
    assert append.start.tolist() == [0, 1, 7, 2] and append.makespan(inst) == 9
    assert insert.start.tolist() == [0, 1, 0, 2] and insert.makespan(inst) == 8
    assert append.core.tolist() == insert.core.tolist() == [0, 0, 1, 1]
    assert verify(inst, append).ok and verify(inst, insert).ok


def brute_dls(inst: SchedulingInstance) -> tuple[list[int], list[int]]:
    """The paper's rule by scanning every (ready μop, core) pair at every step, appending only;
    ties: higher static level, lower core, lower μop."""
    g, n, m, acc = inst.graph, inst.n, inst.m, inst.accelerator
    dur = inst.duration
    hops = acc.hops() if acc.has_comm_delays else np.zeros((m, m), dtype=np.int64)
    sl = static_level(inst)
    delta = np.median(dur, axis=1)[:, None] - dur
    core, start, end, tf = [-1] * n, [0] * n, [0] * n, [0] * m
    for _ in range(n):
        best = None
        for i in range(n):
            if core[i] >= 0 or any(core[int(u)] < 0 for u in g.preds(i)):
                continue
            for k in range(m):
                da = 0
                for e in np.flatnonzero(g.dst == i):
                    u = int(g.src[e])
                    d = int(acc.comm_delay(np.array(hops[core[u], k]), np.array(g.bytes[e])))
                    da = max(da, end[u] + d)
                s = max(da, tf[k])
                key = (-(sl[i] - s + delta[i, k]), -sl[i], k, i)
                if best is None or key < best[0]:
                    best = (key, i, k, s)
        assert best is not None
        _, i, k, s = best
        core[i], start[i], end[i] = k, s, s + int(dur[i, k])
        if dur[i, k]:
            tf[k] = max(tf[k], end[i])
    return start, core


@settings(max_examples=60, deadline=None)
@given(inst=delay_instances(max_layers=5, max_width=4))
def test_the_heaps_choose_what_the_full_scan_chooses(inst):
    sched = dls_schedule(inst, insertion=False, restarts=0)
    start, core = brute_dls(inst)
    assert sched.start.tolist() == start and sched.core.tolist() == core


@settings(max_examples=80, deadline=None)
@given(
    inst=delay_instances(max_layers=10, max_width=8),
    insertion=st.booleans(),
    restarts=st.sampled_from([0, 2]),
)
def test_schedules_with_delays_are_feasible(inst, insertion, restarts):
    sched = dls_schedule(inst, insertion=insertion, restarts=restarts, seed=1)
    rep = verify(inst, sched)
    assert rep.ok, rep.violations[:3]
    assert sched.makespan(inst) >= inst.lower_bound()


@settings(max_examples=40, deadline=None)
@given(inst=random_instances(per_core=True))
def test_schedules_without_delays_and_with_per_core_latencies_are_feasible(inst):
    assert verify(inst, dls_schedule(inst)).ok


@settings(max_examples=30, deadline=None)
@given(inst=delay_instances(max_layers=8, max_width=6), seed=st.integers(0, 5))
def test_restarts_never_lose_and_repeat_for_a_seed(inst, seed):
    one = dls_schedule(inst, restarts=0)
    more = dls_schedule(inst, restarts=3, seed=seed)
    again = dls_schedule(inst, restarts=3, seed=seed)
    assert more.makespan(inst) <= one.makespan(inst)
    assert (more.start == again.start).all() and (more.core == again.core).all()


def test_restarts_by_default_up_to_the_limit():
    assert restarts_for(RESTART_LIMIT, None) == RESTARTS
    assert restarts_for(RESTART_LIMIT + 1, None) == 0
    assert restarts_for(RESTART_LIMIT + 1, 3) == 3


def test_bad_arguments_are_refused():
    inst = two_cores([1, 2], [(0, 1)], [3])
    with pytest.raises(ValueError, match="restarts"):
        dls_schedule(inst, restarts=-1)
    with pytest.raises(ValueError, match="sigma"):
        dls_schedule(inst, sigma=float("nan"))
    with pytest.raises(ValueError, match="levels"):
        dls_schedule(inst, levels=np.array([1.0]))
    with pytest.raises(ValueError, match="restarts"):
        solve(inst, "dls", restarts=-2)
    with pytest.raises(ValueError, match="sigma"):
        solve(inst, "dls", sigma=2.0)


def test_registered_as_dls_in_solve():
    inst, _ = known_optimum(50, 50, 4, seed=2)
    assert "dls" in METHODS and METHODS["dls"].supports(inst)
    res = solve(inst, "dls", seed=4)
    assert res.method == "dls" and res.solution is not None
    assert verify(inst, res.solution).ok
    assert res.objective == res.solution.makespan(inst) >= inst.reference.optimum
    assert res.bound == inst.lower_bound() == inst.reference.optimum
    assert res.stats == {"insertion": True, "restarts": RESTARTS, "sigma": 0.05}
    one = solve(inst, "dls", restarts=0, insertion=False)
    assert one.stats["restarts"] == 0 and one.objective >= res.objective


def test_cli_solves_with_dls(tmp_path):
    from npusched.io.instance_json import write_instance

    inst = two_cores([7, 6, 7, 3], [(0, 2), (1, 2)], [1, 8])
    path = tmp_path / "i.json"
    write_instance(inst, path)
    proc = run_cli("solve", path, "--method", "dls")
    assert proc.returncode == 0, proc.stderr
    assert "makespan=15" in proc.stdout and "verify=ok" in proc.stdout


@needs_shared
def test_cli_solves_an_mspcd_file_and_a_generated_graph_with_dls(tmp_path):
    """``solve --method dls --out`` on a Davidović–Crainic file and on a graph of ``generate
    known-optimum``; the ``verify`` verb accepts both schedules, none below the optimum."""
    mspcd = SHARED / "mspcd" / "ogra50_10_4.td"
    known = tmp_path / "known.json"
    gen = ("generate", "known-optimum", "--n", 60, "--density", 50, "--procs", 9, "-o", known)
    assert run_cli(*gen).returncode == 0
    for inst, optimum in ((mspcd, 600), (known, 640)):
        out = tmp_path / f"{inst.stem}.sol.json"
        proc = run_cli("solve", inst, "--method", "dls", "--seed", 1, "--out", out)
        assert proc.returncode == 0, proc.stderr
        assert "dls/none: feasible" in proc.stdout and "verify=ok" in proc.stdout
        sol = json.loads(out.read_text())
        assert sol["method"] == "dls" and sol["makespan"] >= optimum
        check = run_cli("verify", inst, out)
        assert check.returncode == 0 and "feasible" in check.stdout, check.stderr


@pytest.mark.parametrize(("p", "density"), [(2, 90), (4, 50), (9, 10), (16, 50)])
def test_generated_graphs_are_scheduled_feasibly_and_not_below_their_optimum(p, density):
    inst, opt = known_optimum(60, density, p, seed=p)
    assert verify(inst, opt).ok
    for restarts in (0, 1):
        sched = dls_schedule(inst, restarts=restarts, seed=p)
        rep = verify(inst, sched)
        assert rep.ok, rep.violations[:3]
        assert rep.makespan >= inst.reference.optimum == 400 + 4 * 60
