"""Solvers run in a forked process stopped at the time limit (issue 17: limits hold)."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from npusched.solvers import dispatch
from npusched.solvers.common import run_within
from npusched.solvers.linear import LinearModel
from npusched.solvers.result import Status


def test_a_child_past_its_limit_is_stopped():
    t0 = time.perf_counter()
    assert run_within(lambda: time.sleep(30), 0.5) == ("time", None)
    assert time.perf_counter() - t0 < 5


def test_a_child_in_time_returns_its_value_or_raises():
    assert run_within(lambda: sum(range(10)), 5) == ("done", 45)
    with pytest.raises(ZeroDivisionError):
        run_within(lambda: 1 / 0, 5)


def test_a_child_out_of_memory_is_reported_as_died():
    import os
    import resource

    def hog():
        resource.setrlimit(resource.RLIMIT_AS, (2**30, resource.getrlimit(resource.RLIMIT_AS)[1]))
        return bytearray(2**31)  # 2 GiB under a 1 GiB address-space limit

    assert run_within(hog, 20) == ("died", None)
    assert os.getpid()  # this process is untouched


WEIGHTS, VALUES = [3, 4, 5, 6, 7, 8], [4, 5, 6, 8, 9, 10]


def _knapsack() -> LinearModel:
    lm = LinearModel("knapsack")
    xs = [lm.add_var(f"x{i}", 0, 1) for i in range(6)]
    lm.add_row(xs, WEIGHTS, ub=15)
    lm.cost = {x: -v for x, v in zip(xs, VALUES, strict=True)}
    return lm


@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_large_models_solve_in_a_child_with_the_same_answer(backend, monkeypatch):
    kw = dict(time_limit=20.0, threads=1, seed=0)
    here = dispatch.solve_linear(_knapsack(), backend, **kw)
    monkeypatch.setattr(dispatch, "CHILD_ABOVE", 1)  # every model is "large"
    there = dispatch.solve_linear(_knapsack(), backend, **kw)
    assert here.status == there.status == Status.OPTIMAL
    best = min(
        -sum(v for v, t in zip(VALUES, take, strict=True) if t)
        for take in itertools.product([0, 1], repeat=6)
        if sum(w for w, t in zip(WEIGHTS, take, strict=True) if t) <= 15
    )
    assert here.objective == there.objective == best
    assert list(here.x) == list(there.x)


def test_a_claimed_solution_that_breaks_the_model_is_not_passed_on(monkeypatch):
    """CBC stopped in its root LP was reported optimal through PuLP with fractional values
    (QAP nug30, 3 s): such an answer must not come back as a solution."""
    from npusched.solvers.common import RawOutput

    lp_values = np.array([1, 1, 1, 0.5, 0, 0.0])  # weight 3+4+5+3 = 15 ≤ 15, but x3 = 0.5
    monkeypatch.setattr(dispatch, "_run", lambda *a: RawOutput(Status.OPTIMAL, lp_values, -18.0))
    raw = dispatch.solve_linear(_knapsack(), "cbc", time_limit=5.0, threads=1, seed=0)
    assert raw.status is Status.TIME_LIMIT_NO_SOLUTION and raw.x is None
    assert "do not satisfy the model" in raw.message
    assert _knapsack().satisfies(np.array([1, 1, 1, 0, 0, 0.0]))


def test_highs_solves_in_a_child_after_the_parent_ran_it_with_other_threads():
    """HiGHS keeps one global thread pool: a forked child inherited it without its threads and
    hung (or ended in error with another thread count), as did a second in-process run with
    another thread count."""
    from npusched.solvers import highs

    kw = dict(time_limit=20.0, seed=0)
    for parent, child in ((2, 2), (1, 2), (2, 1)):
        assert highs.solve_linear(_knapsack(), threads=parent, **kw).status is Status.OPTIMAL
        t0 = time.perf_counter()
        how, raw = run_within(lambda c=child: highs.solve_linear(_knapsack(), threads=c, **kw), 10)
        assert how == "done" and raw.status is Status.OPTIMAL
        assert time.perf_counter() - t0 < 5
