"""Writes notebooks/07_stream_memory.ipynb (kept so the notebook can be regenerated and
reviewed)."""

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
    md(r"""# Stream: memory on every core, the latency–memory trade-off, and allocations

Stream (Symons et al., 2023) schedules the computation nodes (CNs) of a layer-fused network on a
heterogeneous multi-core accelerator. Its scheduler (§III-E, Fig. 8) keeps a pool of CNs whose
producers are done and takes the next one by a priority:

- **latency**: the candidate whose producers finished first;
- **memory**: the candidate of the deepest layer, so data is consumed and freed early.

What a core holds follows §III-F: a producer's output from the CN's start until its last local
consumer and its last outgoing transfer end; space on a consumer core from the start of the
transfer; inputs freed when their last consumer ends. npusched makes each core's memory a **hard
capacity** $M_c$: with $R_c(t)$ the data resident on core $c$ at cycle $t$,

$$R_c(t) \le M_c \qquad \forall c, \forall t.$$

This notebook covers:
1. the two priorities on Stream's tiny residual network, with memory traces (Stream's Fig. 7);
2. `joint`, the CP-SAT model with a cumulative of each core's memory;
3. eviction: what the list does when the memories are cut until data no longer fits;
4. the layer–core allocation search (NSGA-II, §III-D), its Pareto front, and the exact
   allocation model under large-neighbourhood search."""),
    code("""from pathlib import Path

import numpy as np

from npusched.common.jsonio import read_json
from npusched.heuristics.scheduling.memory_list import memory_list_schedule
from npusched.heuristics.scheduling.routed_list import routed_list_schedule
from npusched.io.stream import allocation_groups, stream_from_dict
from npusched.methods import solve
from npusched.plot import memory_trace, pareto_front
from dataclasses import replace

from npusched.problem.scheduling.routed import EVICT, REFETCH
from npusched.search.allocation import Units, run_ga, score
from npusched.search.allocation_lns import allocation_lns
from npusched.verify import check
from npusched.verify.scheduling.routed import memory_peaks

SHARED = Path("..").resolve().parent / "shared" / "benchmarks" / "stream"
TINY = SHARED / "tiny_res16_tpu_quad_core_fused.json"
# without ../shared the notebook runs on the test suite's three-CN export instead
PATH = TINY if TINY.exists() else Path("../tests/data/good/stream_mini.json")
data = read_json(PATH)
inst = stream_from_dict(data, str(PATH), memory=True)
print(PATH.name, inst.n, "CNs on", inst.m, "cores; Stream's makespan",
      inst.source["stream_makespan"])
for core, cap in zip(inst.accelerator.cores, inst.capacity):
    print(f"  core {core.id} ({core.name}): {cap} bits")
print("streamed CNs (operands left in DRAM):", int(inst.is_streamed.sum()))"""),
    md(r"""## 1. Two priorities, one memory
Both schedules use Stream's allocation. An allocation is admitted only where the data resident
from then on stays within the capacity, so `verify` (which checks $R_c(t) \le M_c$ at every
change of $R_c$) passes. The routed list without memory is shown for comparison: it fetches
data as early as the links allow and keeps it until its last consumer."""),
    code("""rows = {"no memory (routed list)": routed_list_schedule(inst)}
for priority in ("latency", "memory"):
    rows[f"memory-aware, {priority}"] = memory_list_schedule(inst, priority)
for name, sched in rows.items():
    rep = check(inst, sched)
    peaks = memory_peaks(inst, sched) / inst.capacity
    print(f"{name:28s} makespan {sched.makespan(inst):7d}  verify {'ok' if rep.ok else 'FAILED'}"
          f"  peak/capacity {np.round(peaks, 3).tolist()}")"""),
    md(r"""The memory priority waits for the deepest CNs, so cores idle: a longer makespan, as
Stream's Fig. 7 shows. Its memory trace per core:"""),
    code("""memory_trace(inst, rows["memory-aware, latency"], title="latency priority");
memory_trace(inst, rows["memory-aware, memory"], title="memory priority");"""),
    md(r"""## 2. `joint`: the memory as a cumulative
The routed CP-SAT model gets one more constraint family: every lifetime is an interval
$[\alpha, \omega)$ with $\omega$ the latest end of its consumers (and, for a producer's own
output, of its sends), and on each core

$$\mathrm{Cumulative}(\{[\alpha, \omega)\}, b, M_c).$$

It starts from the latency-priority list. The model cannot evict, so its own bound holds only
for schedules without eviction; the bound reported is the instance's (critical path with the
fastest transfers, and the off-chip link's traffic)."""),
    code("""res = solve(inst, "joint", time_limit=20, threads=2, seed=0)
print(res.summary())
print("verify:", check(inst, res.solution).ok,
      "| peaks/capacity:", np.round(memory_peaks(inst, res.solution) / inst.capacity, 3).tolist())
if inst.source["stream_makespan"]:
    print("ratio to Stream's makespan:", round(res.objective / inst.source["stream_makespan"], 3))"""),
    md(r"""## 3. Eviction: memories cut until data no longer fits
Stream evicts weights first-in-first-out when a CN's data does not fit, and fetches them again
over the DRAM port (§III-E). Here the list first sets a CN that does not fit aside for one that
does; when none fits, the best one makes room: weights are dropped, activations written back to
DRAM (a transfer of kind `evict` on the off-chip link), and what is needed again is fetched
again (`refetch`). Below, every memory is cut to a quarter of a percent of Stream's, but never
below the largest operand set its core must hold at once. The schedule carries its memory
records and its moves; `verify` checks them: capacity, inputs resident while each CN runs,
transfer space allocated from its start, re-fetches after their write-backs."""),
    code("""need = np.where(inst.mask, inst.operand_data()[:, None], 0).max(axis=0)
cut = replace(inst, capacity=np.maximum((inst.capacity * 0.0025).astype(np.int64),
                                        np.maximum(need, 1)))
for priority in ("latency", "memory"):
    sched = memory_list_schedule(cut, priority)
    kinds = sched.moves.kind
    print(f"{priority:8s} makespan {sched.makespan(cut):7d}  verify {check(cut, sched).ok}  "
          f"write-backs {int((kinds == EVICT).sum())}  re-fetches {int((kinds == REFETCH).sum())}")
memory_trace(cut, memory_list_schedule(cut, "latency"), title="latency priority, cut memories");"""),
    md(r"""## 4. Which core runs which layer: the allocation search
Stream's GA gives each layer's weight-sharing group one core and evolves a population with
NSGA-II over latency and memory: crossover with probability 0.3, a bit-flip or position-flip
mutation with probability 0.7 (§III-D). Each allocation is scheduled by the memory-aware list
with the latency priority. The first individual is Stream's own allocation (when it gives each
group one core)."""),
    code("""free = stream_from_dict(data, str(PATH), free_allocation=True, memory=True)
units = Units.of(free, allocation_groups(data))
print(len(units.cores), "units,", units.genes.size, "with a choice of core")
if units.genes.size:
    front = run_ga(free, units, generations=6, population=12, seed=0)
    ref = score(free, free.preferred)
    print(len(front.genomes), "allocations evaluated,", front.front.size, "on the front;",
          "Stream's allocation:", ref[:2])
    for k in front.front[np.argsort(front.makespan[front.front])]:
        print(f"  makespan {front.makespan[k]:8.0f}   peak {front.peak[k]:9.0f} bits")
    pareto_front(front.makespan, front.peak, front.front, reference=ref[:2] if ref[2] else None,
                 title="allocations of the tiny network");"""),
    md(r"""### The exact allocation model, under LNS
The GA samples allocations; CP-SAT can decide them. With one literal $y_{uk}$ per allocation
unit $u$ and core $k$ (shared by the unit's CNs), the routed model's lifetimes become optional
intervals, present with their copies. Whole, the model is too large for ResNet-18, so it is
solved in neighbourhoods: two units free to move, the CNs around them free in time, the rest
fixed; each improvement is kept. It starts from the GA's best."""),
    code("""if units.genes.size:
    start = units.core_of(front.genomes[front.best()])
    lns = allocation_lns(free, units, start, time_limit=10, seed=0, step=2, threads=2)
    fixed = free.restricted(lns.core)
    print(f"GA's best {lns.start_makespan}, after {lns.rounds} neighbourhoods {lns.makespan} "
          f"(bound {lns.bound}); verify: {check(fixed, lns.schedule).ok}")"""),
    md(r"""## What still differs from Stream
- The list evicts only when no ready CN fits without it; Stream evicts as soon as the next CN's
  weights do not fit.
- `joint`, `lns` and the exact allocation model have no eviction: their schedules evict nothing.
- The energy objective is the CNs' energy from the export; link energy is zero in both exports
  and memory-access energies are not exported.

`python -m npusched.bench.stream` and `docs/results_stream.md` give the figures on both exports."""),
]
nb = nbf.v4.new_notebook()
nb["cells"] = cells
nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/07_stream_memory.ipynb")
