"""Stream's exports with memory enforced: the list schedulers against Stream's own schedule.

    python -m npusched.bench.stream [--time-limit 60] [--threads 2] [--ga 10,16]
        [--doc docs/results_stream.md] [EXPORT.json ...]

On each Stream export (default: the two shared ones) with Stream's allocation it runs

- ``list`` without memory (transfers on links, fetches hoisted into the earliest link gaps: the
  routed model as it was before capacities);
- the memory-aware list (:mod:`npusched.heuristics.scheduling.memory_list`) with Stream's
  ``latency`` and ``memory`` priorities, each core's top memory a hard capacity;
- ``joint`` (CP-SAT with a cumulative of each core's memory over the lifetimes) warm-started from
  the latency-priority list, and ``lns`` (the large-neighbourhood search on that model), each
  under ``--time-limit``;

then both list priorities with every memory cut to ``--scale`` (default 0.1) of Stream's, but
never below the largest operand set a core must hold, where the list has to evict; and with
``--ga G,P`` Stream's allocation GA (``npusched allocate``, limited to ``--time-limit``) followed
by the list, ``joint`` and ``lns`` on its best allocation, and the exact allocation model under
LNS from that allocation (``npusched allocate --method cpsat``'s second half, ``--time-limit``).
It verifies every schedule against the instance *with* capacities, and prints a Markdown table:
makespan, ratio to Stream's makespan, the bound (the instance's lower bound; for a fixed
allocation's, the allocation's), each core's peak resident data over its capacity, the
evictions (write-backs / re-fetches), whether the schedule passes verify with memory, and
seconds. With ``--doc`` the table replaces the part of that file between ``<!-- tables -->``
and ``<!-- /tables -->``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from npusched.bench.doc import publish
from npusched.common.jsonio import read_json
from npusched.heuristics.scheduling.memory_list import MemoryDeadlock, memory_list_schedule
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.io.stream import allocation_groups, read_stream, stream_from_dict
from npusched.methods import solve
from npusched.problem.scheduling.routed import EVICT, REFETCH, RoutedInstance, RoutedSchedule
from npusched.search.allocation import Units, run_ga
from npusched.search.allocation_lns import allocation_lns
from npusched.verify import check
from npusched.verify.scheduling.routed import memory_peaks

SHARED = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "stream"
EXPORTS = ("tiny_res16_tpu_quad_core_fused.json", "resnet18_tpu_quad_core_fused.json")


def run_export(
    path: Path,
    time_limit: float = 60,
    threads: int = 2,
    ga: tuple[int, int] | None = None,
    scale: float = 0.1,
) -> list[dict[str, Any]]:
    """Rows for the export at ``path`` with memory enforced: every scheduler on Stream's
    allocation; with ``ga = (generations, population)`` also the allocation GA (its best
    allocation's list schedule, the search limited to ``time_limit``) and ``joint`` and ``lns``
    on that allocation."""

    def exact(method: str) -> Runner:
        def run(i: RoutedInstance) -> tuple[RoutedSchedule, float | None]:
            res = solve(i, method, time_limit=time_limit, threads=threads)
            assert isinstance(res.solution, RoutedSchedule)
            return res.solution, res.bound

        return run

    def latency(i: RoutedInstance) -> tuple[RoutedSchedule, float | None]:
        return memory_list_schedule(i, "latency"), None

    inst = read_stream(path, memory=True)
    rows = _rows(inst, "Stream's", [
        ("list, no memory", lambda i: (routed_list_schedule(i), None)),
        ("list, memory, latency priority", latency),
        ("list, memory, memory priority", lambda i: (memory_list_schedule(i, "memory"), None)),
        (f"joint, memory, {time_limit:g} s", exact("joint")),
        (f"lns, memory, {time_limit:g} s", exact("lns")),
    ])  # fmt: skip
    assert inst.capacity is not None
    need = np.where(inst.mask, inst.operand_data()[:, None], 0).max(axis=0)
    small = replace(inst, capacity=np.maximum((inst.capacity * scale).astype(np.int64), need))
    rows += _rows(small, f"Stream's, memories x{scale:g}", [
        ("list, memory, latency priority", latency),
        ("list, memory, memory priority", lambda i: (memory_list_schedule(i, "memory"), None)),
    ])  # fmt: skip
    if ga is None:
        return rows
    data = read_json(path)
    free = stream_from_dict(data, str(path), free_allocation=True, memory=True)
    units = Units.of(free, allocation_groups(data))
    t0 = time.perf_counter()
    front = run_ga(free, units, ga[0], ga[1], seed=0, time_limit=time_limit)
    ours = free.restricted(units.core_of(front.genomes[front.best()]))
    ga_s = time.perf_counter() - t0
    rows += _rows(ours, "GA's best", [
        (f"GA {ga[0]}x{ga[1]} ({len(front.genomes)} allocations, {ga_s:.0f} s), list", latency),
        (f"joint, memory, {time_limit:g} s", exact("joint")),
        (f"lns, memory, {time_limit:g} s", exact("lns")),
    ])  # fmt: skip
    t0 = time.perf_counter()
    lns = allocation_lns(free, units, units.core_of(front.genomes[front.best()]), time_limit,
                         threads=threads)  # fmt: skip
    lns_s = time.perf_counter() - t0
    rows += _rows(free.restricted(lns.core), "exact model's (LNS)", [
        (f"allocation LNS from the GA's best, {lns.rounds} rounds, {time_limit:g} s",
         lambda i: (lns.schedule, None)),
    ])  # fmt: skip
    rows[-1]["seconds"] = lns_s
    rows[-1]["bound"] = free.lower_bound()
    return rows


Runner = Callable[[RoutedInstance], tuple[RoutedSchedule, float | None]]


def _rows(
    inst: RoutedInstance, allocation: str, runs: list[tuple[str, Runner]]
) -> list[dict[str, Any]]:
    """One verified row per ``(name, run)`` on ``inst``."""
    stream = inst.source.get("stream_makespan")
    rows = []
    for name, run in runs:
        t0 = time.perf_counter()
        row: dict[str, Any] = {"export": inst.name, "allocation": allocation, "method": name,
                               "stream": stream}  # fmt: skip
        try:
            sched, bound = run(inst)
        except MemoryDeadlock as err:
            row["error"] = str(err)
            rows.append(row)
            continue
        row["seconds"] = time.perf_counter() - t0
        rep = check(inst, sched)
        row["makespan"], row["ok"] = sched.makespan(inst), rep.ok
        row["ratio"] = row["makespan"] / stream if stream else None
        row["bound"] = max(inst.lower_bound(), int(bound or 0))
        row["peaks"] = memory_peaks(inst, sched).tolist()
        kinds = sched.moves.kind if sched.moves is not None else np.zeros(0)
        row["moves"] = [int((kinds == EVICT).sum()), int((kinds == REFETCH).sum())]
        row["capacity"] = [] if inst.capacity is None else inst.capacity.tolist()
        rows.append(row)
    return rows


def _peaks(capacity: list[int], peaks: list[int]) -> str:
    return ", ".join(f"{p / c:.2f}" for p, c in zip(peaks, capacity, strict=True))


def table(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`run_export` as the Markdown table of the module docstring; a row whose
    scheduler deadlocked on the memories shows the deadlock in place of its figures."""
    head = (
        "| export | allocation | method | makespan | / Stream's | bound | peak / capacity per "
        "core | write-backs / re-fetches | verify with memory | s |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['export']} | {r['allocation']} | {r['method']} | – | – | – | "
                         f"{r['error']} | – | – | – |")  # fmt: skip
            continue
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.3f}"
        lines.append(
            f"| {r['export']} | {r['allocation']} | {r['method']} | {r['makespan']} | {ratio} | "
            f"{r['bound']} | "
            f"{_peaks(r['capacity'], r['peaks'])} | {r['moves'][0]} / {r['moves'][1]} | "
            f"{'ok' if r['ok'] else 'FAILED'} | "
            f"{r['seconds']:.2f} |"
        )
    return "\n".join(lines)


def _pair(text: str) -> tuple[int, int]:
    """``G,P``: generations and population, two positive integers."""
    parts = text.split(",")
    if len(parts) != 2 or not all(v.strip().isdecimal() and int(v) > 0 for v in parts):
        raise argparse.ArgumentTypeError(f"expected GENERATIONS,POPULATION, got {text!r}")
    return int(parts[0]), int(parts[1])


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.stream``: :func:`run_export` on each export given (default:
    the shared ones) with ``--time-limit``, ``--threads``, ``--ga`` and ``--scale``, then print
    :func:`table` and, with ``--doc``, write it into that file's ``tables`` block.

    Parameters
    ----------
    argv
        The arguments of the module docstring's command line (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0, also when some schedule fails verification (its row says so).
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.stream", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("exports", nargs="*", type=Path, help="Stream exports (default: shared)")
    p.add_argument("--time-limit", type=float, default=60.0, help="joint's seconds (60)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ga", type=_pair, help="G,P: also search allocations (Stream's GA)")
    p.add_argument(
        "--scale",
        type=float,
        default=0.1,
        help="memories of the evicting rows, a share of Stream's (0.1)",
    )
    p.add_argument("--doc", type=Path, help="Markdown file whose tables block is replaced")
    args = p.parse_args(argv)
    paths = args.exports or [SHARED / name for name in EXPORTS]
    rows = []
    for path in paths:
        rows += run_export(path, args.time_limit, args.threads, args.ga, args.scale)
    publish(table(rows), args.doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
