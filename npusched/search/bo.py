"""Bayesian optimization of Klotski's μtensor shape (§III-B, Algorithm 1).

The loop: Sobol initial points, then each iteration fits a Gaussian process to the scores seen so
far and evaluates the feasible, not yet evaluated shape of largest upper confidence bound
(line 8). The GP is BoTorch's ``SingleTaskGP`` with an explicitly passed automatic-relevance-
determination Matérn-5/2 kernel (line 7; BoTorch's default is an RBF kernel), float64 inputs in
``[0, 1]^4`` (:meth:`DesignSpace.unit`) and standardised outcomes (BoTorch's ``Standardize``) of
the logarithm of the score (:func:`npusched.search.objective.gp_target`). The acquisition is
evaluated on the whole enumerated feasible set, so no evaluation is spent on a shape known to be
infeasible and no continuous optimum has to be rounded. A shape whose scheduler found no verified
schedule is marked visited and left out of the GP's data.

**Bounds** (ours, not the paper's). With the makespan objective a search may be given a lower bound
on each shape's makespan that costs no schedule (its critical path and the load after each head:
:meth:`~npusched.search.space.DesignSpace.lower_bounds`). The GP then models how far above its bound
a shape's makespan is, ``−ln(makespan / bound)``, and the acquisition adds the bound back: UCB
becomes ``−ln bound + μ + √β σ``, so an unevaluated shape is ranked by its own bound where the GP
knows nothing (a GP on the makespan alone ranks it by its neighbours). A shape whose bound is no
shorter than the best makespan found is never proposed: no schedule of it can be shorter. When every
unevaluated shape is cut so, the search ends early with ``exhausted`` true.

**Symmetry** (ours). Where turning every feature map by 90° leaves the network as it is
(:func:`~npusched.search.space.transposable`: VGG, ResNet), a shape and its transpose cut the
same μops turned and schedule alike; the search then runs over the shapes up to transposition:
the GP's inputs have ``h`` and ``w`` sorted (:meth:`~npusched.search.space.DesignSpace.features`)
and a shape whose transpose is evaluated is not proposed. Without it, 5 of 50 evaluations on
VGG19 5×5 (seed 1) went to transposes of shapes already evaluated. The polish after the search
still tries the transpose of the best (:func:`~npusched.search.anneal.neighbourhood`).

A seed makes the whole run repeatable: the Sobol sequence is scrambled with it,
``torch.manual_seed`` and numpy's generator are set from it, and the GP fit starts from
BoTorch's deterministic initial hyperparameters.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

import numpy as np
import torch
from botorch.acquisition import UpperConfidenceBound, qUpperConfidenceBound
from botorch.acquisition.objective import GenericMCObjective
from botorch.exceptions.errors import ModelFittingError
from botorch.exceptions.warnings import OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from botorch.optim import optimize_acqf_discrete
from gpytorch.kernels import MaternKernel, ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from gpytorch.utils.warnings import NumericalWarning
from torch.quasirandom import SobolEngine
from tqdm import tqdm

from npusched.search.evaluate import Evaluation
from npusched.search.space import DesignSpace, Shape4

UCB_BETA = 2.0
"""UCB's exploration weight β in ``μ + √β σ`` (the paper does not give one)."""


SHAPE_DIMS = 4
"""Inputs the GP's kernel reads: the shape's four normalised coordinates. A fifth column, when
present, carries each shape's bound to the acquisition and is not read by the kernel."""


def gp_model(x: torch.Tensor, y: torch.Tensor) -> SingleTaskGP:
    """The fitted GP of Algorithm 1, line 7: ARD Matérn-5/2 on the shape's coordinates
    (:data:`SHAPE_DIMS`), float64, standardised outcomes.

    ``fit_gpytorch_mll`` retries a fit whose optimizer stops abnormally (with fresh seeded
    hyperparameters); if every attempt fails the GP keeps its last hyperparameters instead of
    ending the search."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # ≤ a few hundred points: threads only add overhead (10 s vs 0.6 s)
    try:
        return _fit(x, y)
    finally:
        torch.set_num_threads(threads)


def _fit(x: torch.Tensor, y: torch.Tensor) -> SingleTaskGP:
    dims = SHAPE_DIMS if x.shape[-1] > SHAPE_DIMS else x.shape[-1]
    kernel = ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=dims, active_dims=tuple(range(dims))))
    gp = SingleTaskGP(x, y, covar_module=kernel, outcome_transform=Standardize(m=1))
    with warnings.catch_warnings():  # tiny negative variances are rounded up, as they should be
        warnings.simplefilter("ignore", NumericalWarning)
        warnings.simplefilter("ignore", OptimizationWarning)
        try:
            fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        except ModelFittingError:
            gp.eval()
    return gp


def sobol_starts(space: DesignSpace, n: int, seed: int) -> list[int]:
    """``n`` distinct feasible points nearest to a scrambled Sobol sequence in ``[0, 1]^4``
    (fewer if the space, up to transposition where it is :attr:`~npusched.search.space.
    DesignSpace.square`, has fewer), no two of them each other's transpose there."""
    unit = space.unit()
    draws = SobolEngine(4, scramble=True, seed=seed).draw(n, dtype=torch.float64).numpy()
    chosen: list[int] = []
    for q in draws:
        dist = ((unit - q) ** 2).sum(axis=1)
        dist[chosen + space.twins(chosen)] = np.inf
        if np.isinf(dist).all():
            break
        chosen.append(int(np.argmin(dist)))
    return chosen


@dataclass
class SearchResult:
    """All evaluations in order, the best one, and the GP's prediction at each chosen point;
    ``exhausted`` when a search given bounds found every unevaluated shape's bound no shorter
    than its best makespan (module docstring); ``bounds`` those it was given."""

    space: DesignSpace
    evaluations: list[Evaluation] = field(default_factory=list)
    predicted: list[tuple[float, float] | None] = field(default_factory=list)
    complete: bool = True
    exhausted: bool = False
    bounds: np.ndarray | None = None

    @property
    def feasible(self) -> list[Evaluation]:
        """The evaluations whose method found a schedule (``feasible`` true), in evaluation order:
        those :attr:`best` chooses from."""
        return [e for e in self.evaluations if e.feasible]

    @property
    def best(self) -> Evaluation:
        """The feasible evaluation of largest score (the first on ties); a ValueError if none."""
        if not self.feasible:
            raise ValueError("no evaluated shape has a verified schedule")
        return max(self.feasible, key=lambda e: e.score)


def bayes_search(
    space: DesignSpace,
    evaluate: Callable[[Shape4], Evaluation],
    budget: int = 50,
    n_init: int = 5,
    seed: int = 0,
    deadline: float | None = None,
    progress: bool = True,
    q: int = 1,
    executor: Executor | None = None,
    first: Sequence[int] = (),
    bounds: np.ndarray | None = None,
) -> SearchResult:
    """Algorithm 1 over ``space`` with at most ``budget`` evaluations (the paper's default 50),
    stopping early at ``deadline`` (``time.perf_counter()``; then ``complete`` is false) once a
    shape has a verified schedule: a step that would end past it, judged by the last step's
    time, is not begun.

    The points ``first`` (indices into ``space``, e.g. a user's shapes) and ``n_init`` Sobol
    points (line 1) come first; then each step fits the GP and proposes ``q`` points: the UCB's
    argmax over the unvisited feasible points for ``q = 1``, qUCB chosen sequentially greedy over
    them by :func:`botorch.optim.optimize_acqf_discrete` for ``q > 1``. Each batch is evaluated
    through ``executor`` (any ``concurrent.futures`` executor: a process pool, Dask's) or in this
    process. ``bounds`` (one per point, makespan objective) as in the module docstring."""
    if budget < 1:
        raise ValueError(f"the budget must be at least 1, got {budget}")
    if q < 1:
        raise ValueError(f"q must be at least 1, got {q}")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x_all = torch.tensor(with_bounds(space, bounds), dtype=torch.float64)
    budget = min(budget, len(space))
    out = SearchResult(space, bounds=bounds)
    seen: list[int] = []
    starts = list(dict.fromkeys(first))[:budget]
    starts += [k for k in sobol_starts(space, min(n_init, budget), seed) if k not in starts]
    bar = tqdm(total=budget, disable=not progress, desc="search", unit="eval")
    try:
        step = 0.0  # the last step's seconds: a step that would end past the deadline is not begun
        while len(seen) < budget:
            if deadline is not None and out.feasible and time.perf_counter() + step > deadline:
                out.complete = False
                break
            began = time.perf_counter()
            size = min(q, budget - len(seen))
            preds: list[tuple[float, float] | None]
            if starts:
                batch, starts = starts[:size], starts[size:]
                preds = [None] * len(batch)
            elif not (free := open_points(space, seen, out, bounds)).size:
                out.exhausted = True
                break
            elif len(out.feasible) < 2:  # too little to fit a GP: a seeded random draw
                pick = rng.choice(free, size=min(size, free.size), replace=False)
                batch = [int(k) for k in pick]
                preds = [None] * len(batch)
            else:
                size = min(size, free.size)  # the bounds may leave fewer than q
                batch, preds = _next_points(x_all, seen, out.evaluations, free, size)  # type: ignore[assignment]
            shapes = [space.points[k] for k in batch]
            results = evaluate_batch(evaluate, shapes, executor)
            out.evaluations += results
            out.predicted += preds
            seen += batch
            _show(bar, out, len(batch))
            step = time.perf_counter() - began
    finally:
        bar.close()
    return out


def with_bounds(space: DesignSpace, bounds: np.ndarray | None) -> np.ndarray:
    """The GP's inputs: :meth:`~npusched.search.space.DesignSpace.features`, and a fifth column of
    ``min bound / bound`` in ``(0, 1]`` (all ones without bounds), whose logarithm the
    acquisition adds back (:func:`_next_points`)."""
    unit = space.features()
    if bounds is None:
        return np.hstack([unit, np.ones((len(unit), 1))])
    b = np.maximum(np.asarray(bounds, dtype=np.float64), 1.0)
    if b.shape != (len(space),):
        raise ValueError(f"{b.size} bounds for a space of {len(space)} points")
    return np.hstack([unit, (b.min() / b)[:, None]])


def cut(result: SearchResult, bounds: np.ndarray | None) -> np.ndarray:
    """Which points cannot beat the best makespan of ``result``: their bound is no shorter
    (none without ``bounds`` or a makespan)."""
    spans = [e.makespan for e in result.feasible if e.makespan is not None]
    if bounds is None or not spans:
        return np.zeros(len(result.space), dtype=bool)
    return np.asarray(bounds) >= min(spans)


def open_points(
    space: DesignSpace, seen: Sequence[int], out: SearchResult, bounds: np.ndarray | None
) -> np.ndarray:
    """The unevaluated points that may still beat the best makespan found (:func:`cut`), none
    the transpose of an evaluated one in a square space (module docstring)."""
    free = ~cut(out, bounds)
    free[list(seen)] = False
    free[space.twins(seen)] = False
    return np.flatnonzero(free)


def evaluate_batch(
    evaluate: Callable[[Shape4], Evaluation], shapes: list[Shape4], executor: Executor | None
) -> list[Evaluation]:
    """``evaluate`` on each shape, in order: through ``executor`` (in parallel) or in this
    process."""
    return list(executor.map(evaluate, shapes)) if executor else list(map(evaluate, shapes))


def _show(bar: tqdm, out: SearchResult, done: int) -> None:
    """The progress bar's postfix: the best E and the best makespan so far."""
    if out.feasible:
        best = out.best
        shortest = min(e.makespan for e in out.feasible if e.makespan is not None)
        e = "-" if best.entropy is None else f"{best.entropy:.3g}"
        bar.set_postfix(best_E=e, best_makespan=shortest, refresh=False)
    bar.update(done)


def _plus_bound(samples: torch.Tensor, X: torch.Tensor | None) -> torch.Tensor:  # noqa: N803
    """qUCB's objective: a sample of the GP (the makespan over the bound) plus the bound."""
    assert X is not None  # BoTorch passes the candidates by this name
    return samples[..., 0] + X[..., SHAPE_DIMS].log()


def _next_points(
    x_all: torch.Tensor, seen: list[int], evaluations: list[Evaluation], free: np.ndarray, q: int
) -> tuple[list[int], list[tuple[float, float]]]:
    """Line 8: the ``q`` points of ``free`` of largest (q)UCB, with the GP's mean and sd there
    (in the GP's units: the logarithm of the score, less that of the bound column of
    :func:`with_bounds`, which the acquisition adds back)."""
    fit = [k for k, e in zip(seen, evaluations, strict=True) if e.target is not None]
    offset = x_all[:, SHAPE_DIMS].log()
    y = torch.tensor([[e.target] for e in evaluations if e.target is not None], dtype=torch.float64)
    gp = gp_model(x_all[fit], y - offset[fit, None])
    cand = x_all[torch.as_tensor(free)]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)
        if q == 1:
            ucb = UpperConfidenceBound(gp, beta=UCB_BETA)(cand.unsqueeze(1))
            picks = [int(torch.argmax(ucb + cand[:, SHAPE_DIMS].log()))]
        else:
            bound = GenericMCObjective(_plus_bound)
            acq = qUpperConfidenceBound(gp, beta=UCB_BETA, objective=bound)
            chosen, _ = optimize_acqf_discrete(acq, q=q, choices=cand, unique=True)
            lookup = {tuple(row.tolist()): j for j, row in enumerate(cand)}
            picks = [lookup[tuple(row.tolist())] for row in chosen]
        post = gp.posterior(cand[picks])
        mean, sd = post.mean.flatten().tolist(), post.variance.sqrt().flatten().tolist()
    return [int(free[j]) for j in picks], list(zip(mean, sd, strict=True))
