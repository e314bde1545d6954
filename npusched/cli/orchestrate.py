"""``npusched orchestrate``: Klotski's orchestration of a network on a mesh accelerator —
Bayesian optimization of the μtensor shape, the exact stages on the best one, and the files.

Writes into ``--out-dir``: ``instance.json`` (the best partition), ``solution.json`` (DESIGN's
contract), ``report.json``, ``convergence.png``, ``gantt.png`` and ``heatmap.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

from npusched.cli.args import (
    cost_model_of,
    dims_of,
    dims_option,
    executor_spec,
    machine_options,
    output_dir,
    positive_float,
    positive_int,
    share,
)

OUTPUT_RESERVE = 3.5
"""Seconds of ``--time-limit`` kept for writing the files and drawing the figures (3–4 s for a
5 000-μop partition) and for leaving; the run's limit counts from the start of the command,
imports included."""


def run(args: argparse.Namespace) -> int:
    """Run ``npusched orchestrate``: Klotski's orchestration of ``--network`` on ``--arch``
    (:func:`~npusched.search.orchestrate.orchestrate`: ``--budget`` evaluations of μtensor
    shapes, then the exact stages on the best) within ``--time-limit`` less
    :data:`OUTPUT_RESERVE`, the files of the module docstring written into ``--out-dir``, and
    one summary line printed (marked incomplete when the time limit stopped the search).

    Returns
    -------
    int
        The exit code: 0 (failures raise).

    Raises
    ------
    InputError
        An unknown zoo network or a network file that cannot be read.
    ValueError
        An unknown architecture, a network with no μtensor shape that fits the architecture,
        or a ``--s`` that is not a feasible point of the design space.
    """
    started = time.perf_counter()
    from npusched.arch import load_arch
    from npusched.common.executor import open_executor
    from npusched.common.jsonio import write_json
    from npusched.io import write_instance, write_solution
    from npusched.partition.api import resolve_network
    from npusched.search.orchestrate import orchestrate
    from npusched.search.space import MAX_UOPS

    net, arch = resolve_network(args.network, dims_of(args)), load_arch(args.arch)
    out = Path(args.out_dir)
    if hasattr(net, "gemm_networks"):  # a tensor program: BO over its tiles B, M, K, N
        return _program(net, arch, out, args)
    cap = MAX_UOPS if args.max_uops is None else (args.max_uops if args.max_uops > 0 else None)
    spec = args.executor if args.q > 1 or args.executor.startswith("dask://") else "serial"
    limit, baseline_deadline = args.time_limit, None
    if limit is not None:  # what is left of it once BoTorch is loaded, less the files' share
        limit = max(0.01, limit - (time.perf_counter() - started) - OUTPUT_RESERVE)
        baseline_deadline = time.perf_counter() + limit  # the baselines end the run's part
        limit = max(0.01, (1 - args.baseline_share) * limit)
    with open_executor(spec, args.workers) as executor:
        orch = orchestrate(
            net, arch, args.budget, args.objective, args.inner, limit,
            args.final_time_limit, args.seed, args.threads, args.q, executor,
            first=tuple(args.s or ()), max_uops=cap, machine=args.machine,
            cost=cost_model_of(args, arch), bounds=args.bounds,
            baseline_deadline=baseline_deadline,
        )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    write_instance(orch.instance, out / "instance.json")
    write_solution(out / "solution.json", orch.instance, orch.result, "instance.json")
    write_json(out / "report.json", report(orch, args))
    _figures(orch, out)
    best = orch.search.best
    print(
        f"{net.name} on {arch.name}: best s = {best.s} ({orch.instance.n} μops) after "
        f"{len(orch.search.evaluations)} evaluations; {orch.cycles} cycles "
        f"({orch.result.method}), bound {orch.result.bound:.0f}; {orch.runtime_s:.1f} s"
        + ("" if orch.complete else " (time limit: incomplete)")
    )
    return 0


def _program(prog: Any, arch: Any, out: Path, args: argparse.Namespace) -> int:
    """``orchestrate`` on a tensor program (:func:`~npusched.search.program.
    orchestrate_program`): the budget, seed, threads and final time limit apply; the files are
    the instance and the final solution."""
    from npusched.io import write_instance, write_solution
    from npusched.search.program import orchestrate_program

    orch = orchestrate_program(prog, arch, args.budget, seed=args.seed,
                               final_time_limit=args.final_time_limit, threads=args.threads,
                               progress=True)  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    write_instance(orch.instance, out / "instance.json")
    write_solution(out / "solution.json", orch.instance, orch.final, "instance.json")
    best, res = orch.search.best, orch.final
    print(f"{prog.name} on {arch.name}: best s = (B, M, K, N) {best.s} ({orch.instance.n} μops) "
          f"after {len(orch.search.evaluations)} evaluations; {res.objective:.0f} cycles "
          f"({res.method}, {res.status.value}), bound {res.bound:.0f}; {orch.seconds:.1f} s")
    return 0


def shape(text: str) -> tuple[int, int, int, int]:
    """``H,W,IC,OC``: four positive integers (the design space checks the rest)."""
    try:
        vals = tuple(int(v) for v in text.split(","))
    except ValueError:
        vals = ()
    if len(vals) != 4 or min(vals) < 1:
        raise argparse.ArgumentTypeError(
            f"expected H,W,IC,OC (four positive integers), got {text!r}"
        )
    return vals


def report(orch: Any, args: argparse.Namespace) -> dict[str, Any]:
    """``report.json``: the search, the final schedule, Klotski's two baselines and the HUR
    (utilisation relative to baseline 1; :mod:`npusched.search.baselines`)."""
    res, space = orch.result, orch.search.space
    return {
        "network": orch.network,
        "arch": orch.arch,
        "budget": args.budget,
        "objective": args.objective,
        "inner": args.inner,
        "seed": args.seed,
        "q": args.q,
        "machine": args.machine,
        "cost": orch.instance.source.get("cost"),
        "best_s": list(orch.search.best.s),
        "uops": orch.instance.n,
        "cycles": orch.cycles,
        "bound": res.bound,
        "bound_by": res.stats.get("bound_by"),
        "gap": res.gap,
        "method": res.method,
        "stages": orch.stages,
        **{f"{k}_cycles": orch.baselines[k].cycles if k in orch.baselines else None
           for k in ("baseline1", "baseline2", "baseline2_same_partition")},
        "hur": orch.hur,
        "baselines": {k: dataclasses.asdict(v) for k, v in orch.baselines.items()},
        "runtime_s": round(orch.runtime_s, 3),
        "complete": orch.complete,
        "bounds": orch.search.bounds is not None,
        "exhausted": orch.search.exhausted,
        "design_space": {
            "feasible": len(space),
            "infeasible_memory": space.infeasible,
            "over_max_uops": space.too_large,
            "max_uops": space.max_uops,
        },
        "evaluations": [
            {
                "s": list(e.s),
                "E": e.entropy,
                "makespan": e.makespan,
                "feasible": e.feasible,
                "uops": e.uops,
                "seconds": round(e.seconds, 3),
                **({"note": e.note} if e.note else {}),
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
    dims_option(o)
    o.add_argument("--arch", required=True, help="architecture name (klotski-3x3, ...) or .json")
    o.add_argument("--budget", type=positive_int, default=50, help="evaluations (default 50)")
    o.add_argument("--objective", choices=["entropy", "makespan"], default="entropy",
                   help="entropy: Klotski eq. 3 (alpha = mean μop latency); makespan")  # fmt: skip
    o.add_argument("--bounds", action=argparse.BooleanOptionalAction, default=True,
                   help="with --objective makespan and the analytic or compute cost model, give "
                   "BO and the polish each shape's lower bound (default: on)")  # fmt: skip
    o.add_argument("--inner", choices=["list", "atomic", "best", "twostage", "joint"],
                   default="list", help="scheduler inside the loop: list (default), atomic "
                   "(baseline 2's plan), best (the shorter of the two), or an exact one (small "
                   "cases only)")  # fmt: skip
    o.add_argument("--time-limit", type=positive_float,
                   help="seconds for the whole command, Klotski's baselines, files and figures "
                   "included; a run stopped by it reports its best so far, marked incomplete "
                   "(it always evaluates one shape: the design space and one evaluation are "
                   "its floor), and baselines not done by then are null in the report")  # fmt: skip
    o.add_argument("--baseline-share", type=share, default=0.25,
                   help="with --time-limit, the share of it kept for Klotski's baselines after "
                   "the run (default 0.25; baseline 2's annealing stops when it is "
                   "spent)")  # fmt: skip
    o.add_argument("--final-time-limit", type=positive_float, default=60.0,
                   help="seconds per exact stage on the best partition, and per evaluation with "
                   "--inner twostage|joint (default 60)")  # fmt: skip
    o.add_argument(
        "--s",
        type=shape,
        action="append",
        metavar="H,W,IC,OC",
        help="a shape to evaluate first (repeatable; must be in the design space)",
    )
    o.add_argument("--max-uops", type=int, help="leave out shapes with more μops "
                   "(default: npusched.search.space.MAX_UOPS; 0: no cap)")  # fmt: skip
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--threads", type=positive_int, default=1, help="solver threads")
    o.add_argument("--q", type=positive_int, default=1, help="points proposed per step (qUCB)")
    o.add_argument(
        "--executor",
        type=executor_spec,
        default="local",
        help="local (a process pool, used with --q > 1) or dask://HOST:PORT",
    )
    o.add_argument("--workers", type=positive_int, help="local pool size (default: all cores)")
    machine_options(o)
    o.add_argument("--out-dir", type=output_dir, required=True, help="folder for the files")
    o.set_defaults(func=run)
