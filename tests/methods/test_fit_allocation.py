"""The memory-aware list's allocation on a partition with a free allocation: the compute-only
list's cores, moved until every μop's resident data fits its core (a copy on a core holds what
all the μops there read, so μops sharing a core can overflow it together)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SHARED, needs_shared

from npusched.arch import load_arch
from npusched.heuristics.scheduling.list_scheduling import list_schedule
from npusched.heuristics.scheduling.memory_list import MemoryDeadlock, memory_list_schedule
from npusched.methods import solve
from npusched.methods.routed import fit_allocation, list_cores, memory_list_best, with_allocation
from npusched.partition.api import partition_network, resolve_network
from npusched.verify import check


def fsrcnn(s):
    return partition_network(resolve_network("fsrcnn"), load_arch("klotski-3x3"), "klotski", s=s)


def test_an_overflowing_allocation_is_moved_until_it_fits():
    inst = fsrcnn((128, 128, 64, 64))
    first = list_schedule(inst.base, "blevel").core
    assert (inst.operand_data(first) > inst.capacity[first]).any()  # the list gave up here
    core = fit_allocation(inst, first)
    assert (inst.operand_data(core) <= inst.capacity[core]).all()
    assert inst.mask[np.arange(inst.n), core].all()
    res = solve(inst, "list")
    assert check(inst, res.solution).ok


def test_no_move_that_helps_is_a_clear_error():
    inst = fsrcnn((128, 128, 32, 32))
    with pytest.raises(ValueError, match=r"core \d+: μop .* no move of a μop"):
        fit_allocation(inst, list_schedule(inst.base, "blevel").core)


@pytest.mark.parametrize("seed", [1, 4])
def test_a_relaxations_solution_through_the_list_is_a_schedule_that_evicts(seed):
    """What ``joint`` does with a relaxation's solution where memories bind: the memory-aware
    list on its allocation, in its order, evicting where the solution kept everything."""
    from dataclasses import replace

    from npusched.bench.generate import layered_dag
    from npusched.bench.memory_scaling import with_dram
    from npusched.heuristics.scheduling.routed_list import routed_list_schedule
    from npusched.methods.routed import through_list
    from npusched.problem.scheduling.routed import RoutedInstance

    base = layered_dag(5, 3, (2, 2), latency=(2, 6), nbytes=(8, 24), seed=seed)
    inst = with_dram(RoutedInstance.from_mesh(base), np.random.default_rng(seed))
    relaxed = routed_list_schedule(inst, "blevel")  # no memories: keeps every copy
    tight = replace(inst, capacity=np.full(inst.m, int(inst.operand_data().max())))
    assert not check(tight, relaxed).ok  # it overflows the memories
    sched = through_list(tight, relaxed)
    assert sched is not None and check(tight, sched).ok and sched.evicts


@needs_shared
def test_the_list_takes_the_shorter_of_the_two_allocations():
    """Stream's 2-conv CNN on ``simba`` (36 chiplets behind an 8-byte off-chip port): the
    compute-only list spreads each layer over the chiplets, each fetching its weights again;
    the routed list's allocation keeps them, and the list returns the shorter schedule."""
    stream = SHARED / "stream-oss"
    onnx = stream / "workload" / "2conv_1_8_32_32_16_32_3.onnx"
    inst = partition_network(resolve_network(str(onnx)),
                             load_arch(stream / "hardware" / "simba.yaml"), "stream")  # fmt: skip
    spread, kept = (memory_list_schedule(with_allocation(inst, how), "latency")
                    for how in ("compute", "routed"))  # fmt: skip
    assert check(inst, spread).ok and check(inst, kept).ok
    assert kept.makespan(inst) < spread.makespan(inst)
    assert len(set(kept.core.tolist())) < len(set(spread.core.tolist()))
    layers, staged = (memory_list_schedule(with_allocation(inst, how), "latency")
                      for how in ("layers", "stages"))  # fmt: skip
    assert check(inst, layers).ok and check(inst, staged).ok
    shortest = min(s.makespan(inst) for s in (spread, kept, layers, staged))
    assert memory_list_best(inst, "latency")[0].makespan(inst) == shortest
    res = solve(inst, "list", priority="latency")
    assert res.objective == shortest and check(inst, res.solution).ok
    res = solve(inst, "list")  # both priorities: no longer (here memory's is shorter)
    assert res.objective <= shortest and check(inst, res.solution).ok
    assert res.stats["priority"] in ("latency", "memory", "critical")


def test_the_layer_allocation_gives_each_layer_one_core_by_lpt():
    """One core per layer: every μop of a layer on the same core, the layers by decreasing
    work each to the core where the load it ends with is least (so the largest layers take
    different cores while cores are free)."""
    inst = fsrcnn((128, 128, 64, 64))
    core = list_cores(inst, "layers")
    for ly in np.unique(inst.layer):
        assert np.unique(core[inst.layer == ly]).size == 1
    work = np.bincount(inst.layer, weights=inst.min_duration)
    top = np.argsort(-work, kind="stable")[: inst.m]
    assert np.unique([core[inst.layer == ly][0] for ly in top]).size == min(inst.m, top.size)
    with pytest.raises(ValueError, match="no 'spread' allocation"):
        list_cores(inst, "spread")


@pytest.mark.parametrize("s", [(128, 128, 64, 64), (32, 32, 16, 16)])
def test_the_stage_allocation_cuts_the_layers_in_order_into_pipeline_stages(s):
    """Stages of consecutive layers, no more than the cores' speed, each on one core; a layer
    of more than a stage's share is cut into parts of its own, its μops dealt over them."""
    from npusched.methods.routed import stages

    inst = fsrcnn(s)
    stage = stages(inst)
    least = np.where(inst.mask, inst.duration, np.inf).min(axis=1)
    k = round(float(np.where(inst.mask, least[:, None] / inst.duration, 0).mean(axis=0).sum()))
    layers = np.unique(inst.layer)
    spans = [(stage[inst.layer == ly].min(), stage[inst.layer == ly].max()) for ly in layers]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))  # in layer order
    assert np.unique(stage).tolist() == list(range(stage.max() + 1))
    work = np.bincount(inst.layer, weights=least)[layers]
    whole = [ly for ly, (a, b) in zip(layers, spans, strict=True) if a == b]
    heavy = [ly for ly, w in zip(layers, work, strict=True) if w > work.sum() / k]
    assert set(heavy) | set(whole) == set(layers.tolist())
    assert stage.max() + 1 <= max(k, len(heavy) + np.ceil(work.sum() / (work.sum() / k)))
    for ly in heavy:  # its parts are its own and each takes its μops in turn
        mine = stage[inst.layer == ly]
        assert not np.isin(mine, stage[inst.layer != ly]).any()
        assert np.unique(mine).size == min(np.ceil(work[layers == ly][0] * k / work.sum()),
                                           mine.size)  # fmt: skip
    core = list_cores(inst, "stages")
    assert all(np.unique(core[stage == g]).size == 1 for g in np.unique(stage))
    sched = memory_list_schedule(with_allocation(inst, "stages"))
    assert check(inst, sched).ok


@needs_shared
def test_stages_overlap_layers_that_one_core_per_layer_leaves_in_sequence():
    """FSRCNN (few heavy layers, in a chain) on Stream's TPU-like quad core: one core per layer
    runs the chain's big layers one after the other on few cores; cut into stages the cores
    share each heavy layer and the next starts while one ends, shorter on either priority."""
    arch = load_arch(SHARED / "stream-oss" / "hardware" / "tpu_like_quad_core.yaml")
    inst = partition_network(resolve_network("fsrcnn"), arch, "stream", cn={"OY": 4})
    ms = {(how, p): memory_list_schedule(with_allocation(inst, how), p)
          for how in ("layers", "stages") for p in ("latency", "memory")}  # fmt: skip
    assert all(check(inst, x).ok for x in ms.values())
    best = {how: min(x.makespan(inst) for (h, _), x in ms.items() if h == how)
            for how in ("layers", "stages")}  # fmt: skip
    assert best["stages"] < best["layers"]
    assert memory_list_best(inst, ("latency", "memory"))[0].makespan(inst) <= best["stages"]


def test_the_routed_allocation_stops_at_the_deadline_its_list_is_given():
    """The routed list's allocation is a list of its own; past the deadline it raises, and the
    memory-aware list on it is abandoned for the time, while the first allocation, which has
    no deadline, still gives the schedule."""
    import time

    from npusched.heuristics.scheduling.memory_list import Abandoned
    from npusched.heuristics.scheduling.routed_list import CHECK_EVERY, routed_list_schedule
    from npusched.methods.routed import _allocation_list

    inst = fsrcnn((32, 32, 16, 16))
    assert inst.n > CHECK_EVERY
    with pytest.raises(TimeoutError, match=f"after {CHECK_EVERY} of {inst.n}"):
        routed_list_schedule(inst, until=time.perf_counter() - 1)
    whole = routed_list_schedule(inst, until=time.perf_counter() + 600)
    assert (whole.core == routed_list_schedule(inst).core).all()
    late = _allocation_list(inst, "routed", "latency", None, time.perf_counter() + 1e-4)
    assert isinstance(late, Abandoned) and "out of time while allocating" in str(late)
    best, _ = memory_list_best(inst, "latency", deadline=time.perf_counter(), strict=True)
    assert check(inst, best).ok


def test_no_allocation_that_fits_is_the_lists_failure_not_bad_input(monkeypatch):
    """Where no allocation of the list can be fitted to the memories (here every one is the
    compute-only list's, which cannot be on this cut), ``solve`` returns the list's failure
    with the reason and the bound (the command exits 3), not a ``ValueError``."""
    import npusched.methods.routed as routed

    inst = fsrcnn((128, 128, 32, 32))
    monkeypatch.setattr(routed, "list_cores",
                        lambda instance, how, until=None: list_schedule(instance.base,
                                                                        "blevel").core)
    res = solve(inst, "list")
    assert res.status.value == "error" and res.solution is None
    assert "no allocation of the list fits the memories" in res.message
    assert "no move of a μop" in res.message
    assert res.bound == inst.lower_bound()


def _naive_fit(instance, core):
    """The definition, evaluated the slow way: every candidate move priced by recomputing every
    μop's resident data (what fit_allocation did before it kept them up to date)."""
    cap, mask = instance.capacity, instance.mask
    core = np.array(core, dtype=np.int64)

    def overflow(c):
        over = np.maximum(instance.operand_data(c) - cap[c], 0)
        return int(over.sum()), over

    total, over = overflow(core)
    while total > 0:
        i = int(np.argmax(over))
        moves = [(overflow(np.where(np.arange(instance.n) == i, k, core))[0], k)
                 for k in np.flatnonzero(mask[i]).tolist() if k != core[i]]  # fmt: skip
        best = min(moves, default=(total, -1))
        if best[0] >= total:
            raise ValueError("no move")
        core[i] = best[1]
        total, over = overflow(core)
    return core


@pytest.mark.parametrize("s", [(128, 128, 64, 64), (64, 64, 32, 32), (32, 32, 16, 16)])
def test_kept_resident_data_gives_the_moves_of_the_definition(s):
    inst = fsrcnn(s)
    first = list_schedule(inst.base, "blevel").core
    try:
        want = _naive_fit(inst, first)
    except ValueError:
        with pytest.raises(ValueError, match="no move of a μop"):
            fit_allocation(inst, first)
        return
    assert np.array_equal(fit_allocation(inst, first), want)


@pytest.mark.parametrize("seed", range(4))
def test_resident_data_kept_equals_operand_data_after_random_moves(seed):
    from npusched.bench.generate import layered_dag
    from npusched.bench.memory_scaling import with_dram
    from npusched.methods.fit import _Resident  # noqa: PLC2701 - the invariant under test
    from npusched.problem.scheduling.routed import RoutedInstance

    rng = np.random.default_rng(seed)
    base = layered_dag(6, 4, (2, 3), latency=(2, 6), nbytes=(8, 24), seed=seed)
    inst = with_dram(RoutedInstance.from_mesh(base), rng)
    res = _Resident(inst, rng.integers(0, inst.m, inst.n))
    for _ in range(40):
        res.move(int(rng.integers(inst.n)), int(rng.integers(inst.m)))
        assert np.array_equal(res.need, inst.operand_data(res.core))


def _gemm_cns(capacity):
    """Six CNs of one GEMM on three cores: CN ``r + 2 c`` is row block ``r`` (input X``r``,
    30 bytes, read by the three column tiles) of column tile ``c`` (weights W``c``, 24 bytes,
    read by the two row blocks); every μop may run on every core, taking 5 cycles."""
    from npusched import Accelerator, SchedulingInstance, UopGraph
    from npusched.problem.scheduling.routed import DramTensor, Link, RoutedInstance, Topology

    pairs = [(a, b) for a in range(3) for b in range(3) if a != b]
    links = tuple(Link(k, a, b, 4.0) for k, (a, b) in enumerate(pairs))
    links += (Link(len(pairs), 9, None, 2.0, offchip=True),)
    routes = {p: (k,) for k, p in enumerate(pairs)}
    routes |= {(9, c): (len(pairs),) for c in range(3)} | {(c, 9): (len(pairs),) for c in range(3)}
    none = np.zeros(0, np.int64)
    base = SchedulingInstance(UopGraph(np.full(6, 5), none, none, none), Accelerator.identical(3))
    dram = tuple(DramTensor(f"X{r}", 30, np.array([r, r + 2, r + 4])) for r in range(2))
    dram += tuple(DramTensor(f"W{c}", 24, np.array([2 * c, 2 * c + 1])) for c in range(3))
    return RoutedInstance(base, Topology(links, routes, 9), np.ones((6, 3), bool), dram,
                          capacity=np.array(capacity), layer=np.zeros(6, np.int64))


def test_the_weight_allocation_keeps_a_weight_tiles_readers_on_one_core():
    """Each CN shares its weight tile at 12 bytes a reader and its input rows at 10 (though
    they are larger), so the weight tiles group the CNs: the three go to three cores. A core
    whose memory cannot hold a CN's operands (54 bytes) takes none, though it is idle."""
    from npusched.methods.routed import shared_operand

    inst = _gemm_cns([100, 100, 100])
    assert shared_operand(inst).tolist() == [2, 2, 3, 3, 4, 4]
    core = list_cores(inst, "weights")
    assert core.tolist() == [0, 0, 1, 1, 2, 2]
    small = _gemm_cns([100, 40, 100])
    core = list_cores(small, "weights")
    assert core.tolist() == [0, 0, 2, 2, 0, 0]
    sched = memory_list_schedule(with_allocation(small, "weights"))
    assert check(small, sched).ok and not sched.evicts


@pytest.mark.parametrize("s", [(128, 128, 64, 64), (64, 64, 32, 32)])
def test_the_allocations_in_two_processes_give_the_serial_schedule(s):
    """With two threads the allocations' lists run in two forked processes that share the
    shortest makespan so far; the list abandons a longer one as it did in series, so the
    schedule returned is the serial one, start for start."""
    inst = fsrcnn(s)
    serial = memory_list_best(inst, "latency")[0]
    forked = memory_list_best(inst, "latency", threads=2)[0]
    assert (forked.start == serial.start).all() and (forked.core == serial.core).all()
    both, won = memory_list_best(inst, ("latency", "memory"), threads=2)
    alone = {p: memory_list_best(inst, p)[0].makespan(inst) for p in ("latency", "memory")}
    assert both.makespan(inst) == min(alone.values()) == alone[won] and check(inst, both).ok
    import time  # past its deadline only the first priority runs, to the end

    late, won = memory_list_best(inst, ("memory", "latency"), deadline=time.perf_counter())
    assert won == "memory" and late.makespan(inst) == alone["memory"]
    assert check(inst, forked).ok
    lists = [memory_list_schedule(with_allocation(inst, how), "latency")
             for how in ("weights", "routed", "layers", "stages")]  # fmt: skip
    assert serial.makespan(inst) == min(x.makespan(inst) for x in lists)
    res = solve(inst, "list", threads=2)  # the default: all three priorities, the shortest
    three = {p: memory_list_best(inst, p)[0].makespan(inst) for p in ("critical", *alone)}
    assert res.objective == min(three.values()) == three[res.stats["priority"]]
    assert res.objective <= serial.makespan(inst) and check(inst, res.solution).ok


def test_no_allocation_that_fits_fails_alike_in_two_processes(monkeypatch):
    """Where no allocation can be fitted to the memories (every one the compute-only list's,
    as above), the forked lists give the serial failure and its reason."""
    import npusched.methods.routed as routed

    inst = fsrcnn((128, 128, 32, 32))
    monkeypatch.setattr(routed, "list_cores",
                        lambda instance, how, until=None: list_schedule(instance.base,
                                                                        "blevel").core)
    with pytest.raises(MemoryDeadlock) as serial:
        memory_list_best(inst, "latency")
    with pytest.raises(MemoryDeadlock) as forked:
        memory_list_best(inst, "latency", threads=2)
    assert str(forked.value) == str(serial.value)
    assert "no move of a μop" in str(serial.value)


def _in_daemon(inst, out):
    out.put(memory_list_best(inst, "latency", threads=2)[0].start.tolist())


def test_two_threads_in_a_daemonic_process_run_the_allocations_in_place():
    """A daemonic process (a Dask worker) may not start processes: there the allocations run
    one after the other, with the serial schedule, instead of failing."""
    import multiprocessing as mp

    inst = fsrcnn((64, 64, 32, 32))
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    proc = ctx.Process(target=_in_daemon, args=(inst, out), daemon=True)
    proc.start()
    got = out.get(timeout=60)
    proc.join(timeout=10)
    assert got == memory_list_best(inst, "latency")[0].start.tolist()


def test_a_worker_that_dies_ends_the_list_as_out_of_memory(monkeypatch):
    """A worker killed under the list (as the kernel's OOM killer would) is a MemoryError, which
    the command reports as out of memory, not a broken pool's traceback."""
    import os
    import signal

    import npusched.methods.routed as routed

    monkeypatch.setattr(routed, "_allocation_list",
                        lambda *args: os.kill(os.getpid(), signal.SIGKILL))  # fmt: skip
    with pytest.raises(MemoryError, match="ended without an answer"):
        memory_list_best(fsrcnn((64, 64, 32, 32)), "latency", threads=2)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_stop_abandons_every_list_longer_than_it(threads):
    """``stop`` (another cut's makespan) abandons the lists as the shortest so far does: at
    the makespan the same schedule comes back, one cycle below it none does."""
    from npusched.heuristics.scheduling.memory_list import Abandoned

    inst = fsrcnn((64, 64, 32, 32))
    best = memory_list_best(inst, "latency", threads=threads)[0]
    span = best.makespan(inst)
    again = memory_list_best(inst, "latency", threads=threads, stop=span)[0]
    assert again.makespan(inst) == span and check(inst, again).ok
    with pytest.raises(Abandoned, match=f"longer than {span - 1}"):
        memory_list_best(inst, "latency", threads=threads, stop=span - 1)
