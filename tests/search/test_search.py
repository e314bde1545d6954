"""Klotski's partition search: the design space, eq. 3, the GP and the BO loop."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
import torch
from botorch.exceptions.warnings import OptimizationWarning
from gpytorch.kernels import MaternKernel, ScaleKernel

from npusched.arch import load_arch
from npusched.partition.api import partition_network, resolve_network
from npusched.search.bo import bayes_search, gp_model, sobol_starts
from npusched.search.evaluate import Evaluation, evaluate, two_stages
from npusched.search.objective import entropy_score, gp_target
from npusched.search.space import DesignSpace, divisors_and_powers, multiples
from npusched.verify import check


@pytest.fixture(scope="module")
def lenet_space():
    net, arch = resolve_network("lenet"), load_arch("klotski-3x3")
    return net, arch, DesignSpace.build(net, arch)


def test_entropy_by_hand():
    assert entropy_score(np.array([1, 1]), 1) == pytest.approx(math.log(2))
    h = -(2 * 0.25 * math.log(0.25) + 0.5 * math.log(0.5))
    assert entropy_score(np.array([2, 2, 4]), 4) == pytest.approx(h / (8 / 3 * 4))
    assert entropy_score(np.array([3, 3, 3]), 6) > entropy_score(np.array([1, 1, 7]), 6)


def test_axes():
    assert divisors_and_powers(28) == [1, 2, 4, 7, 8, 14, 16, 28]
    assert multiples(12, 100) == [12, 24, 48, 96, 192]


def test_space_is_remainder_free_and_feasible(lenet_space):
    net, arch, space = lenet_space
    unroll = arch.cores[0].pe_unroll
    hmax = max(net.shapes[ly.name][1] for ly in net.layers)
    for h, w, ic, oc in space.points:
        wmax = max(net.shapes[ly.name][2] for ly in net.layers)
        assert w in divisors_and_powers(wmax)
        assert ic % unroll["C"] == 0 and oc % unroll["K"] == 0
        assert h in divisors_and_powers(hmax)
    unit = space.unit()
    assert unit.dtype == np.float64 and unit.min() >= 0 and unit.max() == 1
    for s in space.points[:: max(1, len(space) // 5)]:
        partition_network(net, arch, "klotski", s=s)  # fits: raises otherwise


def test_infeasible_shapes_are_left_out():
    """With a small core memory, exactly the shapes partition_network refuses are gone."""
    net, arch = resolve_network("lenet"), load_arch("klotski-3x3")
    small = dataclasses.replace(
        arch,
        cores=tuple(dataclasses.replace(c, memory_bytes=20_000, buffers={}) for c in arch.cores),
    )
    full, tight = DesignSpace.build(net, arch), DesignSpace.build(net, small)
    assert 0 < len(tight) < len(full) and tight.infeasible > 0
    gone = sorted(set(full.points) - set(tight.points))
    with pytest.raises(ValueError, match="core memory"):
        partition_network(net, small, "klotski", s=gone[0])
    partition_network(net, small, "klotski", s=tight.points[-1])


def test_gp_is_ard_matern52_float64():
    x = torch.rand(8, 4, dtype=torch.float64)
    gp = gp_model(x, x.sum(dim=1, keepdim=True))
    kernel = gp.covar_module
    assert isinstance(kernel, ScaleKernel) and isinstance(kernel.base_kernel, MaternKernel)
    assert kernel.base_kernel.nu == 2.5 and kernel.base_kernel.ard_num_dims == 4
    assert kernel.base_kernel.lengthscale.shape[-1] == 4
    assert gp.train_inputs[0].dtype == torch.float64


def _away(space: DesignSpace, n_init: int, seed: int) -> int:
    """The first point from a third of the space on that neither is one of the search's Sobol
    starts nor has one as its transpose: a target the starts do not hit."""
    starts = set(sobol_starts(space, n_init, seed))
    starts |= set(space.twins(starts))
    return next(k for k in range(len(space) // 3, len(space)) if k not in starts)


def _fake(space: DesignSpace, bad: frozenset = frozenset(), at: int | None = None):
    """A cheap deterministic E with its maximum at one known point ``at`` (a third of the way
    by default; and its transpose, where the space is square); shapes in ``bad`` fail."""
    unit = space.features()
    target = np.asarray(unit[len(space) // 3 if at is None else at])

    def run(s):
        if s in bad:
            return Evaluation(s, "entropy", None, None, 1, 0.0, feasible=False, note="no")
        e = math.exp(-float(((unit[space.index(s)] - target) ** 2).sum()))
        return Evaluation(s, "entropy", e, 1, 1, 0.0)

    return run


def test_seed_repeats_the_run(lenet_space):
    _, _, space = lenet_space
    runs = [bayes_search(space, _fake(space), budget=12, seed=s, progress=False) for s in (3, 3, 4)]
    seq = [[e.s for e in r.evaluations] for r in runs]
    assert seq[0] == seq[1] and seq[0] != seq[2]
    assert len(set(seq[0])) == 12  # no point twice
    assert sobol_starts(space, 5, 3) == [space.index(s) for s in seq[0][:5]]
    assert runs[0].predicted[:5] == [None] * 5 and all(p is not None for p in runs[0].predicted[5:])


def test_bo_beats_its_initial_points(lenet_space):
    """On a smooth score the GP-UCB steps find better points than the Sobol starts."""
    _, _, space = lenet_space
    run = _fake(space, at=_away(space, 5, 0))
    res = bayes_search(space, run, budget=20, n_init=5, seed=0, progress=False)
    first = max(e.score for e in res.evaluations[:5])
    assert res.best.score > first


def test_real_evaluations_are_verified(lenet_space):
    net, arch, space = lenet_space
    res = bayes_search(space, lambda s: evaluate(net, arch, s), budget=3, n_init=2, seed=0,
                       progress=False)  # fmt: skip
    for e in res.evaluations:
        inst = partition_network(net, arch, "klotski", s=e.s)
        assert check(inst, e.schedule).ok and inst.n == e.uops
        assert e.makespan == e.schedule.makespan(inst)
        assert e.score == pytest.approx(entropy_score(inst.min_duration, e.makespan))
        assert e.target == pytest.approx(math.log(e.score))
    with pytest.raises(ValueError, match="budget"):
        bayes_search(space, lambda s: evaluate(net, arch, s), budget=0)


def test_uop_cap_leaves_out_large_partitions(lenet_space):
    net, arch, full = lenet_space
    capped = DesignSpace.build(net, arch, max_uops=40)
    assert capped.too_large > 0 and len(capped) + capped.too_large == len(full)
    assert max(capped.uops) <= 40 < max(full.uops)
    for s, n in list(zip(capped.points, capped.uops, strict=True))[::7]:
        assert partition_network(net, arch, "klotski", s=s).n == n
    with pytest.raises(ValueError, match="over the cap 40"):
        capped.locate(net, arch, full.points[int(np.argmax(full.uops))])


def test_locate_names_why_a_shape_is_outside(lenet_space):
    net, arch, space = lenet_space
    assert space.locate(net, arch, (64, 64, 12, 14)) == space.locate(net, arch, (28, 28, 12, 14))
    with pytest.raises(ValueError, match="remainder-free"):
        space.locate(net, arch, (4, 4, 13, 14))
    with pytest.raises(ValueError, match="not a point"):
        space.locate(net, arch, (3, 4, 12, 14))
    small = dataclasses.replace(
        arch,
        cores=tuple(dataclasses.replace(c, memory_bytes=20_000, buffers={}) for c in arch.cores),
    )
    with pytest.raises(ValueError, match="infeasible"):
        DesignSpace.build(net, small).locate(net, small, (28, 28, 12, 14))


def test_gp_target_is_the_log_of_the_score():
    assert gp_target("entropy", math.e**2, 5) == pytest.approx(2.0)
    assert gp_target("makespan", 0.3, math.e**3) == pytest.approx(-3.0)
    assert gp_target("entropy", 0.0, 5) < -600  # finite
    with pytest.raises(ValueError, match="objective"):
        evaluate(resolve_network("lenet"), load_arch("klotski-3x3"), (4, 4, 12, 14), "speed")


def test_infeasible_evaluations_are_skipped(lenet_space):
    """Shapes without a verified schedule are visited once, kept out of the GP, never best."""
    _, _, space = lenet_space
    bad = frozenset(space.points[k] for k in sobol_starts(space, 3, 2)[:2])
    res = bayes_search(space, _fake(space, bad), budget=9, n_init=3, seed=2, progress=False)
    assert {e.s for e in res.evaluations if not e.feasible} == bad
    assert res.best.feasible and len({e.s for e in res.evaluations}) == 9
    # one feasible start is too little for a GP: a seeded random point, then GP-UCB steps
    assert res.predicted[3] is None and all(p is not None for p in res.predicted[4:])


def test_two_stages_quantise_and_verify(lenet_space):
    net, arch, _ = lenet_space
    inst = partition_network(net, arch, "klotski", s=(4, 7, 12, 112))
    res, info = two_stages(inst, time_limit=3)
    assert info["quantum_cycles"] >= int(inst.min_duration[inst.min_duration > 0].min())
    assert check(inst, res.solution).ok and res.bound == inst.lower_bound()
    listed = evaluate(net, arch, (4, 7, 12, 112))
    assert res.objective == res.solution.makespan(inst) <= listed.makespan


def test_lower_bounds_lie_between_the_load_term_and_each_instances_bound(lenet_space):
    """The space's bounds are computed without building instances; each must be at least the
    load term of its point's instance and at most the instance's own bound (which adds the
    transfers), on the routed machine (analytic costs) and the compute-only one."""
    from npusched.partition.api import machine_cost_model

    net, arch, space = lenet_space
    for machine in ("routed", "compute-only"):
        model = machine_cost_model(machine, "analytic", arch)
        bounds = space.lower_bounds(net, arch, model)
        assert bounds.shape == (len(space),)
        for j in range(0, len(space), max(1, len(space) // 7)):
            inst = partition_network(net, arch, "klotski", s=space.points[j], machine=machine)
            d = inst.duration.min(axis=1)
            assert -(-int(d.sum()) // inst.m) <= bounds[j] <= inst.lower_bound()
            assert bounds[j] >= int((inst.graph.heads(d) + d).max())  # the critical path


def test_nearest_prefers_what_is_left(lenet_space):
    _, _, space = lenet_space
    near = space.nearest(0, 5)
    assert len(near) == 5 and 0 not in near
    d = np.abs(space.unit() - space.unit()[0]).sum(axis=1)
    assert max(d[near]) <= min(np.delete(d, [0, *near]))  # no farther point chosen over a nearer
    rest = space.nearest(0, 5, skip=set(near))
    assert not set(rest) & set(near) and min(d[rest]) >= max(d[near])


def test_steps_move_one_coordinate_to_its_next_value(lenet_space):
    """Each coordinate step changes one of h, w, ic, oc to the next value present on that line
    of the space (no point of the space lies between), at most one per axis and direction."""
    _, _, space = lenet_space
    pts = space.points
    for here in range(0, len(space), max(1, len(space) // 9)):
        s = pts[here]
        steps = space.steps(here)
        seen = set()
        for j in steps:
            diff = [a for a in range(4) if pts[j][a] != s[a]]
            assert len(diff) == 1
            a, up = diff[0], pts[j][diff[0]] > s[diff[0]]
            assert (a, up) not in seen
            seen.add((a, up))
            line = [p[a] for p in pts if all(p[b] == s[b] for b in range(4) if b != a)]
            lo, hi = sorted((s[a], pts[j][a]))
            assert not [v for v in line if lo < v < hi]
        assert not set(space.steps(here, skip=set(steps)))


def test_descend_polishes_without_repeating(lenet_space):
    """From a few evaluations far from the optimum the descent climbs: it never evaluates a
    point twice, spends at most its budget, and ends no worse than where it began."""
    from npusched.search.anneal import descend

    _, _, space = lenet_space
    run = _fake(space)
    res = bayes_search(space, run, budget=3, n_init=3, seed=1, progress=False)
    start = res.best.score
    descend(space, run, res, budget=15)
    shapes = [e.s for e in res.evaluations]
    assert len(shapes) == len(set(shapes)) <= 3 + 15
    assert res.best.score > start  # the fake score is smooth: a neighbour is better


@pytest.mark.parametrize("q", [2, 3])
def test_descend_in_batches_through_an_executor(lenet_space, q):
    """With ``q`` neighbours evaluated at a time through an executor, the descent still never
    repeats a point, keeps to its budget, and moves to the best of a batch that improves."""
    from concurrent.futures import ThreadPoolExecutor

    from npusched.search.anneal import descend

    _, _, space = lenet_space
    run = _fake(space)
    res = bayes_search(space, run, budget=3, n_init=3, seed=1, progress=False)
    start = res.best.score
    with ThreadPoolExecutor(2) as pool:
        descend(space, run, res, budget=13, q=q, executor=pool)
    shapes = [e.s for e in res.evaluations]
    assert len(shapes) == len(set(shapes)) <= 3 + 13
    assert res.best.score > start
    with pytest.raises(ValueError, match="q must be at least 1"):
        descend(space, run, res, budget=1, q=0)


def test_annealing_spends_its_budget(lenet_space):
    """Once a walk's nearest points are all evaluated it moves on to unevaluated ones, so the
    budget is spent (it stopped at 18 of 50 on ResNet-152 before)."""
    from npusched.search.anneal import anneal

    _, _, space = lenet_space
    unit, target = space.unit(), space.unit()[len(space) // 3]

    def bowl(s):  # a steep bowl: once at its bottom every move is refused
        gap = float(np.abs(unit[space.index(s)] - target).sum())
        return Evaluation(s, "makespan", None, int(1000 * (1 + 50 * gap)), 1, 0.0)

    res = anneal(space, bowl, budget=40, seed=0)
    assert len({e.s for e in res.evaluations}) == 40


def _fake_makespan(space: DesignSpace, floor: np.ndarray, at: int | None = None):
    """A makespan of each point: its bound ``floor`` times a smooth factor ≥ 1, least at one
    known point ``at`` (as :func:`_fake`)."""
    unit = space.features()
    target = unit[len(space) // 3 if at is None else at]

    def run(s):
        k = space.index(s)
        span = int(floor[k] * (1 + float(((unit[k] - target) ** 2).sum())))
        return Evaluation(s, "makespan", 1.0, span, 1, 0.0)

    return run


@pytest.mark.parametrize("q", [1, 2])
def test_bounds_never_propose_a_point_that_cannot_win(lenet_space, q):
    """Given each point's lower bound on the makespan, the search proposes no point whose
    bound is no shorter than the best makespan known when it was proposed, and never
    evaluates a point twice."""
    _, _, space = lenet_space
    floor = np.random.default_rng(0).integers(100, 1000, len(space))
    n_init = 4
    res = bayes_search(space, _fake_makespan(space, floor), budget=24, n_init=n_init, seed=0,
                       progress=False, q=q, bounds=floor)  # fmt: skip
    spans = [e.makespan for e in res.evaluations]
    assert len({e.s for e in res.evaluations}) == len(spans) > n_init
    for i in range(n_init, len(spans)):
        known = min(spans[: n_init + (i - n_init) // q * q])
        assert floor[space.index(res.evaluations[i].s)] < known
    assert res.bounds is floor


def test_bounds_end_a_search_with_nothing_left_to_win(lenet_space):
    """When every unevaluated point's bound is no shorter than the best makespan, the search
    stops early, ``exhausted``; bounds of the wrong length are refused."""
    _, _, space = lenet_space
    floor = np.full(len(space), 500)
    res = bayes_search(space, _fake_makespan(space, floor, _away(space, 3, 0)), budget=20,
                       n_init=3, seed=0, progress=False, bounds=floor)  # fmt: skip
    spans = [e.makespan for e in res.evaluations]
    assert res.exhausted and len(spans) < 20 and spans[-1] == 500 == min(spans)  # the bound met
    assert spans.index(500) == len(spans) - 1  # and the search ended at once
    free = bayes_search(space, _fake_makespan(space, floor), budget=6, n_init=3, seed=0,
                        progress=False)  # fmt: skip
    assert not free.exhausted and len(free.evaluations) == 6
    with pytest.raises(ValueError, match="bounds for a space of"):
        bayes_search(space, _fake_makespan(space, floor), budget=5, progress=False,
                     bounds=floor[:-1])  # fmt: skip


def test_polish_tries_the_transpose(lenet_space):
    """The transpose swaps h and w and nothing else; the polish's neighbourhood holds it after
    the coordinate steps."""
    from npusched.search.anneal import neighbourhood

    _, _, space = lenet_space
    turned = [(k, space.transpose(k)) for k in range(len(space))]
    turned = [(k, t) for k, t in turned if t is not None]
    assert turned
    for k, t in turned:
        (h, w, ic, oc), other = space.points[k], space.points[t]
        assert other == (w, h, ic, oc) and space.transpose(t) == k
        assert t in neighbourhood(space, k, len(space.steps(k)) + 1, done=())
    square = [k for k, p in enumerate(space.points) if p[0] == p[1]]
    assert all(space.transpose(k) is None for k in square)


def test_bounds_leaving_fewer_points_than_a_batch(lenet_space):
    """When the bounds leave fewer open points than ``q``, the batch shrinks to them; then the
    search ends exhausted."""
    _, _, space = lenet_space
    starts = sobol_starts(space, 3, 0)
    special = [k for k in range(len(space)) if k not in starts][:2]
    floor = np.full(len(space), 1000)
    floor[special] = 10

    def run(s):  # every makespan meets its bound
        return Evaluation(s, "makespan", 1.0, int(floor[space.index(s)]), 1, 0.0)

    with warnings.catch_warnings():  # BoTorch warns when asked for more than it can give
        warnings.simplefilter("error", OptimizationWarning)
        res = bayes_search(space, run, budget=20, n_init=3, seed=0, progress=False, q=3,
                           bounds=floor)  # fmt: skip
    assert [space.index(e.s) for e in res.evaluations[3:]] in (special, special[::-1])
    assert res.exhausted and res.best.makespan == 10


def test_a_square_space_is_searched_up_to_transposition(lenet_space):
    """LeNet turns into itself (square maps, square kernels), Inception v3 does not (1×7 and
    7×1 kernels). In LeNet's space a shape and its transpose are one input to the GP, and the
    search never evaluates both."""
    from npusched.search.space import transposable

    net, _, space = lenet_space
    assert transposable(net) and space.square
    assert not transposable(resolve_network("inceptionv3"))
    pairs = [(k, t) for k in range(len(space)) if (t := space.transpose(k)) is not None]
    assert pairs and space.twins([k for k, _ in pairs]) == [t for _, t in pairs]
    x, u = space.features(), space.unit()
    for k, t in pairs:
        assert (x[k] == x[t]).all() and (u[k] != u[t]).any()
    res = bayes_search(space, _fake(space), budget=30, n_init=5, seed=0, progress=False)
    seen = {space.index(e.s) for e in res.evaluations}
    assert len(seen) == 30 and not seen & set(space.twins(seen))
    flat = dataclasses.replace(space, square=False)
    assert flat.twins(seen) == [] and (flat.features() == u).all()
