"""MSPCD benchmark: list heuristics and the joint CP-SAT model against the known optimum.

    python -m npusched.bench.mspcd [--time-limit 60] [--threads 2] [FILE.td ...]

On each Davidović–Crainic graph (default: the six shared n = 50 graphs) it runs earliest-task-
first (``etf``), the priority list (HEFT-style, :func:`priority_list_schedule`) and ``joint``
(warm-started from the list schedule), verifies every schedule, and prints a Markdown table: the
makespans, their gap to the optimum (total work / p, the benchmark's construction), ``joint``'s
status and bound, and the time at which ``joint`` first reached the optimum (from its anytime
trace); then the mean gap of each heuristic.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from npusched.heuristics.scheduling.list_scheduling import priority_list_schedule
from npusched.io.mspcd import read_mspcd
from npusched.methods import solve
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.verify import check

SHARED = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "mspcd"


def _gap(value: float | None, opt: int) -> float | None:
    return None if value is None else (value - opt) / opt


def run_graph(inst: SchedulingInstance, time_limit: float, threads: int) -> dict[str, Any]:
    """One graph's row; every schedule is verified (an unverified one raises)."""
    opt = inst.reference.optimum
    if opt is None:
        raise ValueError(f"{inst.name}: no reference optimum (not an ogra file of its own p)")
    row: dict[str, Any] = {"graph": inst.name, "n": inst.n, "edges": inst.graph.num_edges}
    row["p"], row["network"] = inst.m, inst.accelerator.topology
    etf = solve(inst, "etf")
    t0 = time.perf_counter()
    prio = priority_list_schedule(inst)
    prio_s = time.perf_counter() - t0
    joint = solve(inst, "joint", time_limit=time_limit, threads=threads)
    for name, sched in (("etf", etf.solution), ("priority", prio), ("joint", joint.solution)):
        rep = check(inst, sched)
        if not rep.ok:
            raise AssertionError(f"{inst.name} {name}: {rep.violations[:3]}")
        row[name] = rep.makespan
        row[f"{name}_gap"] = _gap(rep.makespan, opt)
    row["etf_s"], row["priority_s"] = etf.runtime_s, prio_s
    row["joint_status"], row["joint_bound"] = joint.status.value, joint.bound
    row["joint_s"] = joint.runtime_s
    row["joint_first_opt_s"] = next(
        (p.time for p in joint.trace if p.incumbent is not None and p.incumbent <= opt), None
    )
    row["optimum"] = opt
    return row


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def table(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`run_graph` as a Markdown table (makespans, ``joint``'s status, bound
    and seconds to the optimum), then each method's mean gap and how often ``joint`` reached the
    optimum."""
    cols = ["graph", "p", "network", "optimum", "etf", "priority", "joint", "joint_status",
            "joint_bound", "joint_first_opt_s", "joint_s"]  # fmt: skip
    lines = ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in cols) + " |" for r in rows]
    for name in ("etf", "priority", "joint"):
        gaps = [r[f"{name}_gap"] for r in rows]
        lines.append(f"mean gap to the optimum, {name}: {100 * sum(gaps) / len(gaps):.2f}%")
    reached = sum(r["joint_first_opt_s"] is not None for r in rows)
    lines.append(f"joint reached the optimum on {reached} of {len(rows)} graphs")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.mspcd``: :func:`run_graph` on each ``.td`` file given
    (default: the six shared n = 50 graphs) with ``--time-limit`` and ``--threads`` for
    ``joint``, one progress line per graph, then :func:`table`.

    Parameters
    ----------
    argv
        The arguments of the module docstring's command line (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0; 2 (argparse's error) when no file is given and none is shared. A
        graph without a reference optimum raises ``ValueError``, a schedule that fails
        verification ``AssertionError``.
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.mspcd", description=__doc__)
    p.add_argument("files", nargs="*", help=f".td files (default: {SHARED}/ogra50_*.td)")
    p.add_argument("--time-limit", type=float, default=60.0, help="joint's seconds per graph")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args(argv)
    files = [Path(f) for f in args.files] or sorted(SHARED.glob("ogra50_*.td"))
    if not files:
        p.error(f"no .td files given and none in {SHARED}")
    rows = []
    for f in files:
        rows.append(run_graph(read_mspcd(f), args.time_limit, args.threads))
        print(f"{f.name}: etf {rows[-1]['etf']}, priority {rows[-1]['priority']}, "
              f"joint {rows[-1]['joint']} ({rows[-1]['joint_status']})", flush=True)  # fmt: skip
    print()
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
