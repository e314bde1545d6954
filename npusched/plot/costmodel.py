"""Where the time goes on the machine model: each layer's roofline (compute against its SRAM
ports, next to ZigZag's latency), and a routed schedule's cores, links and DRAM channels."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from npusched.costmodel.roofline import Breakdown
from npusched.plot._figure import finish
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule, required_transfers


def layer_costs(
    labels: Sequence[str],
    parts: Sequence[Breakdown],
    zigzag: Sequence[int | None] | None = None,
    path: str | Path | None = None,
    title: str = "",
) -> plt.Figure:
    """One column per layer (its tile): the PE array's compute steps and the array's waits for
    its registers (fill and refills) as stacked bars, the time the SRAM's read and write ports
    need as markers, the analytic latency as a line and ZigZag's (when given) as dots; log
    scale. Returns the figure; saves a PNG at ``path``."""
    x = np.arange(len(labels))
    compute = np.array([p.compute for p in parts], dtype=float)
    wait = np.array([p.fill for p in parts], dtype=float)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.28 * len(labels) + 2), 4))
    ax.bar(x, compute, color="0.65", label="compute steps")
    ax.bar(x, wait, bottom=compute, color="tab:orange", label="waiting for registers")
    ax.plot(x, [p.sram_read for p in parts], "x", color="tab:blue", label="SRAM read port")
    ax.plot(x, [p.sram_write for p in parts], "+", color="tab:green", label="SRAM write port")
    ax.plot(x, [p.latency for p in parts], "-", color="k", lw=1, label="analytic latency")
    if zigzag is not None:
        z = np.array([np.nan if v is None else v for v in zigzag], dtype=float)
        ax.plot(x, z, "o", color="tab:red", ms=4, label="ZigZag latency")
    ax.set_yscale("log")
    ax.set_xticks(x, labels, rotation=90, fontsize=7)
    ax.set_ylabel("cycles")
    ax.set_title(title or "per-layer roofline")
    ax.legend(fontsize=7, ncol=3)
    return finish(fig, path)


def busy_shares(inst: RoutedInstance, sched: RoutedSchedule) -> dict[str, np.ndarray]:
    """Each core's busy share of the makespan, and each link resource's (a bus counted once, a
    link of ``P`` lanes busy by the share of its lanes): ``cores``, ``links`` (NoC) and
    ``dram`` (the off-chip channels)."""
    ms = max(1, sched.makespan(inst))
    busy = np.bincount(sched.core, weights=inst.duration[np.arange(inst.n), sched.core],
                       minlength=inst.m)  # fmt: skip
    topo = inst.topology
    res = np.zeros(topo.num_resources)
    tr = required_transfers(inst, sched.core)
    spans = [(r, int(a), int(b)) for r, a, b in zip(tr.route, sched.tstart, sched.tend,
                                                     strict=True) if a >= 0]  # fmt: skip
    mv = sched.moves
    if mv is not None:
        for a, b, s, e in zip(mv.src_core.tolist(), mv.dst_core.tolist(), mv.tstart.tolist(),
                              mv.tend.tolist(), strict=True):  # fmt: skip
            spans.append((inst.route(a, b), s, e))
    for route, a, b in spans:
        for r in {int(topo.resource_of[x]) for x in route}:
            res[r] += b - a
    res /= topo.lanes
    off = np.zeros(topo.num_resources, dtype=bool)
    for k, ln in enumerate(topo.links):
        off[topo.resource_of[k]] |= ln.offchip
    return {"cores": busy / ms, "links": res[~off] / ms, "dram": res[off] / ms}


def machine_time(
    inst: RoutedInstance, sched: RoutedSchedule, path: str | Path | None = None, title: str = ""
) -> plt.Figure:
    """Where a routed schedule's time goes: each core's busy and idle share of the makespan,
    and the busy shares of the NoC links and the DRAM channels, sorted. Returns the figure;
    saves a PNG at ``path``."""
    share = busy_shares(inst, sched)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.2), width_ratios=(1, 1.4))
    k = np.arange(inst.m)
    a.bar(k, share["cores"], color="0.45", label="computing")
    a.bar(k, 1 - share["cores"], bottom=share["cores"], color="0.88", label="idle")
    a.set_xticks(k, [str(c.id) for c in inst.accelerator.cores], fontsize=7)
    a.set_xlabel("core")
    a.set_ylabel("share of the makespan")
    a.set_ylim(0, 1)
    a.legend(fontsize=7, loc="lower right")
    links, dram = np.sort(share["links"])[::-1], np.sort(share["dram"])[::-1]
    b.bar(np.arange(links.size), links, color="tab:orange", label="NoC links")
    b.bar(links.size + np.arange(dram.size), dram, color="tab:red", label="DRAM channels")
    b.set_xlabel("link (sorted by load)")
    b.set_ylim(0, 1)
    b.legend(fontsize=7)
    fig.suptitle(title or "where the time goes")
    return finish(fig, path)
