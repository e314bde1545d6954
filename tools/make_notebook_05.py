"""Writes notebooks/05_flexer.ipynb (kept so the notebook can be regenerated and reviewed)."""

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(r"""# Flexer: out-of-order scheduling of a tiled layer on NPUs that share a buffer

Flexer (Min, Kwon, Egger, CGO 2023) cuts a convolution into tiles
$(t_{oc}, t_{oh}, t_{ow}, t_{ic})$, so that it becomes a DFG of operations
$tCONV\ OT \leftarrow IN, WT\,[PS]$ (Fig. 3). It then list-schedules that DFG on $n$ NPUs the way an
out-of-order core issues instructions. A static schedule runs the tile loops in a fixed order
with a fixed buffer region per data type. Flexer instead chooses, at every step, the set of
$n$ ready operations that reuses the most on-chip data (§4.3). A memory manager places the tiles
in the shared global buffer: in place, else best fit, else spill victims chosen by Algorithm 2.

This notebook covers:
1. the DFG;
2. Algorithm 2 against an exact model;
3. one layer, OoO against static, checked by the verifier;
4. where the bytes go (Fig. 10, Fig. 11);
5. how far the heuristic's transfers are from an offline lower bound;
6. the search over tilings × dataflows (Algorithm 1) and Table 2's ablation;
7. an exact CP-SAT schedule of a small layer, against the OoO schedule."""),
    code("""import matplotlib.pyplot as plt
import numpy as np

from npusched import solve
from npusched.arch import load_arch
from npusched.heuristics.flexer.ooo import NoFit, ooo_schedule
from npusched.heuristics.flexer.static import static_schedule
from npusched.heuristics.flexer.search import STATIC_DATAFLOWS
from npusched.problem.flexer.settings import Settings
from npusched.heuristics.flexer.spill import flexer_victims, spill_key
from npusched.methods.flexer import figures, search_network
from npusched.plot.flexer import memory_map, spatial_reuse, transfer_breakdown
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.layer import FlexerInstance, SpillRequest
from npusched.problem.flexer.residency import ResidencyProblem
from npusched.verify.flexer import verify_flexer
from npusched.workload.zoo import load_network

arch = load_arch("flexer-arch8")  # 4 NPUs, 512 KiB global buffer, 64 B/cycle (Table 1)
s = Settings.from_arch(arch)
print(s)"""),
    md(r"""## 1. The DFG of a tiled convolution
VGG16's conv4_2 has 512 → 512 channels on 28 × 28 pixels. With 64-channel tiles and 14 × 14
pixels there are $8 \cdot 2 \cdot 2 \cdot 8 = 256$ operations. Each one reads an input tile (halo
included), a weight tile and, for $c > 0$, the partial sum of its chain. Its latency is the cost
model's steps on the 32 × 32 array plus 64 cycles to fill and drain the array
(`Settings.fill_drain`)."""),
    code("""net = load_network("vgg16")
layer = net.layer("conv4_2")
p = tiled_conv(net, layer, (64, 14, 14, 64), dict(s.unroll), s.elem_bytes, fill_drain=s.op_overhead)
print("tiles per dim (K, OY, OX, C):", p.counts, " operations:", p.n_ops, " data tiles:", p.n_data)
print("one operation needs", p.footprint(0) // 1024, "KiB on chip;",
      "latency", int(p.latency[0]), "cycles")
print("each tile moved once:", {k: v // 1024 for k, v in p.onchip_bytes().items()}, "KiB")"""),
    md(r"""## 2. Algorithm 2 against the exact spill model
Given a memory map (segments in address order), Algorithm 2 looks for the contiguous run of blocks
to spill. It minimises fragmentation first, then the disadvantage $\sum size \times$
remaining uses, then the number of blocks. The exact model
(`npusched.formulations.flexer.spill`) solves the same lexicographic problem with CP-SAT, over
binaries $x_i$ (freed) and $s_i$ (run starts here), with contiguity
$x_i \le x_{i-1} + s_i$. Algorithm 2 only tries the shortest run from each start. That loses
nothing, because lengthening a run never lowers any of the three terms. So the two always agree on
the objective; `python -m npusched.bench.flexer_spill` checks this on 1000 random maps."""),
    code("""rng = np.random.default_rng(5)
agree = 0
for _ in range(200):
    n = int(rng.integers(3, 12))
    sizes = (rng.integers(1, 9, n) * 1024).tolist()
    live = (rng.random(n) < 0.8).tolist()
    uses = [int(rng.integers(0, 5)) if lv else 0 for lv in live]
    movable = (rng.random(n) < 0.85).tolist()
    need = int(rng.integers(1, 16)) * 1024
    run = flexer_victims(sizes, uses, movable, live, need)
    exact = solve(SpillRequest(sizes, uses, movable, live, need), "flexer-spill")
    heur = None if run is None else spill_key(sizes, uses, live, run, need)
    agree += heur == exact.stats["key"]
print(f"Algorithm 2 and the exact model agree on {agree}/200 maps")"""),
    md(r"""## 3. One layer: OoO against the best static loop order
The static baseline tries every loop permutation with each stationarity (IS, WS, OS) and keeps
the best by latency × bytes. The OoO scheduler tries its three dataflows. Every schedule is
re-checked by `verify_flexer`, which checks:
- dependencies, and one operation per NPU at a time;
- the DRAM channel, with its bytes recomputed;
- every operand resident while its operation runs;
- the capacity, and that no two live blocks overlap in address and time."""),
    code("""def best(kind):
    out = None
    for df in (["OS", "WS", "IS"] if kind == "ooo" else [f"{o}/{x}" for o, x in STATIC_DATAFLOWS]):
        try:
            if kind == "ooo":
                sch = ooo_schedule(p, s.n_npus, s.capacity, s.bandwidth, dataflow=df)
            else:
                order, stat = df.split("/")
                sch = static_schedule(p, s.n_npus, s.capacity, s.bandwidth,
                                      loop_order=order, stationary=stat)
        except NoFit:  # a static layout that does not fit
            continue
        if out is None or sch.metric() < out.metric():
            out = sch
    return out

ooo, static = best("ooo"), best("static")
for name, sch in (("OoO", ooo), ("static", static)):
    rep = verify_flexer(sch)
    print(f"{name:6s} {sch.method:28s} latency {sch.latency:9d}  bytes {sch.transfer_bytes:9d}  "
          f"verified: {rep.ok}  peak {rep.peak_bytes // 1024} KiB")
print(f"speed-up {static.latency / ooo.latency:.2f}x, transfer reduction "
      f"{static.transfer_bytes / ooo.transfer_bytes:.2f}x")"""),
    md(r"""Neither order wins on every layer. Section 5 measures how much of the OoO traffic comes
from the memory manager's victim choices, as opposed to the order of the sets."""),
    code("""memory_map(ooo, times=[ooo.latency * f for f in (0.25, 0.5, 0.75)],
           title="OoO: global buffer over time")
plt.show()"""),
    md(r"""## 4. Where the bytes go (Fig. 10) and who shares what (Fig. 11)
In the static schedule every tile of one type is reloaded the same number of times. The OoO
schedule reloads some tiles of a type more often than others. The on-chip bar assumes an
unlimited buffer, so every tile moves exactly once."""),
    code("""transfer_breakdown({"on-chip": p, "OoO": ooo, "static": static},
                   title="VGG16 conv4_2 on arch8")
plt.show()
spatial_reuse(ooo, title="OoO: tiles used by several NPUs at once")
plt.show()"""),
    md(r"""## 5. How far from the least possible traffic?
Fix the OoO scheduler's order of operation sets and ask which tiles should stay on chip between
their uses. The model keeps the capacity at every step and ignores addresses, and it minimises
the transferred bytes. This is an interval knapsack (`npusched.formulations.flexer.offline`),
solved exactly by HiGHS. Its optimum bounds from below every schedule that issues the same sets,
the heuristic included."""),
    code("""ob = solve(ResidencyProblem(p, ooo.order, s.capacity), "flexer-offline", time_limit=30)
print(f"OoO moves {ooo.transfer_bytes} bytes; for the same order at least {ob.bound:.0f} "
      f"({ob.status.value}); gap {100 * (ooo.transfer_bytes - ob.bound) / ob.bound:.2f} %")"""),
    md(r"""## 6. The search over tilings × dataflows (Algorithm 1)
The search visits tilings in order of a lower bound on latency × bytes and stops once that bound
reaches the best metric found. Inside a schedule it also stops early when the bytes moved so far
prove the schedule cannot win. Layers with the same shape are searched once."""),
    code("""res = search_network(net, arch, layers=["conv4_2", "conv5_1"], workers=1, max_ops=64)
for r in res.layers:
    o, st = figures(r.ooo), figures(r.static)
    static = "no static layout fits" if st is None else (
        f"static {st['tiling']} {st['dataflow']}: {st['latency']} cycles, "
        f"{st['transfer_bytes']} B")
    print(f"{r.name:8s} OoO {o['tiling']} {o['dataflow']}: {o['latency']} cycles, "
          f"{o['transfer_bytes']} B | {static} | {r.ooo_evaluated}/{r.tilings} tilings evaluated")
print({k: round(v, 3) for k, v in res.totals().items()}, f"{res.search_seconds:.1f} s")"""),
    md(r"""Table 2's alternatives replace one part of Flexer at a time. They are compared on the same
layers by the end-to-end $\sum latency \times \sum bytes$, normalised to Flexer's default
(Fig. 12; lower is better)."""),
    code("""from npusched.plot.flexer import ablation

table = {}
for prio, pol in [("default", "flexer"), ("min-transfer", "flexer"), ("min-spill", "flexer"),
                  ("default", "first-fit"), ("default", "small-spill")]:
    r = search_network(net, arch, layers=["conv5_1"], kinds=("ooo",), workers=1,
                       max_ops=64, priority=prio, mem_policy=pol)
    lat = sum(figures(x.ooo)["latency"] for x in r.layers)
    nbytes = sum(figures(x.ooo)["transfer_bytes"] for x in r.layers)
    table[f"{prio}/{pol}"] = lat * nbytes
ablation({"VGG16 conv5_1 / arch8": table}, default="default/flexer")
plt.show()"""),
    md(r"""## 7. The best schedule of a small layer
For a layer with few operations CP-SAT can find the least latency outright
(`npusched.formulations.flexer.schedule`): operations as intervals on the NPUs (each NPU also
busy while it loads its operands), one load per input and weight tile and one write-back per
output on the DRAM channel, and the tiles as rectangles of time × address in the buffer
(`NoOverlap2D`). The model moves every tile once; when every tile fits in the buffer at once,
no schedule that reloads can be faster, so its optimum is the optimum. Here a 64 → 64-channel
3 × 3 layer on 8 × 8 pixels, cut into 8 operations, on 2 NPUs at 8 bytes per cycle."""),
    code("""from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network

conv = Layer("conv", "conv", (INPUT,), out_channels=64, kernel=(3, 3), pad=(1, 1, 1, 1))
tiny = Network("tiny", (64, 8, 8), (conv,))
q = tiled_conv(tiny, conv, (32, 8, 4, 32), {"K": 32, "C": 32}, fill_drain=64)
cap = int(q.data_bytes.sum())  # every tile fits at once
heur = ooo_schedule(q, 2, cap, 8)
best_q = solve(FlexerInstance(q, 2, cap, 8), "flexer-cpsat", time_limit=30, warm_start=heur)
print(f"OoO {heur.latency} cycles; CP-SAT {best_q.objective} cycles ({best_q.status.value}, "
      f"bound {best_q.bound:.0f}); OoO is {100 * (heur.latency / best_q.objective - 1):.1f} % slower; "
      f"verified: {verify_flexer(best_q.solution).ok}")
for sch, name in ((heur, "OoO"), (best_q.solution, "CP-SAT")):
    memory_map(sch, title=f"{name}: {sch.latency} cycles")
    plt.show()"""),
]
nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/05_flexer.ipynb")
