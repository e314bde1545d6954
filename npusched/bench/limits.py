"""Do time limits hold for every method? Each row runs one command line as a new user would
(``python -m npusched …`` in a fresh process: start-up, reading, model building, solving,
verifying and writing all counted) with ``--time-limit L`` on an input large enough that the
method cannot finish within ``L``, and compares the wall clock with issue 17's allowance
``1.1 · L + 2 s``.

    python -m npusched.bench.limits [--limit 5] [--only NAME,...] [--keep DIR]

The inputs are generated into a temporary directory (``--keep DIR`` keeps them there): random
DAGs on 4 cores, layered DAGs on meshes (``npusched generate layered``), a random placement of
1 024 tasks on a 32 × 32 mesh, QAPLIB's nug30 from ``../shared`` when present,
and zoo networks for ``flexer``, ``tile --exact`` and ``orchestrate``. ``tile --exact`` takes its
limit per layer, so its allowance is per layer too (the row names the count). ``orchestrate``
gets 30 s: its floor (BoTorch's import, ResNet-18's design space of 9 216 shapes and one
evaluation) is about 10 s. Prints a Markdown
table; the exit code is 1 when some row overran.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SHARED = Path(__file__).resolve().parents[3] / "shared" / "benchmarks"


@dataclass(frozen=True)
class Case:
    """One command with its limit: ``args`` after ``npusched``; ``{d}`` is the input directory,
    ``{L}`` the limit; ``per`` multiplies the limit (per-layer limits)."""

    name: str
    args: str
    setup: tuple[str, ...] = ()
    per: int = 1
    needs: str = ""
    limit: float | None = None


def _layered(name: str, layers: int, width: int, extra: str = "") -> str:
    return f"generate layered --layers {layers} --width {width} {extra} -o {{d}}/{name}.json"


CASES = (
    Case("cpsat, 20 000 μops / 200 000 edges, 4 cores", "solve {d}/dag20000.json --method cpsat "
         "--time-limit {L} --out {d}/o.json", needs="dag20000"),
    Case("timeindexed, 1 000 μops", "solve {d}/dag1000.json --method timeindexed "
         "--time-limit {L} --out {d}/o.json", needs="dag1000"),
    Case("twostage, 1 000 μops on 2x2", "solve {d}/mid.json --method twostage --time-limit {L} "
         "--out {d}/o.json", (_layered("mid", 50, 20, "--mesh 2x2"),)),
    Case("joint, 2 700 μops on 4x4 with delays", "solve {d}/noc.json --method joint "
         "--time-limit {L} --out {d}/o.json", (_layered("noc", 90, 30, "--mesh 4x4"),)),
    Case("joint routed (link contention), 1 200 μops", "solve {d}/routed.json --method joint "
         "--time-limit {L} --out {d}/o.json",
         (_layered("routed", 40, 30, "--mesh 3x3 --contention"),)),
    Case("qap (CP-SAT), nug30", "solve {nug30} --method qap --time-limit {L} --out {d}/o.json",
         needs="nug30"),
    Case("qap (HiGHS), nug30", "solve {nug30} --method qap --backend highs --time-limit {L} "
         "--out {d}/o.json", needs="nug30"),
    Case("qap-bnb, nug30", "solve {nug30} --method qap-bnb --time-limit {L} --out {d}/o.json",
         needs="nug30"),
    Case("anneal, nug30", "solve {nug30} --method anneal --time-limit {L} --out {d}/o.json",
         needs="nug30"),
    Case("tabu, nug30", "solve {nug30} --method tabu --time-limit {L} --out {d}/o.json",
         needs="nug30"),
    Case("anneal, 1 024 tasks on a 32x32 mesh", "solve {d}/mesh32.json --method anneal "
         "--time-limit {L} --out {d}/o.json", needs="mesh32"),
    Case("tabu, 1 024 tasks on a 32x32 mesh", "solve {d}/mesh32.json --method tabu "
         "--time-limit {L} --out {d}/o.json", needs="mesh32"),
    Case("qap (CP-SAT), 1 024 tasks on a 32x32 mesh", "solve {d}/mesh32.json --method qap "
         "--time-limit {L} --out {d}/o.json", needs="mesh32"),
    Case("flexer search, ResNet-18", "flexer --network resnet18 --arch arch1 --time-limit {L} "
         "--workers 1"),
    Case("tile --exact, VGG-16 conv1_1..conv2_2", "tile --network vgg16 --arch tso-nmp-16 "
         "--exact --time-limit {L} --workers 1", per=4),
    Case("orchestrate, ResNet-18 on 3x3", "orchestrate --network resnet18 --arch klotski-3x3 "
         "--budget 50 --time-limit {L} --out-dir {d}/orch", limit=30.0),
    Case("lns (routed CP-SAT with memory), Stream's ResNet-18", "solve {r18} --method lns "
         "--threads 2 --time-limit {L} --out {d}/o.json", needs="r18"),
    Case("allocate (NSGA-II), Stream's ResNet-18", "allocate {r18} --generations 50 "
         "--population 16 --time-limit {L} --out-dir {d}/ga", needs="r18"),
    Case("allocate --method cpsat (GA, then the exact model under LNS), Stream's ResNet-18",
         "allocate {r18} --method cpsat --generations 50 --population 16 --threads 2 "
         "--time-limit {L} --out-dir {d}/cp", needs="r18"),
    Case("compare, 2 methods x 1 instance", "compare {d}/dag1000.json --methods "
         "cpsat,timeindexed --time-limit {L} --workers 1 --csv {d}/c.csv", needs="dag1000",
         per=2),
)  # fmt: skip


def _mesh32(path: Path) -> None:
    """A placement instance of 1 024 tasks on a 32 × 32 mesh: a random graph of 4 flows a task."""
    import numpy as np

    from npusched.io.placement_json import write_placement
    from npusched.problem.placement import PlacementInstance
    from npusched.problem.scheduling.noc import Mesh

    rng = np.random.default_rng(0)
    n = 1024
    flow = np.zeros((n, n), dtype=np.int64)
    src, dst = rng.integers(0, n, 4 * n), rng.integers(0, n, 4 * n)
    keep = src != dst
    flow[src[keep], dst[keep]] = rng.integers(1, 100, int(keep.sum()))
    write_placement(PlacementInstance(flow, Mesh(32, 32), name="random1024"), path)


def _dag(path: Path, n: int) -> None:
    """A random DAG of ``n`` μops and about ``10 n`` edges on 4 identical cores, no delays."""
    import numpy as np

    from npusched import Accelerator, SchedulingInstance, UopGraph
    from npusched.io import write_instance

    rng = np.random.default_rng(0)
    src = rng.integers(0, n - 1, 10 * n)
    dst = src + rng.integers(1, 100, 10 * n)
    pairs = np.unique(np.stack([src[dst < n], dst[dst < n]], axis=1), axis=0).astype(np.int64)
    graph = UopGraph(rng.integers(1, 20, n), pairs[:, 0], pairs[:, 1],
                     np.zeros(len(pairs), np.int64), tuple(range(n)))  # fmt: skip
    write_instance(SchedulingInstance(graph, Accelerator.identical(4), None, f"rand{n}"), path)


def _run(args: str) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "npusched", *args.split()],
                          capture_output=True, text=True)  # fmt: skip
    last = (proc.stderr.strip().splitlines() or [""])[-1]
    return time.perf_counter() - t0, proc.returncode, last


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.limits``: generate the inputs (into ``--keep`` or a
    temporary folder), run each row of :data:`CASES` whose name contains one of ``--only``'s
    substrings with ``--time-limit`` ``--limit`` (a row's own limit where it sets one), and print
    one table row each: the wall clock against the allowance ``per · (1.1 · L + 2 s)`` and the
    command's exit code. Rows that need ``../shared`` are skipped when it is absent.

    Parameters
    ----------
    argv
        The arguments of the module docstring's command line (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 when every row held its allowance, 1 when some row overran.
    """
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--limit", type=float, default=5.0, help="--time-limit of every row (s)")
    p.add_argument("--only", help="comma-separated substrings of row names")
    p.add_argument("--keep", type=Path, help="generate the inputs into DIR and keep them")
    args = p.parse_args(argv)
    cases = [c for c in CASES if not args.only or any(o in c.name for o in args.only.split(","))]
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        nug30 = SHARED / "qaplib" / "dat" / "nug30.dat"
        r18 = SHARED / "stream" / "resnet18_tpu_quad_core_fused.json"
        print("| command | limit L (s) | wall (s) | allowance 1.1 L + 2 (s) | holds | exit |")
        print("| --- | --- | --- | --- | --- | --- |")
        overran = 0
        for c in cases:
            if c.needs in ("nug30", "r18") and not {"nug30": nug30, "r18": r18}[c.needs].exists():
                print(f"| {c.name} | – | – | – | skipped: ../shared absent | – |")
                continue
            if c.needs == "mesh32" and not (d / "mesh32.json").exists():
                _mesh32(d / "mesh32.json")
            if c.needs.startswith("dag") and not (d / f"{c.needs}.json").exists():
                _dag(d / f"{c.needs}.json", int(c.needs[3:]))
            for step in c.setup:
                if not (d / step.split("-o {d}/")[1].format(d=d)).exists():
                    _run(step.format(d=d))
            limit = c.limit or args.limit
            wall, code, last = _run(c.args.format(d=d, L=limit, nug30=nug30, r18=r18))
            allowance = c.per * (1.1 * limit + 2)
            ok = wall <= allowance
            overran += not ok
            note = "" if code in (0, 1) else f" ({last[:60]})"
            per = f" × {c.per}" if c.per > 1 else ""
            holds = "yes" if ok else "**no**"
            print(f"| {c.name} | {limit:g}{per} | {wall:.1f} | {allowance:.1f} | {holds} | "
                  f"{code}{note} |", flush=True)  # fmt: skip
    return 1 if overran else 0


if __name__ == "__main__":
    raise SystemExit(main())
