"""Solution JSON (DESIGN.md, solution contract for a DAG schedule)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from npusched.io.atomic import write_json
from npusched.problem import SchedulingInstance
from npusched.solvers.result import Result
from npusched.verify import verify


def solution_to_dict(inst: SchedulingInstance, result: Result, instance_ref: str) -> dict[str, Any]:
    """The contract's fields, plus verification, gap and the anytime trace."""
    out: dict[str, Any] = {
        "kind": "dag_schedule",
        "instance": instance_ref,
        "method": result.method,
        "backend": result.backend,
        "status": result.status.value,
        "objective": result.objective,
        "bound": result.bound,
        "runtime_s": result.runtime,
        "makespan": None,
        "noc_cost": None,
        "ops": [],
        "transfers": [],
    }
    sched = result.solution
    if sched is not None:
        report = verify(inst, sched)
        end = sched.end(inst)
        cores = inst.accelerator.cores
        out["makespan"] = report.makespan
        out["ops"] = [
            {
                "id": uid,
                "core": cores[int(sched.core[i])].id,
                "start": int(sched.start[i]),
                "end": int(end[i]),
            }
            for i, uid in enumerate(inst.graph.ids)
        ]
        out["verified"] = report.ok
        out["violations"] = report.violations[:100]
    out["gap"] = result.gap
    out["threads"], out["seed"], out["time_limit_s"] = (
        result.threads,
        result.seed,
        result.time_limit,
    )
    out["trace"] = [[p.time, p.incumbent, p.bound] for p in result.trace]
    out["stats"] = result.stats
    if result.message:
        out["message"] = result.message
    return out


def write_solution(
    path: str | Path, inst: SchedulingInstance, result: Result, instance_ref: str
) -> None:
    write_json(path, solution_to_dict(inst, result, instance_ref))
