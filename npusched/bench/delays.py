"""Delay-aware list heuristics on graphs with a known optimum, and their growth with n.

    python -m npusched.bench.delays gaps [--sizes 50,100,200,500] [--procs 2,4,6,8,9,12,16]
                                         [--densities 10,50,90] [--seeds 1] [--restarts 8]
    python -m npusched.bench.delays shared [--restarts 8]
    python -m npusched.bench.delays scaling [--sizes 1000,3000,10000,30000,100000] [--mesh 4x4]
                                            [--width 12] [--etf-max 31000]

``gaps``: on MSPCD graphs with a known optimum (:func:`npusched.bench.generate.known_optimum`,
the graphs of ``npusched generate known-optimum``; every combination of size, processor count
and density, ``--seeds`` graphs each) it runs earliest-task-first (``etf``), the
priority list (HEFT-like, :func:`priority_list_schedule`) and dynamic level scheduling
(:func:`dls_schedule`: one run appending only, as Sih and Lee, ``dls-append``; one run with
insertion, ``dls-1``; with insertion and ``--restarts`` perturbed restarts, ``dls``, the
method's default), verifies every schedule and prints the mean
gap to the optimum (makespan / optimum − 1) per size, per processor count and per density, and
the mean time per graph. ``shared``: the same on the six Davidović–Crainic files of
``../shared/benchmarks/mspcd``, one row each. ``scaling``: random layered DAGs with mesh delays
(:func:`npusched.bench.generate.layered_dag`) of growing size; the CPU time of one DLS run, of
the priority list and (up to ``--etf-max`` μops) of earliest-task-first, and between successive
sizes the growth of DLS's time against the growth of n (for near-linear cost the two ratios are
about equal). Single measurements on a shared machine.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from npusched.bench.generate import known_optimum, layered_dag
from npusched.heuristics.scheduling.dls import dls_schedule
from npusched.heuristics.scheduling.list_scheduling import etf_schedule, priority_list_schedule
from npusched.io.mspcd import read_mspcd
from npusched.problem import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule
from npusched.verify import check

SHARED = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "mspcd"


Heuristic = Callable[[SchedulingInstance], Schedule]


def heuristics(restarts: int, etf_max: int) -> dict[str, tuple[Heuristic, int]]:
    """Name → (heuristic, the largest n it runs on)."""
    big = 1 << 62
    return {
        "etf": (etf_schedule, etf_max),
        "priority": (priority_list_schedule, big),
        "dls-append": (lambda i: dls_schedule(i, insertion=False, restarts=0), big),
        "dls-1": (lambda i: dls_schedule(i, restarts=0), big),
        "dls": (lambda i: dls_schedule(i, restarts=restarts), big),
    }


def run_one(inst: SchedulingInstance, methods: dict[str, tuple[Heuristic, int]]) -> dict[str, Any]:
    """Gap to the optimum and seconds of each method on ``inst`` (every schedule verified)."""
    opt = inst.reference.optimum
    assert opt is not None
    row: dict[str, Any] = {"graph": inst.name, "n": inst.n, "p": inst.m,
                           "edges": inst.graph.num_edges, "optimum": opt}  # fmt: skip
    for name, (fn, limit) in methods.items():
        if inst.n > limit:
            continue
        t0 = time.perf_counter()
        sched = fn(inst)
        row[f"{name}_s"] = time.perf_counter() - t0
        rep = check(inst, sched)
        if not rep.ok:
            raise AssertionError(f"{inst.name} {name}: {rep.violations[:3]}")
        ms = sched.makespan(inst)
        row[name] = ms
        row[f"{name}_gap"] = ms / opt - 1
    return row


def _mean(values: list[float]) -> str:
    return f"{100 * sum(values) / len(values):.1f}" if values else "–"


def gap_table(rows: list[dict[str, Any]], names: list[str], by: str) -> str:
    """Mean gap (%) of each method per value of ``by`` (``n``, ``p``, ``density``) and over all
    rows; a method missing on some rows (ETF above its size limit) is averaged where it ran,
    with the count."""
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r[by]].append(r)
    lines = [f"| {by} | graphs | " + " | ".join(f"{m} gap %" for m in names) + " |",
             "|" + " --- |" * (len(names) + 2)]  # fmt: skip
    for key in [*sorted(groups), "all"]:
        rs = rows if key == "all" else groups[key]
        cells = []
        for m in names:
            got = [r[f"{m}_gap"] for r in rs if f"{m}_gap" in r]
            cells.append(_mean(got) + ("" if len(got) == len(rs) else f" ({len(got)})"))
        lines.append(f"| {key} | {len(rs)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def time_table(rows: list[dict[str, Any]], names: list[str]) -> str:
    """Mean seconds per graph of each method, per size."""
    sizes = sorted({r["n"] for r in rows})
    lines = ["| n | mean edges | " + " | ".join(f"{m} s" for m in names) + " |",
             "|" + " --- |" * (len(names) + 2)]  # fmt: skip
    for n in sizes:
        rs = [r for r in rows if r["n"] == n]
        cells = []
        for m in names:
            got = [r[f"{m}_s"] for r in rs if f"{m}_s" in r]
            cells.append(f"{sum(got) / len(got):.3f}" if got else "–")
        edges = sum(r["edges"] for r in rs) / len(rs)
        lines.append(f"| {n} | {edges:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def gaps_main(args: argparse.Namespace) -> int:
    methods = heuristics(args.restarts, args.etf_max)
    names = list(methods)
    rows = []
    for n in _ints(args.sizes):
        for p in _ints(args.procs):
            for d in _ints(args.densities):
                for seed in range(args.seeds):
                    inst, _ = known_optimum(n, d, p, seed=1000 * n + 10 * p + d + seed)
                    row = run_one(inst, methods)
                    row["density"] = d
                    rows.append(row)
        print(f"n = {n}: {len(rows)} graphs so far", flush=True)
    print()
    for by in ("n", "p", "density"):
        print(gap_table(rows, names, by))
        print()
    print(time_table(rows, names))
    return 0


def shared_main(args: argparse.Namespace) -> int:
    files = sorted(SHARED.glob("ogra*.td"))
    if not files:
        print(f"no .td files in {SHARED}")
        return 1
    methods = heuristics(args.restarts, args.etf_max)
    names = list(methods)
    rows = [run_one(read_mspcd(f), methods) for f in files]
    print("| graph | p | optimum | " + " | ".join(names) + " |")
    print("|" + " --- |" * (len(names) + 3))
    for r in rows:
        print(f"| {r['graph']} | {r['p']} | {r['optimum']} | "
              + " | ".join(str(r[m]) for m in names) + " |")  # fmt: skip
    print("| mean gap % | | | " + " | ".join(_mean([r[f"{m}_gap"] for r in rows]) for m in names)
          + " |")  # fmt: skip
    return 0


def scaling_main(args: argparse.Namespace) -> int:
    """Times are CPU seconds of this process (``time.process_time``: steadier than the wall
    clock when other jobs share the machine); the wall clock of DLS is shown beside."""
    rows, cols = (int(x) for x in args.mesh.lower().split("x"))
    print(
        "| n | E | m | DLS CPU (s) | DLS wall (s) | µs per μop | time ratio | n ratio "
        "| priority list CPU (s) | ETF CPU (s) | DLS makespan | list makespan | DLS / list |"
    )
    print("|" + " --- |" * 13)
    prev: tuple[float, int] | None = None
    for n_target in _ints(args.sizes):
        width = args.width
        inst = layered_dag(max(1, n_target * 2 // (width + 1)), width, (rows, cols), seed=1)
        n, e, m = inst.n, inst.graph.num_edges, inst.m
        t0, c0 = time.perf_counter(), time.process_time()
        sched = dls_schedule(inst, restarts=0)  # one run: the default adds 8 up to 10 000 μops
        secs, wall = time.process_time() - c0, time.perf_counter() - t0
        c0 = time.process_time()
        plist = priority_list_schedule(inst)
        list_secs = time.process_time() - c0
        etf = "–"
        if n <= args.etf_max:
            c0 = time.process_time()
            etf_schedule(inst)
            etf = f"{time.process_time() - c0:.3f}"
        rep, rep_list = check(inst, sched), check(inst, plist)
        if not (rep.ok and rep_list.ok):
            raise AssertionError(f"n = {n}: {(rep.violations + rep_list.violations)[:3]}")
        ratio = "–" if prev is None else f"{secs / prev[0]:.2f}"
        n_ratio = "–" if prev is None else f"{n / prev[1]:.2f}"
        ms, ms_list = sched.makespan(inst), plist.makespan(inst)
        print(f"| {n} | {e} | {m} | {secs:.3f} | {wall:.3f} | {1e6 * secs / n:.1f} | {ratio} | "
              f"{n_ratio} | {list_secs:.3f} | {etf} | {ms} | {ms_list} | {ms / ms_list:.4f} |",
              flush=True)  # fmt: skip
        prev = (secs, n)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m npusched.bench.delays", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gaps", help="mean gap on generated graphs with a known optimum")
    g.add_argument("--sizes", default="50,100,200,500")
    g.add_argument("--procs", default="2,4,6,8,9,12,16")
    g.add_argument("--densities", default="10,50,90", help="edge densities in percent")
    g.add_argument("--seeds", type=int, default=1, help="graphs per combination")
    s = sub.add_parser("shared", help="the six shared MSPCD files")
    for q in (g, s):
        q.add_argument("--restarts", type=int, default=8, help="restarts of the dls column")
        q.add_argument("--etf-max", type=int, default=500, help="ETF runs up to this many tasks")
    c = sub.add_parser("scaling", help="DLS time against n on random layered DAGs")
    c.add_argument("--sizes", default="1000,3000,10000,30000,100000")
    c.add_argument("--mesh", default="4x4")
    c.add_argument("--width", type=int, default=12, help="most μops per DAG level")
    c.add_argument("--etf-max", type=int, default=31_000, help="ETF runs up to this many μops")
    args = p.parse_args(argv)
    return {"gaps": gaps_main, "shared": shared_main, "scaling": scaling_main}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
