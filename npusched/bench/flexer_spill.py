"""Algorithm 2 against the exact spill model: ``python -m npusched.bench.flexer_spill``.

On random memory maps (:func:`random_map`) Flexer's spill heuristic
(:func:`npusched.heuristics.flexer.spill.flexer_victims`) is compared with the lexicographic
optimum over all contiguous runs (:func:`npusched.formulations.flexer.spill.solve_spill_exact`,
run as ``solve(…, "flexer-spill")``).
The table counts the maps that are feasible, where both keys are equal, where both pick the same
run (otherwise a tie at another address), where the exact key is better (a bug in Algorithm 2's
implementation) or the heuristic's (a bug in the model, since it is proven optimal), where
feasibility differs and where the solver did not prove its answer. The last four must be 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from tabulate import tabulate

from npusched.formulations.flexer.spill import BACKENDS
from npusched.heuristics.flexer.spill import flexer_victims, spill_key
from npusched.methods.registry import solve
from npusched.problem.flexer.layer import SpillRequest
from npusched.solvers.result import Status

KIB = 1024
#: A memory map and a request: ``(sizes, uses, movable, live, required)``.
SpillMap = tuple[list[int], list[int], list[bool], list[bool], int]


def random_map(rng: np.random.Generator, max_segments: int = 20) -> SpillMap:
    """A random memory map: free gaps (25 %), dead blocks (10 %), live movable blocks (50 %,
    0–5 remaining uses) and pinned live blocks (15 %), sizes mostly whole KiB from a small set
    (so that ties are common), a tenth of them with a few extra bytes; ``required`` up to 80 %
    of the whole map (infeasible when no run of movable segments is that large)."""
    n = int(rng.integers(1, max_segments + 1))
    kind = rng.choice(4, size=n, p=[0.25, 0.10, 0.50, 0.15])  # free, dead, live, pinned
    sizes = KIB * rng.choice([1, 2, 3, 4, 6, 8, 16], size=n)
    sizes += np.where(rng.random(n) < 0.1, rng.integers(1, KIB, size=n), 0)
    live = kind >= 2
    uses = np.where(live, rng.integers(0, 6, size=n), 0)
    required = int(rng.integers(1, int(0.8 * sizes.sum()) + 2))
    if rng.random() < 0.7:
        required = KIB * max(1, round(required / KIB))
    return (sizes.tolist(), uses.tolist(), (kind != 3).tolist(), live.tolist(), required)


def compare_map(m: SpillMap, backend: str = "cpsat", time_limit: float = 10.0) -> dict[str, Any]:
    """Algorithm 2 and the exact model on one map: both runs, keys and wall times."""
    sizes, uses, movable, live, required = m
    t0 = time.perf_counter()
    run = flexer_victims(sizes, uses, movable, live, required)
    t_heur = time.perf_counter() - t0
    key = None if run is None else spill_key(sizes, uses, live, run, required)
    t0 = time.perf_counter()
    request = SpillRequest(sizes, uses, movable, live, required)
    ex = solve(request, "flexer-spill", backend, time_limit=time_limit)
    t_exact = time.perf_counter() - t0
    return {
        "run": run,
        "key": key,
        "exact": ex,
        "t_heur": t_heur,
        "t_exact": t_exact,
    }


def compare(maps: Sequence[SpillMap], backend: str = "cpsat") -> dict[str, Any]:
    """Compare on every map; counts, mean times and the indices of maps that disagree."""
    c = dict.fromkeys(("feasible", "same key", "same run", "exact better", "heuristic better"), 0)
    c.update({"feasibility differs": 0, "not proven": 0})
    bad: list[int] = []
    t_heur = t_exact = 0.0
    for k, m in enumerate(maps):
        r = compare_map(m, backend)
        ex = r["exact"]
        t_heur += r["t_heur"]
        t_exact += r["t_exact"]
        if ex.status not in (Status.OPTIMAL, Status.INFEASIBLE):
            c["not proven"] += 1
            bad.append(k)
            continue
        if (r["run"] is None) != (ex.solution is None):
            c["feasibility differs"] += 1
            bad.append(k)
            continue
        if r["run"] is None:
            continue
        c["feasible"] += 1
        c["same key"] += ex.stats["key"] == r["key"]
        c["same run"] += ex.solution == r["run"]
        c["exact better"] += ex.stats["key"] < r["key"]
        c["heuristic better"] += r["key"] < ex.stats["key"]
        if ex.stats["key"] != r["key"]:
            bad.append(k)
    n = max(1, len(maps))
    return {
        "maps": len(maps),
        **c,
        "ms/map Alg. 2": 1e3 * t_heur / n,
        f"ms/map exact ({backend})": 1e3 * t_exact / n,
        "bad": bad,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print the table; exit status 1 if any map disagrees."""
    ap = argparse.ArgumentParser(prog="python -m npusched.bench.flexer_spill", description=__doc__)
    ap.add_argument("--maps", type=int, default=1000, help="random memory maps (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="numpy RNG seed (default 0)")
    ap.add_argument("--backend", choices=BACKENDS, default="cpsat", help="exact backend")
    ap.add_argument("--max-segments", type=int, default=20, help="segments per map, at most")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    maps = [random_map(rng, args.max_segments) for _ in range(args.maps)]
    out = compare(maps, args.backend)
    bad = out.pop("bad")
    rows = [(k, f"{v:.3f}" if isinstance(v, float) else v) for k, v in out.items()]
    print(tabulate(rows, headers=("", "value"), tablefmt="github"))
    if bad:
        print(f"maps that disagree or are not proven: {bad[:20]}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
