"""``reassign``: the decoder orders a fixed assignment by earliest start; the annealing over
assignments returns verified schedules never longer than its start, stops at the bound, and is
repeatable; the method in ``solve``."""

import numpy as np
import pytest
from conftest import delay_instances
from hypothesis import given, settings

from npusched import solve, verify
from npusched.bench.generate import known_optimum
from npusched.heuristics.scheduling.reassign import Decoder, reassign_schedule
from npusched.problem.scheduling.schedule import Schedule


@settings(max_examples=40, deadline=None)
@given(delay_instances())
def test_decoded_schedules_verify(inst):
    """Any assignment decodes to a schedule that keeps every delay and never overlaps a core."""
    rng = np.random.default_rng(inst.n)
    core = rng.integers(0, inst.m, size=inst.n)
    start, end, last = Decoder(inst).decode(core.tolist())
    sched = Schedule(np.array(start), core)
    assert verify(inst, sched).ok
    assert inst.n == 0 or max(end) == sched.makespan(inst)
    for i, p in enumerate(last):  # the recorded last producer is a producer on another core
        if p >= 0:
            assert core[p] != core[i] and p in inst.graph.src[inst.graph.dst == i]


@pytest.mark.parametrize("procs", [4, 9, 16])
def test_the_hidden_assignment_decodes_to_the_optimum(procs):
    """On a dense graph built around a zero-idle schedule, the decoder given that schedule's
    cores finds a schedule of the optimal length: the order is not what the lists miss."""
    inst, hidden = known_optimum(50, 50, procs, seed=1)
    _, end, _ = Decoder(inst).decode(hidden.core.tolist())
    assert max(end) == inst.reference.optimum


@settings(max_examples=25, deadline=None)
@given(delay_instances())
def test_annealing_is_verified_and_never_longer_than_its_start(inst):
    start = solve(inst, "list", time_limit=None).solution
    sched, moves = reassign_schedule(inst, start, time_limit=None, max_moves=200, seed=3)
    assert verify(inst, sched).ok
    assert sched.makespan(inst) <= start.makespan(inst)
    assert moves <= 200
    again, _ = reassign_schedule(inst, start, time_limit=None, max_moves=200, seed=3)
    assert np.array_equal(again.start, sched.start) and np.array_equal(again.core, sched.core)


def test_it_improves_and_stops_at_the_bound():
    inst, hidden = known_optimum(50, 50, 9, seed=2)
    warm = solve(inst, "dls", time_limit=None).solution
    sched, _ = reassign_schedule(inst, warm, time_limit=None, max_moves=3000, seed=0)
    assert verify(inst, sched).ok and sched.makespan(inst) < warm.makespan(inst)
    at_bound, moves = reassign_schedule(inst, hidden, time_limit=None, max_moves=50)
    assert moves == 0 and at_bound.makespan(inst) == inst.reference.optimum


def test_the_method_and_its_errors():
    inst, hidden = known_optimum(50, 80, 4, seed=0)
    res = solve(inst, "reassign", time_limit=1.0, seed=0)
    assert res.solution is not None and verify(inst, res.solution).ok
    assert res.objective <= res.stats["warm_makespan"] and res.stats["moves"] > 0
    res = solve(inst, "reassign", time_limit=5.0, warm_start=Schedule(hidden.start, hidden.core))
    assert res.status.value == "optimal" and res.stats["moves"] == 0
    with pytest.raises(ValueError, match="one core index"):
        reassign_schedule(inst, Schedule(np.zeros(3), np.zeros(3)), max_moves=1)
    with pytest.raises(ValueError, match="time limit or a number of moves"):
        reassign_schedule(inst, solve(inst, "list").solution, time_limit=None)
    with pytest.raises(ValueError, match="max_moves"):
        solve(inst, "reassign", max_moves=-1)
