"""Routed instances (Stream's hardware model) in :func:`npusched.solve`: their warm starts, with
and without memory capacities, and ``joint``'s CP-SAT model of them (``lns`` on that model:
:mod:`npusched.methods.lns`)."""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from npusched.common.executor import share_memory
from npusched.common.terminate import die_with_parent
from npusched.formulations.scheduling.routed import RoutedModel
from npusched.formulations.scheduling.routed_spill import SpillModel, segments_for
from npusched.heuristics.placement import swap_deltas
from npusched.heuristics.scheduling.list_scheduling import Priority, list_schedule
from npusched.heuristics.scheduling.memory_list import (
    Abandoned,
    Limit,
    MemoryDeadlock,
    memory_list_schedule,
)
from npusched.heuristics.scheduling.routed_list import OPEN, routed_list_schedule
from npusched.methods.fit import fit_allocation
from npusched.methods.registry import Context, bounded
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.problem.scheduling.routed_relax import (
    Interchangeable,
    interchangeable,
    relays_dominated,
)
from npusched.solvers.result import Result, Status, TracePoint

ALLOCATIONS = ("weights", "routed", "layers", "stages")
"""The allocations :func:`memory_list_best` tries on a free allocation (:func:`list_cores`), in
this order, and ``compute`` last where the instance forwards DRAM tensors
(:attr:`~npusched.problem.scheduling.routed.RoutedInstance.forward`) and they fit on chip
together (:func:`spread_fits`). Without forwarding
``compute`` is not among them: on the Stream bench it was the shortest only on the 5-CN SwiGLU
1 × 16 × 32 (by 1 and 4 cycles on two accelerators), and it is several times longer where
memories are tight (it spreads a weight's readers over the cores, each fetching it from DRAM).
With forwarding those readers share one fetch: the SwiGLU 64 × 128 × 256 on ``simba``, 39 788
cycles on it against 70 551 on one core per weight tile, the shortest of the others (one
run)."""


def list_cores(instance: RoutedInstance, how: str, until: float | None = None) -> np.ndarray:
    """A core per μop (:data:`ALLOCATIONS`, and ``compute``): ``compute``, the priority list's
    on the instance's compute-only view (earliest finish with transfer delays, no contention,
    no memory); ``routed``, the routed list's
    (:func:`~npusched.heuristics.scheduling.routed_list.routed_list_schedule`: transfers booked
    on contended links and DRAM tensors fetched over the off-chip port, so a core that already
    holds a weight finishes its next reader first); ``layers``, one core per layer as
    Stream allocates (each layer's weights fetched once), the layers by decreasing work each
    to the core where the load it ends with is least (LPT), among the cores all its μops may
    use; ``weights``, one core per weight tile: a layer's μops that share a DRAM operand
    (:func:`shared_operand`) on one core, each such group in μop order to the core where the
    load it ends with is least. Under ``weights`` a GEMM's weight tile is fetched once while
    its row blocks pass and the tiles are dealt over the cores: the LLaMA MLP's list on
    ``tpu_like_quad_core`` 104 430 887 cycles, against 125 787 252 on the routed list's,
    136 720 664 on one core per layer and 241 681 239 on the compute-only list's (one run,
    without forwarding; with it 88 427 631, 107 653 251, 136 232 024 and 167 822 246);
    ``stages``, a pipeline: the layers in order cut into about as many stages of equal work as
    the cores can run at once (:func:`stages`), each stage to the core where the load it ends
    with is least, so consecutive layers overlap on different cores where one core per layer
    leaves most cores idle (a network with few heavy layers) and tiles of one layer need not
    wait for each other's core."""
    if how == "compute":
        return list_schedule(instance.base, "blevel").core
    if how == "routed":  # (the one that takes a list: TimeoutError past ``until``)
        return routed_list_schedule(instance, until=until).core
    if how not in ("layers", "weights", "stages") or how != "weights" and instance.layer is None:
        raise ValueError(f"no {how!r} allocation for {instance.name}")
    layer = instance.layer if instance.layer is not None else np.zeros(instance.n, np.int64)
    if how == "stages":
        group = stages(instance)
        return _least_loaded(instance, group, np.arange(group.max() + 1), "stage")
    if how == "layers":
        group = np.unique(layer, return_inverse=True)[1]
        work = np.zeros((group.max() + 1, instance.m))
        np.add.at(work, group, instance.duration)
        return _least_loaded(instance, group, np.argsort(-work.min(axis=1), kind="stable"),
                             "layer")  # fmt: skip
    tile = shared_operand(instance)
    tile = np.where(tile >= 0, tile, len(instance.dram) + np.arange(instance.n))
    _, first, group = np.unique(layer * (len(instance.dram) + instance.n) + tile,
                                return_index=True, return_inverse=True)  # fmt: skip
    return _least_loaded(instance, group, np.argsort(first), "weight tile")


def stages(instance: RoutedInstance) -> np.ndarray:
    r"""A pipeline stage per μop: the layers, in order, cut into at most :math:`k` stages of
    consecutive layers, :math:`k = \operatorname{round}(\sum_c v_c)` the cores' speed (core
    :math:`c`'s :math:`v_c`: the mean over the μops of :math:`\min_{c'} d_{ic'} / d_{ic}` where
    it may run μop :math:`i`, 0 elsewhere), each stage's work (its μops' least latencies) at
    most the least cap :math:`T` that allows (bisection). A layer of more work than the share
    :math:`W / k` is a stage of its own cut into :math:`\min(\lceil w_l k / W \rceil, n_l)`
    parts, its μops dealt over them in turn, so a heavy layer's tiles run on several cores."""
    assert instance.layer is not None
    _, layer = np.unique(instance.layer, return_inverse=True)
    allowed = np.where(instance.mask, instance.duration, np.inf)
    least = allowed.min(axis=1)
    ratio = np.divide(least[:, None], allowed, out=np.ones_like(allowed), where=allowed > 0)
    speed = np.where(instance.mask, ratio, 0.0).mean(axis=0)  # (a μop of no work: 1)
    k = max(1, round(float(speed.sum())))
    work = np.bincount(layer, weights=least)
    count = np.bincount(layer)
    share = float(work.sum()) / k
    parts = np.ones(work.size, dtype=np.int64)
    heavy = work > share
    parts[heavy] = np.minimum(np.ceil(work[heavy] / share), count[heavy])
    low = float(work[parts == 1].max(initial=0.0))
    high = float(work.sum())
    for _ in range(48):  # the least cap T that packs the layers into k stages
        mid = (low + high) / 2
        low, high = (low, mid) if _pack(work, parts, mid)[1] <= k else (mid, high)
    first = np.asarray(_pack(work, parts, high)[0])
    order = np.argsort(layer, kind="stable")
    rank = np.empty(instance.n, dtype=np.int64)
    rank[order] = np.arange(instance.n) - np.r_[0, np.cumsum(count)[:-1]][layer[order]]
    return np.asarray(first[layer] + rank % parts[layer])


def _pack(work: np.ndarray, parts: np.ndarray, cap: float) -> tuple[list[int], int]:
    """Each layer's first stage and the number of stages, consecutive layers filling a stage up
    to ``cap`` (a layer of more is a stage alone), a layer of ``parts`` > 1 taking that many
    stages of its own."""
    first, stage, load = [], 0, 0.0
    for w, p in zip(work.tolist(), parts.tolist(), strict=True):
        if p > 1 or load > 0 and load + w > cap:
            stage, load = stage + (load > 0), 0.0
        first.append(stage)
        stage, load = (stage + p, 0.0) if p > 1 else (stage, load + w)
    return first, stage + (load > 0)


def spread_fits(instance: RoutedInstance) -> bool:
    """Whether the DRAM tensors fit in the cores' memories together (or no memory is set):
    where they do not, the ``compute`` allocation, which spreads each weight's readers over
    the cores, keeps copies of every weight on every core and evicts them over and over (the
    LLaMA MLP on ``tpu_like_quad_core``, 354 MB of weights: 167 822 246 cycles on it against
    88 427 631 on one core per weight tile, one run)."""
    if instance.capacity is None:
        return True
    return sum(int(t.data) for t in instance.dram) <= int(instance.capacity.sum())


def shared_operand(instance: RoutedInstance) -> np.ndarray:
    """Per μop, the DRAM tensor it shares at the most bytes per reader (the tensor's bytes over
    its readers: the copies that spreading those readers over cores adds, per reader), ``-1``
    for a μop that reads none. Of a GEMM's CN, its weight tile (a few row blocks read it) and
    not its input rows (every column block reads them)."""
    key = np.full(instance.n, -1, dtype=np.int64)
    best = np.zeros(instance.n)
    for k, tensor in enumerate(instance.dram):
        readers = tensor.consumers
        share = tensor.data / max(readers.size, 1)
        more = readers[share > best[readers]]
        key[more], best[more] = k, share
    return key


def _least_loaded(instance: RoutedInstance, group: np.ndarray, order: np.ndarray, what: str
                  ) -> np.ndarray:  # fmt: skip
    """A core per μop: the groups of μops (``group[i]``: μop ``i``'s) in ``order``, each to
    the core, among those all its μops may use and whose memory holds each one's operands
    (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.operand_data` alone on a core;
    where some core does), where the load it ends with is least (the group's work at each
    core's latencies)."""
    count = np.bincount(group)
    members = np.argsort(group, kind="stable")
    starts = np.r_[0, np.cumsum(count)[:-1]]
    work = np.add.reduceat(instance.duration[members], starts).tolist()
    ok: np.ndarray = instance.mask
    if instance.capacity is not None:
        alone = instance.operand_data()
        held = np.asarray(ok & (alone[:, None] <= instance.capacity[None, :]))
        some = np.asarray(held.any(axis=1))
        ok = np.where(some[:, None], held, ok)  # else the fit says what overflows
    fine = np.logical_and.reduceat(ok[members], starts).tolist()
    load = [0.0] * instance.m
    at = np.zeros(group.size, dtype=np.int64)
    for k in order.tolist():
        ends = [load[c] + w if can else np.inf
                for c, (w, can) in enumerate(zip(work[k], fine[k], strict=True))]  # fmt: skip
        best = min(range(instance.m), key=ends.__getitem__)
        if ends[best] == np.inf:
            raise ValueError(f"no core may run every μop of a {what} "
                             f"(μop {int(members[starts[k]])})")  # fmt: skip
        at[k], load[best] = best, ends[best]
    return at[group]


def with_allocation(instance: RoutedInstance, how: str = "compute", until: float | None = None
                    ) -> RoutedInstance:  # fmt: skip
    """``instance`` with a preferred allocation for the memory-aware list, which needs one: the
    instance's own (Stream's), else :func:`list_cores` ``how`` (``until``: a
    ``perf_counter`` time past which the routed list's raises ``TimeoutError``), fitted to the
    memories (:func:`fit_allocation`). A partition's allocation is free."""
    if instance.fixed_allocation or instance.preferred is not None:
        return instance
    core = list_cores(instance, how, until)
    if not instance.mask[np.arange(instance.n), core].all():
        raise ValueError("the list's allocation leaves a μop's allowed cores; give a preferred one")
    return dataclasses.replace(instance, preferred=fit_allocation(instance, core))


def memory_list_best(instance: RoutedInstance, priority: str | tuple[str, ...],
                     threads: int = 1, deadline: float | None = None, stop: int | None = None,
                     strict: bool = False) -> tuple[RoutedSchedule, str]:  # fmt: skip
    """The memory-aware list on the instance's allocation or, on a free one, the shortest of
    its schedules on the :data:`ALLOCATIONS` (:func:`list_cores`; among equals the first), for
    each of the priorities ``priority`` names (Stream's ``latency`` and ``memory``, and
    ``critical``, :func:`memory_priority`: none is shorter on every pair, and a list of one is
    a fraction of the time the rest takes), and
    the priority of the one kept. The
    compute-only list spreads a layer's μops over every core, each fetching the layer's
    weights again; where the off-chip port is narrow (Stream's ``simba``: 8 bytes a cycle for
    36 cores) the allocations that keep weights where they are (one core per weight tile, the
    routed list's, one core per layer) are several times shorter. A list that becomes longer
    than the shortest so far is abandoned as it does
    (:class:`~npusched.heuristics.scheduling.memory_list.Abandoned`): the same answer, sooner.
    With ``threads`` > 1 the lists run in that many forked processes, which share the
    shortest so far (:func:`_in_parallel`): the same schedule, as a list is abandoned only
    once it is longer than another. In a daemonic process (a Dask worker), which may not
    start processes, they run one after the other. The first priority's lists always run to
    the end; the later ones stop at ``deadline`` (a ``time.perf_counter()`` value: ``solve``'s
    time limit), so a time limit bounds what the second priority adds. With ``stop``, every
    list is abandoned once it is longer than that too (a schedule found elsewhere, such as
    another cut's: :func:`~npusched.search.cuts.search_cut`), and with ``strict`` the first
    priority's lists stop at ``deadline`` too, all but the first allocation's where no
    ``stop`` is given (so that one list always ends with a schedule).

    Raises
    ------
    MemoryDeadlock
        No allocation fits the memories, even by evicting, or none can be fitted to them
        (:func:`fit_allocation`): the first one's reason.
    Abandoned
        With ``stop`` or ``strict``: every list became longer than ``stop`` or ran out of
        time.
    """
    priorities = (priority,) if isinstance(priority, str) else tuple(priority)
    if instance.fixed_allocation or instance.preferred is not None:
        hows: tuple[str, ...] = ("",)  # (the instance's own)
    else:
        hows = ALLOCATIONS if instance.layer is not None else ALLOCATIONS[:2]
        if instance.forward and spread_fits(instance):  # a weight's readers share one fetch
            hows += ("compute",)
    first = (hows[0], priorities[0]) if stop is None else None  # (with strict: still a list)
    runs = [(how, p, None if p == priorities[0] and (not strict or (how, p) == first)
             else deadline) for p in priorities for how in hows]  # fmt: skip
    if (threads > 1 and len(runs) > 1 and "fork" in multiprocessing.get_all_start_methods()
            and not multiprocessing.current_process().daemon):  # (a Dask worker may not fork)
        outcomes = _in_parallel(instance, runs, threads, stop)
    else:
        outcomes, shortest = [], stop
        for how, p, until in runs:
            outcomes.append(_allocation_list(instance, how, p, shortest, until))
            if isinstance(outcomes[-1], RoutedSchedule):
                ms = outcomes[-1].makespan(instance)
                shortest = ms if shortest is None else min(shortest, ms)
    done = [(s, p) for s, (_, p, _) in zip(outcomes, runs, strict=True)
            if isinstance(s, RoutedSchedule)]  # fmt: skip
    if not done:
        if all(isinstance(e, Abandoned) for e in outcomes):
            raise Abandoned(f"every list became longer than {stop} or ran out of time")
        failed = next(e for e in outcomes if not isinstance(e, Abandoned | RoutedSchedule))
        raise MemoryDeadlock(f"no allocation of the list fits the memories: {failed}")
    return min(done, key=lambda d: d[0].makespan(instance))  # the first of the shortest


Outcome = RoutedSchedule | MemoryDeadlock | ValueError | Abandoned
"""A list on one allocation: its schedule, why none fits, or that it became too long."""


class _Until:
    """``stop`` (a makespan, a shared one, or none) until ``deadline`` (``perf_counter``), then
    -1: a list that reads it is abandoned at its next step once the time is up."""

    def __init__(self, stop: int | Limit | None, deadline: float) -> None:
        self.stop, self.deadline = stop, deadline

    @property
    def value(self) -> int:
        if time.perf_counter() > self.deadline:
            return -1
        stop = self.stop
        return OPEN if stop is None else stop if isinstance(stop, int) else stop.value


def _allocation_list(instance: RoutedInstance, how: str, priority: str,
                     stop: int | Limit | None, until: float | None = None) -> Outcome:  # fmt: skip
    """The memory-aware list on allocation ``how``, abandoned once it is longer than
    ``stop`` or, with ``until``, once that ``perf_counter`` time has passed, the allocation's
    own list too (the routed one's: on the held-out SwiGLU 256 × 512 × 2 048 on ``simba`` it
    took 3.2 s of 8 288 CNs, past Stream's whole run)."""
    if until is not None:
        if time.perf_counter() > until:
            return Abandoned("out of time before it started")
        stop = _Until(stop, until)
    try:
        on = with_allocation(instance, how, until) if how else with_allocation(instance)
        return memory_list_schedule(on, priority, stop)
    except TimeoutError as err:  # (the routed list's allocation, past ``until``)
        return Abandoned(f"out of time while allocating: {err}")
    except (MemoryDeadlock, ValueError, Abandoned) as err:
        if not how and not isinstance(err, Abandoned):  # (the instance's own: its error)
            raise
        return err


_WORKER: dict[str, Any] = {}  # a forked process's instance and shared shortest makespan


def _in_parallel(instance: RoutedInstance, runs: list[tuple[str, str, float | None]],
                 threads: int, stop: int | None = None) -> list[Outcome]:  # fmt: skip
    """:func:`_allocation_list` of each (allocation, priority, deadline) of ``runs`` in up to
    ``threads`` forked processes (the instance is inherited, not copied), which share the
    shortest makespan so far (at first ``stop``)."""
    ctx = multiprocessing.get_context("fork")
    shortest = ctx.Value("q", OPEN if stop is None else stop)
    workers = min(threads, len(runs))
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(instance, shortest, workers))  # fmt: skip
    try:
        return list(pool.map(_worker_list, *zip(*runs, strict=True)))
    except BrokenProcessPool:  # a worker killed (the kernel's OOM killer): as out of memory
        raise MemoryError("a process of the list's allocations ended without an answer") from None
    finally:  # (on Ctrl-C: back at once, the lists not started are dropped)
        pool.shutdown(wait=False, cancel_futures=True)


def _worker_init(instance: RoutedInstance, shortest: Any, workers: int) -> None:
    die_with_parent()
    share_memory(workers)
    _WORKER.update(instance=instance, shortest=shortest)


def _worker_list(how: str, priority: str, until: float | None) -> Outcome:
    instance, shortest = _WORKER["instance"], _WORKER["shortest"]
    out = _allocation_list(instance, how, priority, shortest, until)
    if isinstance(out, RoutedSchedule):
        with shortest.get_lock():
            shortest.value = min(shortest.value, out.makespan(instance))
    return out


def routed_warm_start(instance: RoutedInstance, priority: Priority, threads: int = 1
                      ) -> RoutedSchedule:  # fmt: skip
    """The best list schedule on the instance and, when it carries a known allocation (Stream's),
    on that allocation; with memory capacities the memory-aware list's
    (:func:`memory_list_best`), on the first of the priorities ``priority`` names (the
    default's: ``latency``), so the method it starts keeps its time."""
    if instance.capacity is not None:
        try:
            first = memory_priority(priority)
            first = first if isinstance(first, str) else first[0]
            return memory_list_best(instance, first, threads)[0]
        except MemoryDeadlock as err:
            raise ValueError(f"no warm start within the memories: {err}") from None
    cands = [routed_list_schedule(instance, priority)]
    if instance.preferred is not None and not instance.fixed_allocation:
        cands.append(routed_list_schedule(instance.restricted(instance.preferred), priority))
    return min(cands, key=lambda s: s.makespan(instance))


def memory_priority(priority: Priority) -> str | tuple[str, ...]:
    """The memory-aware list's priority for an instance with memories: Stream's ``latency`` or
    ``memory``, or ``critical`` (the longest path to the end first,
    :func:`~npusched.heuristics.scheduling.memory_list.memory_list_schedule`), and for the
    default ``blevel`` all three (:func:`memory_list_best` keeps the shortest). Neither of
    Stream's fetches the weights whose readers head the longest chains first: on the attention
    head on ``simba``, whose port carries the DRAM tensors in 40 960 cycles, ``latency`` (ties
    to the deeper layer) fetched the second half of ``wQ`` last, so every Q CN, and all that
    follows, waited for it (49 566 cycles; ``critical`` 48 657, one run)."""
    if priority == "blevel":
        return ("latency", "memory", "critical")
    if priority not in ("latency", "memory", "critical"):
        raise ValueError(
            f"with a memory capacity the list takes Stream's priority latency or memory, or "
            f"critical, not {priority!r}"
        )
    return str(priority)


def run_routed(instance: RoutedInstance, ctx: Context) -> Result:
    """Schedule, allocation and link-contended transfers in CP-SAT (makespan), built and solved
    within the time limit (:func:`bounded`: 3 100 μops with contention took 35 s to build
    alone). Without a solution :func:`~npusched.methods.registry.solve` returns the warm start
    with the bound."""
    return bounded("joint", "cpsat", ctx, lambda c: _routed_answer(instance, c))


RELAX_SHARE = 0.5
"""Share of ``joint``'s time that the relay relaxation gets on an instance whose memories may
bind (the rest goes to the model with memories, for schedules)."""
SYMMETRY_SHARE = 1 / 3
"""Share of ``joint``'s time that the interchangeable-core relaxation gets first, on a free
allocation with interchangeable cores (:mod:`~npusched.problem.scheduling.routed_relax`)."""


def _routed_answer(instance: RoutedInstance, ctx: Context) -> Result:
    """First, on a free allocation with interchangeable cores, the interchangeable-core
    relaxation (:func:`_interchangeable_bound`) for a share :data:`SYMMETRY_SHARE` of the
    time: its bound is the floor of what follows. Where the memories cannot bind
    (:attr:`~npusched.problem.scheduling.routed.RoutedInstance.memory_binds`; nothing is
    evicted then; nor in a schedule ending by the warm start's makespan where
    :meth:`~npusched.problem.scheduling.routed.RoutedInstance.binds_within` says so), the
    model without them, exact. Else the relay relaxation
    (:class:`RoutedModel` without memories, with ``relay=True`` where cores can write back),
    whose bound holds for every schedule, evicting or not: first as it is, then with the
    memories' eviction-proof part (``room``: what a core receives and what runs there at once)
    from the first one's bound up, a share :data:`RELAX_SHARE` of the time in all. A solution
    of either that uses no relay and fits the memories (checked by
    :func:`~npusched.verify.scheduling.routed.verify_routed`) is a schedule, and so is what
    the memory-aware list makes of any of their solutions (:func:`through_list`: it evicts
    where needed); where none is optimal, the model with the memories (no eviction, free
    allocation) looks for a schedule for half the time left, then the spill model
    (:class:`~npusched.formulations.scheduling.routed_spill.SpillModel`: evictions and
    re-fetches as decisions) on the best schedule's allocation, warm-started from it, for the
    rest; the relaxations' best bound is reported."""
    warm, ms = ctx.warm_start, ctx.warm_start.makespan(instance)
    floor, stats = float(instance.lower_bound()), {}
    relax = interchangeable(instance)
    if relax is not None and ms > floor:
        remaining = ctx.remaining()
        end = None if remaining is None else time.perf_counter() + SYMMETRY_SHARE * remaining
        bound, sol = _interchangeable_bound(instance, relax, warm, ctx.until(end))
        floor = max(floor, bound)
        stats["interchangeable_bound"] = floor
        made = None if sol is None else _from_relaxation(instance, sol, relax.classes)
        if made is not None and made.makespan(instance) < ms:
            warm, ms = made, made.makespan(instance)
            stats["from_relaxation"] = ms
        if ms <= floor:
            out = Result(Status.OPTIMAL, "joint", "cpsat", bound=floor, stats=stats)
            return _warm(out, warm, instance, "the schedule (the warm start, or one made from "
                         "the relaxation's solution) meets the interchangeable-core bound")
    relaxed = dataclasses.replace(instance, capacity=None)
    if not instance.binds_within(ms):  # nothing is evicted: the model without memories is exact
        res = _solve_model(instance, RoutedModel(relaxed, ms, floor=int(floor)), warm, ctx)
        if res.solution is None:  # (the warm start may be the relaxation's, not the caller's)
            res.bound = max(floor, res.bound if res.bound is not None else floor)
            res.stats = {**res.stats, **stats}
            return _warm(res, warm, instance, "no solution within the limit: the best schedule "
                         "before the model is returned")  # fmt: skip
        return _raised(res, floor, stats)
    relay, best = instance.can_write_back, None
    remaining, start = ctx.remaining(), time.perf_counter()
    for k, room in enumerate((None, instance.capacity)):  # each half of the share
        model = RoutedModel(relaxed, ms, relay=relay, room=room, floor=int(floor))
        end = None if remaining is None else start + RELAX_SHARE * remaining * (k + 1) / 2
        res = _solve_model(relaxed, model, warm, ctx if end is None else ctx.until(end))
        if res.status is Status.INFEASIBLE:  # (relays pruned at the horizon: RoutedModel._relay)
            res.bound = float(ms)
            return _warm(res, warm, instance, "the relaxation has no schedule shorter than the "
                         "warm start: the warm start is returned")  # fmt: skip
        floor = max(floor, res.bound if res.bound is not None else floor)
        if _is_schedule(instance, res) and (best is None or _value(res) < _value(best)):
            best = res
        got = res.solution
        listed = through_list(instance, got) if isinstance(got, RoutedSchedule) else None
        if listed is not None and (best is None or listed.makespan(instance) < _value(best)):
            now = time.perf_counter() - (start if ctx.started is None else ctx.started)
            point = TracePoint(now, listed.makespan(instance), floor)
            best = Result(Status.FEASIBLE, "joint", "cpsat", float(listed.makespan(instance)),
                          solution=listed, trace=[*res.trace, point])  # fmt: skip
        if best is not None and _value(best) <= floor:
            return dataclasses.replace(best, status=Status.OPTIMAL, bound=floor,
                                       stats={**best.stats, **stats})  # fmt: skip
    stats["relaxation_bound"] = floor
    left = ctx.remaining()
    half = None if left is None else ctx.until(time.perf_counter() + left / 2)
    with_memory = RoutedModel(instance, ms, floor=int(floor))
    mem = _solve_model(instance, with_memory, warm, half or ctx)  # (no eviction: no bound)
    found = [r for r in (best, mem) if r is not None and r.solution is not None and _value(r) < ms]
    top = min(found, key=_value).solution if found else warm
    assert isinstance(top, RoutedSchedule)
    fixed = instance.restricted(top.core)  # evictions decided exactly on its allocation
    spill = SpillModel(fixed, top.makespan(instance), segments_for(top), floor=int(floor))
    spilled = _solve_model(fixed, spill, top, ctx)  # (its bound: only for that allocation)
    note = "bound = the relaxations' (valid with eviction); the schedule: "
    cands = [r for r in (best, mem, spilled)
             if r is not None and r.solution is not None and _value(r) <= ms]  # fmt: skip
    if not cands:
        out = Result(Status.FEASIBLE, "joint", "cpsat", bound=floor, stats=stats)
        return _warm(out, warm, instance, f"{note}nothing shorter than the warm start")
    won = min(cands, key=_value)
    status = Status.OPTIMAL if _value(won) <= floor else Status.FEASIBLE
    return dataclasses.replace(won, status=status, bound=floor, stats={**won.stats, **stats},
                               message=note + ("the spill model on the best allocation"
                                               if won is spilled else "no eviction"))  # fmt: skip


def _interchangeable_bound(instance: RoutedInstance, relax: Interchangeable, warm: RoutedSchedule,
                           ctx: Context) -> tuple[float, RoutedSchedule | None]:  # fmt: skip
    """The bound that CP-SAT proves on the interchangeable-core relaxation of ``instance``
    (:func:`~npusched.problem.scheduling.routed_relax.interchangeable`: each core class's
    symmetry broken, from the instance's lower bound up) within ``ctx``'s deadline, valid for
    every schedule of the instance. Where the memories bind, with their ``room`` part, and
    either without contention between cores where that makes relays needless
    (:func:`~npusched.problem.scheduling.routed_relax.relays_dominated`) or with relays. No
    solution under the warm start's makespan proves it. With the bound, the relaxation's best
    solution (its cores the relaxation's labels), if any."""
    from npusched.solvers.cpsat import run_cpsat

    ms = warm.makespan(instance)
    binds = instance.binds_within(ms)
    direct = binds and relays_dominated(instance)
    if direct:  # (the same classes with or without contention)
        relax = interchangeable(instance, contention=False) or relax
    model = RoutedModel(relax.instance, ms, relay=binds and not direct and (
                            relax.instance.can_write_back),
                        room=instance.capacity if binds else None, lanes=relax.lanes,
                        classes=relax.classes, floor=instance.lower_bound())  # fmt: skip
    kw: dict[str, Any] = dict(threads=ctx.threads, seed=ctx.seed, log=ctx.log)
    status, solver, _ = run_cpsat(model.model, time_limit=ctx.remaining(), **kw)
    if status is Status.INFEASIBLE:
        return float(ms), None
    if status in (Status.OPTIMAL, Status.FEASIBLE):
        return float(solver.best_objective_bound), model.decode(solver)
    return float(instance.lower_bound()), None


def placed(instance: RoutedInstance, core: np.ndarray,
           classes: tuple[tuple[int, ...], ...]) -> np.ndarray:  # fmt: skip
    """An allocation of the interchangeable-core relaxation (``core``: its labels) put on the
    instance's cores: labels of one class swapped while a swap lowers the data its transfers
    carry times their routes' hops (the best swap each time,
    :func:`~npusched.heuristics.placement.swap_deltas` on the symmetric sums)."""
    g, m = instance.graph, instance.m
    data = (g.bytes > 0) & (core[g.src] != core[g.dst])
    flow = np.zeros((m, m), dtype=np.int64)
    np.add.at(flow, (core[g.src[data]], core[g.dst[data]]), instance.read_data[data])
    hops = np.array([[len(instance.route(a, c)) for c in range(m)] for a in range(m)])
    w, d = flow + flow.T, hops + hops.T
    kind = np.full(m, -1)
    for k, cls in enumerate(classes):
        kind[list(cls)] = k
    same = (kind[:, None] == kind[None, :]) & (kind[:, None] >= 0)
    loc = np.arange(m)  # label -> core
    for _ in range(m * m):
        delta = np.where(same, swap_deltas(w, d, loc), 0)
        a, b = np.unravel_index(int(np.argmin(delta)), delta.shape)
        if delta[a, b] >= 0:
            break
        loc[[a, b]] = loc[[b, a]]
    return loc[core]


def _from_relaxation(instance: RoutedInstance, sched: RoutedSchedule,
                     classes: tuple[tuple[int, ...], ...]) -> RoutedSchedule | None:  # fmt: skip
    """The interchangeable-core relaxation's solution made a schedule of ``instance``: its
    allocation :func:`placed` on the cores, its μops in the order of its starts, timed by the
    list on the mesh (memory-aware where the memories bind, :func:`through_list`); ``None``
    where that fails verification."""
    from npusched.verify.scheduling.routed import verify_routed

    core = placed(instance, sched.core, classes)
    moved = dataclasses.replace(sched, core=core)
    if instance.capacity is not None:
        out = through_list(instance, moved)
    else:
        order = -sched.start.astype(float)
        out = routed_list_schedule(instance.restricted(core), lambda _: order)
    return out if out is not None and verify_routed(instance, out).ok else None


def _raised(res: Result, floor: float, stats: dict[str, Any]) -> Result:
    """``res`` with its bound raised to ``floor`` (optimal where its schedule meets it)."""
    bound = max(floor, res.bound if res.bound is not None else floor)
    status = Status.OPTIMAL if _value(res) <= bound else res.status
    return dataclasses.replace(res, status=status, bound=bound, stats={**res.stats, **stats})


def through_list(instance: RoutedInstance, sched: RoutedSchedule) -> RoutedSchedule | None:
    """The memory-aware list (which evicts) on ``sched``'s allocation, moved until it fits
    (:func:`fit_allocation`), in the order of ``sched``'s starts: a relaxation's solution
    made a schedule of ``instance``; ``None`` where the list finds none."""
    try:
        core = fit_allocation(instance, sched.core)
        rank = np.argsort(np.argsort(sched.start, kind="stable"), kind="stable")
        return memory_list_schedule(dataclasses.replace(instance, preferred=core), rank)
    except (ValueError, MemoryDeadlock):
        return None


def _value(res: Result) -> float:
    """``res``'s objective (infinite without one)."""
    return float("inf") if res.objective is None else float(res.objective)


def _is_schedule(instance: RoutedInstance, res: Result) -> bool:
    """Whether a relaxation's solution is a schedule of ``instance``: it relays nothing and
    passes :func:`~npusched.verify.scheduling.routed.verify_routed`."""
    from npusched.verify.scheduling.routed import verify_routed

    sol = res.solution
    return isinstance(sol, RoutedSchedule) and not res.stats.pop("relayed", False) and (
        verify_routed(instance, sol).ok)  # fmt: skip


def _warm(res: Result, warm: RoutedSchedule, instance: RoutedInstance, message: str) -> Result:
    """``res`` (its bound) answered by the warm start: optimal where it meets the bound."""
    ms = warm.makespan(instance)
    status = Status.OPTIMAL if res.bound is not None and ms <= res.bound else Status.FEASIBLE
    return dataclasses.replace(res, status=status, objective=float(ms), solution=warm,
                               stats={**res.stats, "fallback": "warm_start"},
                               message=message)  # fmt: skip


def _solve_model(instance: RoutedInstance, model: RoutedModel, warm: RoutedSchedule,
                 ctx: Context) -> Result:  # fmt: skip
    """``model`` hinted from ``warm`` and run by CP-SAT for what is left of ``ctx``; its trace
    in seconds since the call began (``ctx.started``), so that the runs of one call line up."""
    from npusched.solvers.cpsat import cpsat_result, run_cpsat

    offset = 0.0 if ctx.started is None else time.perf_counter() - ctx.started
    model.hint(warm)
    stats = {"intervals_on_links": sum(len(v) for v in model.res_intervals.values())}
    kw: dict[str, Any] = dict(threads=ctx.threads, seed=ctx.seed, log=ctx.log)
    status, solver, rec = run_cpsat(model.model, time_limit=ctx.remaining(), **kw)
    res = cpsat_result("joint", status, solver, rec, model.decode, stats)
    res.trace = [dataclasses.replace(p, time=p.time + offset) for p in res.trace]
    if res.solution is not None and model.relays:
        res.stats["relayed"] = model.relayed(solver)
    return res
