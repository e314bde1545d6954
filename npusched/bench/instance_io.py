"""Large instances end to end, as a user runs them: partition, read, schedule, verify, write.

    python -m npusched.bench.instance_io [--max-uops N] [--dir DIR]

For ResNet-50 Klotski partitions of growing size (up to 834 272 μops and 4.45 M edges on
klotski-5x5), each step runs as its own ``npusched`` process and is timed with its peak memory
(``os.wait4``'s ``ru_maxrss`` of that process):

- ``partition -o I.json`` (columnar above :data:`~npusched.io.columnar.COMPACT_ABOVE` μops) and
  ``-o I.json.gz``;
- ``info I.json`` (read and validate);
- ``solve I.json --method list --out S.json`` (read, schedule, verify, write);
- ``verify I.json S.json`` (read both, verify).

It prints one table row per (case, step) with seconds, peak MiB and the file written, then the
growth of each step's time against the growth of n + E between successive cases.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tabulate import tabulate

CASES = (  # (arch, s, align): ResNet-50 partitions of growing size
    ("klotski-4x4", "14,14,64,64", True),
    ("klotski-4x4", "7,7,32,32", True),
    ("klotski-5x5", "2,2,128,32", False),
    ("klotski-5x5", "1,1,128,32", False),
)
SIZES = {  # μops of each case (measured; used only to skip cases above --max-uops)
    "14,14,64,64": 4_791,
    "7,7,32,32": 41_821,
    "2,2,128,32": 216_800,
    "1,1,128,32": 834_272,
}


def run_step(args: list[str]) -> tuple[float, float, str]:
    """Run ``npusched ARGS``; its seconds, peak MiB and first stdout line (fails loudly)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "npusched", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    out, err = proc.stdout.read() if proc.stdout else "", proc.stderr.read() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"npusched {' '.join(args)} failed ({proc.returncode}): {err.strip()}")
    return seconds, usage.ru_maxrss / 1024, (out.strip().splitlines() or [""])[0]


def run_case(arch: str, s: str, align: bool, folder: Path) -> list[dict[str, Any]]:
    """The steps of the module docstring on ResNet-50 partitioned on ``arch`` at μtensor ``s``
    (``--no-align`` unless ``align``), each a :func:`run_step` writing into ``folder``: one row
    per step with its seconds, peak MiB, the size of the file it wrote, and the case's μops and
    edges (from ``info``). A step that fails raises ``RuntimeError``."""
    inst, gz, sol = folder / "i.json", folder / "i.json.gz", folder / "s.json"
    part = ["partition", "--network", "resnet50", "--arch", arch, "--scheme", "klotski"]
    part += ["--s", s] + ([] if align else ["--no-align"])
    steps = [
        ("partition -o .json", [*part, "-o", str(inst)], inst),
        ("partition -o .json.gz", [*part, "-o", str(gz)], gz),
        ("info (read)", ["info", str(inst), "--json"], None),
        ("solve list (read+schedule+verify+write)",
         ["solve", str(inst), "--method", "list", "--out", str(sol)], sol),
        ("verify (read both)", ["verify", str(inst), str(sol)], None),
    ]  # fmt: skip
    rows = []
    for name, args, written in steps:
        seconds, mib, line = run_step(args)
        row = {"case": f"{arch} s={s}", "step": name, "seconds": round(seconds, 2)}
        row["peak_MiB"] = round(mib)
        row["file_MB"] = round(written.stat().st_size / 1e6, 1) if written else None
        if name.startswith("info"):
            import json

            info = json.loads(line)
            row["uops"], row["edges"] = info["uops"], info["edges"]
        rows.append(row)
    n, e = rows[2]["uops"], rows[2]["edges"]
    for row in rows:
        row["uops"], row["edges"] = n, e
    return rows


def growth(rows: list[dict[str, Any]]) -> list[list[Any]]:
    """Per step: time ratio between successive cases next to the ratio of n + E."""
    out = []
    cases = list(dict.fromkeys(r["case"] for r in rows))
    for a, b in zip(cases, cases[1:], strict=False):
        ra = {r["step"]: r for r in rows if r["case"] == a}
        rb = {r["step"]: r for r in rows if r["case"] == b}
        size = (rb[next(iter(rb))]["uops"] + rb[next(iter(rb))]["edges"]) / (
            ra[next(iter(ra))]["uops"] + ra[next(iter(ra))]["edges"]
        )
        for step in ra:
            ratio = rb[step]["seconds"] / max(ra[step]["seconds"], 1e-9)
            out.append([f"{a} -> {b}", step, round(size, 2), round(ratio, 2)])
    return out


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.instance_io``: :func:`run_case` on every case of
    :data:`CASES` up to ``--max-uops`` μops, with the files in ``--dir`` (default: a temporary
    folder, removed at the end); prints the table of steps and the growth between cases
    (:func:`growth`).

    Parameters
    ----------
    argv
        The arguments of the module docstring's command line (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 (a step that fails raises ``RuntimeError``).
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.instance_io", description=__doc__)
    p.add_argument("--max-uops", type=int, default=10**7, help="skip larger cases")
    p.add_argument("--dir", help="where to write the files (default: a temporary folder)")
    args = p.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="npusched-io-") as tmp:
        folder = Path(args.dir or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for arch, s, align in CASES:
            if SIZES[s] > args.max_uops:
                continue
            rows += run_case(arch, s, align, folder)
            print(f"done {arch} s={s}", file=sys.stderr, flush=True)
    cols = ["case", "uops", "edges", "step", "seconds", "peak_MiB", "file_MB"]
    print(tabulate([[r[c] for c in cols] for r in rows], headers=cols, tablefmt="github"))
    if len({r["case"] for r in rows}) > 1:
        print()
        print(tabulate(growth(rows), headers=["cases", "step", "(n+E) ratio", "time ratio"],
                       tablefmt="github"))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
