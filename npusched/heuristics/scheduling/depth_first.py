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
- **Tails.** A μop that starts at ``s`` ends the schedule no earlier than ``s`` plus its tail, and
  a μop whose producers are all placed starts no earlier than ``min_q max(free(q), A(j, q))``;
  a branch is cut when either passes ``T``.
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

Where it works (``python -m npusched.bench.delays exact``): the Davidović–Crainic graphs with
known optimum (``npusched.bench.generate.known_optimum``) are built around a schedule without
idle time, so their optimum has a zero budget. On dense graphs with up to 8 processors the
first runs find it in under a second up to n = 500; on sparse ones (density 20 %), where the
cores must be packed to exact sums, and on 12–16 processors, where the first μops' cores fix
the hop distances of all that follows, the restarts mostly do not. ``lns`` runs it first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

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

    def __init__(self, instance: SchedulingInstance) -> None:
        g, acc = instance.graph, instance.accelerator
        self.n, self.m = instance.n, instance.m
        self.dur: list[list[int]] = instance.duration.tolist()
        self.dmin: list[int] = instance.min_duration.tolist()
        self.tail: list[int] = g.tails(instance.min_duration).tolist()
        per_hop, fixed = acc.delay_terms(g.bytes)
        on = acc.has_comm_delays and self.m > 1
        self.hops: list[list[int]] = (
            np.asarray(acc.hops()).tolist() if on else [[0] * self.m for _ in range(self.m)]
        )
        self.succ: list[list[int]] = [[] for _ in range(self.n)]
        self.pred: list[list[tuple[int, int, int]]] = [[] for _ in range(self.n)]
        for s, d, a, b in zip(g.src.tolist(), g.dst.tolist(), per_hop.tolist(), fixed.tolist(),
                              strict=True):  # fmt: skip
            self.succ[s].append(d)
            self.pred[d].append((s, a, b))
        self.work = sum(self.dmin)

    def budget(self, target: int) -> int:
        """The idle budget ``m·T − Σ_i min_k d_ik`` of the module docstring."""
        return self.m * target - self.work

    def run(
        self, target: int, key: list[float], node_limit: int, deadline: float
    ) -> tuple[Schedule | None, int]:
        """One depth-first run for makespan ≤ ``target``, candidates ordered by ``key`` (larger
        first, after least idle); the schedule (``None``: none exists in the searched space)
        and the nodes visited. Raises :class:`_Limit` at ``node_limit`` nodes or at the
        ``deadline`` (a :func:`time.perf_counter` reading)."""
        run = _Run(self, target, key, node_limit, deadline)
        return run.search(), run.nodes


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
        self.indeg = [len(p) for p in tab.pred]
        self.arr: list[list[int]] = [[0] * m if not tab.pred[i] else [] for i in range(n)]
        self.ready = {i for i in range(n) if not tab.pred[i]}
        self.nodes = 0

    def _arrivals(self, j: int) -> list[int]:
        """``A(j, q)`` on every core ``q``: the last datum's arrival."""
        m, hops, a = self.tab.m, self.tab.hops, [0] * self.tab.m
        for i, per_hop, fixed in self.tab.pred[j]:
            ci, ei = self.core[i], self.start[i] + self.tab.dur[i][self.core[i]]
            row = hops[ci]
            for q in range(m):
                v = ei if q == ci else ei + row[q] * per_hop + fixed
                if v > a[q]:
                    a[q] = v
        return a

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
        for j in self.ready:
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

    def _place(self, j: int, k: int, s: int) -> tuple[list[int], bool]:
        """Put ``j`` on ``k`` at ``s``; the μops it made ready and whether they can all still
        end by the target."""
        tab = self.tab
        self.ready.discard(j)
        self.core[j], self.start[j] = k, s
        self.free[k] = s + tab.dur[j][k]
        newly: list[int] = []
        ok = True
        for c in tab.succ[j]:
            self.indeg[c] -= 1
            if self.indeg[c] == 0:
                a = self._arrivals(c)
                self.arr[c] = a
                newly.append(c)
                self.ready.add(c)
                est = min(max(f, x) for f, x in zip(self.free, a, strict=True))
                ok = ok and est + tab.tail[c] <= self.T
        return newly, ok

    def _unplace(self, j: int, k: int, t: int, newly: list[int]) -> None:
        for c in newly:
            self.ready.discard(c)
        for c in self.tab.succ[j]:
            self.indeg[c] += 1
        self.free[k] = t
        self.core[j] = -1
        self.ready.add(j)

    def search(self) -> Schedule | None:
        """Iterative depth-first search over a stack of :class:`_Node`."""
        n, done = self.tab.n, 0
        stack = [_Node(*self._options(self.tab.budget(self.T)), self.tab.budget(self.T))]
        while stack:
            node = stack[-1]
            k, t = node.k, node.t
            if node.applied is not None:  # undo the branch tried last
                j, newly = node.applied
                if j >= 0:
                    self._unplace(j, k, t, newly)
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
                newly, ok = [], True
            else:
                newly, ok = self._place(j, k, s)
                done += 1
            node.applied = (j, newly)
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
    branch applied (its μop, ``−1`` for idling, and the μops it made ready) and the idle
    budget left at the node."""

    k: int
    t: int
    opts: list[tuple[int, float, int, int]]
    budget: int
    next: int = 0
    applied: tuple[int, list[int]] | None = None


def depth_first_schedule(
    instance: SchedulingInstance,
    target: int | None = None,
    *,
    time_limit: float | None = 10.0,
    max_nodes: int | None = None,
    seed: int = 0,
    sigma: float = SIGMA,
) -> Outcome:
    """The restarted search of the module docstring for makespan ≤ ``target`` (default: the
    instance's lower bound), within ``time_limit`` seconds and ``max_nodes`` nodes in all
    (``None``: no limit; at least one is needed). Repeatable for a ``seed`` and node limit
    (the time limit can cut it short).

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
    tab = DepthFirst(instance)
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
