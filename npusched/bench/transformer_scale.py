"""Scale of a transformer layer: LLaMA-3-8B's decoder layer cut into Stream's CNs on a routed
4 × 4 mesh, then list-scheduled with the memories enforced.

    python -m npusched.bench.transformer_scale [--tokens 256,1024,4096] [--arch klotski-4x4]
        [--list-max-uops 90000] [--threads 2] [--json rows.json]
        [--doc docs/results_transformers.md]

For each prefill length (the zoo's ``llama3-8b-prefill-*``): the partition's wall time, its μops
and edges, then the memory-aware list's wall time and makespan (verified). The list runs only up
to ``--list-max-uops`` μops (about 0.3 ms a μop at 1 024 tokens on this machine and 0.7 ms
at 4 096, with 2 threads: the default runs the 1 024-token layer, under a minute;
``--list-max-uops 400000`` also the 4 096-token one, about 5 minutes and 6 GB); a longer case
says so in its row instead of a time.

The list tries its allocations in ``--threads`` forked processes (default 2, this machine's
cores), with Stream's ``latency`` priority (``--priority``; ``solve``'s default tries both
priorities, about twice the work). Peak memory is the resident peak (``ru_maxrss``) of the
process or its largest worker after each step. The cases run from the smallest up in one
process, so each figure is the peak of that case or an earlier one, which the increasing sizes
make the case's own. The issue's goals are ≥ 100 000 μops partitioned in
≤ 30 s and list-scheduled in ≤ 60 s at 4 096 tokens; the table says where they stand.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from npusched.arch import load_arch
from npusched.bench.doc import publish
from npusched.methods import solve
from npusched.partition.api import partition_network
from npusched.verify import check
from npusched.workload.zoo import load_network


def peak_mib() -> float:
    """The resident peak so far of the process or of the largest of its finished workers (the
    list's allocations run in forked processes with ``--threads`` > 1), MiB (``ru_maxrss``:
    KiB on Linux, bytes on macOS)."""
    rss = max(resource.getrusage(who).ru_maxrss
              for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))  # fmt: skip
    return rss / (2**20 if sys.platform == "darwin" else 2**10)


def run_case(tokens: int, arch_name: str, list_max: int, threads: int = 1,
             priority: str = "latency") -> dict[str, Any]:  # fmt: skip
    """One prefill length: partition, then the list where the size allows (module docstring)."""
    prog, arch = load_network(f"llama3-8b-prefill-{tokens}"), load_arch(arch_name)
    t0 = time.perf_counter()
    inst = partition_network(prog, arch, "stream")
    row: dict[str, Any] = {
        "tokens": tokens, "arch": arch.name, "uops": inst.n, "edges": int(inst.graph.src.size),
        "partition_s": round(time.perf_counter() - t0, 1), "partition_peak_mib": round(peak_mib()),
    }  # fmt: skip
    if inst.n > list_max:
        row["list"] = f"not run (over {list_max} μops)"
        return row
    t1 = time.perf_counter()
    res = solve(inst, "list", threads=threads, priority=priority)
    if res.solution is None:  # the list found no schedule within the memories: say why
        row["list"] = f"failed after {time.perf_counter() - t1:.0f} s: {res.message}"
        return row
    row.update(list_s=round(time.perf_counter() - t1, 1), makespan=res.objective,
               verified=check(inst, res.solution).ok, list_peak_mib=round(peak_mib()))  # fmt: skip
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table of the rows."""
    lines = ["| tokens | μops | edges | partition (s) | peak after partition (MiB) | list (s) | "
             "makespan | verified | peak after list (MiB) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in rows:
        ms = f"{r['makespan']:,.0f}" if "makespan" in r else "–"
        lines.append(
            f"| {r['tokens']} | {r['uops']:,} | {r['edges']:,} | {r['partition_s']} | "
            f"{r['partition_peak_mib']:,} | {r.get('list_s', r.get('list'))} | {ms} | "
            f"{r.get('verified', '–')} | {r.get('list_peak_mib', '–')} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.transformer_scale`` (module docstring)."""
    p = argparse.ArgumentParser(prog="python -m npusched.bench.transformer_scale",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--tokens", default="256,1024,4096", help="prefill lengths of the zoo")
    p.add_argument("--arch", default="klotski-4x4", help="a routed 4 x 4 mesh (default)")
    p.add_argument("--list-max-uops", type=int, default=90_000)
    p.add_argument("--threads", type=int, default=2, help="processes for the list's allocations")
    p.add_argument("--priority", default="latency",
                   help="the list's priority: latency (default, one list per allocation), "
                   "memory, or blevel (both, as solve's default: about twice the time)")
    p.add_argument("--json", type=Path, help="write the rows as JSON")
    p.add_argument("--doc", type=Path, help="Markdown file whose scale block is replaced")
    args = p.parse_args(argv)
    rows = []
    for tokens in sorted(int(t) for t in args.tokens.split(",")):
        row = run_case(tokens, args.arch, args.list_max_uops, args.threads, args.priority)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    publish(table(rows), args.doc, "scale")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
