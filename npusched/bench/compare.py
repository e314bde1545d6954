"""Run (instance × method) jobs through a ``concurrent.futures`` executor and tabulate the rows."""

from __future__ import annotations

import csv
import os
import sys
from collections.abc import Iterable
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from npusched.common.executor import local_pool
from npusched.common.jsonio import replacing

COLUMNS = [
    "instance",
    "cores",
    "method",
    "backend",
    "status",
    "objective",
    "bound",
    "makespan",
    "noc_cost",
    "gap_bound",
    "reference",
    "gap_reference",
    "verified",
    "time_s",
]


@dataclass(frozen=True)
class Job:
    """One solve: where the instance is, how to read it, and how to solve it."""

    path: str
    method: str
    backend: str | None = None
    cores: int | None = None
    time_limit: float = 10.0
    threads: int = 1
    seed: int = 0
    relaxed: bool = False
    precedence: str = "eq18"
    solution_dir: str | None = None


def run_job(job: Job) -> dict[str, Any]:
    """Solve one job and return its table row; every schedule is verified here."""
    from npusched.io import load_instance, write_solution
    from npusched.methods import solve
    from npusched.problem.placement import PlacementInstance
    from npusched.verify import check

    inst = load_instance(job.path, job.cores)
    options: dict[str, Any] = {"relaxed": True} if job.relaxed else {}
    if job.precedence != "eq18":
        options["precedence"] = job.precedence
    res = solve(
        inst,
        job.method,
        job.backend,
        time_limit=job.time_limit,
        threads=job.threads,
        seed=job.seed,
        **options,
    )
    ref = inst.reference
    verified = makespan = noc_cost = None
    if res.solution is not None:
        report = check(inst, res.solution)
        verified, makespan, noc_cost = report.ok, report.makespan, report.noc_cost
    refval = (
        ref.optimum
        if ref.optimum is not None
        else (f"[{ref.lower_bound},{ref.upper_bound}]" if ref.is_open else None)
    )
    gap_ref = None
    if ref.optimum is not None and res.objective is not None and ref.optimum > 0:
        gap_ref = (res.objective - ref.optimum) / ref.optimum
    stream = getattr(inst, "source", {}).get("stream_makespan")
    if stream and refval is None:  # a Stream export: compare with Stream's own schedule
        refval = f"Stream {stream}"
        if res.objective is not None:
            gap_ref = (res.objective - stream) / stream
    if job.solution_dir is not None and res.solution is not None:
        out = Path(job.solution_dir) / f"{inst.name}.{job.method}.{res.backend}.json"
        write_solution(out, inst, res, job.path)
    return {
        "instance": inst.name,
        "cores": inst.cell_array.size if isinstance(inst, PlacementInstance) else inst.m,
        "method": job.method if job.precedence == "eq18" else f"{job.method}-{job.precedence}",
        "backend": res.backend,
        "status": res.status.value,
        "objective": res.objective,
        "bound": res.bound,
        "makespan": makespan,
        "noc_cost": noc_cost,
        "gap_bound": res.gap,
        "reference": refval,
        "gap_reference": gap_ref,
        "verified": verified,
        "time_s": round(res.runtime_s, 3),
    }


def run_row(job: Job) -> dict[str, Any]:
    """``run_job``, with an exception turned into the job's error row where it happens (in the
    worker): only a plain dict comes back, whatever the error (Dask or a process pool need not
    pickle it)."""
    try:
        return run_job(job)
    except Exception as err:  # one bad job must not sink the sweep
        return error_row(job, err)


def error_row(job: Job, err: BaseException) -> dict[str, Any]:
    """The row of a job that failed: status ``error`` and ``message`` (type and text)."""
    return {
        "instance": job.path,
        "cores": job.cores,
        "method": job.method,
        "backend": job.backend or _default_backend(job.method),
        "status": "error",
        "message": f"{type(err).__name__}: {err}",
    }


def compare(
    jobs: Iterable[Job],
    executor: Executor | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run ``jobs`` in parallel and return their rows in job order.

    By default a process pool with ``workers`` (default ``cpu_count // threads``) processes,
    shut down here; or any ``concurrent.futures.Executor`` (e.g. Dask's
    ``Client.get_executor()``, see ``npusched.common.executor.open_executor``), left open for
    its owner, and ``workers`` is not used. Each job sets its own solver threads. A job that
    raises, or that the executor loses (a worker that died), is one error row; the others run on.
    """
    jobs = list(jobs)
    own = executor is None
    if executor is None:
        threads = max((j.threads for j in jobs), default=1)
        workers = workers or max(1, (os.cpu_count() or 1) // threads)
        executor = local_pool(workers)
    rows: list[dict[str, Any] | None] = [None] * len(jobs)
    try:
        futures = {executor.submit(run_row, job): k for k, job in enumerate(jobs)}
        bar = tqdm(
            total=len(jobs), disable=not progress, file=sys.stderr, unit="job", desc="compare"
        )
        for fut in as_completed(futures):
            k = futures[fut]
            try:
                rows[k] = fut.result()
            except Exception as err:  # lost by the executor: a dead worker, a broken pool
                rows[k] = error_row(jobs[k], err)
            bar.update()
        bar.close()
    finally:
        if own:
            executor.shutdown()
    return [r for r in rows if r is not None]


def _default_backend(method: str) -> str | None:
    """The backend ``solve`` would pick for ``method`` (what a failed job's row shows)."""
    from npusched.methods import METHODS

    return METHODS[method].backends[0] if method in METHODS else None


def _fmt(v: Any) -> Any:
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else v


def table(rows: list[dict[str, Any]]) -> str:
    from tabulate import tabulate

    return tabulate([[_fmt(r.get(c)) for c in COLUMNS] for r in rows], headers=COLUMNS)


def write_csv(rows: list[dict[str, Any]], path: str | Path) -> None:
    with replacing(path) as tmp, open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS + ["message"], extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def summarize(rows: list[dict[str, Any]]) -> str:
    """Per method: proven optimal, equal to reference, contradictions, mean/max gap to reference."""
    from tabulate import tabulate

    out = []
    keys = {(r["method"], r["backend"]) for r in rows}
    for key in sorted(keys, key=lambda k: (k[0], k[1] or "")):  # failed jobs have no backend
        rs = [r for r in rows if (r["method"], r["backend"]) == key]
        opt = [r for r in rs if r["status"] == "optimal"]
        with_ref = [r for r in rs if isinstance(r.get("reference"), int)]
        equal = [r for r in with_ref if r.get("objective") == r["reference"]]
        contra = [
            r
            for r in opt
            if isinstance(r.get("reference"), int) and r["objective"] != r["reference"]
        ]
        gaps = [r["gap_reference"] for r in with_ref if r.get("gap_reference") is not None]
        out.append(
            [
                f"{key[0]}/{key[1]}",
                len(rs),
                len(opt),
                f"{100 * len(opt) / len(rs):.1f}%",
                f"{len(equal)}/{len(with_ref)}",
                len(contra),
                f"{100 * sum(gaps) / len(gaps):.2f}%" if gaps else "-",
                f"{100 * max(gaps):.2f}%" if gaps else "-",
                sum(1 for r in rs if r.get("verified") is False),
            ]
        )
    return tabulate(
        out,
        headers=[
            "method",
            "cases",
            "proven optimal",
            "share",
            "= reference",
            "contradictions",
            "mean gap to ref",
            "max gap to ref",
            "verify failed",
        ],
    )
