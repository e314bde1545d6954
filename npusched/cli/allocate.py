"""``npusched allocate``: Stream's layer–core allocation search on a Stream export (§III-D), each
allocation scheduled by the memory-aware list with every core's memory enforced.

Writes into ``--out-dir``: ``front.json`` (every allocation on the Pareto front of makespan and
peak memory, with each unit's core, and Stream's allocation for reference), ``front.png``, and
for the allocation with the shortest makespan ``instance.json`` (the export with that allocation
fixed and the memories as capacities) and ``solution.json`` (DESIGN's contract, verified).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from npusched.cli.args import executor_spec, output_dir, positive_float, positive_int

OUTPUT_RESERVE = 2.0
"""Seconds of ``--time-limit`` kept for the best allocation's schedule, the files and the plot
(about 1.5 s on ResNet-18); the limit counts from the start of the command."""


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    from tqdm import tqdm

    from npusched.common.executor import open_executor
    from npusched.common.jsonio import read_json, write_json
    from npusched.io import write_instance, write_solution
    from npusched.io.stream import allocation_groups, cn_energy, stream_from_dict
    from npusched.methods import solve
    from npusched.plot import pareto_front
    from npusched.search.allocation import Units, run_ga, score

    data = read_json(args.export)
    inst = stream_from_dict(data, str(args.export), free_allocation=True, memory=True)
    units = Units.of(inst, allocation_groups(data))
    energy = None if args.no_energy else cn_energy(data)
    ref = None
    if inst.preferred is not None:
        ms, peak, ok = score(inst, inst.preferred)
        ref = (ms, peak) if ok else None
    bar = tqdm(total=args.generations, desc="allocate", unit="gen", disable=None)

    def progress(gen: int, best: float) -> None:
        bar.update(gen - bar.n)
        bar.set_postfix(best_makespan=f"{best:.0f}")

    limit = args.time_limit
    if limit is not None:  # what is left once the export is read, less the files' share
        limit = max(0.01, limit - (time.perf_counter() - started) - OUTPUT_RESERVE)
    spec = args.executor if args.workers != 1 or args.executor.startswith("dask://") else "serial"
    with open_executor(spec, args.workers) as executor:
        front = run_ga(inst, units, args.generations, args.population, args.seed, executor,
                       progress, limit, energy)  # fmt: skip
    bar.close()
    if not front.front.size:
        raise ValueError("no allocation found whose schedule fits the memories without eviction")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    best = front.best()
    fixed = inst.restricted(units.core_of(front.genomes[best]))
    res = solve(fixed, "list", priority="latency")
    write_instance(fixed, out / "instance.json")
    write_solution(out / "solution.json", fixed, res, "instance.json")
    write_json(out / "front.json", report(inst, units, front, ref, args))
    pareto_front(front.makespan, front.peak, front.front, out / "front.png", ref,
                 f"{inst.name}: {len(front.genomes)} allocations", inst.data_unit,
                 front.energy)  # fmt: skip
    stream = inst.source.get("stream_makespan")
    ratio = f" ({res.objective / stream:.3f}x Stream's)" if stream and res.objective else ""
    print(
        f"{inst.name}: {len(front.genomes)} allocations evaluated, {front.front.size} on the "
        f"front; shortest makespan {res.objective:.0f}{ratio}, peak "
        f"{front.peak[best]:.0f} {inst.data_unit}"
        + (f"; Stream's allocation {ref[0]:.0f}, peak {ref[1]:.0f}" if ref else "")
    )
    return 0


def report(inst: Any, units: Any, front: Any, ref: Any, args: argparse.Namespace) -> dict:
    """``front.json``: the run's settings, Stream's allocation's point and the front."""
    cores = inst.accelerator.cores
    layer = inst.layer

    def allocation(k: int) -> list[dict[str, int]]:
        core = units.core_of(front.genomes[k])
        rows = []
        for u in range(len(units.cores)):
            i = int((units.unit == u).argmax())
            rows.append({"unit": u, "layer": int(layer[i]) if layer is not None else 0,
                         "core": cores[int(core[i])].id})  # fmt: skip
        return rows

    return {
        "export": str(args.export),
        "method": args.method,
        "generations": args.generations,
        "population": args.population,
        "seed": args.seed,
        "objectives": ["makespan (cycles)", f"peak memory, all cores ({inst.data_unit})"]
        + ([] if front.energy is None else ["compute energy (the export's unit)"]),
        "stream_makespan": inst.source.get("stream_makespan"),
        "stream_allocation": None if ref is None else {"makespan": ref[0], "peak": ref[1]},
        "evaluated": int(len(front.genomes)),
        "infeasible": int((~front.feasible).sum()),
        "best_makespan_per_generation": front.history,
        "front": [
            {
                "makespan": front.makespan[k],
                "peak": front.peak[k],
                **({} if front.energy is None else {"energy": front.energy[k]}),
                "allocation": allocation(k),
            }  # fmt: skip
            for k in front.front[front.makespan[front.front].argsort()].tolist()
        ],
    }


def add_parser(sub: Any) -> None:
    """Add the ``allocate`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``)."""
    a = sub.add_parser("allocate", help="Stream's layer-core allocation search (NSGA-II)")
    a.add_argument("export", help="Stream export (stream_instance/v1) with its cores' memories")
    a.add_argument("--method", choices=["ga"], default="ga",
                   help="ga: NSGA-II over latency and peak memory (pymoo)")  # fmt: skip
    a.add_argument("--generations", type=positive_int, default=10, help="default 10")
    a.add_argument("--population", type=positive_int, default=16, help="default 16")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--time-limit", type=positive_float,
                   help="seconds for the whole command: no generation starts that would end "
                   "past it, individuals not evaluated by then count as infeasible (Stream's "
                   "allocation always is evaluated)")  # fmt: skip
    a.add_argument("--executor", type=executor_spec, default="local",
                   help="local (a process pool) or dask://HOST:PORT")  # fmt: skip
    a.add_argument("--workers", type=positive_int, default=1,
                   help="local processes for a generation (default 1: this one)")  # fmt: skip
    a.add_argument("--no-energy", action="store_true",
                   help="leave out the third objective, the CNs' energy (used where the export "
                   "gives it)")  # fmt: skip
    a.add_argument("--out-dir", type=output_dir, required=True)
    a.set_defaults(func=run)
