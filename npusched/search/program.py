"""Klotski's orchestration (Fig. 4, Algorithm 1) on a tensor program: Bayesian optimization of
its tiles ``s = (B, M, K, N)`` (heads, rows, reduction, columns;
:mod:`npusched.partition.tensor`'s ``klotski`` scheme) around the memory-aware list on the
routed machine, then ``joint`` on the best ``s``.

The design space (:func:`program_space`) is the product of the divisors and powers of two of the
largest head count and row count, and of the multiples of the first core's PE unrolling of ``C``
and ``K`` up to the largest reduction and column count, one point per distinct cut
(:func:`~npusched.partition.tensor.cut_signature`: the smallest ``s`` of each), at most
:data:`~npusched.search.space.MAX_UOPS` μops. It is the same
:class:`~npusched.search.space.DesignSpace` the CNN search uses, and the same
:func:`~npusched.search.bo.bayes_search` (GP, UCB) runs over it. A point whose CNs fit no core
memory is evaluated infeasible, with the partition's reason.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

from npusched.arch.model import Arch
from npusched.methods import solve
from npusched.partition.api import partition_network
from npusched.partition.tensor import cut_signature
from npusched.problem.scheduling.machine_view import MachineView
from npusched.problem.scheduling.routed import RoutedSchedule
from npusched.search.bo import SearchResult, bayes_search
from npusched.search.evaluate import Evaluation
from npusched.search.space import MAX_UOPS, DesignSpace, divisors_and_powers, multiples
from npusched.solvers.result import Result
from npusched.verify import check
from npusched.workload.tensor import TensorProgram


def program_space(prog: TensorProgram, arch: Arch | MachineView,
                  max_uops: int = MAX_UOPS) -> DesignSpace:  # fmt: skip
    """The tiles of ``prog`` on ``arch`` (module docstring)."""
    outs = [prog.tensors[op.output].shape for op in prog.ops]
    heads = max((max(s[:-2]) for s in outs if len(s) > 2), default=1)
    rows = max((s[-2] for s in outs if len(s) > 1), default=1)
    reduce = max(prog.tensors[op.inputs[0]].shape[-1] for op in prog.ops)
    cols = max(s[-1] for s in outs)
    unroll = arch.cores[0].pe_unroll
    axes = (divisors_and_powers(heads), divisors_and_powers(rows),
            multiples(int(unroll.get("C", 1)), reduce), multiples(int(unroll.get("K", 1)), cols))
    points, sizes, large, seen = [], [], 0, set()
    for s in itertools.product(*axes):
        sig, n = cut_signature(prog, dict(zip("BMKN", s, strict=True)))
        if sig in seen:
            continue
        seen.add(sig)
        if n > max_uops:
            large += 1
            continue
        points.append(s)
        sizes.append(n)
    if not points:
        raise ValueError(f"no tiling of {prog.name} has at most {max_uops} μops")
    return DesignSpace(tuple(points), 0, tuple(sizes), large, max_uops)


def evaluate_tiles(prog: TensorProgram, arch: Arch | MachineView,
                   s: tuple[int, int, int, int]) -> Evaluation:  # fmt: skip
    """``prog`` cut by ``s`` and timed by the memory-aware list, verified."""
    t0 = time.perf_counter()
    try:
        inst = partition_network(prog, arch, "klotski", s=s)
    except ValueError as err:
        return Evaluation(s, "makespan", None, None, 0, time.perf_counter() - t0,
                          feasible=False, note=str(err))  # fmt: skip
    res = solve(inst, "list")
    sched = res.solution if isinstance(res.solution, RoutedSchedule) else None
    ok = sched is not None and check(inst, sched).ok
    return Evaluation(s, "makespan", 0.0, int(res.objective or 0) if ok else None, inst.n,
                      time.perf_counter() - t0, sched if ok else None, ok,
                      "" if ok else "the list found no verified schedule")  # fmt: skip


@dataclass
class ProgramOrchestration:
    """The search, the best tiles' instance and the final ``joint`` result on it."""

    search: SearchResult
    instance: Any
    final: Result
    seconds: float


def orchestrate_program(prog: TensorProgram, arch: Arch | MachineView, budget: int = 20, *,
                        seed: int = 0, final_time_limit: float = 30.0, threads: int = 2,
                        progress: bool = False) -> ProgramOrchestration:  # fmt: skip
    """BO over the tiles of ``prog`` for ``budget`` evaluations, then ``joint`` for
    ``final_time_limit`` seconds on the best tiles, warm-started from their list schedule."""
    t0 = time.perf_counter()
    arch = MachineView.of(arch)  # read once: every partition below shares what it derives
    space = program_space(prog, arch)
    found = bayes_search(space, lambda s: evaluate_tiles(prog, arch, s), budget, seed=seed,
                         progress=progress)  # fmt: skip
    best = found.best
    inst = partition_network(prog, arch, "klotski", s=best.s)
    final = solve(inst, "joint", time_limit=final_time_limit, threads=threads, seed=seed,
                  warm_start=best.schedule)  # fmt: skip
    return ProgramOrchestration(found, inst, final, time.perf_counter() - t0)
