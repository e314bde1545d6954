"""``npusched compare``: several methods on several instances, in parallel, as one table."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from npusched.cli.args import (
    executor_spec,
    int_list,
    output_dir,
    output_file,
    positive_float,
    positive_int,
)
from npusched.common.errors import InputError


def run(args: argparse.Namespace) -> int:
    """Run ``npusched compare``: every method of ``--methods`` on every instance (each ``.stg``
    file once per count of ``--cores``) as parallel jobs, locally or on a Dask scheduler; print
    the table (unless ``--quiet`` with ``--csv``) and the summary, write ``--csv`` and
    ``--solutions``, and name each failed job on stderr.

    Returns
    -------
    int
        The exit code: 0, or 1 when some job ended in an error.

    Raises
    ------
    ValueError
        An unknown method in ``--methods``.
    InputError
        An instance file that does not exist, or an ``.stg`` file without ``--cores``.
    """
    from npusched.bench.compare import Job, compare, summarize, table, write_csv
    from npusched.common.executor import open_executor

    methods = []
    for spec in args.methods.split(","):
        name, _, backend = spec.partition(":")
        methods.append((name, backend or None))
    from npusched.methods import METHODS

    for name, _ in methods:
        if name not in METHODS:
            raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    for path in args.instances:
        if not Path(path).is_file():
            raise InputError(path, "(file)", "no such file")
        if path.endswith(".stg") and not args.cores:
            raise InputError(path, "--cores", "an .stg file needs --cores")
    cores_list: list[int | None] = list(args.cores) if args.cores else [None]
    local = args.executor == "local"
    where = str if local else os.path.abspath  # Dask workers need not share our working folder
    jobs = [
        Job(
            where(p),
            name,
            backend,
            c if str(p).endswith(".stg") else None,
            args.time_limit,
            args.threads,
            args.seed,
            precedence=args.precedence if name == "timeindexed" else "eq18",
            solution_dir=None if args.solutions is None else where(args.solutions),
        )
        for p in args.instances
        for c in cores_list
        for name, backend in methods
    ]
    jobs = list(dict.fromkeys(jobs))  # JSON instances ignore --cores: drop duplicates
    # local: compare's own process pool, --workers of cores / --threads by default
    remote = nullcontext(None) if local else open_executor(args.executor)
    with remote as executor:
        rows = compare(jobs, executor, workers=args.workers, progress=not args.quiet)
    if args.csv:  # first, so that what finished is kept whatever follows
        write_csv(rows, args.csv)
    if not args.quiet or not args.csv:
        print(table(rows))
    print()
    print(summarize(rows))
    failed = [r for r in rows if r["status"] == "error" and r.get("message")]
    for r in failed:
        print(f"npusched: error: {r['instance']} ({r['method']}): {r['message']}", file=sys.stderr)
    return 1 if failed else 0


def add_parser(sub: Any) -> None:
    """Add the ``compare`` verb to ``sub`` (from ``ArgumentParser.add_subparsers``):
    methods × instances × core counts."""
    m = sub.add_parser("compare", help="run several methods on several instances in parallel")
    m.add_argument("instances", nargs="+", help="instance .json or .stg files")
    m.add_argument(
        "--methods",
        default="list,cpsat,timeindexed",
        help="comma-separated method[:backend], e.g. list,cpsat,timeindexed:cbc",
    )
    m.add_argument("--cores", type=int_list, help="core counts for .stg files, e.g. 2,4,8,16")
    m.add_argument("--time-limit", type=positive_float, default=10.0, help="seconds per job")
    m.add_argument("--threads", type=positive_int, default=1, help="solver threads per job")
    m.add_argument(
        "--workers", type=positive_int, help="local parallel jobs (default cores / threads)"
    )
    m.add_argument(
        "--executor",
        type=executor_spec,
        default="local",
        help="local (a process pool of --workers) or dask://HOST:PORT (a Dask scheduler's "
        "workers, --threads per job; files are read and --solutions written by the workers, "
        "at the absolute paths)",
    )
    m.add_argument("--seed", type=int, default=0)
    m.add_argument(
        "--precedence",
        default="eq18",
        choices=["eq18", "disaggregated"],
        help="precedence rows of timeindexed jobs",
    )
    m.add_argument("--csv", type=output_file, help="write the rows as CSV here")
    m.add_argument(
        "--solutions", type=output_dir, help="write every solution JSON into this folder"
    )
    m.add_argument("--quiet", action="store_true", help="no progress bar; with --csv no table")
    m.set_defaults(func=run)
