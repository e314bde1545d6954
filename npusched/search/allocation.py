"""Layer–core allocation by Stream's genetic algorithm (Stream §III-D, Step 4) on pymoo's NSGA-II.

An allocation gives each *unit* one core: a unit is a layer's CNs of one Stream ``group``
(Stream's weight-sharing group; Stream's own allocation in both shared exports puts each group of
a layer on one core), and its cores are the CNs' ``possible_cores``. Units with one possible core
are fixed and not in the genome; each other unit is a gene, the index of its core among its
possible ones.

Each individual is scheduled by the memory-aware list
(:func:`~npusched.heuristics.scheduling.memory_list.memory_list_schedule`, Stream's latency
priority, every core's memory a hard capacity) and scored by two objectives, both minimised:

- **latency**: the schedule's makespan;
- **peak memory**: the largest total data resident on all cores at one instant (Stream's Fig. 7:
  "the total memory usage trace of all cores, of which the maximum is the peak").

The list evicts where it must (FIFO, Stream §III-E); an allocation whose schedule cannot keep
within the memories even so (:class:`MemoryDeadlock`) violates the one constraint and loses
every comparison with a feasible one (pymoo's constraint domination).

Operators, as §III-D gives them: crossover with probability 0.3, mutation with probability 0.7, a
mutation being a *bit flip* (one unit to another of its cores) or a *position flip* (two units
swap cores, where each may use the other's). Stream's *ordered* crossover copies a slice of one
parent in place and fills the rest from the other parent in order; on allocation vectors, which
are not permutations, that is two-point crossover (pymoo's ``TwoPointCrossover``). Selection is
NSGA-II's (non-dominated sorting, crowding distance). The first individual is Stream's own
allocation (the instance's ``preferred``), the others are drawn at random.

With ``energy`` (an ``(n, cores)`` table of each CN's energy on each core, as Stream's exports
give it) a third objective is the allocation's compute energy, ``Σ_i energy[i, core(i)]``. It is
a part of Stream's energy: transfers and memory accesses carry no energy here.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Executor, wait
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.mutation import Mutation
from pymoo.core.problem import Problem
from pymoo.operators.crossover.pntx import TwoPointCrossover

from npusched.heuristics.scheduling.memory_list import MemoryDeadlock, memory_list_schedule
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.verify.scheduling.routed import residency

CROSSOVER = 0.3
MUTATION = 0.7


@dataclass(frozen=True, eq=False)
class Units:
    """Allocation units: ``unit[i]`` of each CN, and each unit's allowed core indices."""

    unit: np.ndarray
    cores: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, inst: RoutedInstance, group: np.ndarray) -> Units:
        """Units = (layer, group) pairs of ``inst``'s CNs; a unit's cores are those every CN in
        it may use."""
        layer = inst.layer if inst.layer is not None else np.zeros(inst.n, dtype=np.int64)
        _, unit = np.unique(np.stack([layer, np.asarray(group)]), axis=1, return_inverse=True)
        unit = unit.reshape(-1)
        units = int(unit.max()) + 1
        shared = np.ones((units, inst.m), dtype=bool)  # cores every CN of a unit may use
        np.logical_and.at(shared, unit, inst.mask)
        none = np.flatnonzero(~shared.any(axis=1))
        if none.size:
            raise ValueError(f"the CNs of allocation unit {none[0]} share no possible core")
        return cls(unit, tuple(tuple(np.flatnonzero(row).tolist()) for row in shared))

    @property
    def genes(self) -> np.ndarray:
        """Units with a choice of core: the genome's positions."""
        return np.array([u for u, c in enumerate(self.cores) if len(c) > 1], dtype=np.int64)

    def core_of(self, x: np.ndarray) -> np.ndarray:
        """Each CN's core index under genome ``x``."""
        per_unit = np.array([c[0] for c in self.cores], dtype=np.int64)
        for g, u in enumerate(self.genes.tolist()):
            per_unit[u] = self.cores[u][int(x[g])]
        return per_unit[self.unit]

    def genome(self, core: np.ndarray) -> np.ndarray:
        """The genome of a CN allocation that gives each unit one core."""
        core = np.asarray(core, dtype=np.int64)
        units = len(self.cores)
        lo = np.full(units, np.iinfo(np.int64).max)
        hi = np.full(units, -1)
        np.minimum.at(lo, self.unit, core)
        np.maximum.at(hi, self.unit, core)
        x = []
        for u in self.genes.tolist():
            if lo[u] != hi[u] or int(lo[u]) not in self.cores[u]:
                raise ValueError(f"the allocation splits unit {u} or leaves its cores")
            x.append(self.cores[u].index(int(lo[u])))
        return np.array(x, dtype=np.int64)


def peak_total(inst: RoutedInstance, sched: RoutedSchedule) -> int:
    """The largest data resident on all cores together at one instant."""
    res = residency(inst, sched)
    t = np.concatenate([res.alloc, res.free])
    sign = np.concatenate([res.bits, -res.bits])
    order = np.lexsort((sign, t))
    return int(np.cumsum(sign[order]).max(initial=0))


def evaluate(inst: RoutedInstance, units: Units, x: np.ndarray) -> tuple[float, float, bool]:
    """(makespan, peak memory, feasible) of genome ``x`` (see the module docstring)."""
    return score(inst, units.core_of(x))


def score(inst: RoutedInstance, core: np.ndarray) -> tuple[float, float, bool]:
    """(makespan, peak memory, feasible) of the CN allocation ``core``."""
    fixed = inst.restricted(core)
    try:
        sched = memory_list_schedule(fixed, "latency")
    except MemoryDeadlock:
        return float("inf"), float("inf"), False
    return float(sched.makespan(fixed)), float(peak_total(fixed, sched)), True


@dataclass
class Front:
    """The GA's outcome: every evaluated genome with its objectives, and the Pareto front."""

    genomes: np.ndarray
    makespan: np.ndarray
    peak: np.ndarray
    feasible: np.ndarray
    front: np.ndarray  # indices of the non-dominated feasible genomes
    history: list[float] = field(default_factory=list)  # best makespan after each generation
    energy: np.ndarray | None = None  # compute energy of each genome, when it is an objective

    def best(self) -> int:
        """The feasible genome with the shortest makespan (then the lowest peak)."""
        ok = np.flatnonzero(self.feasible)
        return int(ok[np.lexsort((self.peak[ok], self.makespan[ok]))[0]])

    def add(
        self, genome: np.ndarray, makespan: float, peak: float, energy: Any, units: Units
    ) -> None:
        """Add a feasible genome evaluated elsewhere (the exact model's) and recompute the
        front; ``energy`` is the CN energy table when energy is an objective."""
        self.genomes = np.vstack([self.genomes, np.asarray(genome)[None, :]])
        self.makespan = np.append(self.makespan, float(makespan))
        self.peak = np.append(self.peak, float(peak))
        self.feasible = np.append(self.feasible, True)
        f = np.column_stack([self.makespan, self.peak])
        if self.energy is not None:
            self.energy = np.append(self.energy, compute_energy(units, genome, energy))
            f = np.column_stack([f, self.energy])
        ok = np.flatnonzero(self.feasible)
        self.front = ok[non_dominated(f[ok])]


def non_dominated(f: np.ndarray) -> np.ndarray:
    """Indices of the rows of ``f`` (objectives, minimised) that no other row dominates (one
    of equal rows kept)."""
    _, first = np.unique(f, axis=0, return_index=True)
    keep = []
    for i in first.tolist():
        dominated = ((f <= f[i]).all(axis=1) & (f < f[i]).any(axis=1)).any()
        if not dominated:
            keep.append(i)
    return np.array(sorted(keep), dtype=np.int64)


def run_ga(
    inst: RoutedInstance,
    units: Units,
    generations: int = 10,
    population: int = 16,
    seed: int = 0,
    executor: Executor | None = None,
    progress: Callable[[int, float], None] | None = None,
    time_limit: float | None = None,
    energy: np.ndarray | None = None,
) -> Front:
    """NSGA-II over the units' cores (see the module docstring); ``executor`` evaluates each
    generation's individuals (``None``: in this process). With ``time_limit`` (seconds) no
    generation starts once the last one's duration would take the run past it, and individuals
    not evaluated by then count as infeasible (the first one, Stream's allocation, always is)."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    genes = units.genes
    sizes = np.array([len(units.cores[u]) for u in genes.tolist()], dtype=np.int64)
    if genes.size == 0:
        raise ValueError("every unit has one possible core: there is no allocation to search")
    seen: dict[tuple[int, ...], tuple[float, float, bool]] = {}
    history: list[float] = []
    job = partial(evaluate, inst, units)

    class Allocation(Problem):
        def __init__(self) -> None:
            super().__init__(n_var=int(genes.size), n_obj=2 + (energy is not None),
                             n_ieq_constr=1, xl=0, xu=sizes - 1, vtype=int)  # fmt: skip

        def _evaluate(self, X: np.ndarray, out: dict[str, Any], *args: Any, **kw: Any) -> None:
            X = np.rint(X).astype(np.int64)
            todo = [x for x in dict.fromkeys(tuple(r) for r in X.tolist()) if x not in seen]
            seen.update(_evaluate_until(job, todo, executor, deadline, first=not seen))
            late = (float("inf"), float("inf"), False)  # not evaluated before the deadline
            res = [seen.get(tuple(r), late) for r in X.tolist()]
            f = np.array([[r[0], r[1]] for r in res]).reshape(len(res), 2)
            if energy is not None:
                f = np.column_stack([f, [compute_energy(units, x, energy) for x in X]])
            fits = np.array([r[2] for r in res], dtype=bool)
            f[~fits] = 1e30  # ranked by their constraint violation first anyway
            out["F"] = f
            out["G"] = np.where(fits, 0.0, 1.0)[:, None]
            ok = [r[0] for r in seen.values() if r[2]]
            history.append(min(ok) if ok else float("inf"))
            if progress is not None:
                progress(len(history), history[-1])

    rng = np.random.default_rng(seed)
    start = rng.integers(0, sizes, size=(population, genes.size))
    if inst.preferred is not None:
        with contextlib.suppress(ValueError):  # unless Stream's allocation splits a unit
            start[0] = units.genome(inst.preferred)
    algorithm = NSGA2(
        pop_size=population,
        sampling=start,
        crossover=TwoPointCrossover(prob=CROSSOVER),
        mutation=_StreamMutation(units, genes, prob=MUTATION),
        eliminate_duplicates=True,
    )
    algorithm.setup(Allocation(), termination=("n_gen", generations), seed=seed, verbose=False)
    last = 0.0
    while algorithm.has_next():
        begun = time.perf_counter()
        if deadline is not None and history and begun + last > deadline:
            break
        algorithm.next()
        last = time.perf_counter() - begun
    keys = list(seen)
    vals = np.array([seen[k] for k in keys], dtype=float)
    feasible = vals[:, 2].astype(bool)
    genomes = np.array(keys, dtype=np.int64)
    f = vals[:, :2]
    spent = None
    if energy is not None:
        spent = np.array([compute_energy(units, x, energy) for x in genomes])
        f = np.column_stack([f, spent])
    ok = np.flatnonzero(feasible)
    front = ok[non_dominated(f[ok])] if ok.size else np.array([], dtype=np.int64)
    return Front(genomes, f[:, 0], f[:, 1], feasible, front, history, spent)


def _evaluate_until(
    job: Callable[[np.ndarray], tuple[float, float, bool]],
    todo: list[tuple[int, ...]],
    executor: Executor | None,
    deadline: float | None,
    first: bool,
) -> dict[tuple[int, ...], tuple[float, float, bool]]:
    """``job`` of every genome in ``todo`` that ends before ``deadline`` (the first of the run's
    whatever the deadline): in this process, or submitted to ``executor`` and the rest cancelled
    at the deadline."""
    out: dict[tuple[int, ...], tuple[float, float, bool]] = {}
    if executor is None:
        for k, x in enumerate(todo):
            if deadline is not None and time.perf_counter() > deadline and not (first and k == 0):
                break
            out[x] = job(np.array(x))
        return out
    futures = {executor.submit(job, np.array(x)): x for x in todo}
    left = None if deadline is None else max(0.0, deadline - time.perf_counter())
    done, pending = wait(futures, timeout=left)
    if first and todo and not done:  # the run's first individual is always evaluated
        head = next(f for f, x in futures.items() if x == todo[0])
        head.result()
        done = {head}
    for f in pending - done:
        f.cancel()
    return {x: f.result() for f, x in futures.items() if f in done}  # in the order of todo


def compute_energy(units: Units, x: np.ndarray, energy: np.ndarray) -> float:
    """Compute energy of genome ``x``: each CN's energy on its core."""
    core = units.core_of(x)
    return float(energy[np.arange(core.size), core].sum())


class _StreamMutation(Mutation):
    """Stream's mutation: a bit flip (one unit to another of its cores) or a position flip (two
    units swap cores where each may use the other's), one of the two at random."""

    def __init__(self, units: Units, genes: np.ndarray, prob: float) -> None:
        super().__init__(prob=prob)
        self.units, self.genes = units, genes

    def _do(self, problem: Any, X: np.ndarray, *args: Any, random_state: Any = None,
            **kwargs: Any) -> np.ndarray:  # fmt: skip
        rng = random_state if random_state is not None else np.random.default_rng()
        X = np.rint(X).astype(np.int64).copy()
        cores = [self.units.cores[u] for u in self.genes.tolist()]
        n = len(cores)
        for x in X:
            a = int(rng.integers(n))
            if n > 1 and rng.random() < 0.5:  # position flip
                b = int(rng.integers(n - 1))
                b += b >= a
                ca, cb = cores[a][x[a]], cores[b][x[b]]
                if ca in cores[b] and cb in cores[a]:
                    x[a], x[b] = cores[a].index(cb), cores[b].index(ca)
                    continue
            if len(cores[a]) > 1:  # bit flip
                other = [k for k in range(len(cores[a])) if k != x[a]]
                x[a] = other[int(rng.integers(len(other)))]
        return X
