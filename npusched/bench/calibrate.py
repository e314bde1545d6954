"""Calibration of the Klotski accelerators' two unknown core parameters against Klotski's
baseline-1 cycles, and the sensitivity of Klotski against baseline 2 to the machine's
assumptions.

    python -m npusched.bench.calibrate fit [--mesh 3x3] [--sram 12,16,18,20,22,24,32]
        [--registers 32,48,64,128] [--doc docs/results_calibration.md]
    python -m npusched.bench.calibrate sensitivity [--network resnet50] [--mesh 4x4]
        [--limit 100] [--doc ...]

**fit.** Klotski (§IV-A) gives each core's PE array, SRAM size and "5 KB of registers per PE",
but not the bandwidth between SRAM and array, nor how much of the registers its fixed
KC-partition dataflow reuses (MAESTRO models a given dataflow, not a search). These are the two
free parameters, :data:`PARAMETERS`: ``cores/sram_read_bytes_per_cycle`` (= write) and the bytes
of register file per operand. Each pair of the grid is tried on VGG16 and ResNet-50 only: the
arch is changed, baseline 1 (:func:`~npusched.heuristics.scheduling.plans.zigzag_routed` on the
design space's coarsest partition, :mod:`npusched.search.baselines`) is run on the routed
machine and verified, and the pair with the smallest largest ``|ln(ours / paper)|`` over the two
wins. VGG19, ResNet-152 and Inception v3 are the check: their baseline-1 cycles at the fitted
pair against the paper's, the goal being within ±25 % on at least 4 of the 5 networks. For every
network the cycles of baseline 1's μops are also split by layer kind (conv by kernel, fc,
pooling, add, concat) with their bound (compute or SRAM), so that a network that misses shows
where its cycles go.

**sensitivity.** On one network and mesh, for each assumption of the machine model varied
alone — the DRAM bandwidth ×0.25 … ×4 and the NoC's packet header (the payload rate) — Klotski's
orchestration (makespan objective, the shorter of the list and the atomic plan inside, the final
stages) under ``--limit`` seconds against baseline 2 (the atomic dataflow on its own partition,
annealed with the same budget), every schedule verified; the table gives Klotski over
baseline 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tabulate import tabulate

from npusched.arch import Arch, Register, load_arch
from npusched.bench.doc import publish
from npusched.bench.klotski import PAPER
from npusched.costmodel import TileShape
from npusched.costmodel.roofline import Roofline
from npusched.methods import solve
from npusched.partition.api import partition_network
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
from npusched.search.baselines import layerwise
from npusched.search.space import DesignSpace
from npusched.verify import check
from npusched.workload.zoo import load_network

FIT_ON = ("vgg16", "resnet50")
CHECK_ON = ("vgg19", "resnet152", "inceptionv3")
PARAMETERS = (
    "cores/sram_read_bytes_per_cycle (= sram_write_bytes_per_cycle)",
    "cores/registers/{W,I,O}/bytes",
)
"""The two free parameters :func:`fit` chooses, as arch JSON fields."""


def with_core(arch: Arch, sram: float, register: int) -> Arch:
    """``arch`` with every core's SRAM bandwidth and register bytes per operand set."""
    regs = {op: Register(register, r.bandwidth_bytes_per_cycle, r.shared_over)
            for op, r in arch.cores[0].registers.items()}  # fmt: skip
    cores = tuple(
        dataclasses.replace(
            c, registers=regs, sram_read_bytes_per_cycle=sram, sram_write_bytes_per_cycle=sram
        )
        for c in arch.cores
    )
    return dataclasses.replace(arch, cores=cores)


@functools.lru_cache(maxsize=16)
def _space(net_name: str, mesh: str) -> DesignSpace:
    """The design space (it depends on the cores' memory size only, not on the parameters)."""
    return DesignSpace.build(load_network(net_name), load_arch(f"klotski-{mesh}"))


def baseline1(net_name: str, arch: Arch) -> tuple[int, RoutedInstance, RoutedSchedule]:
    """Baseline 1's verified cycles on the routed machine (the coarsest partition its plan
    fits, :func:`~npusched.search.baselines.layerwise`), its instance and schedule."""
    net = load_network(net_name)
    mesh = arch.name.removeprefix("klotski-")
    found = layerwise(net, arch, _space(net_name, mesh))
    inst = partition_network(net, arch, "klotski", s=found.s)
    assert isinstance(inst, RoutedInstance)
    sched = solve(inst, "zigzag").solution
    assert isinstance(sched, RoutedSchedule)
    rep = check(inst, sched)
    if not rep.ok or rep.makespan is None:
        raise AssertionError(f"{net_name}: baseline 1 not verified: {rep.violations[:3]}")
    return rep.makespan, inst, sched


def fit(mesh: str, srams: list[float], registers: list[int]) -> dict[str, Any]:
    """The grid search of the module docstring: every pair on :data:`FIT_ON`."""
    base = load_arch(f"klotski-{mesh}")
    grid = []
    for sram in srams:
        for reg in registers:
            arch = with_core(base, sram, reg)
            cycles = {n: baseline1(n, arch)[0] for n in FIT_ON}
            err = max(abs(math.log(cycles[n] / PAPER[(n, mesh)][0])) for n in FIT_ON)
            grid.append({"sram B/cycle": sram, "register B": reg, **cycles, "worst |ln|": err})
            print(f"  sram {sram:g}, registers {reg}: {cycles} (worst |ln| {err:.3f})", flush=True)
    best = min(grid, key=lambda r: r["worst |ln|"])
    return {"grid": grid, "best": best}


def kind_of(shape: TileShape) -> str:
    """A layer kind for the breakdown: conv by kernel, fc, pooling, add, concat."""
    if shape.kind in ("conv", "dwconv"):
        return f"{shape.kind} {shape.FY}x{shape.FX}"
    return shape.kind


def breakdown(inst: RoutedInstance, sched: RoutedSchedule, arch: Arch) -> list[dict[str, Any]]:
    """Baseline 1's busy cycles by layer kind and what bounds each kind's μops."""
    from npusched.workload.zoo import load_network as net_of

    net = net_of(inst.source["network"])
    model = Roofline(arch)
    busy = inst.duration[np.arange(inst.n), sched.core]
    rows: dict[str, dict[str, Any]] = {}
    for k, layer in enumerate(net.layers):
        info = inst.source["layers"][k]
        lo = info["offset"]
        hi = inst.source["layers"][k + 1]["offset"] if k + 1 < len(net.layers) else inst.n
        from npusched.partition.schemes import klotski_tiling

        t = klotski_tiling(net, layer, tuple(inst.source["s"]), dict(arch.cores[0].pe_unroll))
        shape = TileShape.of(layer, *(int(t.lengths(d)[0]) for d in range(4)))
        b = model.explain(shape, arch.cores[0])
        row = rows.setdefault(kind_of(shape), {"kind": kind_of(shape), "layers": 0,
                                                "cycles": 0, "sram-bound cycles": 0})  # fmt: skip
        row["layers"] += 1
        row["cycles"] += int(busy[lo:hi].sum())
        if b.bound != "compute":
            row["sram-bound cycles"] += int(busy[lo:hi].sum())
    total = sum(r["cycles"] for r in rows.values())
    for r in rows.values():
        r["share"] = f"{r['cycles'] / max(1, total):.1%}"
    return sorted(rows.values(), key=lambda r: -r["cycles"])


def check_all(mesh: str, sram: float, register: int) -> tuple[list[dict[str, Any]], str]:
    """Baseline 1 of every network at the fitted pair against the paper, and the breakdowns."""
    arch = with_core(load_arch(f"klotski-{mesh}"), sram, register)
    rows, parts = [], []
    for n in (*FIT_ON, *CHECK_ON):
        cycles, inst, sched = baseline1(n, arch)
        paper = PAPER[(n, mesh)][0]
        rows.append({"network": n, "role": "fit" if n in FIT_ON else "check",
                     "baseline 1 cycles": f"{cycles:.4E}", "paper": f"{paper:.4E}",
                     "ours / paper": round(cycles / paper, 3),
                     "within ±25 %": abs(cycles / paper - 1) <= 0.25})  # fmt: skip
        parts.append(f"\n### {n}: baseline 1's μop cycles by layer kind\n")
        parts.append(tabulate(breakdown(inst, sched, arch), headers="keys", tablefmt="github"))
    return rows, "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.calibrate``: ``fit`` searches the grid of ``--sram`` ×
    ``--registers`` on :data:`FIT_ON` (:func:`fit`) and checks the best pair on every network
    (:func:`check_all`); ``sensitivity`` varies each machine assumption on ``--network``
    (:func:`sensitivity`). Prints the tables and, with ``--doc``, writes them into that Markdown
    file (``fit`` into its ``tables`` block, ``sensitivity`` into its ``sensitivity`` block).

    Parameters
    ----------
    argv
        The arguments of the module docstring's command lines (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 (a baseline-1 schedule that fails verification raises
        ``AssertionError``).
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["fit", "sensitivity"])
    ap.add_argument("--mesh", default="3x3")
    ap.add_argument("--sram", default="12,16,18,20,22,24,32", help="fit: SRAM bytes/cycle to try")
    ap.add_argument("--registers", default="32,48,64,128",
                    help="fit: register bytes per operand to try")  # fmt: skip
    ap.add_argument("--network", default="resnet50", help="sensitivity: the network")
    ap.add_argument("--limit", type=float, default=100.0,
                    help="sensitivity: seconds per orchestration (default 100)")  # fmt: skip
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--doc", type=Path, help="write the tables into this Markdown file")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.mode == "fit":
        srams = [float(v) for v in args.sram.split(",")]
        regs = [int(v) for v in args.registers.split(",")]
        found = fit(args.mesh, srams, regs)
        best = found["best"]
        rows, parts = check_all(args.mesh, best["sram B/cycle"], best["register B"])
        text = "\n".join([
            f"Fitted on {', '.join(FIT_ON)} ({args.mesh} mesh): "
            f"{PARAMETERS[0]} = {best['sram B/cycle']:g}, {PARAMETERS[1]} = "
            f"{best['register B']} (worst |ln(ours/paper)| {best['worst |ln|']:.3f}); "
            f"{time.perf_counter() - t0:.0f} s.\n",
            tabulate(rows, headers="keys", tablefmt="github"),
            "\n## The grid\n",
            tabulate(found["grid"], headers="keys", tablefmt="github"),
            parts,
        ])  # fmt: skip
        publish(text, args.doc)
    else:
        text = sensitivity(args.network, args.mesh, args.limit, args.threads)
        publish(text, args.doc, "sensitivity")
    return 0


def sensitivity(network: str, mesh: str, limit: float, threads: int, budget: int = 50) -> str:
    """The table of the module docstring: per variant, Klotski's orchestration under ``limit``
    seconds against baseline 2 (the atomic dataflow on its own annealed partition, ``budget``
    evaluations), both verified."""
    from npusched.search.baselines import annealed
    from npusched.search.orchestrate import orchestrate

    base = load_arch(f"klotski-{mesh}")
    net = load_network(network)
    assert base.dram is not None
    variants: list[tuple[str, Arch]] = []
    for f in (0.25, 0.5, 1.0, 2.0, 4.0):
        bw = base.dram_bytes_per_cycle() * f
        dram = dataclasses.replace(base.dram, bandwidth_bytes_per_cycle=bw,
                                   bandwidth_bytes_per_s=None)  # fmt: skip
        variants.append((f"DRAM ×{f:g} ({bw:g} B/cycle)", dataclasses.replace(base, dram=dram)))
    for header in (0, 192, 448):
        noc = dataclasses.replace(base.noc, packet_header_bits=header)
        rate = noc.payload_bytes_per_cycle() or 0.0
        variants.append((f"packet header {header} bits ({rate:.1f} B/cycle payload)",
                         dataclasses.replace(base, noc=noc)))  # fmt: skip
    rows = []
    space = _space(network, mesh)
    for name, arch in variants:
        orch = orchestrate(net, arch, budget, time_limit=limit, final_time_limit=limit / 4,
                           threads=threads, progress=False, objective="makespan",
                           inner="best")  # fmt: skip
        if not check(orch.instance, orch.schedule).ok:
            raise AssertionError(f"{name}: Klotski's schedule is not verified")
        b2 = annealed(net, arch, space, budget)
        rows.append({"variant": name, "baseline 2": b2.cycles, "Klotski (npusched)": orch.cycles,
                     "Klotski / baseline 2": round(orch.cycles / b2.cycles, 4),
                     "bound": int(orch.result.bound or 0)})  # fmt: skip
        print(rows[-1], flush=True)
    head = (f"{network} on klotski-{mesh}: orchestrate (makespan objective, inner best) under "
            f"{limit:g} s per row, baseline 2 annealed with budget {budget}; every schedule "
            "verified.\n")  # fmt: skip
    return head + tabulate(rows, headers="keys", tablefmt="github")


if __name__ == "__main__":
    sys.exit(main())
