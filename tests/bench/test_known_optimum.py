"""MSPCD graphs with a known optimum (``bench.generate.known_optimum``): the hidden schedule is
feasible and has no idle time, the optimum is the work per processor, density and n are kept."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import SHARED, needs_shared

from npusched.bench.generate import default_work_per_proc, known_optimum
from npusched.io import read_instance, write_instance
from npusched.io.mspcd import mspcd_accelerator, read_mspcd
from npusched.methods import solve
from npusched.verify import check

PROCS = (2, 4, 6, 8, 9, 12, 16)


def admissible_pairs(inst, sched) -> set[tuple[int, int]]:
    """Every pair ``i < j`` an edge ``i → j`` of amount ≥ 1 could join with the schedule still
    feasible: ``s_j − f_i ≥ 0`` on one processor, ``≥ hops`` on two (by brute force)."""
    start, core = sched.start, sched.core
    end = sched.end(inst)
    hops = inst.accelerator.hops()
    return {
        (i, j)
        for i, j in itertools.combinations(range(inst.n), 2)
        if start[j] - end[i] >= hops[core[i], core[j]]
    }


@pytest.mark.parametrize("procs", PROCS)
@pytest.mark.parametrize("density", [0, 10, 50, 100])
def test_hidden_schedule_is_feasible_without_idle_time(procs, density):
    inst, sched = known_optimum(50, density, procs, seed=procs * 7 + density)
    opt = default_work_per_proc(50)
    assert opt == 600 == inst.reference.optimum
    rep = check(inst, sched)
    assert rep.ok, rep.violations[:3]
    assert rep.makespan == opt == int(inst.graph.latency.sum()) // procs
    assert int(inst.graph.latency.sum()) == procs * opt
    busy = np.bincount(sched.core, weights=inst.graph.latency, minlength=procs)
    assert (busy == opt).all()  # every processor works from 0 to the optimum: no idle time
    assert inst.lower_bound() == opt  # work / p, and the critical path fits in the schedule
    assert inst.n == 50 and inst.m == procs
    assert inst.graph.ids == tuple(range(1, 51))
    assert (inst.graph.src < inst.graph.dst).all()  # numbered in a topological order
    assert (inst.graph.bytes >= 1).all()
    assert inst.graph.num_edges == round(density / 100 * inst.source["admissible_pairs"])


@pytest.mark.parametrize("procs", PROCS)
def test_edges_are_a_subset_of_the_brute_force_admissible_pairs(procs):
    inst, sched = known_optimum(max(procs, 30), 40, procs, seed=3)
    pairs = admissible_pairs(inst, sched)
    assert inst.source["admissible_pairs"] == len(pairs)
    edges = set(zip(inst.graph.src.tolist(), inst.graph.dst.tolist(), strict=True))
    assert len(edges) == inst.graph.num_edges and edges <= pairs
    # each amount is one the schedule honours: c · hops ≤ s_j − f_i
    hops = inst.accelerator.hops()[sched.core[inst.graph.src], sched.core[inst.graph.dst]]
    gap = sched.start[inst.graph.dst] - sched.end(inst)[inst.graph.src]
    assert (inst.graph.bytes * hops <= gap).all()


def test_hand_checked_two_processors():
    """n = 6 on 2 linked processors, 6 cycles each, equal durations: 3 tasks of 2 per
    processor at 0, 2, 4. Same-processor pairs: 3 per processor; cross pairs need a gap of one
    hop: only first → third (ends 2, starts 4), one per direction. 8 admissible pairs."""
    inst, sched = known_optimum(6, 100, 2, work_per_proc=6, spread=0.0, seed=1)
    assert inst.graph.latency.tolist() == [2] * 6
    assert sorted(sched.start.tolist()) == [0, 0, 2, 2, 4, 4]
    assert inst.source["admissible_pairs"] == 8 == inst.graph.num_edges
    assert inst.reference.optimum == inst.lower_bound() == 6
    cross = sched.core[inst.graph.src] != sched.core[inst.graph.dst]
    assert cross.sum() == 2
    assert (sched.start[inst.graph.src[cross]] == 0).all()
    assert (sched.start[inst.graph.dst[cross]] == 4).all()
    assert set(inst.graph.bytes[cross].tolist()) <= {1, 2}  # 2 cycles of gap, 1 hop
    half, _ = known_optimum(6, 50, 2, work_per_proc=6, spread=0.0, seed=1)
    assert half.graph.num_edges == 4
    none, s0 = known_optimum(6, 0, 2, work_per_proc=6, spread=0.0, seed=1)
    assert none.graph.num_edges == 0 and check(none, s0).makespan == 6


def test_hand_checked_hop_rule_on_the_3_cube():
    """n = 24 on the 3-cube, 3 tasks of 2 per processor: 3 same-processor pairs each (24), and
    first → third across processors (gap 2) only to the 6 nodes 1 or 2 hops away, not to the
    opposite corner 3 hops away (48): 72 admissible pairs."""
    inst, sched = known_optimum(24, 100, 8, work_per_proc=6, spread=0.0, seed=2)
    assert inst.source["admissible_pairs"] == 72 == inst.graph.num_edges
    hops = inst.accelerator.hops()[sched.core[inst.graph.src], sched.core[inst.graph.dst]]
    assert sorted(set(hops.tolist())) == [0, 1, 2]
    assert check(inst, sched).ok


def test_one_task_per_processor_has_no_edges():
    inst, sched = known_optimum(4, 100, 4, seed=0)
    assert inst.graph.num_edges == 0 and inst.source["admissible_pairs"] == 0
    assert inst.graph.latency.tolist() == [416] * 4 and check(inst, sched).makespan == 416


def test_repeatable_for_a_seed():
    a, sa = known_optimum(60, 30, 9, seed=5)
    b, sb = known_optimum(60, 30, 9, seed=5)
    c, _ = known_optimum(60, 30, 9, seed=6)
    for x, y in ((a.graph.latency, b.graph.latency), (a.graph.src, b.graph.src),
                 (a.graph.dst, b.graph.dst), (a.graph.bytes, b.graph.bytes),
                 (sa.start, sb.start), (sa.core, sb.core)):  # fmt: skip
        assert np.array_equal(x, y)
    assert not np.array_equal(a.graph.bytes, c.graph.bytes) or not np.array_equal(
        a.graph.latency, c.graph.latency
    )


def test_scale_of_the_benchmark():
    """The benchmark's optimum 400 + 4n (600 at n = 50, 2 400 at n = 500), and its density: on
    the shared files the edges / density are 87–88 % of all pairs for p = 4 and 69–70 % for
    p = 9, the share of admissible pairs this construction gives."""
    assert [default_work_per_proc(n) for n in (50, 100, 150, 500)] == [600, 800, 1000, 2400]
    for procs, share in ((4, 0.88), (9, 0.70)):
        got = [known_optimum(50, 50, procs, seed=s)[0].source["admissible_pairs"] for s in range(5)]
        assert abs(np.mean(got) / (50 * 49 / 2) - share) < 0.02
    inst, sched = known_optimum(500, 10, 16, seed=1)
    assert inst.reference.optimum == 2400 and check(inst, sched).makespan == 2400


@needs_shared
def test_density_reads_as_the_benchmark_files():
    """edges / (density · pairs) is one share per p over the three densities of the shared files
    (density applies to the admissible pairs), close to what the construction gives."""
    for procs, share in ((4, 0.88), (9, 0.70)):
        for density in (10, 50, 90):
            inst = read_mspcd(SHARED / "mspcd" / f"ogra50_{density}_{procs}.td")
            assert inst.reference.optimum == 600
            assert abs(inst.graph.num_edges / (density / 100 * 1225) - share) < 0.03


def test_written_and_read_back_then_solved(tmp_path):
    inst, _ = known_optimum(40, 30, 6, seed=4)
    path = tmp_path / "k.json"
    write_instance(inst, path)
    back = read_instance(path)
    assert back.reference.optimum == inst.reference.optimum == 560
    assert back.source["seed"] == 4 and back.source["procs"] == 6
    assert back.source["generator"] == "npusched.bench.generate.known_optimum"
    assert np.array_equal(back.graph.bytes, inst.graph.bytes)
    assert back.accelerator.mesh == mspcd_accelerator(6).mesh == (2, 3)
    assert back.accelerator.delay_model == "per_hop"
    res = solve(back, "list")
    rep = check(back, res.solution)
    assert rep.ok and rep.makespan >= 560


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 50, "density": 50, "procs": 5}, "no network of 5 processors"),
        ({"n": 3, "density": 50, "procs": 4}, "at least one task per processor"),
        ({"n": 50, "density": 100.5, "procs": 4}, "between 0 and 100"),
        ({"n": 50, "density": -1, "procs": 4}, "between 0 and 100"),
        ({"n": 50, "density": 50, "procs": 4, "work_per_proc": 12}, "at least"),
        ({"n": 50, "density": 50, "procs": 4, "work_per_proc": 2**41}, "2\\^40"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        known_optimum(**kwargs)
