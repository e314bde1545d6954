"""Simulated annealing over the design space: the atomic dataflow's partition search, Klotski's
baseline 2 (§IV-B: "Baseline 2 is also deterministic except for the employed simulated annealing
for partition"; footnote 2: "we set the running budgets for the simulated annealing with 50 to
align with Klotski's settings").

Zheng et al. (HPCA 2022) cut the layers into atoms by simulated annealing to balance the load;
only their abstract could be read here, so the annealing itself is the textbook one (Kirkpatrick
et al. 1983), over Klotski's design space of μtensor shapes (:class:`~npusched.search.space.
DesignSpace`) so that both baselines search the same partitions:

- start from the design space's median point in μops (seeded choice among equals);
- a move goes to one of the ``neighbours`` nearest points in the space's normalised
  coordinates (log2 of ``h, w, ic, oc``; :meth:`~npusched.search.space.DesignSpace.nearest`),
  chosen at random; when all of them are evaluated, to one of the ``neighbours`` nearest points
  not yet evaluated (ours: without it a walk that has explored its region revisits it for free
  until the step cap, and ended after 18 of 50 evaluations on ResNet-152);
- a move whose makespan ``M'`` is no worse is taken; a worse one with probability
  :math:`\\exp(-(M' - M) / (M \\cdot T))` at temperature :math:`T`, which falls geometrically from
  ``t_start`` to ``t_end`` over the budget (a relative increase of ``T`` is taken with
  probability 1/e);
- every point is evaluated once (a revisit reuses it and costs no budget); the best evaluated
  point is the result.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection
from concurrent.futures import Executor

import numpy as np

from npusched.search.bo import SearchResult, cut, evaluate_batch
from npusched.search.evaluate import Evaluation
from npusched.search.space import DesignSpace, Shape4


def anneal(
    space: DesignSpace,
    evaluate: Callable[[Shape4], Evaluation],
    budget: int = 50,
    seed: int = 0,
    neighbours: int = 8,
    t_start: float = 0.05,
    t_end: float = 0.002,
    deadline: float | None = None,
) -> SearchResult:
    """The annealing of the module docstring with at most ``budget`` evaluations, stopping at
    ``deadline`` (``time.perf_counter()``; ``complete`` false) once a point has a schedule."""
    if budget < 1:
        raise ValueError(f"the budget must be at least 1, got {budget}")
    rng = np.random.default_rng(seed)
    out = SearchResult(space)
    done: dict[int, Evaluation] = {}

    def visit(k: int) -> Evaluation:
        if k not in done:
            done[k] = evaluate(space.points[k])
            out.evaluations.append(done[k])
            out.predicted.append(None)
        return done[k]

    order = np.argsort(space.uops, kind="stable")
    here = int(order[len(order) // 2])
    current = visit(here)
    budget = min(budget, len(space))
    steps = 0
    while len(done) < budget and steps < 20 * budget:
        if deadline is not None and out.feasible and time.perf_counter() > deadline:
            out.complete = False
            break
        steps += 1
        temp = t_start * (t_end / t_start) ** (len(done) / max(1, budget - 1))
        near = space.nearest(here, neighbours)
        if all(j in done for j in near):  # an explored region: its nearest unevaluated points
            near = space.nearest(here, neighbours, skip=done) or near
        k = int(rng.choice(near))
        cand = visit(k)
        if not cand.feasible or cand.makespan is None:
            continue
        if not current.feasible or current.makespan is None:
            here, current = k, cand
            continue
        worse = (cand.makespan - current.makespan) / current.makespan
        if worse <= 0 or rng.random() < math.exp(-worse / temp):
            here, current = k, cand
    return out


def descend(
    space: DesignSpace,
    evaluate: Callable[[Shape4], Evaluation],
    result: SearchResult,
    budget: int,
    neighbours: int = 8,
    deadline: float | None = None,
    q: int = 1,
    executor: Executor | None = None,
    bounds: np.ndarray | None = None,
) -> SearchResult:
    """Polish a search's best point (ours, after Klotski's BO: :func:`~npusched.search.
    orchestrate.orchestrate`): evaluate the ``neighbours`` points of the incumbent's
    :func:`neighbourhood` not yet evaluated, ``q`` at a time (through
    ``executor``, as :func:`~npusched.search.bo.bayes_search` evaluates its batches), move to
    the best of the first batch that scores better, and repeat, for at most ``budget`` more
    evaluations. A batch that would end past ``deadline``, judged by the last one's time, is not
    begun (``complete`` false). With ``bounds`` (each point's lower bound on the makespan, as
    :func:`~npusched.search.bo.bayes_search` takes them), a point whose bound is no shorter
    than the best makespan found is skipped. ``result`` is extended in place and returned."""
    if q < 1:
        raise ValueError(f"q must be at least 1, got {q}")
    if not result.feasible or budget < 1:
        return result
    done = {space.index(e.s): e for e in result.evaluations}
    here, spent, step = space.index(result.best.s), 0, 0.0
    while spent < budget:
        hopeless = np.flatnonzero(cut(result, bounds)).tolist()
        near = neighbourhood(space, here, neighbours, {*done, *hopeless})
        if not near:
            break
        for b in range(0, len(near), q):
            batch = near[b : b + q][: budget - spent]
            if not batch:
                break
            if deadline is not None and time.perf_counter() + step > deadline:
                result.complete = False
                return result
            began = time.perf_counter()
            shapes = [space.points[k] for k in batch]
            evals = evaluate_batch(evaluate, shapes, executor)
            for k, ev in zip(batch, evals, strict=True):
                done[k] = ev
                result.evaluations.append(ev)
                result.predicted.append(None)
            spent += len(batch)
            step = time.perf_counter() - began
            better = [k for k in batch if done[k].feasible and done[k].score > done[here].score]
            if better:
                here = max(better, key=lambda k: done[k].score)
                break
    return result


def neighbourhood(space: DesignSpace, here: int, k: int, done: Collection[int]) -> list[int]:
    """The polish's next ``k`` points around point ``here``, none of ``done``: its coordinate
    steps (:meth:`~npusched.search.space.DesignSpace.steps`, one value up or down on one axis),
    its transpose (:meth:`~npusched.search.space.DesignSpace.transpose`), then its nearest
    points (:meth:`~npusched.search.space.DesignSpace.nearest`). The nearest alone crowd into
    ``h`` and ``w``, whose axes hold the most values: on VGG19 3×3 the polish never tried
    doubling ``oc``, the step that baseline 2's annealing took to a shorter schedule; on VGG19
    5×5 baseline 2 ended at the transpose of Klotski's best, 0.06 % shorter."""
    out = space.steps(here, skip=done)[:k]
    turned = space.transpose(here)
    if len(out) < k and turned is not None and turned not in done and turned not in out:
        out.append(turned)
    if len(out) < k:
        out += space.nearest(here, k - len(out), skip={*done, *out} if out else done)
    return out
