"""Writes notebooks/06_klotski_orchestration.ipynb (kept so the notebook can be regenerated and
reviewed)."""

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(r"""# Klotski: orchestrating a network on a mesh of accelerators

Klotski (Bai et al., 2023) maps a DNN onto a mesh of accelerators in two steps (§III-A, Fig. 4).
First it cuts every layer into μtensors of one shape $s = (h, w, ic, oc)$. Bayesian optimization
(BO) chooses $s$ by maximising an entropy score (§III-B, Algorithm 1, eq. 3). Then it schedules
and maps the resulting μops $V$ on the cores $\mathbf{a}$, by a unified model (§III-C, eq. 15)
or by two decoupled stages (§III-D, eq. 16–28).

This notebook covers:
1. the design space $\mathbb{D}$ of shapes, and which shapes are infeasible;
2. the score $E(s)$ of eq. 3;
3. the surrogate (a Gaussian process) and the acquisition (UCB) of Algorithm 1, lines 7–8;
4. the whole loop on LeNet and a 3 × 3 mesh: convergence, the final stages, the bound, the
   verified schedule, and the baselines."""),
    code("""import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from botorch.acquisition import UpperConfidenceBound

from npusched.arch import load_arch
from npusched.partition.api import partition_network, resolve_network
from npusched.plot import gantt
from npusched.plot.convergence import convergence
from npusched.search.bo import UCB_BETA, gp_model, sobol_starts
from npusched.search.evaluate import evaluate
from npusched.search.objective import entropy_score
from npusched.search.orchestrate import orchestrate
from npusched.search.space import MAX_UOPS, DesignSpace
from npusched.verify import check

SEED = 0
arch = load_arch("klotski-3x3")  # 9 cores, 12 x 14 PEs (C x K), 5.86 MB each, 512 B/cycle mesh
net = resolve_network("lenet")
print(arch.name, "mesh", arch.mesh, "PE unroll", arch.cores[0].pe_unroll,
      "memory", arch.cores[0].memory_bytes, "B")
print(net.name, [(ly.name, net.shapes[ly.name]) for ly in net.layers])"""),
    md(r"""## 1. The design space $\mathbb{D}$ (§III-B)
A μtensor is $h \times w$ output pixels × $oc$ output channels, summed over $ic$ input channels.
One $s$ cuts every layer: it is clipped to the layer's extents, and what does not divide evenly
becomes extra μtensors (Fig. 5). The axes are

$$\mathbb{D} = H \times W \times IC \times OC, \qquad
H = \{d : d \mid H_{\max}\} \cup \{2^k \le H_{\max}\}, \qquad
IC = \{m, 2m, 4m, \dots\}, \quad OC = \{n, 2n, 4n, \dots\},$$

with $W$ like $H$. Here $m \times n = 12 \times 14$ is the PE array (KC partition). So $m \mid ic$
and $n \mid oc$, and each μtensor fills the array ("remainder-free"). Two shapes that cut every
layer alike are one point. A shape is **infeasible** when one of its μtensors (input box, weights
and output) needs more than a core's memory $b_i$. We also drop shapes with more than a cap of
μops (`max_uops`); the paper has no such cap. LeNet fits in 5.86 MB whatever $s$ is. FSRCNN's
large feature maps do not."""),
    code("""full = DesignSpace.build(net, arch, max_uops=None)
for name, d in zip(("h", "w", "ic", "oc"), range(4)):
    print(f"{name:2s} takes {sorted({p[d] for p in full.points})}")
print(f"{net.name}: {len(full)} distinct shapes, {full.infeasible} over the memory, "
      f"|V| from {min(full.uops)} to {max(full.uops)} μops")
t0 = time.perf_counter()
big = DesignSpace.build(resolve_network("fsrcnn"), arch)  # the default cap MAX_UOPS
print(f"fsrcnn: {len(big)} feasible, {big.infeasible} over the memory, "
      f"{big.too_large} over {MAX_UOPS} μops ({time.perf_counter() - t0:.1f} s to enumerate)")

CAP = 300  # keeps every evaluation of this notebook well under a second
space = DesignSpace.build(net, arch, max_uops=CAP)
print(f"{net.name} with at most {CAP} μops: {len(space)} shapes ({space.too_large} left out)")
plt.figure(figsize=(7, 3))
plt.semilogy(np.sort(full.uops), ".", ms=3)
plt.axhline(CAP, color="C3", lw=1, label=f"cap used below ({CAP})")
plt.xlabel("shapes, by μop count"); plt.ylabel("|V|"); plt.legend()
plt.title(f"{net.name} on {arch.name}: μops per shape")
plt.show()"""),
    md(r"""## 2. The score $E(s)$ (eq. 3)
Algorithm 1, lines 3–5: cut the network with $s$, then schedule and map its μops. Inside the loop
this is the list scheduler with NoC delays, and its schedule is verified. Then score the result:

$$E(s) = \frac{H(s)}{\alpha \cdot \mathrm{makespan}(s)}, \qquad
H(s) = -\sum_{u_i \in V} p_i \ln p_i, \qquad p_i = \frac{l(u_i)}{l(V)}, \qquad
l(V) = \sum_{u_i \in V} l(u_i).$$

$H \le \ln |V|$, with equality when all μops are equally long: the load-balancing goal of
§III-B. α "normalizes the entropy score". We take the mean μop latency $\alpha = l(V)/|V|$,
which the paper reports to be effective. Then $E = |V| H / (l(V) \cdot \mathrm{makespan})$, which
grows like $|V| \ln |V|$ when the work and the makespan change little. Finer cuts therefore score
higher, and that is why we cap $|V|$."""),
    code("""for s in [(4, 4, 12, 14), (2, 2, 12, 28)]:
    ev = evaluate(net, arch, s, seed=SEED)  # partition, list-schedule, verify, score
    lat = partition_network(net, arch, "klotski", s=s).min_duration.astype(float)
    p = lat[lat > 0] / lat.sum()
    H, alpha = -(p * np.log(p)).sum(), lat.mean()
    E = H / (alpha * ev.makespan)
    assert math.isclose(E, ev.entropy) and math.isclose(E, entropy_score(lat, ev.makespan))
    print(f"s = {s}: |V| = {ev.uops:4d}, H = {H:.3f} (ln|V| = {np.log(ev.uops):.3f}), "
          f"alpha = {alpha:7.1f}, makespan = {ev.makespan}, E = {E:.3e}, ln E = {ev.target:.2f}")"""),
    md(r"""## 3. The surrogate and the acquisition (Algorithm 1, lines 1, 7, 8)
Each shape becomes a point $x \in [0, 1]^4$: $x_d = \log_2 s_d / \log_2 \max_{\mathbb{D}} s_d$.
The GP models $y = \ln E(s)$, because $E$ spans orders of magnitude; the logarithm keeps the
maximiser. Outcomes are standardised. The kernel is the ARD Matérn-5/2 of line 7:

$$k(x, x') = \sigma_f^2 \Big(1 + \sqrt{5} r + \tfrac{5}{3} r^2\Big) e^{-\sqrt{5} r}, \qquad
r^2 = \sum_{d=1}^{4} \frac{(x_d - x'_d)^2}{\ell_d^2}.$$

BoTorch's `SingleTaskGP` fits $\sigma_f$, one length scale $\ell_d$ per axis and the noise by
maximum marginal likelihood, in float64. Its posterior has mean $\mu(x)$ and sd $\sigma(x)$.
Line 8 evaluates next

$$s^* = \arg\max_{s \in \mathbb{D} \setminus S} \mathrm{UCB}(s), \qquad
\mathrm{UCB}(s) = \mu(s) + \sqrt{\beta}\, \sigma(s), \quad \beta = 2 \ (\texttt{UCB\_BETA}).$$

The maximum is taken over the enumerated, unvisited feasible shapes, so nothing has to be rounded.
Line 1's sample $S$ is 5 scrambled Sobol points, each snapped to the nearest feasible shape."""),
    code("""x_all = torch.tensor(space.unit(), dtype=torch.float64)
seen = sobol_starts(space, 5, SEED)
evals = [evaluate(net, arch, space.points[k], seed=SEED) for k in seen]
y = torch.tensor([[e.target] for e in evals], dtype=torch.float64)  # ln E
gp = gp_model(x_all[seen], y)
free = np.setdiff1d(np.arange(len(space)), seen)
with torch.no_grad():
    post = gp.posterior(x_all)
    mu, sd = post.mean.flatten().numpy(), post.variance.sqrt().flatten().numpy()
    ucb = UpperConfidenceBound(gp, beta=UCB_BETA)(x_all[free].unsqueeze(1)).numpy()
assert np.allclose(ucb, mu[free] + math.sqrt(UCB_BETA) * sd[free])
k_next = int(free[np.argmax(ucb)])
for k, e in zip(seen, evals):
    print(f"S: s = {e.s}, |V| = {e.uops:3d}, ln E = {e.target:.2f}, GP {mu[k]:.2f} ± {sd[k]:.2f}")
print("length scales l_d (h, w, ic, oc):",
      np.round(gp.covar_module.base_kernel.lengthscale.detach().numpy().ravel(), 2))
print(f"UCB argmax: s* = {space.points[k_next]} (|V| = {space.uops[k_next]}), "
      f"mu = {mu[k_next]:.2f}, sd = {sd[k_next]:.2f}")"""),
    md(r"""Left: the posterior over all of $\mathbb{D}$, against each shape's μop count. Right: a slice
along $h$ through $s^*$, with $w$, $ic$ and $oc$ fixed. The sd is smallest at the sampled shapes
and largest far from them; UCB trades the mean against the sd."""),
    code("""uops = np.array(space.uops)
fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4))
a.errorbar(uops, mu, yerr=sd, fmt=".", ms=2, lw=0.5, alpha=0.4, color="C0", label="GP mean ± sd")
a.plot(uops[seen], y.numpy().ravel(), "o", color="C2", label="evaluated (S)")
a.plot(uops[k_next], mu[k_next], "*", ms=14, color="C3", label="UCB argmax $s^*$")
a.set_xscale("log"); a.set_xlabel("|V| (μops of the shape)"); a.set_ylabel("ln E(s)")
a.legend(fontsize=8)
h0, w0, ic0, oc0 = space.points[k_next]
line = sorted((p[0], k) for k, p in enumerate(space.points) if p[1:] == (w0, ic0, oc0))
hs, ks = np.array([h for h, _ in line]), [k for _, k in line]
b.fill_between(hs, mu[ks] - sd[ks], mu[ks] + sd[ks], alpha=0.3, label="mean ± sd")
b.plot(hs, mu[ks], "-o", ms=3, label="GP mean")
b.plot(hs, mu[ks] + math.sqrt(UCB_BETA) * sd[ks], "--", color="C1", label="UCB")
b.plot(h0, mu[k_next] + math.sqrt(UCB_BETA) * sd[k_next], "*", ms=14, color="C3", label="$s^*$")
b.set_xscale("log", base=2); b.set_xlabel(f"h  (w, ic, oc) = ({w0}, {ic0}, {oc0})")
b.set_ylabel("ln E(s)"); b.legend(fontsize=8)
fig.suptitle("GP after Algorithm 1, line 1 (5 Sobol shapes)")
fig.tight_layout()
plt.show()"""),
    md(r"""## 4. The whole loop (Fig. 4)
`orchestrate` runs Algorithm 1 with budget $T$ (the paper uses 50; 15 here). Its first five
points are the Sobol shapes above, so its sixth is $s^*$. On the best shape it then runs the
exact stages, each warm-started from the best schedule so far and limited to
`final_time_limit` seconds:
- **two stages** (§III-D): the slot ILP of eq. 18, with slots of a quantum $q$ and latencies
  $\lceil l/q \rceil$, then the mapping MIP (eq. 20–28). The plan is re-timed on the real NoC.
- **joint**: CP-SAT on the unified model (eq. 15).

The shortest verified schedule wins. Its lower bound is the larger of the trivial one,
$\max\big(\text{critical path}, \lceil \sum_i l(u_i) / \|\mathbf{a}\| \rceil\big)$, and any bound
`joint` proves. The gap is $(\mathrm{makespan} - \mathrm{bound}) / \mathrm{makespan}$."""),
    code("""t0 = time.perf_counter()
orch = orchestrate(net, arch, budget=15, progress=False, final_time_limit=3.0, seed=SEED,
                   max_uops=CAP)
print(f"{time.perf_counter() - t0:.1f} s; the 6th shape evaluated is s* of section 3: "
      f"{orch.search.evaluations[5].s == space.points[k_next]}")
for j, (e, pr) in enumerate(zip(orch.search.evaluations, orch.search.predicted), 1):
    gp_said = "Sobol" if pr is None else f"GP {pr[0]:6.2f} ± {pr[1]:.2f}"
    print(f"{j:2d} s = {str(e.s):17s} |V| = {e.uops:3d}  ln E = {e.target:6.2f} ({gp_said})  "
          f"makespan {e.makespan}")
best = orch.search.best
shortest = min(orch.search.feasible, key=lambda e: e.makespan)
print(f"largest E: s = {best.s}, makespan {best.makespan}; "
      f"shortest makespan evaluated: s = {shortest.s}, {shortest.makespan}")
convergence(orch.search, title=f"{net.name} on {arch.name}")
plt.show()"""),
    md(r"""The exact stages on the best shape. The two stages solve a quantised copy (slots of $q$
cycles). When the executed plan is no shorter than the warm start, the warm start is kept.
`joint` starts from the best schedule so far. If neither stage beats the list schedule within
its time limit, the list schedule is the result (`method` says which one won)."""),
    code("""for name, st in orch.stages.items():
    print(f"{name:9s}", st)
res = orch.result
rep = check(orch.instance, orch.schedule)
print(f"final: {orch.cycles} cycles by {res.method}, bound {res.bound:.0f}, gap {100 * res.gap:.1f} %, "
      f"complete: {orch.complete}")
print(f"verified: {rep.ok}, makespan {rep.makespan}, NoC cost (eq. 14) {rep.noc_cost} hops")
gantt(orch.instance, orch.schedule, title=f"{net.name} on {arch.name}, s = {best.s}")
plt.show()"""),
    md(r"""## Baselines (§IV-B) and the hardware utilisation ratio
`orchestrate` runs Klotski's two baselines beside the search (`npusched.search.baselines`).
Baseline 1 (after Tangram) does not partition: it schedules the network layer by layer, each
layer whole on the next core of the mesh's zig-zag path, here as the coarsest feasible
partition's μtensors one after another (a whole layer does not fit a core's memory). Baseline 2 is
the atomic dataflow without its synchronised rounds: every ready μop competes, critical path
first, each on the idle core of least input traffic; it runs on Klotski's best partition, as in
the ablation of §IV-D. HUR is a schedule's utilisation $\sum_i l_i / (m \cdot T)$ divided by
baseline 1's (Tables I–III)."""),
    code("""b1, b2 = orch.baselines["baseline1"], orch.baselines["baseline2"]
for name, cycles, uops in [("baseline 1 (zigzag)", b1.cycles, b1.uops),
                           ("baseline 2 (atomic)", b2.cycles, b2.uops),
                           ("Klotski (BO + stages)", orch.cycles, orch.instance.n)]:
    print(f"{name:22s} {cycles:7d} cycles on {uops:4d} μops  {cycles / b1.cycles:.3f} x baseline 1")
print(f"HUR of Klotski: {orch.hur:.2f}, of baseline 2: {b2.utilisation / b1.utilisation:.2f}")"""),
]
nb = nbf.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/06_klotski_orchestration.ipynb")
