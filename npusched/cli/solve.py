"""``npusched solve``: run one method on one instance, verify, and write the solution and plots."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from npusched.cli.args import (
    FREE,
    NO_MEMORY,
    beta,
    flag,
    given,
    output_file,
    positive_float,
    positive_int,
)


def run(args: argparse.Namespace) -> int:
    """Run ``npusched solve``: read the instance, run ``--method`` on it
    (:func:`~npusched.methods.registry.solve` with the options the user set), verify its
    solution and print one line (result, makespan or NoC cost, verification, the reference
    optimum and Stream's makespan where known), then write ``--out`` and the plots asked for
    (``--gantt``, ``--trace``, ``--memory-trace``, ``--heatmap``, ``--anytime``).

    Returns
    -------
    int
        The exit code of :func:`exit_code`: 0 verified, 1 failed verification,
        :data:`NO_SOLUTION` (3) no solution or a solver error.

    Raises
    ------
    InputError
        The instance cannot be read.
    ValueError
        An unknown method or backend, or an option the method does not take.
    """
    from npusched.cli.args import load
    from npusched.io import write_solution
    from npusched.methods import solve
    from npusched.problem.placement import PlacementInstance
    from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule
    from npusched.verify import check

    inst = load(args.instance, args.cores, args.free_allocation, args.no_memory)
    res = solve(
        inst,
        args.method,
        args.backend,
        time_limit=args.time_limit,
        threads=args.threads,
        seed=args.seed,
        log=args.log,
        **given(
            args, relaxed=False, precedence="eq18", weighted=False, beta=None, priority="blevel"
        ),
    )
    line = f"{inst.name}: {res.summary()}"
    ok = None
    if res.solution is not None:
        rep = check(inst, res.solution)
        ok = rep.ok
        value = f"noc_cost={rep.noc_cost}" if rep.makespan is None else f"makespan={rep.makespan}"
        if rep.makespan is not None and rep.noc_cost is not None:
            value += f" noc_cost={rep.noc_cost}"
        line += f" {value} verify=" + (
            "ok" if rep.ok else f"FAILED ({len(rep.violations)} violations)"
        )
    if inst.reference.optimum is not None:
        line += f" reference={inst.reference.optimum}"
    stream = getattr(inst, "source", {}).get("stream_makespan")
    if stream and res.objective is not None:
        line += f" stream={stream} ratio={res.objective / stream:.3f}"
    print(line)
    if res.message:
        print(f"note: {res.message}")
    memory_note(inst, res.solution)
    if args.out:
        write_solution(args.out, inst, res, str(args.instance))
    if args.gantt and not isinstance(inst, PlacementInstance) and res.solution is not None:
        from npusched.plot import gantt

        title = f"{inst.name} — {res.method}/{res.backend}"
        gantt(inst, res.solution, args.gantt, title=title)  # type: ignore[arg-type]
    if args.trace and not isinstance(inst, PlacementInstance) and res.solution is not None:
        from npusched.io.trace import write_trace

        write_trace(args.trace, inst, res.solution)  # type: ignore[arg-type]
    routed = isinstance(inst, RoutedInstance) and isinstance(res.solution, RoutedSchedule)
    if args.memory_trace and routed:
        from npusched.plot import memory_trace

        memory_trace(inst, res.solution, args.memory_trace, f"{inst.name} — {res.method}")  # type: ignore[arg-type]
    if args.heatmap and res.solution is not None:
        heatmap(inst, res.solution, args.heatmap, args.weighted, f"{inst.name} — {res.method}")
    if args.anytime:
        from npusched.plot import anytime

        anytime([res], args.anytime, title=inst.name, reference=inst.reference.optimum)
    return exit_code(res, ok)


NO_SOLUTION = 3
"""Exit code of ``solve`` when the method returned no solution of its own (infeasible, out of
time with nothing in hand, or a solver error); 1 is a solution that fails verification."""


def exit_code(res: Any, ok: bool | None) -> int:
    """0: a verified solution; 1: a solution that fails verification; 3: none, or a solver that
    ended in error (the reason is printed on stderr; the warm start it was given, when there is
    one, is still the result, written and marked ``"fallback": "warm_start"``)."""
    from npusched.solvers.result import Status

    why = res.message or "the solver gave no reason"
    if res.status is Status.ERROR:
        print(f"npusched: {res.method} ended in error: {why}", file=sys.stderr)
        return NO_SOLUTION
    if res.solution is None:
        print(f"npusched: {res.method} returned no solution ({res.status.value}): {why}",
              file=sys.stderr)  # fmt: skip
        return NO_SOLUTION
    return 0 if ok else 1


def memory_note(inst, solution) -> None:
    """Routed instances: the peak data each core holds, against its memory."""
    from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule

    if not isinstance(inst, RoutedInstance) or not isinstance(solution, RoutedSchedule):
        return
    from npusched.verify.scheduling.routed import memory_peaks

    parts = []
    cores, peaks = inst.accelerator.cores, memory_peaks(inst, solution)
    for core, peak, size in zip(cores, peaks, inst.memory_sizes(), strict=True):
        over = " OVER" if size and peak > size else ""
        parts.append(f"{core.id}: {peak}" + (f"/{size}{over}" if size else ""))
    limit = "memory enforced" if inst.capacity is not None else "no memory limit modelled"
    print(f"peak {inst.data_unit} resident per core ({limit}): " + ", ".join(parts))
    if solution.moves is not None and solution.moves.size:
        from npusched.problem.scheduling.routed import EVICT, FORWARD

        kind = solution.moves.kind
        backs, sent = int((kind == EVICT).sum()), int((kind == FORWARD).sum())
        print(f"evictions: {backs} write-backs to DRAM, {kind.size - backs - sent} re-fetches"
              + (f"; {sent} DRAM tensors forwarded between cores" if sent else ""))


def heatmap(inst, solution, path, weighted: bool, title: str) -> None:
    """Link traffic of a placement, or of a schedule on a mesh (edges: count or bytes)."""
    import numpy as np

    from npusched.plot import link_traffic, mesh_heatmap
    from npusched.problem.placement import Placement
    from npusched.problem.scheduling.noc import Mesh

    if isinstance(solution, Placement):
        mesh, cells = inst.mesh, inst.cell_array[solution.loc]
        t, u = np.nonzero(inst.flow)
        weight = inst.flow[t, u]
    else:
        acc = inst.accelerator
        if acc.cells() is None:
            raise ValueError("--heatmap needs cores on a mesh")
        mesh, cells = Mesh(*acc.mesh), np.asarray(acc.cells())[solution.core]
        t, u = inst.graph.src, inst.graph.dst
        weight = inst.graph.bytes if weighted else np.ones(t.size)
    labels: dict[int, str] = {}
    for i, cell in enumerate(cells.tolist()):
        labels[cell] = f"{labels[cell]}," if cell in labels else ""
        labels[cell] += str(i)
    load = link_traffic(mesh, cells[t], cells[u], weight)
    mesh_heatmap(mesh, load, labels if len(cells) <= 3 * mesh.size else None, path, title)


def add_parser(sub: Any) -> None:
    """Add the ``solve`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    every method of :data:`npusched.methods.METHODS`."""
    from npusched.methods import METHODS

    s = sub.add_parser("solve", help="schedule one instance")
    s.add_argument("instance", help="instance .json, QAPLIB .dat, or .stg with --cores")
    s.add_argument("--cores", type=positive_int, help="number of cores for an .stg file")
    flag(s, "--free-allocation", FREE)
    flag(s, "--no-memory", NO_MEMORY)
    s.add_argument(
        "--method",
        choices=sorted(METHODS),
        help="default: cpsat for a scheduling instance, joint for a routed (Stream) instance, "
        "qap for a placement instance",
    )
    s.add_argument(
        "--backend",
        choices=["cpsat", "highs", "cbc", "pulp-highs"],
        help="solver for the timeindexed (default highs) and qap (default cpsat) models",
    )
    s.add_argument("--time-limit", type=positive_float, default=10.0, help="seconds (default 10)")
    s.add_argument("--threads", type=positive_int, default=1)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument(
        "--relaxed",
        action="store_true",
        help="time-indexed: Klotski eq. 19 (issue count only; may overload cores)",
    )
    s.add_argument(
        "--precedence",
        default="eq18",
        choices=["eq18", "disaggregated"],
        help="time-indexed precedence rows: Klotski eq. 18 (default) or disaggregated",
    )
    s.add_argument(
        "--priority",
        default="blevel",
        choices=["blevel", "asap", "alap", "latency", "memory", "critical"],
        help="list-scheduling priority (also the warm start); with memories Stream's latency "
        "or memory, or critical (the longest path to the end first); the default tries all "
        "three and keeps the shortest (warm starts: latency)",
    )
    s.add_argument(
        "--weighted",
        action="store_true",
        help="twostage, joint: NoC cost in bytes x hops instead of hops (eq. 14)",
    )
    s.add_argument(
        "--beta",
        type=beta,
        help="joint: minimise makespan + BETA x NoC cost (default: lexicographic)",
    )
    s.add_argument("--out", type=output_file, help="write the solution JSON here")
    s.add_argument("--gantt", type=output_file, help="write a Gantt chart PNG here")
    s.add_argument("--anytime", type=output_file, help="write the anytime curve PNG here")
    s.add_argument(
        "--trace",
        type=output_file,
        help="write the schedule as a Chrome/Perfetto trace JSON here (cores, links and the "
        "DRAM port as tracks; open in ui.perfetto.dev)",
    )
    s.add_argument(
        "--memory-trace",
        type=output_file,
        help="routed (Stream) instances: write each core's resident data over time as a PNG",
    )
    s.add_argument(
        "--heatmap", type=output_file, help="write the mesh link-traffic heat map PNG here"
    )
    s.add_argument("--log", action="store_true", help="show the solver's log")
    s.set_defaults(func=run)
