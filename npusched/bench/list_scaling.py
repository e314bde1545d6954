"""Growth of list scheduling with NoC delays: the priority list against earliest-task-first.

Run ``python -m npusched.bench.list_scaling``. ResNet-50 from the zoo is cut by Klotski's scheme
into μop graphs of growing size (klotski-4x4 with s = 14,14,256,256 up to 7,7,32,32; klotski-5x5
with s = 2,2,128,32 and 1,1,128,32 unaligned, the 834 272-μop instance of issue 14), built in
memory. On each the priority list (:func:`priority_list_schedule`: HEFT's upward rank, earliest
finish, near-linear) is timed and its schedule verified; earliest-task-first
(:func:`etf_schedule`, quadratic) runs up to ``--etf-max-uops`` μops. The table shows each
time per (n + E)·m element and, between successive sizes, the growth of the time against the
growth of n: for near-linear cost the two ratios are about equal. Every figure is a single
measurement in this process on a shared machine. Klotski's baseline 2, the atomic dataflow
without rounds (:func:`atomic_schedule`, event-driven, near-linear), is timed and verified on
every case too.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

from npusched.bench.doc import growth
from npusched.heuristics.scheduling.atomic import atomic_schedule
from npusched.heuristics.scheduling.list_scheduling import etf_schedule, priority_list_schedule
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.verify import verify


@dataclass(frozen=True)
class Case:
    """One partition: architecture, Klotski μtensor ``s``, alignment, and the μop count it had
    when this bench was written (only used to skip cases above ``--max-uops`` unbuilt)."""

    arch: str
    s: tuple[int, int, int, int]
    align: bool
    uops: int

    @property
    def name(self) -> str:
        """The case's label in the table: ``klotski-4x4 s=14,14,64,64``, with ``no-align``
        appended when unaligned."""
        tail = "" if self.align else " no-align"
        return f"{self.arch} s={','.join(map(str, self.s))}{tail}"


CASES = (
    Case("klotski-4x4", (14, 14, 256, 256), True, 674),
    Case("klotski-4x4", (14, 14, 128, 128), True, 1576),
    Case("klotski-4x4", (14, 14, 64, 64), True, 4791),
    Case("klotski-4x4", (7, 7, 64, 64), True, 13281),
    Case("klotski-4x4", (7, 7, 32, 32), True, 41821),
    Case("klotski-5x5", (2, 2, 128, 32), False, 216800),
    Case("klotski-5x5", (1, 1, 128, 32), False, 834272),
)


def build(case: Case) -> SchedulingInstance:
    """ResNet-50 cut by ``case`` on the compute-only machine (as ``npusched partition --network
    resnet50 --machine compute-only``)."""
    from npusched.arch import load_arch
    from npusched.partition.api import partition_network, resolve_network

    net = resolve_network("resnet50")
    inst = partition_network(net, load_arch(case.arch), "klotski", s=case.s, align=case.align,
                             machine="compute-only")  # fmt: skip
    assert isinstance(inst, SchedulingInstance)
    return inst


def measure(case: Case, etf_max: int) -> dict[str, Any]:
    """Build, schedule (priority list, and ETF when ``n ≤ etf_max``), verify; one row."""
    inst = build(case)
    n, e, m = inst.n, inst.graph.num_edges, inst.m
    t0 = time.perf_counter()
    sched = priority_list_schedule(inst)
    secs = time.perf_counter() - t0
    t0 = time.perf_counter()
    rep = verify(inst, sched)
    row: dict[str, Any] = {
        "case": case.name,
        "n": n,
        "E": e,
        "m": m,
        "seconds": secs,
        "ns_per_elem": secs / ((n + e) * m) * 1e9,
        "verify_s": time.perf_counter() - t0,
        "verify": "ok" if rep.ok else f"FAILED ({len(rep.violations)})",
        "makespan": rep.makespan,
        "lower_bound": inst.lower_bound(),
        "etf_s": None,
        "etf_makespan": None,
    }
    t0 = time.perf_counter()
    atomic = atomic_schedule(inst)
    row["atomic_s"] = time.perf_counter() - t0
    arep = verify(inst, atomic)
    row["atomic_makespan"] = arep.makespan if arep.ok else f"FAILED ({len(arep.violations)})"
    if n <= etf_max:
        t0 = time.perf_counter()
        etf = etf_schedule(inst)
        row["etf_s"] = time.perf_counter() - t0
        erep = verify(inst, etf)
        row["etf_makespan"] = erep.makespan if erep.ok else f"FAILED ({len(erep.violations)})"
    return row


def table(rows: list[dict[str, Any]]) -> list[str]:
    """The rows as a Markdown table, with growth ratios between successive rows."""
    lines = [
        "| case | n | E | m | priority list (s) | ns per (n+E)·m | time ratio | n ratio | "
        "verify (s) | verify | makespan | lower bound | ETF (s) | ETF makespan | list / ETF | "
        "atomic (s) | atomic makespan |",
        "| --- " * 17 + "|",
    ]
    prev: dict[str, Any] | None = None
    for r in rows:
        t_ratio, n_ratio = growth(prev, r, "n")
        etf_s = "–" if r["etf_s"] is None else f"{r['etf_s']:.2f}"
        etf_ms = "–" if r["etf_makespan"] is None else str(r["etf_makespan"])
        vs = "–"
        if isinstance(r["etf_makespan"], int) and r["etf_makespan"] > 0:
            vs = f"{r['makespan'] / r['etf_makespan']:.4f}"
        lines.append(
            f"| {r['case']} | {r['n']} | {r['E']} | {r['m']} | {r['seconds']:.3f} | "
            f"{r['ns_per_elem']:.1f} | {t_ratio} | {n_ratio} | {r['verify_s']:.3f} | "
            f"{r['verify']} | {r['makespan']} | {r['lower_bound']} | {etf_s} | {etf_ms} | {vs} | "
            f"{r['atomic_s']:.3f} | {r['atomic_makespan']} |"
        )
        prev = r
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.list_scaling``: :func:`measure` every case of
    :data:`CASES` of at most ``--max-uops`` μops (ETF up to ``--etf-max-uops``) and print
    :func:`table`.

    Parameters
    ----------
    argv
        ``[--max-uops N] [--etf-max-uops N]`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 when every priority-list and atomic schedule verified, else 1.
    """
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--max-uops",
        type=int,
        default=10**7,
        help="skip the cases with more μops than this (default: run all)",
    )
    p.add_argument(
        "--etf-max-uops",
        type=int,
        default=5000,
        help="run earliest-task-first up to this many μops (default 5000, about 5 s)",
    )
    args = p.parse_args(argv)
    rows = [measure(c, args.etf_max_uops) for c in CASES if c.uops <= args.max_uops]
    print("\n".join(table(rows)))
    ok = all(r["verify"] == "ok" and isinstance(r["atomic_makespan"], int) for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
