"""Klotski's baseline 2, the atomic dataflow without rounds: feasible on partitioned networks and
random DAGs, left-justified and work-conserving (no core idles while a ready μop waits), local on
chains, critical path first, weight groups as tiled, and wired into ``solve``."""

import numpy as np
from conftest import delay_instances, random_instances
from hypothesis import given, settings

from npusched import Accelerator, SchedulingInstance, UopGraph, solve
from npusched.arch import load_arch
from npusched.bench.generate import layered_dag
from npusched.heuristics.scheduling.atomic import atomic_schedule, weight_groups
from npusched.partition.api import partition_network, resolve_network
from npusched.problem.scheduling.schedule import Schedule
from npusched.solvers.result import Status
from npusched.verify import check


def _lenet(mesh: str = "3x3", s=(7, 7, 24, 28)) -> SchedulingInstance:
    inst = partition_network(resolve_network("lenet"), load_arch(f"klotski-{mesh}"), "klotski",
                             s=s, machine="compute-only")  # fmt: skip
    assert isinstance(inst, SchedulingInstance)
    return inst


def _plan_faults(inst: SchedulingInstance, sched: Schedule) -> list[str]:
    """What breaks the dispatch rule, checked from the schedule alone.

    On each core the μops run in order of (start, end, latest data arrival first, index): of
    zero-latency μops that start and end together, the one given first is the one that waited
    for its data, so its data arrived last. μop ``i`` becomes ready at
    ``r_i`` (its last producer's end) and is given to its core at ``d_i = max(r_i, end of the
    core's previous μop)``, which is reserved from ``d_i`` to ``i``'s end. Then (a) ``i``
    starts at ``max(d_i, arrival of its data on its core)``, and (b) no core is unreserved at a
    time in ``[r_i, d_i)`` while ``i`` waits (Graham's rule).
    """
    g, acc, end = inst.graph, inst.accelerator, sched.end(inst)
    delay = np.zeros(g.num_edges, dtype=np.int64)
    if acc.has_comm_delays:
        delay = acc.comm_delay(acc.hops()[sched.core[g.src], sched.core[g.dst]], g.bytes)
    ready = np.zeros(inst.n, dtype=np.int64)
    arrive = np.zeros(inst.n, dtype=np.int64)
    np.maximum.at(ready, g.dst, end[g.src])
    np.maximum.at(arrive, g.dst, end[g.src] + delay)
    given_at = np.zeros(inst.n, dtype=np.int64)
    gaps: list[tuple[int, int, int]] = []  # (core, from, to): the core is unreserved
    bad = []
    for k in range(inst.m):
        on = np.flatnonzero(sched.core == k)
        prev = 0
        for i in on[np.lexsort((on, -arrive[on], end[on], sched.start[on]))].tolist():
            given_at[i] = max(int(ready[i]), prev)
            if sched.start[i] != max(given_at[i], arrive[i]):
                bad.append(f"μop {i} starts at {sched.start[i]}, could at {given_at[i]}")
            gaps.append((k, prev, int(given_at[i])))
            prev = int(end[i])
        gaps.append((k, prev, 2**62))
    for i in np.flatnonzero(given_at > ready).tolist():
        for k, lo, hi in gaps:
            if lo < hi and lo < given_at[i] and ready[i] < hi:
                bad.append(f"μop {i} waits in [{ready[i]}, {given_at[i]}) while core {k} idles")
    return bad


def test_lenet_on_a_klotski_mesh():
    for mesh in ("3x3", "5x5"):
        inst = _lenet(mesh)
        sched = atomic_schedule(inst)
        rep = check(inst, sched)
        assert rep.ok, rep.violations
        assert rep.makespan >= inst.lower_bound()
        assert not _plan_faults(inst, sched)


def test_zero_latency_uops_that_start_together():
    """Found by hypothesis: two zero-latency μops ready together on one core; the one given
    first waits for its data, the other starts when it ends. The plan check orders them so."""
    inst = layered_dag(7, 4, (1, 3), hop_latency=0, link_bandwidth=4.0, latency=(0, 3),
                       nbytes=(8, 64), seed=1)  # fmt: skip
    sched = atomic_schedule(inst)
    assert check(inst, sched).ok
    assert not _plan_faults(inst, sched)


@settings(max_examples=60, deadline=None)
@given(delay_instances())
def test_random_dags_with_delays(inst):
    sched = atomic_schedule(inst)
    rep = check(inst, sched)
    assert rep.ok, rep.violations
    assert not _plan_faults(inst, sched)


@settings(max_examples=40, deadline=None)
@given(random_instances(max_n=12, max_m=4, per_core=True))
def test_random_dags_without_a_network(inst):
    sched = atomic_schedule(inst)
    assert check(inst, sched).ok
    assert not _plan_faults(inst, sched)


def _chain(nbytes: int, hop_latency: int) -> SchedulingInstance:
    n = 6
    edges = np.arange(n - 1)
    g = UopGraph(np.array([3, 1, 4, 1, 5, 9]), edges, edges + 1, np.full(n - 1, nbytes))
    return SchedulingInstance(g, Accelerator.mesh_grid(3, 3, hop_latency, link_bandwidth=8.0))


def test_a_chain_stays_on_its_first_core():
    """Each link of a chain becomes ready when its producer's core frees: the producer's core
    moves no data (least traffic) or, with zero-byte edges, gets it first (earliest finish)."""
    for nbytes, hop in ((64, 0), (64, 2), (0, 2)):
        inst = _chain(nbytes, hop)
        sched = atomic_schedule(inst)
        assert len(set(sched.core.tolist())) == 1
        assert sched.makespan(inst) == int(inst.graph.latency.sum())


def test_longest_critical_path_first():
    g = UopGraph(np.array([2, 7, 3, 5]), np.zeros(0), np.zeros(0), np.zeros(0))
    inst = SchedulingInstance(g, Accelerator.identical(1))
    assert atomic_schedule(inst).start.tolist() == [15, 0, 12, 7]


def test_a_consumer_goes_where_its_data_is():
    """p → q and x → y on two cores. p heads the longer path (its edge is slow), so p takes
    core 0 and x core 1; at t = 2 both cores idle, y (the longer rest) is chosen first and goes
    to core 1, where x left its data, not to the lower-index core 0."""
    p, q, x, y = 0, 1, 2, 3
    g = UopGraph(np.array([2, 1, 2, 3]), np.array([p, x]), np.array([q, y]), np.array([400, 4]))
    inst = SchedulingInstance(g, Accelerator.mesh_grid(1, 2, 1, link_bandwidth=4.0))
    sched = atomic_schedule(inst)
    assert sched.core.tolist() == [0, 0, 1, 1]
    assert sched.start.tolist() == [0, 2, 0, 2]


def test_least_traffic_before_earliest_finish():
    """c reads 400 bytes from a (short) and 8 from b (long), each transfer 51 cycles (hop latency
    50). b takes core 0 and a core 1 at t = 0; at t = 20 both cores idle. Earliest finish
    would put c on b's core (data there at 2 + 51); the data-reuse rule puts it on a's core,
    which moves 8 bytes instead of 400, and c waits for b's 8 bytes until 20 + 51."""
    a, b, c = 0, 1, 2
    g = UopGraph(np.array([2, 20, 1]), np.array([a, b]), np.array([c, c]), np.array([400, 8]))
    inst = SchedulingInstance(g, Accelerator.mesh_grid(1, 2, 50, link_bandwidth=400.0))
    sched = atomic_schedule(inst)
    assert sched.core.tolist() == [1, 0, 1]
    assert sched.start[c] == 71


def test_same_weights_before_lower_index():
    """Sources A, B, C and A → D on two cores without a network (depth levels are the weight
    groups). A and B start at 0, D follows A on core 0; at t = 4 both cores idle and C, a
    level-0 μop like B, goes to B's core 1 rather than to core 0, which last ran level 1."""
    g = UopGraph(np.array([2, 4, 1, 2]), np.array([0]), np.array([3]), np.array([8]))
    sched = atomic_schedule(SchedulingInstance(g, Accelerator.identical(2)))
    assert sched.core.tolist() == [0, 1, 1, 0]
    assert sched.start.tolist() == [0, 0, 4, 2]


def test_weight_groups_follow_the_tiles():
    inst = _lenet(s=(7, 7, 4, 4))
    group = weight_groups(inst)
    same_group = group[:, None] == group[None, :]
    key = np.empty((inst.n, 3), dtype=np.int64)
    for li, ly in enumerate(inst.source["layers"]):
        nk, ny, nx, nc = ly["tiles"]
        j = np.arange(nk * ny * nx * nc)
        key[ly["offset"] + j] = np.stack([np.full(j.size, li), j // (ny * nx * nc), j % nc], 1)
    assert (same_group == (key[:, None, :] == key[None, :, :]).all(axis=2)).all()
    assert len(set(group.tolist())) < inst.n  # some μops do share weights here
    layered = layered_dag(3, 3, (2, 2), seed=1)  # no tiles: one group per depth level
    assert (weight_groups(layered) == layered.graph.level).all()


def test_solve_atomic():
    inst = _lenet("4x4")
    res = solve(inst, "atomic")
    assert res.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert res.objective == res.solution.makespan(inst)
    assert res.bound == inst.lower_bound()
    assert check(inst, res.solution, res.objective).ok
    assert (res.solution.core == atomic_schedule(inst).core).all()
