"""How long TSO's whole-network search takes: ``python -m npusched.bench.tso_speed``.

Sousa et al. (seed ``004_442fbcc29e97fffd.txt``), §VI "Speeding-up TSO solution exploration":
on an Intel Xeon E5-2620 with 16 physical cores, "the serial execution of TSO varies from 28 ms,
for the LeNet network, to 6 min for the InceptionV3 network, while with the multi-threading
execution, this time is reduced to 17 ms and 59 sec, respectively" (OpenMP tasks, one per
convolution, Algorithm 1 lines 2-5; Fig. 10 gives only speed-up curves, so these four numbers are
the paper's only absolute search times).

Here: :func:`npusched.methods.tiling.tile_network` (TSO-burst, all 9 slicing × schedule
pairs,
exhaustive tile space vectorised with numpy) in this process (``workers=1``) and through a process
pool (``--workers``, default 2), one wall-clock run each, pool start-up included. The goal is
InceptionV3 in at most 3.6 s on 2 cores (1/100 of the paper's serial 6 min).
"""

from __future__ import annotations

import argparse
import sys

from tabulate import tabulate

from npusched.arch import load_arch
from npusched.methods.tiling import tile_network
from npusched.workload.zoo import load_network

NETWORKS = ("lenet", "resnet50", "mobilenetv2", "squeezenet", "inceptionv3", "yolov2")
#: TSO §VI: (serial seconds, 16-thread seconds) on a 16-core Xeon E5-2620.
PAPER_SECONDS = {"lenet": (0.028, 0.017), "inceptionv3": (360.0, 59.0)}
#: Goal: InceptionV3 on 2 cores in at most this many seconds.
GOAL_INCEPTION_S = 3.6


def _ratio(r: float) -> str:
    return f"{r:.2f}x" if r < 10 else f"{r:.0f}x"


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.tso_speed``: :func:`~npusched.methods.tiling.tile_network`
    on each of ``--networks`` on ``--arch``, once in this process and once through a pool of
    ``--workers`` processes; print the search seconds of both beside the paper's and, when
    InceptionV3 is among them, whether the goal :data:`GOAL_INCEPTION_S` is met.

    Parameters
    ----------
    argv
        ``[--arch NAME] [--workers N] [--networks a,b,...]`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0, whether the goal is met or not (the serial and parallel searches
        choosing differently raise ``AssertionError``).
    """
    p = argparse.ArgumentParser(prog="python -m npusched.bench.tso_speed", description=__doc__)
    p.add_argument("--arch", default="tso-nmp-16")
    p.add_argument("--workers", type=int, default=2, help="process-pool size (default 2)")
    p.add_argument("--networks", default=",".join(NETWORKS), help="comma-separated zoo names")
    args = p.parse_args(argv)
    arch = load_arch(args.arch)
    rows = []
    par_inception = None
    for name in args.networks.split(","):
        net = load_network(name)
        serial = tile_network(net, arch, "burst", workers=1)
        par = tile_network(net, arch, "burst", workers=args.workers)
        assert par.total_time_us == serial.total_time_us  # same choices either way
        grid = sum(lc.n_candidates for lc in serial.layers)
        feas = sum(lc.n_feasible for lc in serial.layers)
        paper = PAPER_SECONDS.get(name)
        rows.append(
            [
                name,
                len(serial.layers),
                grid,
                feas,
                f"{serial.search_seconds:.3f}",
                f"{par.search_seconds:.3f}",
                f"{paper[0]:g}" if paper else "",
                f"{paper[1]:g}" if paper else "",
                _ratio(paper[0] / serial.search_seconds) if paper else "",
                _ratio(paper[1] / par.search_seconds) if paper else "",
            ]
        )
        if name == "inceptionv3":
            par_inception = par.search_seconds
    print(
        tabulate(
            rows,
            headers=[
                "network",
                "layers",
                "grid",
                "feasible",
                "ours 1 (s)",
                f"ours {args.workers} (s)",
                "paper serial (s)",
                "paper 16 thr (s)",
                "serial/ours 1",
                f"16 thr/ours {args.workers}",
            ],
        )
    )
    if par_inception is not None:
        ok = par_inception <= GOAL_INCEPTION_S
        print(
            f"\ngoal: InceptionV3 <= {GOAL_INCEPTION_S} s with {args.workers} workers: "
            f"{par_inception:.3f} s, {'met' if ok else 'NOT met'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
