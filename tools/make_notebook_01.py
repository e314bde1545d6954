"""Writes notebooks/01_uop_scheduling.ipynb (kept so the notebook can be regenerated and reviewed)."""

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(r"""# μop scheduling on m cores: list scheduling, the time-indexed ILP and CP-SAT

Klotski's *Problem 2* schedules a DAG of μops on $m$ identical cores to minimise the makespan
(P|prec|$C_{\max}$ in scheduling notation). This notebook solves one small DAG three ways:

1. **list scheduling** — the heuristic whose makespan gives the horizon $T$ (Klotski Theorem 1);
2. the **time-indexed slot ILP** of Klotski eq. 16–18 (and the relaxed eq. 19);
3. a **CP-SAT interval model** with redundant lower bounds,

and compares each makespan with the proven lower bound. Every schedule goes through `verify`."""),
    code("""import numpy as np
import matplotlib.pyplot as plt
from npusched import Accelerator, SchedulingInstance, UopGraph, list_schedule, asap_alap, solve, verify
from npusched.heuristics import graham_bound
from npusched.plot import gantt, anytime"""),
    md(r"""## A small DAG
Twelve μops on three cores. `UopGraph` stores the DAG as arrays (latency, edge `src`/`dst`/`bytes`)
and validates itself: a cycle or a dangling edge raises at construction."""),
    code("""latency = np.array([3, 4, 4, 3, 6, 3, 4, 3, 3, 6, 2, 4])
edges = [(0, 4), (0, 5), (0, 7), (0, 11), (1, 6), (1, 7), (1, 11), (2, 4), (3, 10), (4, 7),
         (4, 11), (5, 9), (6, 7)]
src, dst = map(np.array, zip(*edges))
graph = UopGraph(latency, src, dst, np.full(len(edges), 64))
inst = SchedulingInstance(graph, Accelerator.identical(3), name="twelve")
print(f"{inst.n} μops, {graph.num_edges} edges, {inst.m} cores; lower bound max(CP, ⌈W/m⌉) = {inst.lower_bound()}")"""),
    md(r"""## List scheduling and the ASAP/ALAP windows (Klotski eq. 1–2)
Whenever a core is idle and a μop is ready, start the ready μop of highest priority (here the
b-level: the longest path to the end). Graham's argument bounds the result by
$W/m + (1 - 1/m)\,\mathrm{CP} \le (2 - 1/m)\,\mathrm{OPT}$.

Its makespan is the horizon $T$; the windows are
$S_i = \mathrm{ASAP}(u_i)$ and $L_i = T - \mathrm{tail}(u_i)$, the latest start that still lets the
longest chain after $u_i$ finish by $T$."""),
    code("""heur = list_schedule(inst)
T = verify(inst, heur).raise_if_failed().makespan
w = asap_alap(inst, T)
print(f"list makespan {T}; Graham bound {graham_bound(inst):.2f}")
print("S =", w.earliest.tolist())
print("L =", w.latest.tolist())"""),
    md(r"""## The time-indexed ILP (Klotski eq. 16–18)
$X_{ij} = 1$ when μop $u_i$ starts in slot $j \in [S_i, L_i]$:

$$\min T \quad\text{s.t.}\quad \sum_{j=S_i}^{L_i} X_{ij} = 1,\qquad
\sum_j (j + l_i) X_{ij} \le T,\qquad
\sum_j j X_{pj} - \sum_j j X_{qj} \le -l_p \;\; (u_p \prec u_q),$$
$$\sum_i \sum_{p=0}^{l_i-1} X_{i,j-p} \le m \quad \forall j \quad\text{(exact resource constraint)}.$$

Slots are 0-based, so a μop in slot $j$ ends at $j + l_i$. Each constraint family is one method of
`TimeIndexedModel`; the list schedule is its warm start. The same model runs on HiGHS, CBC,
HiGHS-through-PuLP and CP-SAT."""),
    code("""for backend in ("highs", "cbc", "cpsat"):
    r = solve(inst, "timeindexed", backend, time_limit=30)
    print(r.summary(), "| rows per family:", r.stats["rows"])
ti = r
verify(inst, ti.solution).raise_if_failed();"""),
    md(r"""## The relaxed resource constraint (eq. 19)
Klotski replaces the last family by $\sum_{i : j \in [S_i, L_i]} X_{ij} \le m$: at most $m$ μops
*issued* per slot. Running μops are no longer counted, so the model admits schedules in which more
than $m$ μops run at once. `verify` reports them:"""),
    code("""relaxed = solve(inst, "timeindexed", "highs", relaxed=True, time_limit=30)
report = verify(inst, relaxed.solution)
print(relaxed.summary())
print("feasible:", report.ok)
for v in report.violations[:5]:
    print("  ", v)"""),
    md(r"""## CP-SAT interval model
One interval $[s_i, s_i + l_i)$ per μop with $s_i \in [S_i, L_i]$, precedence $s_q \ge s_p + l_p$,
$\mathrm{cumulative}(\{I_i\}, 1, m)$, and redundant bounds $C \ge s_i + \mathrm{tail}_i$,
$mC \ge \sum_i l_i$ that let the bound close with two workers. (With per-core latencies the model
switches to one optional interval per (μop, core) and a NoOverlap per core.)"""),
    code("""cp = solve(inst, "cpsat", time_limit=30, threads=2)
print(cp.summary())
print(f"list {T}  |  time-indexed {ti.objective:g}  |  CP-SAT {cp.objective:g} (bound {cp.bound:g})")
print(f"list heuristic gap to the optimum: {100 * (T - cp.objective) / cp.objective:.1f}%")"""),
    code("""fig1 = gantt(inst, heur, title=f"list scheduling: {T}")
fig2 = gantt(inst, cp.solution, title=f"CP-SAT optimum: {cp.objective:g}")
plt.show()"""),
    md(r"""## A Kasahara STG benchmark (if `../shared` is present)
The anytime curve shows the incumbent and the proven bound of each exact method over time."""),
    code("""from pathlib import Path
from npusched import read_stg

stg = Path("../../shared/benchmarks/stg/50/rand0001.stg")
if stg.exists():
    big = read_stg(stg, 4)
    runs = [solve(big, "cpsat", time_limit=20, threads=2),
            solve(big, "timeindexed", "highs", time_limit=20)]
    for r in runs:
        verify(big, r.solution).raise_if_failed()
        print(r.summary())
    print("published optimum:", big.reference.optimum)
    anytime(runs, reference=big.reference.optimum, title=big.name)
    plt.show()
else:
    print("../shared not found: skipped")"""),
]
nb = nbf.v4.new_notebook(
    cells=cells,
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
)
nbf.write(nb, "notebooks/01_uop_scheduling.ipynb")
