"""How far the exact routed model gets: proofs and gaps on small routed instances, generated and
real, each schedule verified.

    python -m npusched.bench.routed_exact [--time-limit 60] [--threads 2] [--quick]
        [--doc docs/results_routed.md] [--json rows.json]

Instances:

- **generated**: random layered DAGs (:func:`~npusched.bench.generate.layered_dag`) on 2×2, 3×3
  and 4×4 meshes with a DRAM core and weights in DRAM
  (:func:`~npusched.bench.memory_scaling.with_dram`), each with its memories at
  :data:`LOOSE` times the largest operand set a μop needs (memory rarely binds) and at
  exactly that (it binds, and the memory-aware list evicts);
- **real**: Klotski partitions of LeNet, ResNet-18, MobileNetV2 and SqueezeNet on
  ``klotski-3x3`` and ``klotski-4x4`` at the coarsest shapes of the design space with at most
  60 and at most 150 μops, and Stream's tiny export (336 CNs) on Stream's allocation.

On each: the warm start (the list, memory-aware where there are memories), then ``joint`` (the
default exact method on routed instances: :mod:`npusched.methods.routed`) under
``--time-limit``. Columns: μops, the list's makespan, the best exact one, the bound it reports,
the status as returned, the gap, and the seconds until the best schedule was found (the list's
time, plus the anytime trace's time of the first point at the best where ``joint`` improved on
the list; the trace counts from the start of the call). ``--doc`` replaces the part of that
file between ``<!-- tables -->`` and ``<!-- /tables -->``.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from npusched.arch import load_arch
from npusched.bench.doc import publish
from npusched.bench.generate import layered_dag
from npusched.bench.memory_scaling import with_dram
from npusched.common.jsonio import write_json
from npusched.methods import solve
from npusched.methods.routed import routed_warm_start
from npusched.partition.api import partition_network, resolve_network
from npusched.problem.scheduling.routed import RoutedInstance
from npusched.search.space import DesignSpace
from npusched.verify import check

LOOSE = 4
"""Memories of the generated instances' loose variant: this many times the largest operand set
a μop needs."""

MESHES = ((2, 2), (3, 3), (4, 4))
NETWORKS = ("lenet", "resnet18", "mobilenetv2", "squeezenet")
ARCHS = ("klotski-3x3", "klotski-4x4")
SIZES = (60, 150)
STREAM = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "stream"


def generated(quick: bool) -> list[tuple[str, RoutedInstance]]:
    """The generated instances: per mesh, two sizes (layers × width) and two seeds, each loose
    and tight."""
    out = []
    sizes = ((4, 3), (8, 5)) if not quick else ((4, 3),)
    for rows, cols in MESHES[: 1 if quick else None]:
        for layers, width in sizes:
            for seed in range(1 if quick else 2):
                base = layered_dag(layers, width, (rows, cols), latency=(4, 40),
                                   nbytes=(16, 256), seed=seed)  # fmt: skip
                inst = with_dram(RoutedInstance.from_mesh(base), np.random.default_rng(seed))
                need = max(int(inst.operand_data().max()), 1)
                for label, factor in (("loose", LOOSE), ("tight", 1)):
                    name = f"gen {rows}x{cols} L{layers} W{width} s{seed} {label}"
                    out.append((name, replace(inst, capacity=np.full(inst.m, factor * need))))
    return out


def real(quick: bool) -> list[tuple[str, RoutedInstance]]:
    """The real partitions at the coarsest shapes with at most each of :data:`SIZES` μops, and
    Stream's tiny export."""
    out: list[tuple[str, RoutedInstance]] = []
    for net_name in NETWORKS[: 1 if quick else None]:
        net = resolve_network(net_name)
        for arch_name in ARCHS[: 1 if quick else None]:
            arch = load_arch(arch_name)
            space = DesignSpace.build(net, arch, max(SIZES))
            for cap in SIZES[: 1 if quick else None]:
                fits = [k for k, n in enumerate(space.uops) if n <= cap]
                if not fits:
                    continue
                k = max(fits, key=lambda j: (space.uops[j], space.points[j]))
                s = space.points[k]
                inst = partition_network(net, arch, "klotski", s=s)
                assert isinstance(inst, RoutedInstance)
                out.append((f"{net_name} {arch_name} s={','.join(map(str, s))}", inst))
    tiny = STREAM / "tiny_res16_tpu_quad_core_fused.json"
    if tiny.exists() and not quick:
        from npusched.io import load_instance

        export = load_instance(tiny)
        assert isinstance(export, RoutedInstance)
        out.append(("stream tiny_res16 (Stream's allocation)", export))
    return out


def run_one(name: str, inst: RoutedInstance, time_limit: float, threads: int) -> dict[str, Any]:
    """The list and ``joint`` on one instance, both verified."""
    t0 = time.perf_counter()
    warm = routed_warm_start(inst, "blevel")
    warm_s = time.perf_counter() - t0
    res = solve(inst, "joint", time_limit=time_limit, threads=threads, warm_start=warm)
    ok = check(inst, warm).ok and res.solution is not None and check(inst, res.solution).ok
    best = res.objective
    found = 0.0  # the warm start's (no improvement), else the trace's first point at the best
    if best is not None and best < warm.makespan(inst) and res.stats.get("fallback") is None:
        found = next((p.time for p in res.trace if p.incumbent is not None
                      and p.incumbent <= best), res.runtime_s)  # fmt: skip
    return {
        "instance": name, "uops": inst.n, "binds": inst.memory_binds,
        "list": warm.makespan(inst), "exact": best, "bound": res.bound,
        "status": res.status.value, "gap": res.gap, "time_to_best": round(found + warm_s, 2),
        "runtime_s": round(res.runtime_s + warm_s, 2), "verified": ok,
    }  # fmt: skip


def table(rows: list[dict[str, Any]], time_limit: float) -> list[str]:
    """The rows as a Markdown table, then the counts the issue's goals read."""
    lines = [
        "| instance | μops | memory binds | list | best exact | bound | status | gap | "
        "time to best (s) | verified |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        gap = "–" if r["gap"] is None else f"{100 * r['gap']:.2f} %"
        lines.append(
            f"| {r['instance']} | {r['uops']} | {'yes' if r['binds'] else 'no'} | {r['list']} | "
            f"{_num(r['exact'])} | {_num(r['bound'])} | {r['status']} | {gap} | "
            f"{r['time_to_best']} | {'ok' if r['verified'] else 'FAILED'} |"
        )
    small = [r for r in rows if r["uops"] <= 60]
    mid = [r for r in rows if r["uops"] <= 150 and r["gap"] is not None]
    proven = sum(r["status"] == "optimal" for r in small)
    lines += [
        "",
        f"- ≤ 60 μops: {proven} of {len(small)} proven optimal within {time_limit:g} s.",
        f"- ≤ 150 μops: mean gap {100 * float(np.mean([r['gap'] for r in mid])):.2f} % over "
        f"{len(mid)} instances." if mid else "- ≤ 150 μops: none.",
    ]
    return lines


def _num(v: Any) -> str:
    return "–" if v is None else f"{int(round(v))}"


def main(argv: list[str] | None = None) -> int:
    """Run the bench (module docstring); exit 1 when a schedule fails verify."""
    ap = argparse.ArgumentParser(prog="python -m npusched.bench.routed_exact",
                                 description=__doc__.split("\n\n")[0])  # fmt: skip
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="one instance of each kind")
    ap.add_argument("--doc", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.time_limit <= 0 or args.threads < 1:
        print("error: --time-limit must be positive and --threads at least 1", file=sys.stderr)
        return 2
    rows = []
    for name, inst in generated(args.quick) + real(args.quick):
        row = run_one(name, inst, args.time_limit, args.threads)
        rows.append(row)
        print(f"{name}: n={row['uops']} list={row['list']} exact={_num(row['exact'])} "
              f"bound={_num(row['bound'])} {row['status']}", file=sys.stderr, flush=True)
    if args.json:
        write_json(args.json, rows)
    publish("\n".join(table(rows, args.time_limit)), args.doc)
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
