"""Growth of the memory-aware list scheduler with the number of μops.

    python -m npusched.bench.memory_scaling [--layers 25,50,...,1600] [--width 40] [--evict]
        [--forward]

Layered random DAGs (``npusched generate layered``: ``--width`` μops a layer) on a 3 × 3 mesh
with link contention; the allocation is fixed to the routed list's, and every core gets a memory
of six times the largest data one μop needs, so that capacities bind now and then. Each schedule
of :func:`~npusched.heuristics.scheduling.memory_list.memory_list_schedule` is verified (memory
included), and the table shows the time per μop and, between successive sizes, the growth of the
time against the growth of n: for near-linear cost the two ratios are about equal. Single
measurements in this process on a shared machine.

With ``--evict`` the mesh also gets a DRAM core behind one off-chip link (half the mesh links'
bandwidth, shared by both directions), every block of eight consecutive μops a weight in DRAM
that all eight read, and every core a memory of just the largest data one μop needs, so that
the list evicts all the time (weights dropped and fetched again, activations written back); the
table adds the write-backs and re-fetches. With ``--forward`` too, a core may take a weight from
a core that holds it (:attr:`~npusched.problem.scheduling.routed.RoutedInstance.forward`): each
copy the list books then also looks at every core holding the weight, and the table adds the
forwards.
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
from npusched.problem.scheduling.routed import (
    EVICT,
    FORWARD,
    REFETCH,
    DramTensor,
    Link,
    RoutedInstance,
    Topology,
)
from npusched.verify import check


def measure(layers: int, width: int, seed: int = 1, evict: bool = False,
            forward: bool = False) -> dict[str, Any]:  # fmt: skip
    """One size: the instance, the scheduler's time and whether its schedule verifies."""
    inst = RoutedInstance.from_mesh(layered_dag(layers, width, (3, 3), seed=seed))
    inst = inst.restricted(routed_list_schedule(inst).core)
    if evict:
        inst = replace(with_dram(inst, np.random.default_rng(seed)), forward=forward)
    need = int(inst.operand_data().max())
    inst = replace(inst, capacity=np.full(inst.m, (1 if evict else 6) * max(need, 1)))
    t0 = time.perf_counter()
    sched = memory_list_schedule(inst)
    seconds = time.perf_counter() - t0
    rep = check(inst, sched)
    kinds = sched.moves.kind if sched.moves is not None else np.zeros(0)
    return {"n": inst.n, "edges": inst.graph.num_edges, "s": seconds, "ok": rep.ok,
            "makespan": rep.makespan, "evict": int((kinds == EVICT).sum()),
            "refetch": int((kinds == REFETCH).sum()),
            "forward": int((kinds == FORWARD).sum())}  # fmt: skip


def with_dram(inst: RoutedInstance, rng: np.random.Generator) -> RoutedInstance:
    """``inst`` with a DRAM core behind one off-chip link and a weight in DRAM per block of
    eight consecutive μops (sizes drawn up to the largest edge's data)."""
    topo = inst.topology
    dram = max(c.id for c in inst.accelerator.cores) + 1
    bw = min(ln.bandwidth for ln in topo.links) / 2
    off = Link(len(topo.links), dram, None, bw, offchip=True, name="dram")
    routes = {(a, b): tuple(topo.links[x].id for x in r) for (a, b), r in topo.routes.items()}
    for c in inst.accelerator.cores:
        routes[(dram, c.id)] = routes[(c.id, dram)] = (off.id,)
    top = max(int(inst.graph.bytes.max(initial=1)), 1)
    weights = tuple(DramTensor(f"w{i}", int(rng.integers(1, top + 1)),
                               np.arange(i, min(i + 8, inst.n)))
                    for i in range(0, inst.n, 8))  # fmt: skip
    return replace(inst, topology=Topology((*topo.links, off), routes, dram, topo.hop_latency),
                   dram=weights)  # fmt: skip


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The rows of :func:`measure` as the lines of a Markdown table, with the growth of n and of
    the time against the previous row."""
    lines = [
        "| μops | edges | seconds | μs per μop | n growth | time growth | write-backs | "
        "re-fetches | forwards | verify |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k, r in enumerate(rows):
        grow = ("–", "–") if k == 0 else (
            f"{r['n'] / rows[k - 1]['n']:.2f}", f"{r['s'] / max(rows[k - 1]['s'], 1e-9):.2f}"
        )  # fmt: skip
        lines.append(f"| {r['n']} | {r['edges']} | {r['s']:.2f} | {1e6 * r['s'] / r['n']:.0f} | "
                     f"{grow[0]} | {grow[1]} | {r['evict']} | {r['refetch']} | {r['forward']} | "
                     f"{'ok' if r['ok'] else 'FAILED'} |")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.memory_scaling``: :func:`measure` at each count of
    ``--layers`` (``--width`` μops each, with ``--evict`` the DRAM variant) and print
    :func:`table`.

    Parameters
    ----------
    argv
        The arguments of the module docstring's command line (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 when every schedule verified, else 1.
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.memory_scaling",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--layers", default="25,50,100,200,400,800,1600")
    p.add_argument("--width", type=int, default=40)
    p.add_argument("--evict", action="store_true", help="DRAM, weights, memories that evict")
    p.add_argument("--forward", action="store_true",
                   help="with --evict: cores may forward a weight they hold")  # fmt: skip
    args = p.parse_args(argv)
    rows = [measure(int(v), args.width, evict=args.evict, forward=args.forward)
            for v in args.layers.split(",")]  # fmt: skip
    print("\n".join(table(rows)))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
