"""Growth of the memory-aware list scheduler with the number of μops.

    python -m npusched.bench.memory_scaling [--layers 25,50,...,1600] [--width 40]

Layered random DAGs (``npusched generate layered``: ``--width`` μops a layer) on a 3 × 3 mesh
with link contention; the allocation is fixed to the routed list's, and every core gets a memory
of six times the largest data one μop needs, so that capacities bind now and then. Each schedule
of :func:`~npusched.heuristics.scheduling.memory_list.memory_list_schedule` is verified (memory
included), and the table shows the time per μop and, between successive sizes, the growth of the
time against the growth of n: for near-linear cost the two ratios are about equal. Single
measurements in this process on a shared machine.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

import numpy as np

from npusched.bench.generate import layered_dag
from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.problem.scheduling.routed import RoutedInstance
from npusched.verify import check


def measure(layers: int, width: int, seed: int = 1) -> dict[str, Any]:
    """One size: the instance, the scheduler's time and whether its schedule verifies."""
    inst = RoutedInstance.from_mesh(layered_dag(layers, width, (3, 3), seed=seed))
    inst = inst.restricted(routed_list_schedule(inst).core)
    need = int(inst.operand_data().max())
    inst = replace(inst, capacity=np.full(inst.m, 6 * max(need, 1)))
    t0 = time.perf_counter()
    sched = memory_list_schedule(inst)
    seconds = time.perf_counter() - t0
    rep = check(inst, sched)
    return {"n": inst.n, "edges": inst.graph.num_edges, "s": seconds, "ok": rep.ok,
            "makespan": rep.makespan}  # fmt: skip


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| μops | edges | seconds | μs per μop | n growth | time growth | verify |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k, r in enumerate(rows):
        grow = ("–", "–") if k == 0 else (
            f"{r['n'] / rows[k - 1]['n']:.2f}", f"{r['s'] / max(rows[k - 1]['s'], 1e-9):.2f}"
        )  # fmt: skip
        lines.append(f"| {r['n']} | {r['edges']} | {r['s']:.2f} | {1e6 * r['s'] / r['n']:.0f} | "
                     f"{grow[0]} | {grow[1]} | {'ok' if r['ok'] else 'FAILED'} |")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m npusched.bench.memory_scaling",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--layers", default="25,50,100,200,400,800,1600")
    p.add_argument("--width", type=int, default=40)
    args = p.parse_args(argv)
    rows = [measure(int(v), args.width) for v in args.layers.split(",")]
    print("\n".join(table(rows)))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
