"""``flexer-beam``: Flexer's out-of-order scheduler with lookahead over operation sets (issue 25,
item 3). Not in the paper; it keeps every part of Algorithm 1 but the choice of the next set.

Flexer's ``GetSchedule`` (Algorithm 1, lines 12–32,
:func:`~npusched.heuristics.flexer.ooo.ooo_schedule`) issues, at each step, the one set of the
§4.3 priority. This search keeps a *beam* of ``width``
partial schedules instead. At each step every branch of the beam is extended by each of its
``width`` first-priority sets (:func:`~npusched.heuristics.flexer.ooo.ranked_sets`: the same
candidates, pruning by dataflow map and ranking as the greedy); each extension is issued on its
own copy of the engine (:meth:`~npusched.heuristics.flexer.engine.Engine.fork`: buffer, DRAM
channel and NPUs, so the memory manager of §4.1 runs in the loop), then looked ahead ``depth −
1`` further steps with the greedy's choices, and scored by the paper's metric (Algorithm 1,
line 5) as far as it is known: a lower bound on the final latency
(:meth:`~npusched.heuristics.flexer.engine.Engine.latency_bound`) times the bytes every schedule
moves plus the bytes moved beyond them so far (a finished look-ahead: its exact metric). The
``width`` best extensions form the next beam.

**Never worse than the greedy, by construction.** The first-priority set is the greedy's
choice, and the branch that has taken it at every step (the greedy's own schedule) always keeps
its place in the beam, so the best finished schedule is at most the greedy's by the metric
(unless ``stop_above`` prunes the greedy's branch, which then cannot beat the search's best).

Cost per step: ``width²`` engine copies and issues, plus ``width² (depth − 1)`` look-ahead
issues, against one issue for the greedy.
"""

from __future__ import annotations

from dataclasses import dataclass

from npusched.heuristics.flexer.engine import Engine, Pruned
from npusched.heuristics.flexer.ooo import NoFit, new_engine, ranked_sets, ready_after
from npusched.problem.flexer.layer import FlexerSchedule, TiledConv

PRESCREEN = 2
"""Of a step's ``width²`` children, the ``PRESCREEN · width`` best by the metric known right
after their set (and the greedy's child) are looked ahead; the look-ahead is the beam's cost."""


@dataclass
class _Branch:
    """A partial schedule: its engine, its ready queue and whether every set it issued was the
    greedy's choice."""

    e: Engine
    ready: list[int]
    greedy: bool


def known_metric(e: Engine, metric: str, lat_floor: float = 0.0) -> float:
    """The metric as far as a partial schedule knows it (module notes): latency bound × (bytes
    every schedule moves + bytes moved beyond them so far); ``lat_floor`` raises the bound."""
    lat = max(lat_floor, e.latency_bound())
    nbytes = float(e.once + e.extra_bytes)
    return {"latency*bytes": lat * nbytes, "latency": lat, "bytes": nbytes}[metric]


def beam_schedule(
    problem: TiledConv,
    n_npus: int,
    capacity: int,
    bandwidth: float,
    *,
    width: int = 8,
    depth: int = 3,
    dataflow: str = "OS",
    priority: str = "default",
    mem_policy: str = "flexer",
    window: int | None = None,
    metric: str = "latency*bytes",
    stop_above: tuple[float, float] | None = None,
    prefetch: bool = False,
    deadline: float | None = None,
) -> FlexerSchedule:
    """The best schedule of a beam of ``width`` branches looking ``depth`` sets ahead (module
    notes); the other parameters as in :func:`~npusched.heuristics.flexer.ooo.ooo_schedule`.
    ``width = depth = 1`` is the greedy's schedule.

    Raises
    ------
    ValueError
        ``width`` or ``depth`` below 1, or unknown option names.
    NoFit
        When no branch can place the operands of its next set.
    Pruned
        When every branch reached ``stop_above``.
    TimeUp
        Past ``deadline`` (a ``time.time()``).
    """
    if width < 1 or depth < 1:
        raise ValueError(f"beam width and depth must be >= 1, got {width} and {depth}")
    e, ready, rank = new_engine(
        problem, n_npus, capacity, bandwidth, dataflow=dataflow, priority=priority,
        mem_policy=mem_policy, prefetch=prefetch,
    )  # fmt: skip
    w = window or max(8, 3 * n_npus)
    floor = 0.0 if stop_above is None else stop_above[0]
    name = f"beam{width}x{depth}/{dataflow}/{priority}/{mem_policy}"

    def sets(b: _Branch, top: int) -> list[list[int]]:
        return ranked_sets(b.e, b.ready[:w], min(n_npus, len(b.ready)), priority, top)

    def issue(b: _Branch, ops: list[int]) -> None:
        b.e.issue(ops)
        b.ready = ready_after(problem, b.ready, ops, rank)

    def score(b: _Branch) -> float:
        look = _Branch(b.e.fork(), b.ready, False) if depth > 1 and b.ready else b
        for _ in range(depth - 1):
            if not look.ready:
                break
            issue(look, sets(look, 1)[0])
        if not look.ready:
            return look.e.schedule(name).metric(metric)
        return known_metric(look.e, metric, floor)

    beam = [_Branch(e, ready, True)]
    done: list[tuple[float, bool, int, FlexerSchedule]] = []
    pruned = False
    while beam:
        kids: list[tuple[float, bool, int, _Branch]] = []
        for b in beam:
            try:
                chosen = sets(b, width)
            except NoFit:
                continue
            for r, ops in enumerate(chosen):
                c = _Branch(b.e.fork(), b.ready, b.greedy and r == 0)
                try:  # a set whose operands do not fit ends its branch, not the search
                    issue(c, ops)
                    c.e.check(stop_above, deadline)
                    kids.append((known_metric(c.e, metric, floor), not c.greedy, len(kids), c))
                except Pruned:
                    pruned = True
                except NoFit:
                    continue
        kids.sort(key=lambda k: k[:3])
        ahead = kids[: PRESCREEN * width] + [k for k in kids[PRESCREEN * width :] if k[3].greedy]
        kids = []
        for k in ahead:
            try:
                kids.append((score(k[3]), *k[1:]))
            except NoFit:
                continue
        kids.sort(key=lambda k: k[:3])
        keep = kids[:width]
        greedy = next((k for k in kids if k[3].greedy), None)
        if greedy is not None and greedy not in keep:
            keep[-1] = greedy
        beam = [k[3] for k in keep if k[3].ready]
        for k in keep:
            if not k[3].ready:
                s = k[3].e.schedule(name)
                done.append((s.metric(metric), not k[3].greedy, len(done), s))
    if not done and pruned:
        raise Pruned(f"{problem.name}: every branch reached the search's best")
    if not done:
        raise NoFit(f"{problem.name}: no branch can place its next set")
    return min(done, key=lambda d: d[:3])[3]
