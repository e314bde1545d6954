"""Delay-aware list heuristics on graphs with a known optimum, and their growth with n.

::

    python -m npusched.bench.delays gaps [--sizes 50,100,200,500] [--procs 2,4,6,8,9,12,16]
                                         [--densities 10,50,90] [--seeds 1] [--restarts 8]
                                         [--oracles]
    python -m npusched.bench.delays shared [--restarts 8]
    python -m npusched.bench.delays scaling [--sizes 1000,3000,10000,30000,100000] [--mesh 4x4]
                                            [--width 12] [--etf-max 31000]
    python -m npusched.bench.delays exact [--sizes 50 --procs 2,4,6,8,9,12,16 --densities 20,50,80
                                           | --shared] [--methods lns[,joint]] [--time-limit S]
                                          [--threads 2] [--seed 0]

``gaps``: on MSPCD graphs with a known optimum (:func:`npusched.bench.generate.known_optimum`,
the graphs of ``npusched generate known-optimum``; every combination of size, processor count
and density, ``--seeds`` graphs each) it runs earliest-task-first (``etf``), the
priority list (HEFT-like, :func:`priority_list_schedule`) and dynamic level scheduling
(:func:`dls_schedule`: one run appending only, as Sih and Lee, ``dls-append``; one run with
insertion, ``dls-1``; with insertion and ``--restarts`` perturbed restarts, ``dls``, the
method's default), verifies every schedule and prints the mean
gap to the optimum (makespan / optimum − 1) per size, per processor count and per density, and
the mean time per graph. ``--oracles`` adds two diagnostics that are not heuristics: the
list given half of the hidden optimal schedule (:func:`oracles`). ``shared``: the same on the
six Davidović–Crainic files of ``../shared/benchmarks/mspcd``, one row each. ``scaling``:
random layered DAGs with mesh delays (:func:`npusched.bench.generate.layered_dag`) of growing
size; the CPU time of one DLS run, of
the priority list and (up to ``--etf-max`` μops) of earliest-task-first, and between successive
sizes the growth of DLS's time against the growth of n (for near-linear cost the two ratios are
about equal). ``exact``: the exact search (``lns``, and ``joint`` for comparison) through
:func:`npusched.methods.solve` on the graphs of ``gaps`` (or, with ``--shared``, the six shared
files), each with a time limit per graph (default 60 s up to n = 250, 120 s above: the goals of
issue 24, item 5), ``--threads`` solver threads and a fixed seed; every schedule verified. It prints
per graph the makespan, the time limit and the seconds to the best schedule (the last improvement
of the anytime trace, timed from the start of the search), then per size, processor count and
density the mean gap, the share of graphs at the optimum, the mean seconds of the whole call and to
the best, and the goals against what was measured. Progress goes to stderr. Single measurements
on a shared machine.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from npusched.bench.generate import check_known_optimum, known_optimum, layered_dag
from npusched.heuristics.scheduling.dls import dls_schedule
from npusched.heuristics.scheduling.list_scheduling import etf_schedule, priority_list_schedule
from npusched.heuristics.scheduling.reassign import Decoder
from npusched.io.mspcd import read_mspcd
from npusched.methods import solve
from npusched.problem import SchedulingInstance
from npusched.problem.scheduling.schedule import Schedule
from npusched.solvers.result import Result
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


def oracles(hidden: Schedule) -> dict[str, tuple[Heuristic, int]]:
    """Two lists that are given half of the hidden optimal schedule of
    :func:`~npusched.bench.generate.known_optimum`, to tell which half a list heuristic loses:
    ``order*`` takes its start order and puts each μop, in that order, on the core where it
    finishes earliest (:func:`priority_list_schedule` with the priority ``−start``); ``cores*``
    takes its cores and lets the list decoder of ``reassign`` order each core (ready μops by
    data arrival, then static level: :class:`~npusched.heuristics.scheduling.reassign.Decoder`).
    """
    big = 1 << 62
    first = -hidden.start.astype(float)

    def order(inst: SchedulingInstance) -> Schedule:
        return priority_list_schedule(inst, lambda _: first)

    def cores(inst: SchedulingInstance) -> Schedule:
        start, _, _ = Decoder(inst).decode(hidden.core.tolist())
        return Schedule(np.asarray(start, dtype=np.int64), hidden.core.copy())

    return {"order*": (order, big), "cores*": (cores, big)}


def _base_row(inst: SchedulingInstance) -> dict[str, Any]:
    assert inst.reference.optimum is not None
    return {"graph": inst.name, "n": inst.n, "p": inst.m, "edges": inst.graph.num_edges,
            "optimum": inst.reference.optimum}  # fmt: skip


def _record(row: dict[str, Any], name: str, inst: SchedulingInstance, sched: Schedule) -> int:
    """Verify ``sched`` (a violation raises) and put its makespan and gap in ``row``."""
    rep = check(inst, sched)
    if not rep.ok:
        raise AssertionError(f"{inst.name} {name}: {rep.violations[:3]}")
    ms = sched.makespan(inst)
    row[name] = ms
    row[f"{name}_gap"] = ms / row["optimum"] - 1
    return ms


def run_one(inst: SchedulingInstance, methods: dict[str, tuple[Heuristic, int]]) -> dict[str, Any]:
    """Gap to the optimum and seconds of each method on ``inst`` (every schedule verified)."""
    row = _base_row(inst)
    for name, (fn, limit) in methods.items():
        if inst.n > limit:
            continue
        t0 = time.perf_counter()
        sched = fn(inst)
        row[f"{name}_s"] = time.perf_counter() - t0
        _record(row, name, inst, sched)
    return row


def _to_best(res: Result, makespan: int) -> float:
    """Seconds from the call's start to the first trace point at ``makespan`` (``lns``'s trace
    holds the steps before its rounds: the list, ``dfbb``, ``reassign``)."""
    hits = [t.time for t in res.trace if t.incumbent is not None and t.incumbent <= makespan]
    return min(hits) if hits else res.runtime_s


def run_exact(
    inst: SchedulingInstance, names: list[str], time_limit: float, threads: int, seed: int
) -> dict[str, Any]:
    """Gap, optimum reached, seconds and seconds to the best of each exact method on ``inst``
    through :func:`npusched.methods.solve` (every schedule verified); a method that returns no
    schedule leaves only its seconds and status. When the search overran its limit and
    :func:`solve` returned the warm start in its place, the status says ``warm start`` and
    there is no time to the best."""
    row = _base_row(inst) | {"limit": time_limit}
    for name in names:
        res = solve(inst, name, time_limit=time_limit, threads=threads, seed=seed)
        row[f"{name}_s"] = res.runtime_s
        fallback = res.stats.get("fallback") == "warm_start"  # the search's answer came too late
        row[f"{name}_status"] = res.status.value + (", warm start" if fallback else "")
        if isinstance(res.solution, Schedule):
            ms = _record(row, name, inst, res.solution)
            row[f"{name}_opt"] = float(ms <= row["optimum"])
            if not fallback:
                row[f"{name}_best_s"] = _to_best(res, ms)
    return row


def _mean(values: list[float]) -> str:
    return f"{100 * sum(values) / len(values):.1f}" if values else "–"


def _secs(values: list[float]) -> str:
    return f"{sum(values) / len(values):.1f}" if values else "–"


Column = tuple[str, str, Callable[[list[float]], str]]
"""A table column: header, the rows' key, and the summary of the rows' values."""


def group_table(rows: list[dict[str, Any]], by: str, columns: list[Column]) -> str:
    """One line per value of ``by`` (``n``, ``p``, ``density``, ``graph``) and one over all rows;
    a value missing on some rows (ETF above its size limit, a method without a schedule) is
    summarised where present, with the count."""
    groups: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r[by]].append(r)
    lines = [f"| {by} | graphs | " + " | ".join(c[0] for c in columns) + " |",
             "|" + " --- |" * (len(columns) + 2)]  # fmt: skip
    for key in [*sorted(groups), "all"]:
        rs = rows if key == "all" else groups[key]
        cells = []
        for _, col, summary in columns:
            got = [r[col] for r in rs if col in r]
            cells.append(summary(got) + ("" if len(got) == len(rs) else f" ({len(got)})"))
        lines.append(f"| {key} | {len(rs)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def gap_table(rows: list[dict[str, Any]], names: list[str], by: str) -> str:
    """Mean gap (%) of each method per value of ``by`` and over all rows."""
    return group_table(rows, by, [(f"{m} gap %", f"{m}_gap", _mean) for m in names])


def exact_columns(names: list[str]) -> list[Column]:
    """Per method: mean gap (%), share of graphs at the optimum (%), mean seconds of the call and
    mean seconds to the best schedule."""
    return [col for m in names for col in (
        (f"{m} gap %", f"{m}_gap", _mean), (f"{m} at optimum %", f"{m}_opt", _mean),
        (f"{m} s", f"{m}_s", _secs), (f"{m} to best s", f"{m}_best_s", _secs))]  # fmt: skip


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
    """An argument's comma-separated positive integers (argparse's type: a bad one is a
    one-line usage error, exit 2)."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"not a list of non-negative integers: {text!r}")
    return values


def _count(text: str) -> int:
    """A positive integer argument (argparse's type)."""
    value = _ints(text)
    if len(value) != 1 or value[0] < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return value[0]


def _ints_one(text: str) -> int:
    """A non-negative integer argument (argparse's type)."""
    value = _ints(text)
    if len(value) != 1:
        raise argparse.ArgumentTypeError(f"not one integer: {text!r}")
    return value[0]


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse's type)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def _check_graphs(args: argparse.Namespace) -> str | None:
    """The first combination of ``--sizes``, ``--procs`` and ``--densities`` that
    :func:`~npusched.bench.generate.known_optimum` refuses, as one line, or ``None``."""
    for n, p, d in itertools.product(args.sizes, args.procs, args.densities):
        try:
            check_known_optimum(n, d, p)
        except ValueError as e:
            return str(e)
    return None


def generated(args: argparse.Namespace) -> list[tuple[SchedulingInstance, int]]:
    """The known-optimum graphs of every (size, processor count, density), ``--seeds`` each."""
    return [(inst, d) for inst, d, _ in generated_with_optimum(args)]


def generated_with_optimum(
    args: argparse.Namespace,
) -> list[tuple[SchedulingInstance, int, Schedule]]:
    """:func:`generated` with each graph's hidden optimal schedule."""
    graphs = []
    for n, p, d in itertools.product(args.sizes, args.procs, args.densities):
        for seed in range(args.seeds):
            inst, hidden = known_optimum(n, d, p, seed=1000 * n + 10 * p + d + seed)
            graphs.append((inst, d, hidden))
    return graphs


def shared() -> list[tuple[SchedulingInstance, int]]:
    """The shared MSPCD files ``ogra{n}_{density}_{p}.td`` with their density."""
    graphs = []
    for f in sorted(SHARED.glob("ogra*.td")):
        m = re.fullmatch(r"ogra\d+_(\d+)_\d+", f.stem)
        graphs.append((read_mspcd(f), int(m.group(1)) if m else -1))
    return graphs


def _progress(graphs: list[Any], desc: str) -> Any:
    return tqdm(graphs, desc=desc, unit="graph", file=sys.stderr, leave=False)


def gaps_main(args: argparse.Namespace) -> int:
    """``gaps`` (module docstring): every heuristic of :func:`heuristics` on the graphs of
    :func:`generated`; prints the mean gap per size, processor count and density, then the mean
    seconds per size. Returns 0; a schedule that fails verification raises
    ``AssertionError``."""
    methods = heuristics(args.restarts, args.etf_max)
    names = list(methods) + (["order*", "cores*"] if args.oracles else [])
    rows = []
    for inst, d, hidden in _progress(generated_with_optimum(args), "gaps"):
        given = methods | oracles(hidden) if args.oracles else methods
        rows.append(run_one(inst, given) | {"density": d})
    for by in ("n", "p", "density"):
        print(gap_table(rows, names, by))
        print()
    print(time_table(rows, names))
    return 0


def shared_main(args: argparse.Namespace) -> int:
    """``shared`` (module docstring): every heuristic on the shared MSPCD files of :func:`shared`;
    prints one row per file and the mean gaps. Returns 0, or 1 when ``../shared/benchmarks/mspcd``
    holds no ``.td`` file; a schedule that fails verification raises ``AssertionError``."""
    graphs = shared()
    if not graphs:
        print(f"no .td files in {SHARED}")
        return 1
    methods = heuristics(args.restarts, args.etf_max)
    names = list(methods)
    rows = [run_one(inst, methods) for inst, _ in graphs]
    print("| graph | p | optimum | " + " | ".join(names) + " |")
    print("|" + " --- |" * (len(names) + 3))
    for r in rows:
        print(f"| {r['graph']} | {r['p']} | {r['optimum']} | "
              + " | ".join(str(r[m]) for m in names) + " |")  # fmt: skip
    print("| mean gap % | | | " + " | ".join(_mean([r[f"{m}_gap"] for r in rows]) for m in names)
          + " |")  # fmt: skip
    return 0


GOALS = [  # issue 24, item 5: sizes, what is measured, target, seconds per graph
    ((50, 50), "opt", 0.95, 60.0),
    ((100, 250), "gap", 0.02, 60.0),
    ((300, 500), "gap", 0.05, 120.0),
]


def goal_table(rows: list[dict[str, Any]], names: list[str]) -> str:
    """Each goal with graphs in its size range, per method: the target against what was
    measured, the largest time limit given, and met or not. A graph without a schedule counts
    as missing the optimum and fails a gap goal; a goal is not judged on graphs given more time
    than it allows."""
    lines = ["| goal | graphs | method | target | measured | limit s | verdict |",
             "|" + " --- |" * 7]  # fmt: skip
    for (lo, hi), kind, target, secs in GOALS:
        rs = [r for r in rows if lo <= r["n"] <= hi]
        if not rs:
            continue
        sizes = f"n = {lo}" if lo == hi else f"n = {lo}–{hi}"
        limit = max(r["limit"] for r in rs)
        for m in names:
            missing = sum(f"{m}_gap" not in r for r in rs)
            if kind == "opt":
                value = sum(r.get(f"{m}_opt", 0.0) for r in rs) / len(rs)
                met = value >= target
                want = f"optimum on ≥ {100 * target:.0f} %"
                got = f"{100 * value:.1f} % ({round(value * len(rs))} of {len(rs)})"
            else:
                gaps = [r[f"{m}_gap"] for r in rs if f"{m}_gap" in r]
                value = sum(gaps) / len(gaps) if gaps else float("inf")
                met = value <= target and not missing
                want = f"mean gap ≤ {100 * target:.0f} %"
                got = f"{100 * value:.1f} %" + (
                    f", {missing} without a schedule" if missing else ""
                )
            verdict = "met" if met else "not met"
            if limit > secs:
                verdict = f"not judged (over {secs:.0f} s)"
            lines.append(f"| {sizes} | {len(rs)} | {m} | {want} within {secs:.0f} s | {got} | "
                         f"{limit:.0f} | {verdict} |")  # fmt: skip
    return "\n".join(lines) if len(lines) > 2 else "No goal covers these sizes."


def exact_main(args: argparse.Namespace) -> int:
    """``exact`` (module docstring): :func:`run_exact` on the graphs of :func:`generated` or,
    with ``--shared``, of :func:`shared`; prints one row per graph, the summaries per size,
    processor count and density, and :func:`goal_table`. Returns 0, or 1 when ``--shared`` finds
    no ``.td`` file; a schedule that fails verification raises ``AssertionError``."""
    graphs = shared() if args.shared else generated(args)
    if not graphs:
        print(f"no .td files in {SHARED}")
        return 1
    names = [m for m in args.methods.split(",") if m]
    rows = []
    bar = _progress(graphs, "exact")
    for inst, d in bar:
        limit = args.time_limit or (60.0 if inst.n <= 250 else 120.0)
        rows.append(run_exact(inst, names, limit, args.threads, args.seed) | {"density": d})
        gaps = [rows[-1].get(f"{m}_gap") for m in names]
        bar.set_postfix(
            graph=inst.name, gap=" ".join(_mean([g]) if g is not None else "–" for g in gaps)
        )
    head = " | ".join(f"{m} | {m} status | {m} to best s" for m in names)
    print("| graph | n | p | density | optimum | limit s | " + head + " |")
    print("|" + " --- |" * (6 + 3 * len(names)))
    for r in rows:
        best = {m: _secs([r[f"{m}_best_s"]]) if f"{m}_best_s" in r else "–" for m in names}
        cells = " | ".join(f"{r.get(m, '–')} | {r[f'{m}_status']} | {best[m]}" for m in names)
        print(f"| {r['graph']} | {r['n']} | {r['p']} | {r['density']} | {r['optimum']} | "
              f"{r['limit']:.0f} | {cells} |")  # fmt: skip
    print()
    for by in ("n", "p", "density"):
        print(group_table(rows, by, exact_columns(names)))
        print()
    print(goal_table(rows, names))
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
    for n_target in args.sizes:
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
    """Run ``python -m npusched.bench.delays``: parse ``argv`` (one of the module docstring's
    command lines, without the program name; default ``sys.argv[1:]``) and run its sub-command,
    :func:`gaps_main`, :func:`shared_main`, :func:`scaling_main` or :func:`exact_main`.

    Returns
    -------
    int
        The sub-command's exit code: 0, or 1 when ``shared`` (or ``exact --shared``) finds no
        shared file; argparse exits 2, with one line, on a malformed number or a graph argument
        :func:`~npusched.bench.generate.check_known_optimum` refuses.
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.delays", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gaps", help="mean gap on generated graphs with a known optimum")
    x = sub.add_parser("exact", help="lns (and joint) against the goals of issue 24, item 5")
    for q, sizes, densities in ((g, "50,100,200,500", "10,50,90"), (x, "50", "20,50,80")):
        q.add_argument("--sizes", type=_ints, default=sizes)
        q.add_argument("--procs", type=_ints, default="2,4,6,8,9,12,16")
        q.add_argument("--densities", type=_ints, default=densities, help="edge densities in %%")
        q.add_argument("--seeds", type=_count, default=1, help="graphs per combination")
    s = sub.add_parser("shared", help="the six shared MSPCD files")
    for q in (g, s):
        q.add_argument("--restarts", type=_ints_one, default=8, help="restarts of the dls column")
        q.add_argument("--etf-max", type=_ints_one, default=500, help="ETF up to this many tasks")
    g.add_argument("--oracles", action="store_true",
                   help="add lists given the hidden optimum's order or cores")  # fmt: skip
    x.add_argument("--shared", action="store_true", help="the six shared MSPCD files instead")
    x.add_argument("--methods", default="lns", help="comma separated: lns, joint")
    x.add_argument(
        "--time-limit",
        type=_seconds,
        default=None,
        help="seconds per graph and method (default 60 up to n = 250, 120 above)",
    )
    x.add_argument("--threads", type=_count, default=2)
    x.add_argument("--seed", type=int, default=0, help="the solver's random seed")
    c = sub.add_parser("scaling", help="DLS time against n on random layered DAGs")
    c.add_argument("--sizes", type=_ints, default="1000,3000,10000,30000,100000")
    c.add_argument("--mesh", default="4x4")
    c.add_argument("--width", type=_count, default=12, help="most μops per DAG level")
    c.add_argument("--etf-max", type=_ints_one, default=31_000, help="ETF up to this many μops")
    args = p.parse_args(argv)
    graphs = args.cmd in ("gaps", "exact") and not getattr(args, "shared", False)
    if graphs and (why := _check_graphs(args)):
        p.error(why)  # one line, exit 2
    mains = {"gaps": gaps_main, "shared": shared_main, "scaling": scaling_main, "exact": exact_main}
    return mains[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
