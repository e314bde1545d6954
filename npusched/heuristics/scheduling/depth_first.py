"""Depth-first search for a schedule within a target makespan under transfer delays, with an
idle budget and restarts (``dfbb``).

The search
----------
Kasahara and Narita's DF/IHS ("Practical multiprocessor scheduling algorithms for efficient
parallel processing", IEEE Trans. Computers C-33(11), 1984) searches depth-first over list
schedules: the heuristic order (critical path, most immediate successors first: CP/MISF) gives
the first branch, and backtracking tries the others. This module does the same with transfer
delays, for a target makespan ``T``:

- **Branching.** Take the core ``k`` that is free earliest, at ``t`` (the lowest index on ties),
  and choose the μop it runs next: any ready μop ``j`` (every producer placed), which starts at
  ``s = max(t, A(j, k))``, ``A(j, k)`` the arrival of its last datum on ``k`` (a producer's end,
  plus :meth:`~npusched.problem.scheduling.accelerator.Accelerator.comm_delay` of the hops and
  the edge's bytes when the two cores differ). The last two branches let ``k`` idle until the
  next time another core is free, or close ``k``: it takes no more μops and idles until ``T``.
  Candidates are tried in the order of least idle, then the longest path to the end of the DAG
  (the μop's *tail*, with its fastest latencies and no transfers), then most successors:
  CP/MISF with the delays' idle first.
- **Idle budget.** A schedule of makespan ``T`` on ``m`` cores leaves ``m·T − Σ_i d_i`` core-cycles
  idle (``d_i`` a μop's latency on its core; its fastest latency in the bound). Every branch
  spends idle (``s − t``, a slower core's extra latency, a closed core's ``T − t``) from this
  budget and is cut when the budget is spent.
- **Tails, forward checking.** A μop that starts at ``s`` ends the schedule no earlier than
  ``s`` plus its tail. A μop ``c`` with some producers placed starts no earlier than
  ``min_q max(free(q), A(c, q))`` over those producers (cores only fill later), so when a μop
  is placed, each consumer's bound is updated and the branch is cut when one of them can no
  longer end by ``T``: two producers placed too many hops apart for a consumer they share fail
  at once, not when the consumer becomes ready.
- **Symmetry.** With a zero budget every core starts a μop at 0, and a permutation of the
  cores that keeps every hop count (the hypercube's 2^d·d!, a mesh's flips) maps schedules to
  schedules: only the lexicographically least vector of μops at 0 is searched
  (:func:`_first_layer_order`).
- **Restarts.** Runs of at most :data:`FIRST_NODES` · n nodes, ×:data:`GROWTH` each time, the
  tails perturbed by ``1 + σ·N(0, 1)`` after the first run (:data:`SIGMA`; repeatable for a
  ``seed``), until a schedule is found, a run ends without one, the time or the node limit.

Completeness
------------
When the budget is zero (``m·T`` equals the total fastest work: the target is the load bound,
and no core can idle or run a μop slower than its fastest), a run that ends without a schedule
and without hitting its node limit proves that no schedule of makespan ``T`` exists: every
schedule without idle time is one of the branches (the core free earliest runs, in any such
schedule, a μop that starts then, whose producers all started earlier and so are placed, or it
has reached ``T`` and closes). With
a positive budget the search is a heuristic: μops only append to a core, and a core idles only
until the next time another is free.

Where it works (``python -m npusched.bench.delays exact --methods dfbb``,
``docs/results_delays.md``): the Davidović–Crainic graphs with known optimum
(``npusched.bench.generate.known_optimum``) are built around a schedule without idle time, so
their optimum has a zero budget. On dense graphs with up to 8 processors the first runs find it
in under a second up to n = 500. On sparse ones (density 20 %) the cores must be packed to
exact sums, which a chronological search learns only at the end; on 12–16 processors the μops
at 0 must sit where the hop distances of all that follows fit, and given the hidden schedule's
μops at 0 the search finds the rest in a few hundred nodes, but a wrong one is only refuted
after thousands. There the restarts mostly fail. ``lns`` runs it first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from npusched.heuristics.scheduling.reassign import delay_lists
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule

FIRST_NODES = 20
"""Nodes per μop of the first run."""
GROWTH = 1.5
"""Each restart may visit this many times the nodes of the one before."""
SIGMA = 0.1
"""Relative noise of the tails on restarts."""
CLOSED = 2**62
"""The free time of a core that takes no more μops."""


@dataclass
class Outcome:
    """What :func:`depth_first_schedule` found: a schedule within the target (``None`` if
    none), the runs and nodes it took, and whether a run ended without one, which proves no
    schedule within the target exists when the idle budget is zero (``proved``)."""

    schedule: Schedule | None
    runs: int
    nodes: int
    proved: bool


class _Limit(Exception):
    """A run visited its node limit."""


class DepthFirst:
    """The tables of one instance and one run's state (module docstring)."""

    def __init__(self, instance: SchedulingInstance, symmetry: bool = True) -> None:
        g, acc = instance.graph, instance.accelerator
        self.n, self.m = instance.n, instance.m
        self.dur: list[list[int]] = instance.duration.tolist()
        self.dmin: list[int] = instance.min_duration.tolist()
        self.tail: list[int] = g.tails(instance.min_duration).tolist()
        self.hops, self.succ = delay_lists(instance)
        self.sources: list[int] = (np.diff(g.pred_ptr) == 0).nonzero()[0].tolist()
        self.indeg: list[int] = np.diff(g.pred_ptr).tolist()
        self.work = sum(self.dmin)
        on = acc.has_comm_delays and self.m > 1
        self.order = _first_layer_order(instance, on) if symmetry else [[] for _ in range(self.m)]

    def budget(self, target: int) -> int:
        """The idle budget ``m·T − Σ_i min_k d_ik`` of the module docstring."""
        return self.m * target - self.work

    def run(
        self, target: int, key: list[float], node_limit: int, deadline: float
    ) -> tuple[Schedule | None, int]:
        """One depth-first run for makespan ≤ ``target``, candidates ordered by ``key`` (larger
        first, after least idle); the schedule (``None``: none exists in the searched space)
        and the nodes visited. Raises :class:`_Limit` at ``node_limit`` nodes or at the
        ``deadline`` (a ``time.perf_counter()`` reading)."""
        run = _Run(self, target, key, node_limit, deadline)
        return run.search(), run.nodes


def _first_layer_order(instance: SchedulingInstance, delays: bool) -> list[list[int]]:
    """Symmetry breaking for the μops that start at 0, one per core when no core may idle:
    per core ``k``, the cores ``a < k`` whose μop at 0 must have a lower index than ``k``'s.

    A permutation ``g`` of the cores that keeps every hop count
    (:meth:`~npusched.problem.scheduling.accelerator.Accelerator.symmetries`; every
    permutation without delays) maps a schedule to one of the same makespan. Keep the one whose
    vector ``v`` (``v[c]``: the μop that starts at 0 on ``c``) is lexicographically least
    among its images ``v∘g`` (the lex-leader; Crawford et al., KR 1996). The entries of ``v``
    are distinct, so ``v ≤ v∘g`` is decided at the first core ``a`` that ``g`` moves, and
    ``g(a) > a`` (the cores before ``a`` are fixed): ``v[a] < v[g(a)]``. This needs identical
    cores and latencies ≥ 1 (a zero-latency μop could share the start 0 with another)."""
    m = instance.m
    out: list[list[int]] = [[] for _ in range(m)]
    if m < 2 or not instance.identical_cores or (instance.min_duration < 1).any():
        return out
    if delays:
        for g in instance.accelerator.symmetries():
            moved = np.flatnonzero(g != np.arange(m))
            if moved.size and int(moved[0]) not in out[int(g[moved[0]])]:
                out[int(g[moved[0]])].append(int(moved[0]))
    else:  # every permutation: the μops at 0 ascend with the core
        for c in range(1, m):
            out[c].append(c - 1)
    return out


class _Run:
    """One run: the partial schedule, undone step by step on backtracking."""

    def __init__(
        self, tab: DepthFirst, target: int, key: list[float], limit: int, deadline: float
    ) -> None:
        self.tab, self.T, self.key, self.limit, self.deadline = tab, target, key, limit, deadline
        n, m = tab.n, tab.m
        self.free = [0] * m
        self.core = [-1] * n
        self.start = [0] * n
        self.indeg = list(tab.indeg)
        # A(j, q) from the producers placed so far (empty: none yet); complete once j is ready
        self.arr: list[list[int]] = [[] for _ in range(n)]
        for i in tab.sources:
            self.arr[i] = [0] * m
        self.ready = set(tab.sources)
        # the μop at 0 on each core, kept in lex-leader order when no core may idle
        self.first = [-1] * m
        self.ordered = tab.budget(target) == 0 and any(tab.order)
        self.nodes = 0

    def _options(self, budget: int) -> tuple[int, int, list[tuple[int, float, int, int]]]:
        """The branches at this node: core ``k``, its free time ``t``, and ``(idle, −key, μop,
        start)`` sorted; μop ``−1`` is ``k`` idling until ``start`` (the next time another core
        is free, or :data:`CLOSED`: ``k`` takes no more μops and idles until the target)."""
        tab, free = self.tab, self.free
        t = min(free)
        k = free.index(t)
        out: list[tuple[int, float, int, int]] = []
        if t >= CLOSED:
            return k, t, out
        lo = -1
        if t == 0 and self.ordered and self.first[k] < 0:
            lo = max((self.first[a] for a in tab.order[k]), default=-1)
        for j in self.ready:
            if j <= lo:
                continue
            s = max(t, self.arr[j][k])
            d = tab.dur[j][k]
            idle = s - t + d - tab.dmin[j]
            if idle <= budget and s + d - tab.dmin[j] + tab.tail[j] <= self.T:
                out.append((idle, -self.key[j], j, s))
        out.sort()
        later = [f for f in free if t < f < CLOSED]
        if later and min(later) - t <= budget:
            out.append((min(later) - t, 0.0, -1, min(later)))
        if self.T - t <= budget:
            out.append((self.T - t, 0.0, -1, CLOSED))
        return k, t, out

    def _place(self, j: int, k: int, s: int) -> tuple[list[int], list[list[int]], bool]:
        """Put ``j`` on ``k`` at ``s`` and forward its data to every consumer's ``A(c, q)``;
        the μops it made ready, the consumers' arrivals before, and whether every consumer
        can still end by the target (forward checking: ``c`` starts no earlier than
        ``min_q max(free(q), A(c, q))`` over the producers placed so far)."""
        tab, m, free = self.tab, self.tab.m, self.free
        self.ready.discard(j)
        self.core[j], self.start[j] = k, s
        if s == 0 and self.first[k] < 0:
            self.first[k] = j
        end = free[k] = s + tab.dur[j][k]
        row = tab.hops[k]
        newly: list[int] = []
        saved: list[list[int]] = []
        ok = True
        for c, per_hop, fixed in tab.succ[j]:
            old = self.arr[c]
            a = old[:] if old else [0] * m
            for q in range(m):
                v = end if q == k else end + row[q] * per_hop + fixed
                if v > a[q]:
                    a[q] = v
            self.arr[c] = a
            saved.append(old)
            self.indeg[c] -= 1
            if self.indeg[c] == 0:
                newly.append(c)
                self.ready.add(c)
            if ok:
                est = min(f if f > x else x for f, x in zip(free, a, strict=True))
                ok = est + tab.tail[c] <= self.T
        return newly, saved, ok

    def _unplace(self, j: int, k: int, t: int, newly: list[int], saved: list[list[int]]) -> None:
        for c in newly:
            self.ready.discard(c)
        for (c, _, _), old in zip(self.tab.succ[j], saved, strict=True):
            self.indeg[c] += 1
            self.arr[c] = old
        self.free[k] = t
        self.core[j] = -1
        if self.first[k] == j:
            self.first[k] = -1
        self.ready.add(j)

    def search(self) -> Schedule | None:
        """Iterative depth-first search over a stack of :class:`_Node`."""
        n, done = self.tab.n, 0
        stack = [_Node(*self._options(self.tab.budget(self.T)), self.tab.budget(self.T))]
        while stack:
            node = stack[-1]
            k, t = node.k, node.t
            if node.applied is not None:  # undo the branch tried last
                j, newly, saved = node.applied
                if j >= 0:
                    self._unplace(j, k, t, newly, saved)
                    done -= 1
                else:
                    self.free[k] = t
                node.applied = None
            if node.next >= len(node.opts):
                stack.pop()
                continue
            idle, _, j, s = node.opts[node.next]
            node.next += 1
            self.nodes += 1
            if self.nodes > self.limit or (
                not self.nodes & 1023 and time.perf_counter() > self.deadline
            ):
                raise _Limit
            if j < 0:
                self.free[k] = s
                newly, saved, ok = [], [], True
            else:
                newly, saved, ok = self._place(j, k, s)
                done += 1
            node.applied = (j, newly, saved)
            if done == n:
                return Schedule(np.array(self.start, dtype=np.int64),
                                np.array(self.core, dtype=np.int64))  # fmt: skip
            if ok:
                left = node.budget - idle
                stack.append(_Node(*self._options(left), left))
        return None


@dataclass(slots=True)
class _Node:
    """A node of the search: core ``k`` free at ``t``, its branches, the next one to try, the
    branch applied (its μop, ``−1`` for idling, the μops it made ready and its consumers'
    arrivals before) and the idle budget left at the node."""

    k: int
    t: int
    opts: list[tuple[int, float, int, int]]
    budget: int
    next: int = 0
    applied: tuple[int, list[int], list[list[int]]] | None = None


def depth_first_schedule(
    instance: SchedulingInstance,
    target: int | None = None,
    *,
    time_limit: float | None = 10.0,
    max_nodes: int | None = None,
    seed: int = 0,
    sigma: float = SIGMA,
    symmetry: bool = True,
) -> Outcome:
    """The restarted search of the module docstring for makespan ≤ ``target`` (default: the
    instance's lower bound), within ``time_limit`` seconds and ``max_nodes`` nodes in all
    (``None``: no limit; at least one is needed), with the symmetry breaking of
    :func:`_first_layer_order` unless ``symmetry`` is off. Repeatable for a ``seed`` and node
    limit (the time limit can cut it short).

    Raises
    ------
    ValueError
        Neither limit given, or ``target`` below 0.
    """
    if time_limit is None and max_nodes is None:
        raise ValueError("give a time limit or a number of nodes")
    target = instance.lower_bound() if target is None else target
    if target < 0:
        raise ValueError(f"the target makespan must be >= 0, got {target}")
    tab = DepthFirst(instance, symmetry)
    if tab.n == 0:
        return Outcome(Schedule(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)), 0, 0,
                       False)  # fmt: skip
    rng = np.random.default_rng(seed)
    base = [t + len(s) / (tab.n + 1) for t, s in zip(tab.tail, tab.succ, strict=True)]
    if tab.budget(target) < 0:
        return Outcome(None, 0, 0, True)
    deadline = float("inf") if time_limit is None else time.perf_counter() + time_limit
    limit, runs, nodes = FIRST_NODES * max(1, tab.n), 0, 0
    while True:
        if max_nodes is not None:
            limit = min(limit, max_nodes - nodes)
        if limit <= 0 or time.perf_counter() >= deadline:
            return Outcome(None, runs, nodes, False)
        key = base if runs == 0 else (np.array(base) * (1 + sigma * rng.standard_normal(tab.n))
                                      ).tolist()  # fmt: skip
        runs += 1
        try:
            found, used = tab.run(target, key, limit, deadline)
        except _Limit:
            nodes += limit
            limit = int(limit * GROWTH)
            continue
        nodes += used
        return Outcome(found, runs, nodes, found is None and tab.budget(target) == 0)
