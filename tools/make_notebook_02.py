"""Writes notebooks/02_noc_mapping.ipynb (kept so the notebook can be regenerated and reviewed)."""

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(r"""# Mapping μops onto a mesh NoC: placement (QAP form) and Klotski's two stages

Klotski's Problem 3 maps μops to the cores of an $x \times y$ mesh so that producer→consumer
traffic travels few hops. The cost of an edge is the Manhattan distance between the two cores
(eq. 9), and the total is $C = \sum_{e} |x_{e1} - x_{e2}| + |y_{e1} - y_{e2}|$ (eq. 14), or the
same weighted by the bytes each edge carries.

This notebook covers the *placement* form (every task on its own core: a quadratic assignment
problem, with QAPLIB's Nugent instances as ground truth) and Klotski's *two-stage* pipeline (slots
first, then the mapping of those slots), and the joint model of eq. 15 that Klotski declared
unsolvable, here with NoC transfer delays."""),
    code("""import numpy as np
import matplotlib.pyplot as plt
from npusched import solve, verify
from npusched.verify import verify_routed
from npusched.problem.scheduling.noc import Mesh
from npusched.problem.placement import PlacementInstance
from npusched.plot import link_traffic, mesh_heatmap"""),
    md(r"""## The mesh
Core $k$ sits at row $\lfloor k / x \rfloor$, column $k \bmod x$ (eq. 10–11). Links are directed
between neighbours; the XY route goes along the row first, then along the column, and has exactly
Manhattan-distance many links."""),
    code("""mesh = Mesh(3, 4)
print("hops from core 0:", mesh.distance()[0].tolist())
print("XY route 0 -> 11 (link ids):", mesh.route(0, 11), "=", [mesh.links[l] for l in mesh.route(0, 11)])"""),
    md(r"""## The separable linearisation
Klotski linearises eq. 10–11 (floor and mod) with extra integer and binary variables (eq. 20–28).
That is unnecessary: with assignment binaries $z_{tk}$ and constant core coordinates $(r_k, c_k)$,
the row of task $t$ is *linear*, $R_t = \sum_k r_k z_{tk}$, and $|R_t - R_u|$ needs two
inequalities:

$$DR_{tu} \ge R_t - R_u,\quad DR_{tu} \ge R_u - R_t,\qquad \min \sum_{t<u} w_{tu}(DR_{tu} + DC_{tu}).$$

Alone, this model's LP bound is 0 (every task fractionally in the middle), so `PlacementModel` adds
a Gilmore–Lawler cut per task, $\sum_u w_{tu}(DR_{tu}+DC_{tu}) \ge \sum_k g_{tk} z_{tk}$, and breaks
the mesh's symmetry by fixing the heaviest task to one representative of each orbit of cells."""),
    code("""from pathlib import Path
from npusched.io import read_qaplib

nug = Path("../../shared/benchmarks/qaplib/dat/nug12.dat")
if nug.exists():
    inst = read_qaplib(nug)
else:  # a random 12-task instance when ../shared is absent
    rng = np.random.default_rng(0)
    flow = rng.integers(0, 6, (12, 12)) * (rng.random((12, 12)) < 0.4)
    np.fill_diagonal(flow, 0)
    inst = PlacementInstance(flow, mesh, name="random12")
print(inst.name, inst.n, "tasks on a", f"{inst.mesh.rows}x{inst.mesh.cols}", "mesh; published optimum:", inst.reference.optimum)
results = {m: solve(inst, m, seed=0) for m in ("snake", "greedy", "anneal", "tabu")}
results["qap"] = solve(inst, "qap", "highs", time_limit=5)  # warm start: tabu
results["qap-bnb"] = solve(inst, "qap-bnb", time_limit=30)
for name, r in results.items():
    print(f"{name:7s} cost {r.objective:g}", "" if r.bound is None else f"(bound {r.bound:g}, {r.status.value})")"""),
    md(r"""The heuristics find good placements quickly (robust tabu search usually reaches the published
optimum of the Nugent instances); the exact model keeps the incumbent and reports the bound it
proves, which on these instances stays well below the optimum: its Gilmore–Lawler cuts are
computed once for the whole mesh. `qap-bnb` recomputes the Gilmore–Lawler bound (an assignment
problem) on what is left after each placement — remaining tasks on free cells plus the now-linear
traffic to placed tasks — so the bound tightens with depth and proves nug12 in about a thousand
nodes."""),
    code("""best = results["tabu"].solution
cells = inst.cell_array[best.loc]
t, u = np.nonzero(inst.flow)
load = link_traffic(inst.mesh, cells[t], cells[u], inst.flow[t, u])
mesh_heatmap(inst.mesh, load, {int(c): f"t{i}" for i, c in enumerate(cells)},
             title=f"{inst.name}: tabu placement, cost {inst.cost(best.loc)}")
plt.show()"""),
    md(r"""## Klotski's two stages on a μop DAG
Stage 1 solves the slot ILP (eq. 18) for the makespan. Stage 2 fixes those slots and maps μops to
cores: μops that overlap in time must sit on different cores (eq. 12, one row per maximal clique
of the interval graph), and μops that never overlap may share a core. `verify` checks the schedule
and recomputes the NoC cost."""),
    code("""from npusched import Accelerator, SchedulingInstance, UopGraph
latency = np.array([3, 4, 4, 3, 6, 3, 4, 3, 3, 6, 2, 4])
edges = [(0, 4), (0, 5), (0, 7), (0, 11), (1, 6), (1, 7), (1, 11), (2, 4), (3, 10), (4, 7),
         (4, 11), (5, 9), (6, 7)]
src, dst = map(np.array, zip(*edges))
dag = SchedulingInstance(UopGraph(latency, src, dst, np.full(len(edges), 64)),
                         Accelerator.mesh_grid(2, 2), name="twelve_on_2x2")
stage1 = solve(dag, "timeindexed", "highs", time_limit=20)
two = solve(dag, "twostage", "highs", time_limit=20)
r1, r2 = verify(dag, stage1.solution), verify(dag, two.solution)
print(f"slots only (cores by interval colouring): makespan {r1.makespan}, NoC cost {r1.noc_cost}")
print(f"two-stage: makespan {r2.makespan}, NoC cost {r2.noc_cost}  ({two.stats['stage2']['status']})")"""),
    md(r"""## The joint model (eq. 15) with transfer delays
With the separable coordinates, eq. 15 is an ordinary CP-SAT model: an optional interval per
(μop, core) with NoOverlap per core, hops $h_e = |R_p - R_q| + |C_p - C_q|$ per edge, and the
precedence $s_q \ge e_p + \lambda h_e + \lceil b_e / B \rceil \delta_e$ with hop latency
$\lambda$, link bandwidth $B$ and $\delta_e = 1$ when the edge leaves its core. The objective is
$T + \beta C$ or lexicographic (makespan, then NoC cost). Klotski's two stages cannot see transfer
time: their plan is re-timed on the NoC so that it stays feasible. Orange bars in the Gantt chart
are transfers."""),
    code("""from npusched.bench.generate import layered_dag
from npusched.plot import gantt
noc = layered_dag(6, 4, (3, 3), hop_latency=1, link_bandwidth=8.0, seed=2)
rows = []
for method, backend in [("zigzag", None), ("list", None), ("twostage", "highs"), ("joint", None)]:
    r = solve(noc, method, backend, time_limit=10, threads=2)
    rep = verify(noc, r.solution).raise_if_failed()
    rows.append((method, rep.makespan, rep.noc_cost, r.status.value))
    if method == "joint":
        best = r
for row in rows:
    print("{:9s} makespan {:4d}  NoC cost {:4d}  {}".format(*row))
gantt(noc, best.solution, title="joint model, transfers in orange")
plt.show()"""),
    md(r"""## Link contention: one transfer at a time per link
The delay model above lets any number of transfers share a link. With contention, a producer's
output travels once to every other core that hosts one of its consumers, as an interval
$\tau$ of length $\lambda \cdot \text{hops} + \lceil b / B \rceil$ that holds every link of its
XY route, and each link carries one transfer at a time:
$\text{NoOverlap}(\{\tau : \ell \in \text{route}(\tau)\})$ for every link $\ell$. Its optimum
can only be later than the delay model's."""),
    code("""from npusched.problem.scheduling.routed import RoutedInstance
routed = RoutedInstance.from_mesh(noc)
rc = solve(routed, "joint", time_limit=10, threads=2)
rep = verify_routed(routed, rc.solution).raise_if_failed()
print(f"delay model {best.objective:.0f} <= with contention {rc.objective:.0f} ({rc.status.value})")
gantt(routed, rc.solution, title="with link contention: one row per link used")
plt.show()"""),
    md(r"""## Stream's instances: an off-chip DRAM link shared by all weight fetches
Stream (KU Leuven) exports its computation nodes (CNs), per-core latencies, links and routes.
`read_stream` keeps Stream's allocation (or frees it within each CN's `possible_cores`); weights
and first-layer inputs start in DRAM and cross the single off-chip link. The list scheduler books
every transfer on its links; the exact model is the same CP-SAT model as above. This cell needs
`../shared/benchmarks/stream` and is skipped without it."""),
    code("""SHARED_STREAM = Path("../../shared/benchmarks/stream/tiny_res16_tpu_quad_core_fused.json")
if SHARED_STREAM.is_file():
    from npusched.io import read_stream
    tiny = read_stream(SHARED_STREAM)
    r = solve(tiny, "joint", time_limit=10, threads=2)
    rep = verify_routed(tiny, r.solution).raise_if_failed()
    stream = tiny.source["stream_makespan"]
    print(f"ours {rep.makespan} (bound {r.bound:.0f}) vs Stream's {stream}: "
          f"{rep.makespan / stream:.2f}x")
    gantt(tiny, r.solution, title="Stream's tiny CNN on Stream's allocation (red: DRAM fetches)")
    plt.show()
else:
    print(f"skipped: {SHARED_STREAM} not found")"""),
]
nb = nbf.v4.new_notebook(
    cells=cells,
    metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
)
nbf.write(nb, "notebooks/02_noc_mapping.ipynb")
