"""Growth of the routed bounds and of the exact model's construction with the number of μops.

    python -m npusched.bench.routed_growth [--max-uops N] [--model-max-uops N] [--doc FILE]

ResNet-50 from the zoo is cut by Klotski's scheme on the routed machine (the default: links,
DRAM ports, SRAM capacities) into μop graphs of growing size, the shapes of
``python -m npusched.bench.list_scaling`` (klotski-4x4 from s = 14,14,256,256 to 7,7,32,32;
klotski-5x5 at s = 2,2,128,32 and 1,1,128,32 unaligned). On each, in a fresh process:

- the partition (``npusched partition``);
- the heads and tails (:attr:`~npusched.problem.scheduling.routed.RoutedInstance.heads_tails`)
  and every other term of
  :meth:`~npusched.problem.scheduling.routed.RoutedInstance.lower_bound` (windows, ports,
  prefetch, ancestors' load);
- the live peak (:func:`~npusched.problem.scheduling.routed_bounds.live_peak`) and the
  interchangeable-core relaxation's instance
  (:func:`~npusched.problem.scheduling.routed_relax.interchangeable`);
- up to ``--model-max-uops`` μops, the CP-SAT model with memories
  (:class:`~npusched.formulations.scheduling.routed.RoutedModel`) on the allocation of the
  priority list (the model ``lns`` cuts its neighbourhoods from, and the memory model of
  ``joint``), built but not solved;
- the process's peak resident memory.

Between successive sizes the table shows how much each time grew against n: for a cost
near-linear in n the ratios are about equal. One measurement per cell, on a shared machine.
"""

from __future__ import annotations

import argparse
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from npusched.bench.doc import publish
from npusched.bench.list_scaling import CASES, Case


def measure(case: Case, model_max: int) -> dict[str, Any]:
    """One row: the partition, the bounds, the relaxation's instance and (up to ``model_max``
    μops) the model, each timed; the peak resident memory of this process."""
    from npusched.arch import load_arch
    from npusched.formulations.scheduling.routed import RoutedModel
    from npusched.heuristics.scheduling.list_scheduling import list_schedule
    from npusched.partition.api import partition_network, resolve_network
    from npusched.problem.scheduling.routed import RoutedInstance
    from npusched.problem.scheduling.routed_bounds import live_peak
    from npusched.problem.scheduling.routed_relax import interchangeable

    row: dict[str, Any] = {"case": case.name}
    t0 = time.perf_counter()
    inst = partition_network(resolve_network("resnet50"), load_arch(case.arch), "klotski",
                             s=case.s, align=case.align)  # fmt: skip
    assert isinstance(inst, RoutedInstance)
    row.update(n=inst.n, E=inst.graph.num_edges, m=inst.m, partition=time.perf_counter() - t0)
    for key, run in (
        ("heads", lambda: inst.heads_tails),
        ("bound", inst.lower_bound),
        ("live", lambda: live_peak(inst, 10**15)),
        ("relax", lambda: interchangeable(inst)),
    ):
        t0 = time.perf_counter()
        out = run()
        row[key] = time.perf_counter() - t0
        if key == "bound":
            row["lower_bound"] = int(out)  # type: ignore[arg-type]
    row["model"] = row["list"] = None
    if inst.n <= model_max:
        t0 = time.perf_counter()
        core = list_schedule(inst.base, "blevel").core
        row["list"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        RoutedModel(inst.restricted(core), 10**12)
        row["model"] = time.perf_counter() - t0
    row["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def _ratio(prev: dict[str, Any] | None, row: dict[str, Any], key: str) -> str:
    if prev is None or not prev.get(key) or row.get(key) is None:
        return "–"
    return f"{row[key] / prev[key]:.2f}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a Markdown table; each ``×`` column is the growth from the row before."""
    lines = [
        "| case | n | E | n × | partition (s) | heads, tails (s) | lower bound (s) | × | "
        "live peak (s) | relaxation (s) | model (s) | × | peak memory (MB) | lower bound |",
        "| --- " * 14 + "|",
    ]
    prev: dict[str, Any] | None = None
    for r in rows:
        model = "–" if r["model"] is None else f"{r['model']:.2f}"
        lines.append(
            f"| {r['case']} | {r['n']} | {r['E']} | {_ratio(prev, r, 'n')} | "
            f"{r['partition']:.2f} | {r['heads']:.3f} | {r['bound']:.3f} | "
            f"{_ratio(prev, r, 'bound')} | {r['live']:.3f} | {r['relax']:.3f} | {model} | "
            f"{_ratio(prev, r, 'model')} | {r['peak_mb']:.0f} | {r['lower_bound']} |"
        )
        prev = r
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.routed_growth``: each case of at most ``--max-uops`` μops
    in a fresh process (its peak memory its own), print the table, and with ``--doc`` replace
    that file's part between ``<!-- growth -->`` and ``<!-- /growth -->``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-uops", type=int, default=250_000,
                   help="skip the cases with more μops than this (default 250000; the largest "
                        "case has 834272)")  # fmt: skip
    p.add_argument("--model-max-uops", type=int, default=50_000,
                   help="build the CP-SAT model up to this many μops (default 50000)")
    p.add_argument("--doc", default=None, help="Markdown file to update")
    args = p.parse_args(argv)
    if args.max_uops < 1 or args.model_max_uops < 0:
        p.error("--max-uops must be positive and --model-max-uops not negative")
    rows = []
    for case in (c for c in CASES if c.uops <= args.max_uops):
        with ProcessPoolExecutor(1, mp_context=get_context("fork")) as pool:
            rows.append(pool.submit(measure, case, args.model_max_uops).result())
        print(f"{case.name}: n={rows[-1]['n']}", flush=True)
    publish("\n".join(table(rows)), Path(args.doc) if args.doc else None, "growth")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
