"""``npusched orchestrate``: Klotski's orchestration of a network on a mesh accelerator —
Bayesian optimization of the μtensor shape, the exact stages on the best one, and the files.

Writes into ``--out-dir``: ``instance.json`` (the best partition), ``solution.json`` (DESIGN's
contract), ``report.json``, ``convergence.png``, ``gantt.png`` and ``heatmap.png``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from npusched.cli.args import output_dir, positive_float, positive_int


def run(args: argparse.Namespace) -> int:
    from npusched.arch import load_arch
    from npusched.io import write_instance, write_solution
    from npusched.partition.api import resolve_network
    from npusched.search.executor import open_executor
    from npusched.search.orchestrate import orchestrate

    net, arch = resolve_network(args.network), load_arch(args.arch)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open_executor(args.executor if args.q > 1 else "serial") as executor:
        orch = orchestrate(
            net, arch, args.budget, args.objective, args.inner, args.time_limit,
            args.final_time_limit, args.seed, args.threads, args.q, executor,
        )  # fmt: skip
    write_instance(orch.instance, out / "instance.json")
    write_solution(out / "solution.json", orch.instance, orch.result, "instance.json")
    from npusched.common.jsonio import write_json

    write_json(out / "report.json", report(orch, args))
    _figures(orch, out)
    best = orch.search.best
    print(
        f"{net.name} on {arch.name}: best s = {best.s} after {len(orch.search.evaluations)} "
        f"evaluations; {orch.cycles} cycles ({orch.result.method}), bound {orch.result.bound}; "
        f"{orch.runtime_s:.1f} s" + ("" if orch.search.complete else " (time limit: incomplete)")
    )
    return 0


def report(orch: Any, args: argparse.Namespace) -> dict[str, Any]:
    """``report.json``: the search and the final schedule (baselines: not built yet, null)."""
    res = orch.result
    return {
        "network": orch.network,
        "arch": orch.arch,
        "budget": args.budget,
        "objective": args.objective,
        "inner": args.inner,
        "seed": args.seed,
        "best_s": list(orch.search.best.s),
        "cycles": orch.cycles,
        "bound": res.bound,
        "gap": res.gap,
        "method": res.method,
        "stages": orch.stages,
        "baseline1_cycles": None,
        "baseline2_cycles": None,
        "hur": None,
        "runtime_s": round(orch.runtime_s, 3),
        "complete": orch.search.complete,
        "design_space": {
            "feasible": len(orch.search.space),
            "infeasible": orch.search.space.infeasible,
        },
        "evaluations": [
            {
                "s": list(e.s),
                "E": e.entropy,
                "makespan": e.makespan,
                "feasible": True,
                "uops": e.uops,
                "seconds": round(e.seconds, 3),
            }
            for e in orch.search.evaluations
        ],  # fmt: skip
    }


def _figures(orch: Any, out: Path) -> None:
    from npusched.cli.solve import heatmap
    from npusched.plot import gantt
    from npusched.plot.convergence import convergence

    title = f"{orch.network} on {orch.arch}"
    convergence(orch.search, out / "convergence.png", title)
    gantt(
        orch.instance, orch.schedule, out / "gantt.png", title=f"{title}, s = {orch.search.best.s}"
    )
    if orch.instance.accelerator.mesh is not None:
        heatmap(orch.instance, orch.schedule, out / "heatmap.png", False, title)


def add_parser(sub: Any) -> None:
    """Add the ``orchestrate`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    Klotski's BO-guided partition, scheduling and mapping."""
    o = sub.add_parser("orchestrate", help="BO over Klotski partitions, then the exact stages")
    o.add_argument("--network", required=True, help="zoo name, network .json or .onnx")
    o.add_argument("--arch", required=True, help="architecture name (klotski-3x3, ...) or .json")
    o.add_argument("--budget", type=positive_int, default=50, help="evaluations (default 50)")
    o.add_argument("--objective", choices=["entropy", "makespan"], default="entropy",
                   help="entropy: Klotski eq. 3 (alpha = mean μop latency); makespan")  # fmt: skip
    o.add_argument("--inner", choices=["list", "twostage", "joint"], default="list",
                   help="scheduler inside the loop (exact ones only on small cases)")  # fmt: skip
    o.add_argument("--time-limit", type=positive_float, help="seconds for the search")
    o.add_argument("--final-time-limit", type=positive_float, default=60.0,
                   help="seconds per exact stage on the best partition (default 60)")  # fmt: skip
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--threads", type=positive_int, default=1, help="solver threads")
    o.add_argument("--q", type=positive_int, default=1, help="points proposed per step (qUCB)")
    o.add_argument("--executor", default="local",
                   help="with --q > 1: local (process pool) or dask://HOST:PORT")  # fmt: skip
    o.add_argument("--out-dir", type=output_dir, required=True, help="folder for the files")
    o.set_defaults(func=run)
