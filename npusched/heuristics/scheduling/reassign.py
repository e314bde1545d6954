"""Search over the core assignment under transfer delays: simulated annealing on which core runs
each μop, every assignment decoded by a list that only orders (``reassign``).

Why the assignment
------------------
On task graphs whose transfers take as long as the work (Davidović and Crainic's MSPCD graphs,
``docs/results_delays.md``), the one-pass lists (ETF, the priority list, DLS) stay 40–90 % above
the optimum, and giving them the optimal schedule's *order* does not help: the choice of core is
what they miss. The converse mostly holds: given the hidden optimal schedule's *assignment*, the
decoder below finds a schedule of the optimal length on all 48 generated graphs of density 50 and
80 with p ≥ 4 (n = 50, p ∈ {4, 6, 8, 9, 12, 16}, seeds 0–3; also at n = 100–500, p ∈ {4, 9, 16},
density 50, seed 1). It misses on sparse graphs, where many ready μops compete and the order
matters: 18 of the 28 of density 20 and 3 of the 8 with p = 2, by up to 34 %. So the search runs
over assignments and leaves the order to the decoder.

The decoder (:class:`Decoder`)
------------------------------
Given a core per μop, place at each step the ready μop (all producers placed) that can start
earliest on its own core, at ``max(free(k), arrival)``, where ``arrival`` is the latest producer's
end plus :meth:`~npusched.problem.scheduling.accelerator.Accelerator.comm_delay` of the hops
between the two cores and the edge's bytes (0 on one core); ties go to the higher static level
(:func:`~npusched.heuristics.scheduling.dls.static_level`), then the lower index. It is
earliest-task-first with the core fixed (Hwang et al. 1989 choose the core too). Per core two
heaps, as in :mod:`~npusched.heuristics.scheduling.dls`: μops whose data has arrived by the
core's free time (by level) and μops still waiting (by arrival); each step reads the top of
``m`` cores. One decode costs O(E + n·m + n log n).

The search (:func:`reassign_schedule`)
--------------------------------------
Simulated annealing (Kirkpatrick et al. 1983) from a given assignment (the best list schedule's),
with three moves, drawn with equal probability:

- *zero an edge*: a μop that waited for its data moves to the core of the producer whose data
  came last, or that producer moves to the μop's core (the edge-zeroing step of clustering
  heuristics such as Yang and Gerasoulis's DSC, 1994, taken at random instead of greedily);
- *move*: a random μop to a random other core;
- *swap*: two random μops on different cores exchange cores.

The cost is the makespan plus ``1/n`` of the mean μop end, so among schedules of one makespan
the one that ends its work earlier wins (a plateau otherwise). A worse cost is taken with
probability ``exp(−Δ / (T · cost))``; ``T`` falls geometrically from :data:`T_START` to
:data:`T_END` over the time limit. The search stops at the instance's lower bound (then the
schedule is optimal), at the time limit, or after ``max_moves``; the best schedule found is
returned. Deterministic for a given ``seed`` and number of moves (the time limit can cut the
number of moves).
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

from npusched.heuristics.scheduling.dls import static_level
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule

T_START = 0.001
"""Initial temperature: a relative cost increase of 0.1 % is taken with probability 1/e."""
T_END = 0.00005
"""Final temperature, reached at the time limit."""


def delay_lists(
    instance: SchedulingInstance,
) -> tuple[list[list[int]], list[list[tuple[int, int, int]]]]:
    """The hops between every two cores (zeros without transfer delays) and each μop's
    consumers with their edge's delay terms ``(consumer, per_hop, fixed)``: a transfer of
    ``h > 0`` hops takes ``h · per_hop + fixed`` (:meth:`Accelerator.delay_terms
    <npusched.problem.scheduling.accelerator.Accelerator.delay_terms>`, the linear form
    ``comm_delay`` evaluates). Python lists, for the searches that read them edge by edge."""
    g, acc, m = instance.graph, instance.accelerator, instance.m
    per_hop, fixed = acc.delay_terms(g.bytes)
    on = acc.has_comm_delays and m > 1
    hops: list[list[int]] = np.asarray(acc.hops()).tolist() if on else [[0] * m] * m
    by_src = np.argsort(g.src, kind="stable")
    dst, ph, fx = g.dst[by_src].tolist(), per_hop[by_src].tolist(), fixed[by_src].tolist()
    ptr = g.succ_ptr.tolist()
    succ = [list(zip(dst[a:b], ph[a:b], fx[a:b], strict=True))
            for a, b in zip(ptr[:-1], ptr[1:], strict=True)]  # fmt: skip
    return hops, succ


class Decoder:
    """The list decoder of the module docstring for one instance: its tables are built once and
    every :meth:`decode` reads them."""

    def __init__(self, instance: SchedulingInstance) -> None:
        g = instance.graph
        self.n, self.m = instance.n, instance.m
        self.dur: list[list[int]] = instance.duration.tolist()
        self.level: list[float] = static_level(instance).tolist()
        self.hops, self.succ = delay_lists(instance)
        self.indeg: list[int] = np.diff(g.pred_ptr).tolist()

    def decode(self, core: list[int]) -> tuple[list[int], list[int], list[int]]:
        """Start, end and the last-arriving producer (``-1``: none, or the core was later than
        the data) of each μop under the assignment ``core``."""
        n, m, hops, level, dur = self.n, self.m, self.hops, self.level, self.dur
        push, pop = heapq.heappush, heapq.heappop
        start, end, arr, last = [0] * n, [0] * n, [0] * n, [-1] * n
        indeg = self.indeg[:]
        free = [0] * m
        waiting: list[list[tuple[int, float, int]]] = [[] for _ in range(m)]
        arrived: list[list[tuple[float, int]]] = [[] for _ in range(m)]
        for i in range(n):
            if indeg[i] == 0:
                push(waiting[core[i]], (0, -level[i], i))
        for _ in range(n):
            best: tuple[int, float, int] | None = None
            for k in range(m):
                w, a = waiting[k], arrived[k]
                while w and w[0][0] <= free[k]:
                    _, lv, i = pop(w)
                    push(a, (lv, i))
                if a:
                    cand = (free[k], a[0][0], a[0][1])
                elif w:
                    cand = w[0]
                else:
                    continue
                if best is None or cand < best:
                    best = cand
            assert best is not None  # a DAG: some μop is ready
            t, _, i = best
            k = core[i]
            if arrived[k] and arrived[k][0][1] == i:
                pop(arrived[k])
            else:
                pop(waiting[k])
            start[i], end[i] = t, t + dur[i][k]
            free[k] = end[i]
            for j, ph, fx in self.succ[i]:
                c = core[j]
                ready = end[i] + (hops[k][c] * ph + fx if c != k else 0)
                if ready > arr[j]:
                    arr[j], last[j] = ready, i
                indeg[j] -= 1
                if indeg[j] == 0:
                    push(waiting[c], (arr[j], -level[j], j))
        # the producer whose data came last over the NoC, where the μop waited for it
        for i in range(n):
            p = last[i]
            if p >= 0 and (start[i] != arr[i] or core[p] == core[i]):
                last[i] = -1
        return start, end, last


def _cost(end: list[int]) -> float:
    """Makespan plus ``1/n`` of the mean end (module docstring)."""
    return max(end) + sum(end) / (len(end) * len(end))


def reassign_schedule(
    instance: SchedulingInstance,
    start: Schedule,
    *,
    time_limit: float | None = 10.0,
    max_moves: int | None = None,
    seed: int = 0,
    bound: int | None = None,
) -> tuple[Schedule, int]:
    """The annealing of the module docstring from the assignment of the schedule ``start``; the
    best schedule, never longer than ``start`` (which is returned when nothing decoded is
    shorter: the decoder may order ``start``'s own assignment worse than ``start`` does), and
    the number of moves made. It stops at ``bound`` (default: the instance's lower bound),
    after ``time_limit`` seconds or after ``max_moves`` (``None``: no limit; at least one of
    the two must be given).

    Raises
    ------
    ValueError
        ``start``'s cores have the wrong shape or an index outside the cores, or neither limit
        is given.
    """
    n, m = instance.n, instance.m
    cur = np.asarray(start.core, dtype=np.int64)
    if cur.shape != (n,) or (cur < 0).any() or (cur >= m).any():
        raise ValueError(f"the start must give one core index in 0..{m - 1} per μop ({n})")
    if time_limit is None and max_moves is None:
        raise ValueError("give a time limit or a number of moves")
    lb = instance.lower_bound() if bound is None else bound
    if start.makespan(instance) <= lb:
        return start, 0
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    dec = Decoder(instance)
    assign = cur.tolist()
    begin, end, last = dec.decode(assign)
    cost = _cost(end)
    best = (max(end), cost, assign[:], begin)
    moves = 0
    while best[0] > lb and m > 1 and (max_moves is None or moves < max_moves):
        elapsed = time.perf_counter() - t0
        if time_limit is not None and elapsed >= time_limit:
            break
        frac = elapsed / time_limit if time_limit else moves / max(1, max_moves or 1)
        temp = T_START * (T_END / T_START) ** min(1.0, frac)
        trial = _move(assign, last, m, rng)
        moves += 1
        s2, e2, l2 = dec.decode(trial)
        c2 = _cost(e2)
        if c2 <= cost or rng.random() < math.exp(-(c2 - cost) / (temp * cost)):
            assign, begin, end, last, cost = trial, s2, e2, l2, c2
            if (max(end), cost) < best[:2]:
                best = (max(end), cost, assign[:], begin)
    if start.makespan(instance) <= best[0]:
        return start, moves
    return Schedule(np.array(best[3], dtype=np.int64), np.array(best[2], dtype=np.int64)), moves


def _move(assign: list[int], last: list[int], m: int, rng: np.random.Generator) -> list[int]:
    """One move of the module docstring on a copy of ``assign``."""
    out = assign[:]
    n = len(out)
    kind = int(rng.integers(3))
    waited = [i for i in range(n) if last[i] >= 0] if kind == 0 else []
    if waited:
        i = waited[int(rng.integers(len(waited)))]
        p = last[i]
        if rng.random() < 0.5:
            out[i] = out[p]
        else:
            out[p] = out[i]
    elif kind == 2 and n > 1:
        i, j = (int(x) for x in rng.choice(n, size=2, replace=False))
        out[i], out[j] = out[j], out[i]
        if out[i] == out[j]:  # same core: move one instead
            out[i] = (out[i] + 1 + int(rng.integers(m - 1))) % m
    else:
        i = int(rng.integers(n))
        out[i] = (out[i] + 1 + int(rng.integers(m - 1))) % m
    return out
