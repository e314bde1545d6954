"""Klotski's Tables I–III: baseline 1, baseline 2 and the orchestration on 3×3, 4×4 and 5×5 meshes.

    python -m npusched.bench.klotski [--networks vgg16,...] [--meshes 3x3,4x4,5x5] [--budget 50]
        [--final-time-limit 60] [--threads 2] [--workers 1] [--seed 0]
        [--machine routed|compute-only]
        [--cost analytic|zigzag] [--objective makespan|entropy] [--inner list|best]
        [--no-bounds] [--json rows.json] [--doc FILE.md]

For each network and mesh it runs :func:`~npusched.search.orchestrate.orchestrate` on the
machine model (BO over ``s`` with the memory-aware list inside, then the final stages on the best
``s``: the atomic dataflow's plan as a warm start, the two stages, ``joint``, ``lns``) and
Klotski's two baselines (:mod:`npusched.search.baselines`: baseline 1 layer by layer on the
zig-zag path, baseline 2 the atomic dataflow on its own partition annealed with the same budget),
verifies every schedule, and prints the paper's columns — cycles, ratio to baseline 1, runtime,
HUR — with the paper's figures beside ours, our runtime over the paper's, Klotski over baseline 2
and the gap of Klotski's schedule to the instance's lower bound. With ``--doc`` the tables
replace the part of that Markdown file between ``<!-- tables -->`` and ``<!-- /tables -->`` (the
prose around them stays). With ``--workers N`` above 1, BO proposes ``N`` shapes per step (qUCB)
and a process pool of ``N`` evaluates them, as the polish does its neighbours; the pool's start
counts in Klotski's runtime, and the baselines run in the bench's own process.

The paper's figures (:data:`PAPER`) are Tables I–III of Klotski (seed ``002_…``, §IV-C): cycles
and overall runtime in seconds (Gurobi included; baseline 1 has none).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from npusched.arch import load_arch
from npusched.bench.doc import publish
from npusched.common.executor import open_executor
from npusched.partition.api import machine_cost_model, resolve_network
from npusched.search.orchestrate import orchestrate
from npusched.verify import check

NETWORKS = ("vgg16", "vgg19", "resnet50", "resnet152", "inceptionv3")
MESHES = ("3x3", "4x4", "5x5")

# (baseline 1 cycles, baseline 2 cycles, baseline 2 runtime s, baseline 2 HUR,
#  Klotski cycles, Klotski runtime s, Klotski HUR): Klotski Tables I (3×3), II (4×4), III (5×5)
PAPER: dict[tuple[str, str], tuple[float, ...]] = {
    ("vgg16", "3x3"): (1.2283e8, 5.5633e7, 477.6634, 2.5617, 4.0659e7, 878.8832, 3.0602),
    ("vgg19", "3x3"): (1.5523e8, 7.4207e7, 576.3081, 2.5229, 5.5381e7, 887.5790, 2.9857),
    ("resnet50", "3x3"): (7.7422e7, 5.7060e7, 583.6488, 0.9762, 4.8174e7, 1779.0426, 1.3050),
    ("resnet152", "3x3"): (1.8984e8, 1.7102e8, 867.0853, 1.2523, 1.5947e8, 2800.9154, 1.3605),
    ("inceptionv3", "3x3"): (2.5122e7, 1.6345e7, 470.3763, 2.5103, 1.3348e7, 1397.9008, 3.2996),
    ("vgg16", "4x4"): (1.2283e8, 4.5869e7, 317.5903, 2.1196, 3.0670e7, 881.6310, 2.4547),
    ("vgg19", "4x4"): (1.5523e8, 5.8049e7, 388.8627, 1.9895, 3.9934e7, 1130.6444, 2.2964),
    ("resnet50", "4x4"): (7.7422e7, 5.3365e7, 541.8091, 2.8954, 4.6260e7, 1019.2198, 3.1953),
    ("resnet152", "4x4"): (1.8984e8, 1.6578e8, 793.7304, 1.2264, 1.5754e8, 2327.4657, 1.3438),
    ("inceptionv3", "4x4"): (2.5188e7, 1.5183e7, 419.3479, 2.2822, 1.0781e7, 1432.0112, 2.8579),
    ("vgg16", "5x5"): (1.2283e8, 4.2621e7, 466.9748, 2.7157, 2.4240e7, 1640.0338, 3.4766),
    ("vgg19", "5x5"): (1.5523e8, 5.0412e7, 569.8779, 2.8346, 3.9046e7, 2755.4077, 3.1257),
    ("resnet50", "5x5"): (7.7422e7, 5.0868e7, 628.1705, 1.8228, 4.4029e7, 1672.0000, 1.9678),
    ("resnet152", "5x5"): (1.8984e8, 1.6460e8, 858.0045, 1.2575, 1.5240e8, 4505.7838, 1.3352),
    ("inceptionv3", "5x5"): (2.5180e7, 1.2733e7, 514.9384, 2.8642, 8.3088e6, 2787.1383, 3.3710),
}


RESERVE = 2.0
"""Seconds kept back from each row's limit for what follows its deadline: the final stage's
solver process hands back its answer and the schedule is re-timed and verified (about 1–2 s on
5 000 μops)."""


def run_row(net_name: str, mesh: str, budget: int, final_limit: float, threads: int,
            seed: int, share: float | None = 0.1, workers: int = 1,
            **options: Any) -> dict[str, Any]:  # fmt: skip
    """One network on one mesh: Klotski's orchestration and both baselines, all verified. With
    ``share`` the whole orchestration runs under ``share`` × the paper's runtime for that row,
    less :data:`RESERVE` (the search stops early and the final stages get what is left:
    ``complete`` says whether all of it ran); ``workers`` evaluate BO's batches of as many
    shapes (module docstring); ``options`` go to
    :func:`~npusched.search.orchestrate.orchestrate` (``machine``, ``cost``, ``objective``,
    ``inner``)."""
    net, arch = resolve_network(net_name), load_arch(f"klotski-{mesh}")
    paper = PAPER.get((net_name, mesh))
    limit = None if share is None or paper is None else share * paper[5] - RESERVE
    t0 = time.perf_counter()
    with open_executor("local" if workers > 1 else "serial", workers) as executor:
        orch = orchestrate(net, arch, budget, time_limit=limit, final_time_limit=final_limit,
                           seed=seed, threads=threads, progress=False, q=workers,
                           executor=executor, **options)  # fmt: skip
    if not check(orch.instance, orch.schedule).ok:
        raise AssertionError(f"{net_name} on {mesh}: Klotski's schedule is not verified")
    b1, b2 = orch.baselines["baseline1"], orch.baselines["baseline2"]
    model = machine_cost_model(options.get("machine", "routed"), options.get("cost", "analytic"),
                               arch)  # fmt: skip
    bounds = orch.search.bounds
    if bounds is None:
        bounds = orch.search.space.lower_bounds(net, arch, model)
    space_bound = int(bounds.min())
    same = orch.baselines["baseline2_same_partition"]
    return {
        "network": net_name,
        "mesh": mesh,
        "best_s": list(orch.search.best.s),
        "uops": orch.instance.n,
        "klotski": orch.cycles,
        "klotski_method": orch.result.method,
        "bound": orch.result.bound,
        "klotski_s": orch.runtime_s,
        "klotski_hur": orch.hur,
        "time_limit": limit,
        "complete": orch.complete,
        "exhausted": orch.search.exhausted,
        "evaluations": len(orch.search.evaluations),
        "workers": workers,
        "stages": orch.stages,
        "baseline1": b1.cycles,
        "baseline1_s": list(b1.s),
        "baseline1_uops": b1.uops,
        "baseline2": b2.cycles,
        "baseline2_s": b2.seconds,
        "baseline2_hur": b2.utilisation / b1.utilisation,
        "baseline2_shape": list(b2.s),
        "baseline2_same_partition": same.cycles,
        "gap": orch.cycles / orch.result.bound - 1 if orch.result.bound else None,
        "space_bound": space_bound,
        "wall_s": time.perf_counter() - t0,
    }


def _e(v: float) -> str:
    return f"{v:.4E}"


def table(rows: list[dict[str, Any]], mesh: str) -> str:
    """One of Tables I–III: ours and the paper's, side by side, and our runtime over the paper's
    (the goal: at most 0.1)."""
    head = ("| workload | method | cycles | ratio | runtime (s) | HUR | paper cycles | paper ratio "
            "| paper runtime (s) | paper HUR | runtime / paper's |")  # fmt: skip
    lines = [f"## {mesh.replace('x', '×')} mesh", "", head, "|" + " --- |" * 11]
    for r in (r for r in rows if r["mesh"] == mesh):
        p = PAPER.get((r["network"], mesh))
        b1 = r["baseline1"]
        ours = [
            ("baseline 1", b1, None, 1.0),
            ("baseline 2", r["baseline2"], r["baseline2_s"], r["baseline2_hur"]),
            ("Klotski (npusched)", r["klotski"], r["klotski_s"], r["klotski_hur"]),
        ]
        theirs = [(None, None, None)] * 3 if p is None else [
            (p[0], None, 1.0), (p[1], p[2], p[3]), (p[4], p[5], p[6])
        ]  # fmt: skip
        for (name, cyc, sec, hur), (pc, ps, ph) in zip(ours, theirs, strict=True):
            cells = [
                r["network"] if name == "baseline 1" else "",
                name,
                _e(cyc),
                f"{cyc / b1:.4f}",
                "–" if sec is None else f"{sec:.1f}",
                f"{hur:.4f}",
                "–" if pc is None else _e(pc),
                "–" if pc is None or p is None else f"{pc / p[0]:.4f}",
                "–" if ps is None else f"{ps:.1f}",
                "–" if ph is None else f"{ph:.4f}",
                "–" if ps is None or sec is None else f"{sec / ps:.3f}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tables(rows: list[dict[str, Any]]) -> str:
    """The Markdown that ``--doc`` writes: :func:`table` for each mesh in ``rows`` (in the
    order the rows first name them), then :func:`goals`."""
    meshes = list(dict.fromkeys(r["mesh"] for r in rows))
    return "\n\n".join([*(table(rows, m) for m in meshes), goals(rows)])


def goals(rows: list[dict[str, Any]]) -> str:
    """Klotski against baseline 2 (on its own partition, and on Klotski's: the ablation), the gap
    to the instance's bound, the headroom (the most any shape and schedule of the design space
    could gain over baseline 2: ``1 - space bound / baseline 2``, with the space bound of
    :meth:`~npusched.search.space.DesignSpace.lower_bounds`) and the runtime share, per row and
    summed up."""
    lines = ["## Klotski against baseline 2, the bound and the runtime", "",
             "| workload | mesh | Klotski / baseline 2 | Klotski / baseline 2 on Klotski's "
             "partition | gap to the bound | headroom over baseline 2 | runtime / paper's | "
             "evaluations | complete |",
             "|" + " --- |" * 9]  # fmt: skip
    for r in rows:
        p = PAPER.get((r["network"], r["mesh"]))
        share = "–" if p is None else f"{r['klotski_s'] / p[5]:.3f}"
        gap = "–" if r.get("gap") is None else f"{r['gap']:.1%}"
        bound = r.get("space_bound")
        room = "–" if bound is None else f"{1 - bound / r['baseline2']:.1%}"
        lines.append(
            f"| {r['network']} | {r['mesh']} | {r['klotski'] / r['baseline2']:.4f} | "
            f"{r['klotski'] / r['baseline2_same_partition']:.4f} | {gap} | {room} | {share} | "
            f"{r['evaluations']} | {r['complete']} |"
        )
    ratios = [r["klotski"] / r["baseline2"] for r in rows]
    worse = sum(q > 1 for q in ratios)
    lines += ["", f"Klotski is never worse than baseline 2 on {len(rows) - worse} of {len(rows)} "
              f"rows and better by {1 - sum(ratios) / len(ratios):.2%} on average (the "
              "paper: 9.55 %)."]  # fmt: skip
    rooms = [1 - r["space_bound"] / r["baseline2"] for r in rows if r.get("space_bound")]
    if rooms:
        lines[-1] += (f" No shape of the design space with any schedule can be better than "
                      f"baseline 2 by more than {sum(rooms) / len(rooms):.2%} on average (the "
                      f"mean headroom over {len(rooms)} rows).")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.klotski``: :func:`run_row` for every mesh of ``--meshes``
    and network of ``--networks`` (one progress line each, the rows rewritten to ``--json``
    after each), then print :func:`tables` and, with ``--doc``, write them into that file's
    ``tables`` block.

    Parameters
    ----------
    argv
        The arguments of the module docstring's command line (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 (a Klotski schedule that fails verification raises
        ``AssertionError``).
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.klotski", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--networks", default=",".join(NETWORKS))
    p.add_argument("--meshes", default=",".join(MESHES))
    p.add_argument("--budget", type=int, default=50)
    p.add_argument("--final-time-limit", type=float, default=60.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes evaluating BO's batches (q = workers; default 1)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--share", type=float, default=0.1,
                   help="time limit per row as a share of the paper's runtime (default 0.1, the "
                   "goal; 0: no limit)")  # fmt: skip
    p.add_argument("--machine", choices=["routed", "compute-only"], default="routed")
    p.add_argument("--cost", choices=["analytic", "zigzag"], default="analytic")
    p.add_argument(
        "--objective",
        choices=["makespan", "entropy"],
        default="makespan",
        help="what the search returns to BO (§III-A: the makespan, or eq. 3)",
    )
    p.add_argument("--inner", choices=["list", "atomic", "best"], default="list")
    p.add_argument("--bounds", action=argparse.BooleanOptionalAction, default=True,
                   help="give BO and the polish each shape's lower bound (the makespan "
                   "objective, a cost model other than zigzag; default: on)")  # fmt: skip
    p.add_argument("--json", type=Path, help="also write the rows here")
    p.add_argument("--doc", type=Path, help="Markdown file whose tables block is replaced")
    args = p.parse_args(argv)
    if args.workers < 1:
        p.error(f"--workers must be at least 1, got {args.workers}")
    rows = []
    for mesh in args.meshes.split(","):
        for name in args.networks.split(","):
            rows.append(run_row(name, mesh, args.budget, args.final_time_limit, args.threads,
                                args.seed, args.share or None, args.workers, machine=args.machine,
                                cost=args.cost, objective=args.objective,
                                inner=args.inner, bounds=args.bounds))  # fmt: skip
            r = rows[-1]
            print(f"{name} {mesh}: Klotski {r['klotski']} ({r['klotski_s']:.0f} s), baseline 1 "
                  f"{r['baseline1']}, baseline 2 {r['baseline2']}", flush=True)  # fmt: skip
            if args.json:
                args.json.write_text(json.dumps(rows, indent=1))
    publish(tables(rows), args.doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
