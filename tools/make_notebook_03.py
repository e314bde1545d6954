"""Writes notebooks/03_partition.ipynb (kept so the notebook can be regenerated and reviewed)."""

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(r"""# From a network to μops: partitions, dependencies and the scheduling instance

A layer's work is the loop nest over output channels $K$, output rows $OY$, output columns $OX$
and input channels $C$. Klotski cuts it into μtensors $s = (h, w, ic, oc)$, Stream into
computation nodes (CNs) along a few outer loops, Flexer into tiled convolutions. All three are
*product tilings*: each dimension is split into intervals, and a μop is one interval per
dimension. This notebook builds such tilings for real networks, derives the dependencies between
layers exactly, and turns the result into the scheduling instance of notebooks 01 and 02."""),
    code("""import time
import numpy as np
import matplotlib.pyplot as plt
from npusched.workload import INPUT, Layer, Network
from npusched.workload.zoo import load_network, list_networks
from npusched.partition import Tiling, dependencies, klotski_tiling, stream_tiling, tile_macs
from npusched.partition.api import partition_network
from npusched.arch import load_arch
from npusched import solve, verify"""),
    md(r"""## Networks and their published sizes
The zoo holds real networks with their published layer shapes. A convolution with $K$ filters of
$R \times S$ over $C$ channels in $g$ groups costs $K \cdot OH \cdot OW \cdot (C/g) \cdot R \cdot S$
MACs. It also holds transformer layers (BERT, ViT, GPT-2, LLaMA-3-8B) as tensor programs,
whose ops are GEMMs, matmuls of two activations, norms and element-wise maps."""),
    code("""for name in list_networks():
    net = load_network(name)
    kind, count = ("ops", len(net.ops)) if hasattr(net, "ops") else ("layers", len(net.layers))
    print(f"{name:24s} {count:4d} {kind:6s} {net.macs() / 1e9:9.3f} GMACs  {net.params() / 1e6:7.2f} M params")"""),
    md(r"""## Klotski's μtensors and their remainders (Fig. 5)
Cutting a $30 \times 14 \times 14$ input, $50$-filter $3 \times 3$ convolution by
$s = (4, 4, 8, 16)$ leaves a remainder in every dimension: up to $2^4 = 16$ μtensor kinds.
Aligning the channel sizes to the PE array ($12 \times 14$ in Klotski's KC partition) removes
the partially used PE rows and columns except in the last tile."""),
    code("""net = Network("demo", (30, 14, 14), (Layer("c", "conv", (INPUT,), 50, (3, 3), pad=(1, 1, 1, 1)),))
t = klotski_tiling(net, net.layers[0], (4, 4, 8, 16))
print("tiles per dimension (K, OY, OX, C):", t.counts, "kinds:", t.kinds())
a = klotski_tiling(net, net.layers[0], (4, 4, 8, 16), {"K": 12, "C": 14})
print("aligned to 12 x 14 PEs: K tiles", a.lengths(0).tolist(), "C tiles", a.lengths(3).tolist())
print("MACs preserved:", tile_macs(net.layers[0], t).sum() == net.macs())"""),
    md(r"""## Dependencies by interval arithmetic
A consumer μop reads a box of its producer's output: its input channels, and the rows and columns
of its receptive field (kernel, stride, padding, dilation). Both tilings are products of
intervals, so the overlap with each producer tile is a product of three interval overlaps, found
per dimension with two `searchsorted` calls. No pair of μops is ever compared, unlike Stream's
R-tree over all CNs. Stream's own test case — two $3 \times 3$ convolutions on a $448 \times 448$
map, one CN per output pixel — takes Stream about 6 s:"""),
    code("""size = 448
two = Network("stream_case", (1, size, size), (
    Layer("a", "conv", (INPUT,), 1, (3, 3), pad=(1, 1, 1, 1)),
    Layer("b", "conv", ("a",), 1, (3, 3), pad=(1, 1, 1, 1))))
t = Tiling.regular((1, size, size, 1), (1, 1, 1, 1))
t0 = time.perf_counter()
src, dst, vol = dependencies(t, two.layer("b"), t, two.shapes["a"])
print(f"{2 * t.size} CNs, {src.size} edges in {time.perf_counter() - t0:.2f} s; "
      f"each CN reads {np.bincount(dst).max()} producer pixels")"""),
    md(r"""## A partitioned network as a scheduling instance
`partition_network` cuts every layer, generates the dependencies (partial-sum chains when input
channels are split) and computes each μop's latency on each core from its loop bounds and the PE
array's spatial unrolling, with the ceil() losses of partial tiles. On the `compute-only` machine
the result is an ordinary scheduling instance (the μop DAG with hop delays): list scheduling and
CP-SAT solve it, and `verify` checks it. The default machine is the routed one, with links,
DRAM and memories (notebook 08)."""),
    code("""net = load_network("resnet18")
arch = load_arch("flexer-arch7")
inst = partition_network(net, arch, "stream", cn={"OY": 2}, machine="compute-only")
print(f"{inst.n} μops, {inst.graph.num_edges} edges, {inst.m} cores, "
      f"MACs {inst.source['macs'] / 1e9:.3f} G, lower bound {inst.lower_bound()}")
heur = solve(inst, "list")
exact = solve(inst, "cpsat", time_limit=10, threads=2)
for r in (heur, exact):
    print(r.summary(), "verified:", verify(inst, r.solution).ok)"""),
    code("""layer_of = np.repeat(np.arange(len(net.layers)), [np.prod(x["tiles"]) for x in inst.source["layers"]])
start = exact.solution.start
plt.figure(figsize=(9, 3))
plt.scatter(start, layer_of, s=4)
plt.xlabel("start cycle"); plt.ylabel("layer index")
plt.title("ResNet-18 CNs on flexer-arch7: layers overlap in time (layer fusion)")
plt.show()"""),
]
nb = nbf.v4.new_notebook(
    cells=cells,
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
)
nbf.write(nb, "notebooks/03_partition.ipynb")
