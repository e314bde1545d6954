"""``npusched verify``: check a solution JSON against its instance."""

from __future__ import annotations

import argparse
from typing import Any

from npusched.cli.args import FREE, NO_MEMORY, flag, positive_int


def run(args: argparse.Namespace) -> int:
    """Run ``npusched verify``: check the solution JSON against the instance
    (:func:`~npusched.verify.check`, with the makespan or NoC cost the file claims, and each
    operation's recorded end) and print that it is feasible with its value, or the violations
    (the first 50).

    Returns
    -------
    int
        The exit code: 0 feasible, 1 some violation.

    Raises
    ------
    InputError
        The instance or the solution cannot be read, or the solution is not one of this
        instance.
    """
    from npusched.cli.args import load
    from npusched.io import read_solution
    from npusched.io.solution_json import end_violations
    from npusched.problem.placement import Placement
    from npusched.verify import check

    inst = load(args.instance, args.cores, args.free_allocation, args.no_memory)
    solution, data = read_solution(args.solution, inst)
    kind = data.get("kind", "dag_schedule")
    claimed = data.get("makespan") if kind == "dag_schedule" else data.get("noc_cost")
    rep = check(inst, solution, claimed)
    if not isinstance(solution, Placement):
        rep.violations += end_violations(inst, solution, data)  # type: ignore[arg-type]
    if rep.ok:
        value = ", ".join(
            f"{label} {v}"
            for label, v in (("makespan", rep.makespan), ("NoC cost", rep.noc_cost))
            if v is not None
        )
        print(f"{args.solution}: feasible for {inst.name}, {value}")
        return 0
    print(f"{args.solution}: {len(rep.violations)} violation(s) for {inst.name}")
    for v in rep.violations[:50]:
        print(f"  {v}")
    return 1


def add_parser(sub: Any) -> None:
    """Add the ``verify`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    DESIGN's solution contract."""
    v = sub.add_parser("verify", help="check a solution JSON against its instance")
    v.add_argument("instance", help="instance .json (or .stg with --cores)")
    v.add_argument("solution", help="solution .json (DESIGN's contract)")
    v.add_argument("--cores", type=positive_int, help="number of cores for an .stg file")
    flag(v, "--free-allocation", FREE)
    flag(v, "--no-memory", NO_MEMORY)
    v.set_defaults(func=run)
