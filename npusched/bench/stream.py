"""Stream's exports with memory enforced: the list schedulers against Stream's own schedule.

    python -m npusched.bench.stream [--time-limit 60] [--threads 2] [--doc docs/results_stream.md]
        [EXPORT.json ...]

On each Stream export (default: the two shared ones) with Stream's allocation it runs

- ``list`` without memory (transfers on links, fetches hoisted into the earliest link gaps: the
  routed model as it was before capacities);
- the memory-aware list (:mod:`npusched.heuristics.scheduling.memory_list`) with Stream's
  ``latency`` and ``memory`` priorities, each core's top memory a hard capacity;
- ``joint`` (CP-SAT with a cumulative of each core's memory over the lifetimes) warm-started from
  the latency-priority list, and ``lns`` (the large-neighbourhood search on that model), each
  under ``--time-limit``;

verifies every schedule against the instance *with* capacities, and prints a Markdown table:
makespan, ratio to Stream's makespan, the instance's lower bound, each core's peak resident data
over its capacity, whether the schedule passes verify with memory, and seconds (the bound: the
instance's lower bound, or CP-SAT's where better). With ``--doc``
the table replaces the part of that file between ``<!-- tables -->`` and ``<!-- /tables -->``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from npusched.bench.doc import publish
from npusched.heuristics.scheduling.memory_list import MemoryDeadlock, memory_list_schedule
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.io.stream import read_stream
from npusched.methods import solve
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.verify import check
from npusched.verify.scheduling.routed import memory_peaks

SHARED = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "stream"
EXPORTS = ("tiny_res16_tpu_quad_core_fused.json", "resnet18_tpu_quad_core_fused.json")


def run_export(path: Path, time_limit: float = 60, threads: int = 2) -> list[dict[str, Any]]:
    """One row per scheduler on the export at ``path`` (Stream's allocation, memory enforced)."""
    inst = read_stream(path, memory=True)
    stream = inst.source.get("stream_makespan")

    def exact(method: str) -> Any:
        def run(i: RoutedInstance) -> tuple[RoutedSchedule, float | None]:
            res = solve(i, method, time_limit=time_limit, threads=threads)
            assert isinstance(res.solution, RoutedSchedule)
            return res.solution, res.bound

        return run

    rows = []
    for name, run in (
        ("list, no memory", lambda i: (routed_list_schedule(i), None)),
        ("list, memory, latency priority", lambda i: (memory_list_schedule(i, "latency"), None)),
        ("list, memory, memory priority", lambda i: (memory_list_schedule(i, "memory"), None)),
        (f"joint, memory, {time_limit:g} s", exact("joint")),
        (f"lns, memory, {time_limit:g} s", exact("lns")),
    ):
        t0 = time.perf_counter()
        row: dict[str, Any] = {"export": inst.name, "method": name, "stream": stream}
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
        rows.append(row)
    return rows


def _peaks(inst_caps: list[int], peaks: list[int]) -> str:
    return ", ".join(f"{p / c:.2f}" for p, c in zip(peaks, inst_caps, strict=True))


def table(rows: list[dict[str, Any]], caps: dict[str, list[int]]) -> str:
    head = (
        "| export | method | makespan | / Stream's | bound | peak / capacity per core | "
        "verify with memory | s |\n| --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['export']} | {r['method']} | – | – | – | {r['error']} | – | – |")
            continue
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.3f}"
        lines.append(
            f"| {r['export']} | {r['method']} | {r['makespan']} | {ratio} | {r['bound']} | "
            f"{_peaks(caps[r['export']], r['peaks'])} | {'ok' if r['ok'] else 'FAILED'} | "
            f"{r['seconds']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m npusched.bench.stream", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("exports", nargs="*", type=Path, help="Stream exports (default: shared)")
    p.add_argument("--time-limit", type=float, default=60.0, help="joint's seconds (60)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--doc", type=Path, help="Markdown file whose tables block is replaced")
    args = p.parse_args(argv)
    paths = args.exports or [SHARED / name for name in EXPORTS]
    rows: list[dict[str, Any]] = []
    caps: dict[str, list[int]] = {}
    for path in paths:
        inst: RoutedInstance = read_stream(path, memory=True)
        assert inst.capacity is not None
        caps[inst.name] = inst.capacity.tolist()
        rows += run_export(path, args.time_limit, args.threads)
    publish(table(rows, caps), args.doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
