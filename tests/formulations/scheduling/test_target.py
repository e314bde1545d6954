"""The decision model "makespan ≤ T" (``target``): its families admit every schedule within the
target (up to the network's symmetries), its verdicts agree with the joint model's optimum, and
it finds the known optimum of generated graphs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import random_instances
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched import Accelerator, SchedulingInstance, Status, UopGraph, solve
from npusched.bench.generate import known_optimum
from npusched.formulations.scheduling.target import TargetModel
from npusched.io.mspcd import mspcd_accelerator
from npusched.problem.scheduling.noc import stabilizer_chain
from npusched.problem.scheduling.schedule import Schedule
from npusched.solvers.cpsat import run_cpsat
from npusched.verify import check


def _allowed(chain, vector) -> bool:
    """Whether cores ``vector`` (of objects 1, 2, …) break none of the chain's exclusions."""
    return not any(
        len(prefix) < len(vector)
        and tuple(vector[: len(prefix)]) == prefix
        and vector[len(prefix)] in excluded
        for prefix, excluded in chain
    )


@pytest.mark.parametrize("procs", [2, 4, 6, 8, 9])
def test_the_stabilizer_chain_keeps_an_image_of_every_assignment(procs):
    """Every assignment of three objects to cores has an image under the network's symmetries
    that the chain allows (soundness), and the chain excludes some assignments (it breaks)."""
    group = mspcd_accelerator(procs).symmetries()
    chain = stabilizer_chain(group, 3)
    kept = 0
    for vector in itertools.product(range(procs), repeat=3):
        assert any(_allowed(chain, [int(g[c]) for c in vector]) for g in group), vector
        kept += _allowed(chain, list(vector))
    assert kept < procs**3 or len(group) == 1
    assert stabilizer_chain([np.arange(procs)], 3) == []  # the identity alone: nothing to break


def test_descendants_are_the_transitive_closure():
    g = UopGraph(np.ones(6), np.array([0, 1, 2, 0, 4]), np.array([1, 2, 3, 3, 5]), np.zeros(5))
    below = g.descendants()
    assert [sorted(j for j in range(6) if b >> j & 1) for b in below] == [
        [1, 2, 3], [2, 3], [3], [], [5], []
    ]  # fmt: skip


def _fixed_to(model: TargetModel, sched: Schedule) -> Status:
    """CP-SAT's verdict on ``model`` with every start and core fixed to ``sched``'s."""
    md = model.model.clone()
    for i, (s, k) in enumerate(zip(sched.start.tolist(), sched.core.tolist(), strict=True)):
        md.add(model.start[i] == s)
        md.add(model.y[i][k] == 1)
    status, _, _ = run_cpsat(md, time_limit=20, threads=1, seed=0)
    return status


@pytest.mark.parametrize(("n", "density", "procs"), [(14, 30, 4), (20, 80, 6), (24, 50, 16),
                                                      (12, 20, 2), (18, 60, 9)])  # fmt: skip
def test_the_model_admits_an_image_of_the_hidden_schedule(n, density, procs):
    """A graph built around a schedule without idle time: that schedule, moved by some symmetry
    of the network, satisfies every family at its makespan (windows, left-out transfers, hop
    balls, the chains, the symmetry breaking), so nothing the model adds cuts a schedule off."""
    inst, hidden = known_optimum(n, density, procs, seed=n)
    model = TargetModel(inst, hidden.makespan(inst))
    assert model.zero_idle
    images = [Schedule(hidden.start, g[hidden.core]) for g in inst.accelerator.symmetries()]
    assert any(_fixed_to(model, s) is Status.OPTIMAL for s in images)


def with_mesh(inst: SchedulingInstance, latency: int, nbytes: int) -> SchedulingInstance:
    g = inst.graph
    graph = UopGraph(g.latency, g.src, g.dst, np.full(g.num_edges, nbytes), g.ids)
    return SchedulingInstance(graph, Accelerator.mesh_grid(2, 2, latency, 4.0))


@settings(max_examples=15, deadline=None)
@given(inst=random_instances(max_n=6, max_m=1), latency=st.integers(0, 3),
       nbytes=st.integers(0, 16))  # fmt: skip
def test_the_verdicts_agree_with_the_joint_optimum(inst, latency, nbytes):
    """On a 2×2 mesh with delays: at the joint model's proven optimum ``T*`` the decision model
    finds a schedule of makespan ≤ ``T*`` (verified), and at ``T* − 1`` it proves there is none
    (its bound ``T*``)."""
    inst = with_mesh(inst, latency, nbytes)
    opt = solve(inst, "joint", time_limit=30, threads=1)
    assert opt.status is Status.OPTIMAL
    best = int(opt.objective)
    found = solve(inst, "target", target=best, time_limit=30, threads=1)
    assert check(inst, found.solution).ok and found.objective <= best
    if best - 1 >= inst.lower_bound():
        none = solve(inst, "target", target=best - 1, time_limit=30, threads=1)
        assert none.bound == best and none.stats["found"] is False
        assert (none.status is Status.OPTIMAL) == (none.objective == best)  # the warm start


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), procs=st.sampled_from([2, 4]), n=st.integers(4, 7))
def test_zero_idle_verdicts_agree_with_the_joint_optimum(seed, procs, n):
    """Where the bound leaves no idle time (the chains are in the model), the decision model at
    the bound finds a schedule exactly when the joint model's optimum is the bound. The graphs:
    a known-optimum graph with its durations shuffled, so the bound is not always reached."""
    inst, _ = known_optimum(n, 70, procs, work_per_proc=12, seed=seed)
    rng = np.random.default_rng(seed)
    g = inst.graph
    shuffled = UopGraph(rng.permutation(g.latency), g.src, g.dst, g.bytes, g.ids)
    inst = SchedulingInstance(shuffled, inst.accelerator)
    lb = inst.lower_bound()
    if inst.m * lb != int(inst.min_duration.sum()):
        return
    opt = solve(inst, "joint", time_limit=30, threads=1)
    assert opt.status is Status.OPTIMAL
    res = solve(inst, "target", time_limit=30, threads=1)
    assert check(inst, res.solution).ok
    assert (res.objective == lb) == (opt.objective == lb)  # found, or the warm start was
    assert res.bound == (lb if opt.objective == lb else lb + 1)  # or none exists, proved


@pytest.mark.parametrize(("density", "procs"), [(20, 4), (20, 8), (50, 16), (80, 9), (20, 12)])
def test_target_reaches_the_known_optimum(density, procs):
    """Generated graphs with a known optimum (n = 50; sparse ones with 4–12 processors are the
    ones the depth-first search and the joint model from a warm start missed): found, reported
    optimal, verified."""
    inst, _ = known_optimum(50, density, procs, seed=7)
    res = solve(inst, "target", time_limit=40, threads=2, seed=0)
    assert check(inst, res.solution).ok
    assert res.status is Status.OPTIMAL and res.objective == inst.reference.optimum == res.bound


def test_target_checks_its_options_and_applies_to_delays_only():
    from conftest import make_instance

    with pytest.raises(ValueError, match="does not apply"):
        solve(make_instance([1, 2], [(0, 1)], 2), "target")
    inst, _ = known_optimum(12, 50, 4)
    with pytest.raises(ValueError, match="target must be"):
        solve(inst, "target", target=-1)


def test_above_its_size_target_does_not_apply_and_lns_goes_on_without_it(monkeypatch, capsys):
    """The model is quadratic in μops: above ``MAX_UOPS`` the method refuses with its reason, the
    model will not be built, and ``lns`` on a zero-idle instance skips the step."""
    import npusched.formulations.scheduling.target as formulation
    import npusched.methods.target as method

    inst, _ = known_optimum(12, 50, 4, seed=1)
    monkeypatch.setattr(method, "MAX_UOPS", 11)
    monkeypatch.setattr(formulation, "MAX_UOPS", 11)
    with pytest.raises(ValueError, match="at most 11 μops"):
        solve(inst, "target")
    with pytest.raises(ValueError, match="at most 11"):
        TargetModel(inst, inst.lower_bound())
    res = solve(inst, "lns", time_limit=3, threads=1, seed=0, fill=0.0, progress=True)
    assert check(inst, res.solution).ok
    steps = capsys.readouterr().err
    assert "lns: list" in steps and "lns: target" not in steps
