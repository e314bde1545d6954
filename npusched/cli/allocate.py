"""``npusched allocate``: Stream's layer–core allocation search on a Stream export (§III-D), each
allocation scheduled by the memory-aware list with every core's memory enforced.

``--method ga`` is Stream's GA (:mod:`npusched.search.allocation`); ``--method cpsat`` runs the GA
for half the time limit and then the exact allocation model under LNS from the GA's best
(:mod:`npusched.search.allocation_lns`) for the rest.

Writes into ``--out-dir``: ``front.json`` (every allocation on the Pareto front of makespan and
peak memory, with each unit's core, and Stream's allocation for reference; with cpsat the LNS's
record), ``front.png``, and for the allocation with the shortest makespan ``instance.json`` (the
export with that allocation fixed and the memories as capacities) and ``solution.json``
(DESIGN's contract, verified).
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
    """Run ``npusched allocate``: the allocation search on ``args.export`` (the GA, with
    ``--method cpsat`` then the exact allocation model under LNS), the allocation with the
    shortest makespan scheduled by the memory-aware list, the files of the module docstring
    written into ``--out-dir`` once every search is done, and one summary line printed.

    Returns
    -------
    int
        The exit code: 0 (failures raise).

    Raises
    ------
    InputError
        The export cannot be read or is not a Stream export.
    ValueError
        No allocation was found whose schedule fits the memories.
    """
    started = time.perf_counter()
    from tqdm import tqdm

    from npusched.common.executor import open_executor
    from npusched.common.jsonio import read_json, write_json
    from npusched.io import write_instance, write_solution
    from npusched.io.stream import allocation_groups, cn_energy, stream_from_dict
    from npusched.methods import solve
    from npusched.plot import pareto_front
    from npusched.search.allocation import Units, peak_total, run_ga, score

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

    def left() -> float | None:  # what is left of the limit, less the files' share
        if args.time_limit is None:
            return None
        return max(0.01, args.time_limit - (time.perf_counter() - started) - OUTPUT_RESERVE)

    limit = left()
    if limit is not None and args.method == "cpsat":
        limit /= 2  # the other half for the exact model
    spec = args.executor if args.workers != 1 or args.executor.startswith("dask://") else "serial"
    with open_executor(spec, args.workers) as executor:
        front = run_ga(inst, units, args.generations, args.population, args.seed, executor,
                       progress, limit, energy)  # fmt: skip
    bar.close()
    if not front.front.size:
        raise ValueError("no allocation found whose schedule fits the memories")
    lns = None
    if args.method == "cpsat":
        lns = exact_allocation(inst, units, front, left(), args, energy)
        fixed = inst.restricted(lns.core)
        res = lns_result(fixed, lns, args)
    else:
        fixed = inst.restricted(units.core_of(front.genomes[front.best()]))
        res = solve(fixed, "list", priority="latency")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)  # once every search is done: nothing half-written
    write_instance(fixed, out / "instance.json")
    write_solution(out / "solution.json", fixed, res, "instance.json")
    write_json(out / "front.json", report(inst, units, front, ref, args, lns))
    pareto_front(front.makespan, front.peak, front.front, out / "front.png", ref,
                 f"{inst.name}: {len(front.genomes)} allocations", inst.data_unit,
                 front.energy)  # fmt: skip
    stream = inst.source.get("stream_makespan")
    ratio = f" ({res.objective / stream:.3f}x Stream's)" if stream and res.objective else ""
    print(
        f"{inst.name}: {len(front.genomes)} allocations evaluated, {front.front.size} on the "
        f"front; shortest makespan {res.objective:.0f}{ratio}, peak "
        f"{peak_total(fixed, res.solution):.0f} {inst.data_unit}"
        + (f"; Stream's allocation {ref[0]:.0f}, peak {ref[1]:.0f}" if ref else "")
    )
    return 0


def exact_allocation(
    inst: Any,
    units: Any,
    front: Any,
    limit: float | None,
    args: argparse.Namespace,
    energy: Any,
) -> Any:
    """The exact allocation model under LNS from the GA's best; its allocation joins the
    evaluated ones (``front`` is updated in place)."""
    from tqdm import tqdm

    from npusched.search.allocation import peak_total
    from npusched.search.allocation_lns import allocation_lns

    start = units.core_of(front.genomes[front.best()])
    bar = tqdm(desc="lns", unit="round", disable=None)

    def progress(rounds: int, best: int) -> None:
        bar.update(rounds - bar.n)
        bar.set_postfix(best_makespan=best)

    lns = allocation_lns(inst, units, start, limit, args.seed, args.lns_units, args.lns_step,
                         threads=args.threads, progress=progress)  # fmt: skip
    bar.close()
    fixed = inst.restricted(lns.core)
    front.add(units.genome(lns.core), lns.makespan, peak_total(fixed, lns.schedule), energy, units)
    return lns


def lns_result(fixed: Any, lns: Any, args: argparse.Namespace) -> Any:
    """The LNS's best schedule as a solver result (its bound: the free instance's)."""
    from npusched.solvers.result import Result, Status, TracePoint

    status = Status.OPTIMAL if lns.makespan == lns.bound else Status.FEASIBLE
    trace = [TracePoint(t, float(ms), float(lns.bound)) for t, ms in lns.history]
    return Result(status, "allocate-cpsat", "cpsat", float(lns.makespan), float(lns.bound),
                  solution=lns.schedule, trace=trace, threads=args.threads, seed=args.seed,
                  time_limit=args.time_limit,
                  stats={"rounds": lns.rounds, "improvements": lns.improvements},
                  message="bound = the free instance's lower_bound()")  # fmt: skip


def report(
    inst: Any, units: Any, front: Any, ref: Any, args: argparse.Namespace, lns: Any = None
) -> dict:
    """``front.json``: the run's settings, Stream's allocation's point and the front."""
    import numpy as np

    cores = inst.accelerator.cores
    layer = inst.layer
    first = np.unique(units.unit, return_index=True)[1]  # one CN of each unit

    def allocation(k: int) -> list[dict[str, int]]:
        core = units.core_of(front.genomes[k])
        return [{"unit": u, "layer": int(layer[i]) if layer is not None else 0,
                 "core": cores[int(core[i])].id}
                for u, i in enumerate(first.tolist())]  # fmt: skip

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
        "lns": None
        if lns is None
        else {
            "start_makespan": lns.start_makespan,
            "makespan": lns.makespan,
            "bound": lns.bound,
            "rounds": lns.rounds,
            "improvements": lns.improvements,
            "free_units": args.lns_units,
            "step_s": args.lns_step,
        },
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
    a.add_argument("--method", choices=["ga", "cpsat"], default="ga",
                   help="ga: NSGA-II over latency and peak memory (pymoo); cpsat: the GA for "
                   "half the time, then the exact allocation model (CP-SAT, one allocation per "
                   "unit) under LNS from the GA's best")  # fmt: skip
    a.add_argument(
        "--lns-units",
        type=positive_int,
        default=2,
        help="cpsat: units whose core is free in each neighbourhood (default 2)",
    )
    a.add_argument(
        "--lns-step",
        type=positive_float,
        default=5.0,
        help="cpsat: seconds per neighbourhood (default 5)",
    )
    a.add_argument("--threads", type=positive_int, default=1, help="cpsat: CP-SAT workers")
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
