"""Writes notebooks/09_flexer_ooo_advantage.ipynb (kept so the notebook can be regenerated and
reviewed)."""

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(r"""# Flexer's out-of-order advantage: four schedules of one layer, and where their time goes

Flexer (Min, Kwon, Egger, CGO 2023) reports up to 1.67× speed-up end to end for its out-of-order
(OoO) scheduler against the best static loop order. This notebook takes one layer and puts four
schedules of it side by side, each the best its search finds over the layer's tilings × dataflows
and each checked by the verifier:

1. **static**: the best static loop order (24 loop orders × 3 stationarities, fixed buffer regions
   per data type; Flexer's baseline, §5);
2. **OoO**: Flexer's greedy (Algorithm 1: at each step the operation set of highest §4.3 priority,
   with the memory manager of §4.1);
3. **beam**: the same choices with a beam of partial schedules looking ahead (`flexer-beam`, not in
   the paper);
4. **LNS**: the beam's schedule re-timed by CP-SAT large-neighbourhood search (`flexer-lns`, not in
   the paper): windows of consecutive operation sets get their NPUs, their order on the NPUs, on
   the DRAM channel and in the buffer, and their tiles' addresses decided anew; what moves (loads,
   spills, write-backs) stays the beam's.

The layer is ResNet-50's `layer2.0.conv3` (a 1 × 1 convolution, 128 → 512 channels on 28 × 28
pixels) on Flexer's arch5 (4 NPUs of 32 × 32 PEs, a 256 KiB global buffer, 32 bytes per cycle),
with the analytic cost model and tilings of at most 64 operations. Where OoO pays across networks
and machines is the sweep of `python -m npusched.bench.flexer_sweep` (`docs/results_flexer.md`)."""),
    code("""import matplotlib.pyplot as plt
import numpy as np

from npusched import solve
from npusched.arch import load_arch
from npusched.heuristics.flexer.explain import CATEGORIES, time_split
from npusched.plot.flexer import schedule_gantt
from npusched.plot.flexer_explain import COLORS, bar_segments
from npusched.problem.flexer.settings import FlexerLayer, Settings
from npusched.verify.flexer import verify_flexer
from npusched.workload.zoo import load_network

net = load_network("resnet50")
s = Settings.from_arch(load_arch("flexer-arch5"), cost="analytic", max_ops=64)
problem = FlexerLayer(net, net.layer("layer2.0.conv3"), s)
print(s.n_npus, "NPUs,", s.capacity // 1024, "KiB,", s.bandwidth, "bytes/cycle")"""),
    md(r"""## 1. The four searches
Each search returns its best schedule by the paper's metric, latency × transferred bytes (Algorithm
1, line 5). `flexer-lns` gets 3 seconds of re-timing on 2 CP-SAT workers after the beam."""),
    code("""runs = {
    "static": solve(problem, "flexer-static", time_limit=120),
    "OoO": solve(problem, "flexer-ooo", time_limit=120),
    "beam": solve(problem, "flexer-beam", time_limit=120),
    "LNS": solve(problem, "flexer-lns", time_limit=120, threads=2, seconds=3),
}
static = runs["static"].solution
print(f"{'':7s} {'tiling':>16s} {'latency':>8s} {'KiB':>6s} {'speed-up':>8s} {'metric':>7s} verified")
for name, r in runs.items():
    sch = r.solution
    rep = verify_flexer(sch)
    assert rep.ok and rep.latency == sch.latency
    ratio = static.metric() / sch.metric()
    print(f"{name:7s} {'x'.join(map(str, r.stats['tiling'])):>16s} {sch.latency:8d} "
          f"{sch.transfer_bytes / 1024:6.0f} {static.latency / sch.latency:8.3f} {ratio:7.3f} {rep.ok}")"""),
    md(r"""The speed-up and the metric are static's over each schedule's (above 1: better than the best
static order). The beam and LNS keep the greedy's way of choosing what to load and spill, so
their bytes are those of their tiling's greedy choices; LNS shortens only the timing.

## 2. Side by side
A row per NPU (operations in grey; without prefetch an operation's loads run on its NPU's time,
the gaps before it) and a row for the DRAM channel (transfers by data type), on one time axis."""),
    code("""names = list(runs)
schedule_gantt([runs[n].solution for n in names], names)
plt.show()"""),
    md(r"""## 3. Where the time goes
Every NPU cycle from 0 to the latency falls in one category
(`npusched.heuristics.flexer.explain.time_split`): compute, waiting for a first load, for a spill's
traffic, for a write-back, for another operation, for the DRAM channel, for buffer space, or the
tail after the NPU's last operation. A bar's height is the latency (NPU cycles / NPUs)."""),
    code("""splits = [time_split(runs[n].solution) for n in names]
for n, sp in zip(names, splits):
    assert sum(sp.values()) == runs[n].solution.latency * s.n_npus
seg = bar_segments(splits, s.n_npus)
fig, ax = plt.subplots(figsize=(6, 4))
bottom = np.zeros(len(names))
for j, c in enumerate(CATEGORIES):
    ax.bar(names, seg[:, j], bottom=bottom, color=COLORS[c], label=c)
    bottom += seg[:, j]
ax.set_ylabel("cycles")
ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
ax.set_title("layer2.0.conv3 on arch5: the latency by cause")
plt.show()
for n, sp in zip(names, splits):
    total = sum(sp.values())
    print(f"{n:7s}", ", ".join(f"{c} {100 * sp[c] / total:.1f} %" for c in CATEGORIES if sp[c]))"""),
    md(r"""What to read off: this layer moves the same bytes under all four schedules (every tile once), and
its DRAM channel is busy most of the time with the final outputs' write-backs (red). The
schedules differ in when those write-backs can start: an output is final only when its chain of
partial sums is done, and an NPU waits while the channel writes back (the *writeback* share of
the split). The static order finishes its chains late and evenly; the greedy OoO finishes some
earlier; the beam's lookahead picks sets that finish chains sooner, and LNS moves operations and
transfers within windows so that fewer cycles wait. The compute share grows from the first bar
to the last. The end-to-end figures over whole networks, and the machines (NPUs × buffer ×
bandwidth) where the gain reaches the paper's 1.2–1.67×, are in `docs/results_flexer.md`."""),
]
nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/09_flexer_ooo_advantage.ipynb")
