"""Writes notebooks/04_tiling.ipynb (kept so the notebook can be regenerated and reviewed)."""

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(r"""# TSO tile-size selection: exhaustive search, burst-aware DRAM time, and an exact check

TSO chooses, for every convolution, how the four tile-level engines (TLEs) split the layer
(KS, KS&OFM, OFM; Algorithm 2), how the eight tile-level threads (TLTs) of a TLE schedule their
tiles (input-, output- or weight-stationary: IS, OS, WS), and the tile sizes
$T_R, T_C, T_N, T_M$ that fit the 8 KB buffers MB0/MB1/MB2 (eq. 1–2). The estimated time is
$T_{MAC} + T_{DRAM}$ (eq. 6 without the software term, as the paper does), where $T_{DRAM}$
counts the transfers of each tile type (eq. 3–5) and, in TSO-burst, one CAS latency per DRAM
burst (Algorithm 4). npusched enumerates the whole tile space with numpy arrays — no Python loop
per candidate — and checks the choice with an exact CP-SAT model."""),
    code("""from concurrent.futures import ProcessPoolExecutor
import numpy as np
import matplotlib.pyplot as plt
from npusched.arch import load_arch
from npusched.workload.zoo import load_network
from npusched.methods.tiling import tile_network
from npusched.problem.tiling import evaluate
from npusched.plot import roofline, time_breakdown
arch = load_arch("tso-nmp-16")
pool = ProcessPoolExecutor(2)  # every tile_network below solves its layers on two processes"""),
    md(r"""## One network, layer by layer"""),
    code("""lenet = tile_network(load_network("lenet"), arch, "burst", executor=pool)
for c in lenet.layers:
    print(f"{c.name:4s} {c.tle:7s} {c.tlt:3s} T_R={c.T_R:3d} T_C={c.T_C:3d} T_N={c.T_N:3d} "
          f"T_M={c.T_M:3d}  {c.time_us:8.2f} us  ({c.n_candidates} candidates)")
print(f"total {lenet.total_time_us:.1f} us, searched in {lenet.search_seconds * 1e3:.0f} ms")"""),
    md(r"""## The shape of TSO's Table I
Total time of each network with TSO-burst, TSO-noburst (tiles chosen by the volume model, then
timed with bursts), and with one TLE slicing or one TLT schedule fixed. TSO-burst should be the
best entry of every row, and burst-aware choice faster than noburst."""),
    code("""rows = {}
for name in ("lenet", "resnet50", "mobilenetv2", "squeezenet"):
    net = load_network(name)
    row = {"burst": tile_network(net, arch, "burst", executor=pool).total_time_us,
           "noburst": tile_network(net, arch, "noburst", executor=pool).total_time_us}
    for tle in ("KS", "KS&OFM", "OFM"):
        row[tle] = tile_network(net, arch, "burst", fix_tle=tle, executor=pool).total_time_us
    for tlt in ("IS", "OS", "WS"):
        row[tlt] = tile_network(net, arch, "burst", fix_tlt=tlt, executor=pool).total_time_us
    rows[name] = row
cols = list(next(iter(rows.values())))
print("network      " + "".join(f"{c:>10s}" for c in cols))
for name, row in rows.items():
    print(f"{name:12s} " + "".join(f"{row[c]:10.0f}" for c in cols),
          "  burst best:", row["burst"] <= min(row.values()) + 1e-9)"""),
    md(r"""## Where the time goes: bursts against volume
The LOAD / STORE / MAC split of SqueezeNet's layers for tiles chosen with and without burst
awareness (TSO Fig. 9), both timed with bursts."""),
    code("""sq = load_network("squeezenet")
b = tile_network(sq, arch, "burst", executor=pool)
v = tile_network(sq, arch, "noburst", executor=pool)
parts = {key: {"load": [c.time.load_us for c in ch.layers], "store": [c.time.store_us for c in ch.layers],
               "mac": [c.time.mac_us for c in ch.layers]} for key, ch in (("burst", b), ("noburst", v))}
time_breakdown([c.name for c in b.layers], parts, title="SqueezeNet on tso-nmp-16")
plt.show()"""),
    md(r"""## Roofline of the chosen tiles (TSO Fig. 11)
Operational intensity = MACs / bytes moved to and from DRAM (the chosen tiles timed with the
volume model give the bytes); attained performance = MACs / estimated time."""),
    code("""net = load_network("resnet50")
choice = tile_network(net, arch, "burst", executor=pool)
bpc = arch.dram_bytes_per_cycle()
intensity, perf = [], []
for layer, c in zip(net.layers, choice.layers):
    if c.name != layer.name:
        layer = net.layer(c.name)
    ins = net.in_shapes(layer)
    vol = evaluate(layer, ins[0], arch, c.tle, c.tlt, c.T_R, c.T_C, c.T_N, c.T_M, model="volume")
    macs = layer.macs(ins)
    intensity.append(macs / (vol.dram_cycles * bpc))
    perf.append(macs / (c.time_us * 1e-6))
peak = arch.m * 8 * arch.frequency_hz
roofline(intensity, perf, peak, bpc * arch.frequency_hz, title="ResNet-50 on tso-nmp-16, TSO-burst")
plt.show()"""),
    md(r"""## An exact model certifies the search
For each layer a CP-SAT model with integer tile sizes (ceil through division constraints, products
through multiplication equalities, the burst counts of Algorithm 4) minimises the same estimated
time; warm-started from the search's choice, it proves the optimum."""),
    code("""from npusched.formulations.tiling.exact import solve_layer_exact
for c in lenet.layers:
    layer = load_network("lenet").layer(c.name)
    net = load_network("lenet")
    t, status = solve_layer_exact(layer, net.in_shapes(layer)[0], arch, "burst", c, time_limit=10, threads=2)
    print(f"{c.name:4s} search {c.objective_us:8.3f} us   exact {t:8.3f} us ({status})")
pool.shutdown()"""),
]
nb = nbf.v4.new_notebook(
    cells=cells,
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
)
nbf.write(nb, "notebooks/04_tiling.ipynb")
