"""Stream's mapping search, on the CN cut: cuts of the ``stream`` scheme, each scheduled by the
memory-aware list and verified, the shortest kept.

Stream 2.1.1 does not price one mapping of a workload and stop. Its mapping generation
(``stream/stages/generation/mapping_generation.py``) evaluates up to ``max_nb_mappings`` = 200
variants, each layer type split over several core counts (``layer_core_splits``), and keeps the
one of least latency; its generic generator (``stream/mapping/generic_generator.py``,
``_factor_split_across_dims``) splits every layer over all the cores that may run it, along its
parallel dimensions, largest first. The cut decides how many CNs a layer has and how large each
is, and one cut does not suit every accelerator. On ``tpu_v7_ironwood`` (eight 256-wide MXUs)
ResNet-18's default cut, one output row per CN with the filters whole, leaves its last 3 × 3
convolutions as 7 CNs, each reading all 9.4 MB of the layer's weights, so each such layer runs
on one MXU after one HBM link has fetched its weights. Cut into blocks of 64 filters, each such
layer becomes 8 CNs that the cores share, and each CN fetches an eighth of the weights.

**The cuts** (:func:`cut_axes`). For a CNN, the CN loops ``OY`` (rows per CN: :data:`ROWS`, up
to the tallest output) and ``K`` (filters per CN: fitted to the largest core as by default, or
one of the :data:`HALVINGS` largest powers of two below the most filters of any layer). For a
tensor program, ``K`` where it has a ``gemm`` or ``matmul`` (the reduction per CN, a chain of
partial sums: whole, or one of the :data:`HALVINGS` largest powers of two below the longest
reduction), ``M`` (rows per CN: the default share of the rows over the cores, or a power of
two up to the most rows, at least the default's over :data:`FINER`) and ``N`` (columns per
CN: fitted as by default, or one of the :data:`HALVINGS` largest powers of two below the
widest output). The reduction comes first: where it is long against a core's memory, the fitted
columns of a whole-reduction CN are narrow and its list the longest of the cuts (the held-out 256 ×
8192 × 2048 GEMM on eyeriss, 12 288 μops and 6 s by default; with 1 024 of the reduction a CN, 1 536
μops, 1.3 s and a fifth of the makespan), so the cuts along it cost least and cut the most, while
with the rows first the search ran out of time before it. The values are the same powers of two on
every machine, and none is fitted to a pair.

**The search** (:func:`search_cut`, ours). A coordinate descent from the default cut: along
each axis in turn, every value with the others kept, and the shortest cut so far is kept. The
descent repeats until a pass improves nothing or the time is up. Every cut is partitioned on
one machine view, whose cost model prices each distinct tile once. It is then scheduled by
``solve(instance, "list")`` (every allocation and priority of the memory-aware list) and
verified; its lists are abandoned once longer than the shortest cut's so far, so a cut that
loses costs less than its whole list. The first cut listed, whatever the time limit, is the
one of fewest CNs among the default and, for a tensor program, its cuts along ``K`` or ``M``
alone (:func:`fewest_uops`, counted before any is built), and its first list runs to its
end, so a schedule comes soonest; the default comes next. The limit is checked before each
cut and at each step of its lists, while a cut's
partition and allocations run to their end, so a cut is not built where it would make more
μops than :data:`FINER` times the default's, or than the time left lists at the first cut's
seconds per μop (the note says how many it makes and allows). A cut whose CNs fit no core is
recorded with the partition's reason, one whose list finds no schedule or is abandoned with why, and
one whose instance has the size, edges and work of a cut tried before (a tensor program's default
rows given explicitly) is not listed again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from npusched.arch.model import Arch
from npusched.costmodel import CostModel
from npusched.heuristics.scheduling.memory_list import Abandoned, MemoryDeadlock
from npusched.methods import solve
from npusched.methods.routed import memory_list_best, memory_priority
from npusched.methods.scheduling import heuristic_result
from npusched.partition.api import partition_network
from npusched.partition.instance import TooManyUops
from npusched.problem.scheduling.machine_view import MachineView
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.solvers.result import Result
from npusched.verify import check
from npusched.workload.network import Network
from npusched.workload.tensor import TensorProgram

HALVINGS = 4
"""How many powers of two below the most filters or columns the cuts of ``K`` or ``N`` take
(:func:`cut_axes`)."""

FINER = 4
"""A cut makes at most this many times the default cut's μops, and a tensor program's cuts
have at least the default's rows per CN over it: a cut of many times the default's μops costs
as many times its partition and list (the LLaMA layer at 4 096 tokens in one row per CN would
be 256 times the default's 379 296 μops; the 256 × 8192 × 2048 GEMM on ``simba`` with its
reduction halved, 8 times the default's 16 384, took 50 s to partition and allocate), and on
the Stream bench no shortest cut has fewer rows than a quarter of the default's."""

FIRST_SHARE = 0.5
"""A cut along ``K`` or ``M`` is listed before the default (:func:`fewest_uops`) only where it
makes at most this share of the default's CNs: the first list is the one the search waits
for, whatever the time limit, and its time grows with the CNs. Nearer the default's count the
default keeps its place: the LLaMA MLP on ``tpu_like_quad_core`` makes 13 152 CNs by default
and 8 928 with ``K=2048`` (0.68 of them), and that cut listed first at Stream's wall time left
no time for the default, 125 174 464 cycles against its 75 490 197 (one run). Set on that pair
and the held-out GEMM (0.125 and 0.03 of the default's CNs on eyeriss and ``simba``)."""

ROWS = (1, 2, 4, 8, 16)
"""Rows per CN of a CNN (``OY``) among the cuts (those up to the tallest output)."""

Cut = tuple[tuple[str, int], ...]
"""A cut: the CN loops given, sorted by name (an empty one: the scheme's default)."""


@dataclass(frozen=True)
class Tried:
    """One cut evaluated: its μops, the list's verified makespan (``None``: no schedule, for
    ``note``'s reason) and the seconds its partition and list took."""

    cn: dict[str, int]
    uops: int | None
    makespan: int | None
    seconds: float
    note: str = ""


@dataclass
class CutSearch:
    """The shortest cut found: its loops (``cn``; empty: the default cut), its instance and
    the list's result on it, every cut tried in order, and whether the descent ended by itself
    (``complete``) rather than at the time limit."""

    cn: dict[str, int]
    instance: RoutedInstance
    result: Result
    tried: list[Tried] = field(default_factory=list)
    seconds: float = 0.0
    complete: bool = True


def _halved(size: int) -> list[int]:
    """The powers of two below ``size``, the :data:`HALVINGS` largest."""
    top = (size - 1).bit_length() - 1
    return [2**k for k in range(top, max(top - HALVINGS, -1), -1)]


def cut_axes(workload: Network | TensorProgram, view: MachineView | None = None
             ) -> dict[str, list[int | None]]:  # fmt: skip
    """The values of each CN loop the search tries (module docstring), in the order it tries
    them: ``None`` (the loop not given: the default) first, then the coarsest cut first, whose
    partition and list cost least. With the machine ``view``, a tensor program's rows per CN
    are at least the default's (its rows over the cores) over :data:`FINER`."""
    if isinstance(workload, TensorProgram):
        outs = [workload.tensors[op.output].shape for op in workload.ops]
        rows = max((s[-2] for s in outs if len(s) > 1), default=1)
        cols = max(s[-1] for s in outs)
        floor = -(-rows // view.m) / FINER if view is not None else 1
        powers = [2**k for k in range(rows.bit_length()) if floor <= 2**k <= rows][::-1]
        axes: dict[str, list[int | None]] = {}
        reductions = [workload.tensors[op.inputs[0]].shape[-1] for op in workload.ops
                      if op.kind in ("gemm", "matmul")]  # fmt: skip
        if reductions:
            axes["K"] = [None, *_halved(max(reductions))]
        return {**axes, "M": [None, *powers], "N": [None, *_halved(cols)]}
    heights = [workload.shapes[ly.name][1] for ly in workload.layers]
    filters = max(workload.shapes[ly.name][0] for ly in workload.layers)
    return {"OY": [r for r in ROWS[::-1] if r <= max(heights)], "K": [None, *_halved(filters)]}


def _key(cn: Mapping[str, int | None]) -> Cut:
    return tuple(sorted((k, int(v)) for k, v in cn.items() if v is not None))


def search_cut(workload: Network | TensorProgram, arch: Arch | MachineView, *,
               time_limit: float | None = None, threads: int = 1,
               cost: str | CostModel = "analytic",
               precision: str | int = "arch", progress: bool = False,
               verify: bool = True) -> CutSearch:  # fmt: skip
    """The shortest cut of ``workload`` on ``arch`` by the memory-aware list (module docstring),
    within ``time_limit`` seconds (the default cut always runs; none: until the descent ends),
    the lists on ``threads`` processes; ``cost`` and ``precision`` as in
    :func:`~npusched.partition.api.partition_network`. With ``verify`` false the lists'
    schedules are not checked here (a caller that checks the kept one itself, outside its
    timing: the Stream bench, whose wall times leave verification out, as they did before
    the search).

    Raises
    ------
    ValueError
        The default cut does not partition or no list schedules it: the reason.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    view = MachineView.of(arch)
    axes = cut_axes(workload, view)
    seen: dict[Cut, Tried] = {}
    cuts: dict[tuple[int, int, int], Cut] = {}  # each instance's size, edges and work: its cut
    best: tuple[int, Cut, RoutedInstance, Result] | None = None
    bar = tqdm(desc="cuts", unit="cut", disable=not progress)
    most: int | None = None  # the μops a cut may make: FINER times the default's
    rate = 0.0  # the default cut's seconds per μop (its partition and lists)
    skipped = False  # a cut left out for the time left

    def evaluate(cut: Cut) -> None:
        nonlocal best
        t = time.perf_counter()
        left = None if deadline is None else max(deadline - t, 0.01)
        cap = most if left is None or most is None or rate <= 0 else \
            min(most, int(left / rate))
        try:
            inst = partition_network(workload, view, "stream", cn=dict(cut) or None,
                                     cost=cost, precision=precision,
                                     max_uops=cap)  # fmt: skip
        except ValueError as err:
            note = str(err)
            if isinstance(err, TooManyUops) and most is not None and err.n > most:
                note = f"the cut makes {err.n:,} μops, more than {FINER} times the default's"
            elif isinstance(err, TooManyUops):
                nonlocal skipped
                skipped = True  # (left out for the time left, not for its size)
                note += f": what the time left lists at the first cut's {rate * 1e3:.2f} ms a μop"
            seen[cut] = Tried(dict(cut), None, None, time.perf_counter() - t, note)
            bar.update()
            return
        assert isinstance(inst, RoutedInstance)
        same = (inst.n, inst.graph.num_edges, int(inst.duration.sum()))
        if same in cuts:  # (a tensor program's default rows given, say: the same CNs)
            seen[cut] = Tried(dict(cut), inst.n, None, time.perf_counter() - t,
                              f"the same CNs as {cut_name(dict(cuts[same]))}")  # fmt: skip
            bar.update()
            return
        cuts[same] = cut
        res, note = _listed(inst, threads, left, best[0] if best else None)
        sched = res.solution if res is not None else None
        ok = isinstance(sched, RoutedSchedule) and (not verify or check(inst, sched).ok)
        span = int(res.objective) if ok and res is not None and res.objective else None
        if span is None and not note:  # (a schedule that failed verification)
            note = "the list's schedule failed verification"
        seen[cut] = Tried(dict(cut), inst.n, span, time.perf_counter() - t,
                          note if span is None else "")  # fmt: skip
        if span is not None and res is not None and (best is None or span < best[0]):
            best = (span, cut, inst, res)
        bar.update()
        bar.set_postfix(best=best[0] if best else None)

    current: dict[str, int | None] = {name: None for name in axes}
    if "OY" in axes:
        current["OY"] = 1
    first, default_uops = fewest_uops(workload, view, axes, cost, precision)
    evaluate(first)  # the cut of fewest CNs (or the default: OY = 1 for a CNN, its K fitted)
    if first and best is not None:  # the default next, built where the time left lists it
        most, rate = FINER * (default_uops or best[2].n), seen[first].seconds / best[2].n
    if first and (best is None or deadline is None or time.perf_counter() < deadline):
        evaluate(())  # (abandoned once longer than the first, or at the deadline)
    if best is None:
        bar.close()
        raise ValueError(f"the default cut: {seen[()].note}")
    if not first:
        most, rate = FINER * best[2].n, seen[()].seconds / best[2].n
    complete, improved = () in seen, True
    while improved and complete:
        improved = False
        for name, values in axes.items():
            for v in values:
                cut = _key({**current, name: v})
                if cut in seen or cut == _key({"OY": 1}):
                    continue
                if deadline is not None and time.perf_counter() >= deadline:
                    complete = False
                    break
                before = best[0]
                evaluate(cut)
                if best[0] < before:
                    improved = True
            if not complete:
                break
            current = {**{n: None for n in axes}, **dict(best[1])}
            if "OY" in axes and current["OY"] is None:
                current["OY"] = 1
    bar.close()
    span, cut, inst, res = best
    return CutSearch(dict(cut), inst, res, list(seen.values()),
                     time.perf_counter() - t0, complete and not skipped)  # fmt: skip


def fewest_uops(workload: Network | TensorProgram, view: MachineView,
                axes: Mapping[str, list[int | None]], cost: str | CostModel = "analytic",
                precision: str | int = "arch") -> tuple[Cut, int | None]:  # fmt: skip
    """Of a tensor program's default cut and its cuts along ``K`` or ``M`` alone (whose columns
    are still fitted to the memory), the one of fewest CNs, counted before any is built
    (:class:`~npusched.partition.instance.TooManyUops`; ties: the default, then the axes'
    order), where it makes at most :data:`FIRST_SHARE` of the default's; else, and for a
    CNN, the default. The search lists it first, so that its one list that must run
    to the end is the cheapest: the held-out 256 × 8192 × 2048 GEMM on eyeriss makes 12 288
    CNs by default and 1 536 with ``K=1024``, the default's list took all of Stream's 1.5 s
    and the reduction's cut 0.75 of Stream's cycles where the default had 4.1 times them.
    Returns the cut and the default's CNs (``None``: not counted, or it does not partition).
    """
    if not isinstance(workload, TensorProgram):
        return (), None

    def count(cut: Cut) -> int | None:
        try:
            partition_network(workload, view, "stream", cn=dict(cut) or None, cost=cost,
                              precision=precision, max_uops=0)  # fmt: skip
        except TooManyUops as err:
            return err.n
        except ValueError:
            return None
        return None  # (no CNs at all)

    default = count(())
    fewest: tuple[int, Cut] | None = None if default is None else (default, ())
    for cut in [((name, v),) for name in ("K", "M") for v in axes.get(name, []) if v is not None]:
        n = count(cut)
        if n is not None and (fewest is None or n < fewest[0]):
            fewest = (n, cut)
    if fewest is None or default is not None and fewest[0] > FIRST_SHARE * default:
        return (), default
    return fewest[1], default


def _listed(inst: RoutedInstance, threads: int, left: float | None, stop: int | None
            ) -> tuple[Result | None, str]:  # fmt: skip
    """``solve(inst, "list")`` (no result: why), its lists abandoned once longer than ``stop``
    (:func:`~npusched.methods.routed.memory_list_best`) where the machine has memories."""
    if inst.capacity is None:
        res = solve(inst, "list", threads=threads, time_limit=left)
        return res, res.message or "no verified schedule"
    deadline = None if left is None else time.perf_counter() + left
    try:  # (the default cut, stop None: its first list runs to the end, the rest stop at
        # the deadline; another cut's all stop there)
        sched, priority = memory_list_best(inst, memory_priority("blevel"), threads, deadline,
                                           stop, strict=True)  # fmt: skip
    except Abandoned:
        if deadline is not None and time.perf_counter() > deadline:
            return None, "abandoned: out of time"
        return None, f"abandoned: longer than {stop or 0:,} cycles, the shortest cut's so far"
    except MemoryDeadlock as err:
        return None, str(err)
    res = heuristic_result("list", inst, sched)
    res.stats["priority"] = priority
    return res, ""


def cut_name(cn: Mapping[str, int]) -> str:
    """A cut as ``K=64,OY=8`` (``default``: the default cut)."""
    return ",".join(f"{k}={v}" for k, v in sorted(cn.items())) or "default"


def tried_table(search: CutSearch) -> list[dict[str, Any]]:
    """The cuts tried as rows (``cn`` as ``K=64,OY=8``; ``default`` for the default cut), the
    kept one marked."""
    rows = []
    for t in search.tried:
        rows.append({"cut": cut_name(t.cn), "uops": t.uops, "makespan": t.makespan,
                     "seconds": round(t.seconds, 2), "kept": t.cn == search.cn,
                     "note": t.note})  # fmt: skip
    return rows
