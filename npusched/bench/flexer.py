"""Flexer's evaluation (§5) in one script: ``python -m npusched.bench.flexer``.

- ``search`` (default): for each network × architecture, the OoO and static searches of every
  dense conv and fc layer (:func:`~npusched.methods.flexer.search_network`); prints
  the end-to-end speed-up and transfer reduction (Fig. 8), the largest per-layer ones (Fig. 9)
  and the wall-clock search time on ``--workers`` processes (the §3 runtime claim).
- ``ablation``: Table 2's priorities × memory policies on the OoO search, the end-to-end
  ``Σ latency × Σ bytes`` normalised to Flexer's default (Fig. 12).
- ``speed``: the whole search (OoO and static, every distinct layer) of one network on one
  architecture at each ``--caps`` (operations per tiling; 0 = every viable tiling) with a
  ``--time-limit``: wall-clock seconds on ``--workers`` processes, the tilings in the space and
  how many each search evaluated, and whether it finished (§3: about 20 hours single-threaded
  for ResNet-50 on a 4-NPU system; our goal is 10 minutes on 2 cores).
- ``optimal``: for the layers whose best OoO tiling has at most ``--opt-ops`` operations, the
  OoO latency against CP-SAT's least latency for that tiling
  (:func:`~npusched.formulations.flexer.schedule.schedule_exact`, started from the OoO
  schedule), with its proven bound; exact over all schedules where every tile fits at once.
- ``offline``: for the best OoO schedule of sampled layers, its transferred bytes against the
  offline lower bound for the same operation order
  (:func:`~npusched.formulations.flexer.offline.offline_bound`); gap in %.
- ``explain``: where the time goes (issue 25, item 1). For every layer, the best OoO and the
  best static schedule's NPU cycles split into compute, load, spill and write-back stalls and
  idle time by cause (:func:`~npusched.heuristics.flexer.explain.time_split`, in % of latency
  × NPUs); the totals over the layers; and for each layer where OoO loses by the paper's metric
  (latency × bytes) its cause: the latency and bytes ratios, the categories that grew most and
  the data type moved most in excess. ``--plot`` draws a pair of stacked bars per layer
  (:func:`~npusched.plot.flexer_explain.time_split_bars`).

``--scheduler beam`` runs ``flexer-beam`` (``--beam-width``, ``--beam-depth``, ``--beam-top``)
and ``--scheduler lns`` ``flexer-lns`` (the beam, then ``--lns-seconds`` of re-timing per
layer) instead of the paper's greedy in ``search``, ``explain`` and ``speed``; their figures
stand in the OoO columns.

A network or architecture that does not exist, a beam width or depth below 1 or a negative
``--beam-top`` is a one-line error, exit 2.

``--json FILE`` writes every row. Ratios are computed within one run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tabulate import tabulate

from npusched.arch import flexer_arch_name, load_arch
from npusched.bench.doc import publish
from npusched.bench.flexer_explain import OOO_STATIC, Kinds, Options, bench_explain
from npusched.common.errors import InputError
from npusched.heuristics.flexer.search import layer_geometry, layer_problem, n_ops, run
from npusched.methods.flexer import (
    OOO_KINDS,
    LayerRuns,
    NetworkSearch,
    figures,
    search_network,
    verify_choices,
)
from npusched.methods.registry import solve
from npusched.problem.flexer.layer import FlexerInstance, FlexerSchedule, TiledConv
from npusched.problem.flexer.residency import ResidencyProblem
from npusched.problem.flexer.settings import MEM_POLICIES, PRIORITIES, Settings
from npusched.workload.network import Network
from npusched.workload.zoo import load_network


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def bench_search(
    nets: list[str], archs: list[str], workers: int, opts: Options, kinds: Kinds = OOO_STATIC
) -> list[dict]:
    """The ``search`` mode (module notes; §5, Fig. 8 and 9): the OoO and static searches of
    every dense conv and fc layer of each network on each architecture, one printed row per
    network × architecture.

    Parameters
    ----------
    nets, archs
        Zoo network names and Flexer architecture names (``arch1`` … ``arch8``).
    workers
        Processes the layer searches run on.
    opts
        :class:`~npusched.problem.flexer.settings.Settings` fields for every search.
    kinds
        The OoO search (``ooo``, ``beam`` or ``lns``) and ``static``.

    Returns
    -------
    list of dict
        Per network × architecture: the layers searched and compared (both kinds have a
        schedule), the end-to-end ``speedup`` and ``transfer_reduction`` (static over OoO, Σ
        latency and Σ DRAM bytes over the compared layers), ``speedup_bound`` (the most any
        OoO search over these tilings could reach: Σ static latency over Σ of each layer's
        least :func:`~npusched.heuristics.flexer.search.lat_bound`), the largest per-layer
        ratios, the
        compared layers where OoO is at least as good as static by latency × bytes
        (``not_worse``, issue 25's goal), the wall seconds of the search, the distinct layer
        geometries searched and how many chosen schedules
        :func:`~npusched.methods.flexer.verify_choices` verified.

    Raises
    ------
    RuntimeError
        A chosen schedule fails verification (:func:`~npusched.methods.flexer.verify_choices`).
    """
    rows = []
    for name, a in itertools.product(nets, archs):
        net = load_network(name)
        arch = load_arch(flexer_arch_name(a))
        res = search_network(net, arch, kinds=kinds, workers=workers, **opts)
        checked = verify_choices(res)
        both = [(figures(r.ooo), figures(r.static)) for r in res.layers]
        per = [(o, s) for o, s in both if o and s]
        tot = res.totals()
        rows.append(
            {
                "network": name,
                "arch": a,
                "layers": len(res.layers),
                "compared": len(per),
                "speedup": round(tot["speedup"], 3),
                "speedup_bound": round(tot["speedup_bound"], 3),
                "transfer_reduction": round(tot["transfer_reduction"], 3),
                "best_layer_speedup": round(
                    max(_ratio(s["latency"], o["latency"]) for o, s in per), 3
                ),
                "best_layer_reduction": round(
                    max(_ratio(s["transfer_bytes"], o["transfer_bytes"]) for o, s in per), 3
                ),
                "not_worse": sum(
                    o["latency"] * o["transfer_bytes"] <= s["latency"] * s["transfer_bytes"]
                    for o, s in per
                ),
                "search_s": round(res.search_seconds, 1),
                "distinct": res.distinct,
                "verified": checked,
            }
        )
        print(tabulate([rows[-1]], headers="keys"), flush=True)
    return rows


def bench_ablation(nets: list[str], archs: list[str], workers: int, opts: Options) -> list[dict]:
    """The ``ablation`` mode (Table 2, Fig. 12): the OoO search of each network on each
    architecture under each priority with Flexer's memory manager and under each memory policy
    with the default priority (one varied at a time).

    Parameters
    ----------
    nets, archs
        Zoo network names and Flexer architecture names.
    workers
        Processes the layer searches run on.
    opts
        :class:`~npusched.problem.flexer.settings.Settings` fields for every search (not
        ``priority`` nor ``mem_policy``, which this mode sets).

    Returns
    -------
    list of dict
        Per network × architecture, for each ``priority/mem_policy`` pair the end-to-end
        ``Σ latency × Σ bytes`` over the layers OoO scheduled, divided by that of
        ``default/flexer`` (1.0: as good as Flexer's default; lower is better).
    """
    rows = []
    for name, a in itertools.product(nets, archs):
        net = load_network(name)
        metric: dict[str, float] = {}
        for prio, pol in itertools.product(PRIORITIES, MEM_POLICIES):
            if prio != "default" and pol != "flexer":
                continue  # Fig. 12 varies one at a time
            res = search_network(
                net,
                load_arch(flexer_arch_name(a)),
                kinds=("ooo",),
                workers=workers,
                priority=prio,
                mem_policy=pol,
                **opts,
            )
            ooo = [f for f in (figures(r.ooo) for r in res.layers) if f]
            lat = sum(f["latency"] for f in ooo)
            nbytes = sum(f["transfer_bytes"] for f in ooo)
            metric[f"{prio}/{pol}"] = float(lat) * float(nbytes)
        base = metric["default/flexer"]
        row = {"network": name, "arch": a, **{k: round(v / base, 3) for k, v in metric.items()}}
        rows.append(row)
        print(tabulate([row], headers="keys"), flush=True)
    return rows


def bench_speed(
    net_name: str,
    arch: str,
    workers: int,
    caps: list[int],
    limit: float | None,
    opts: Options,
    kinds: Kinds = OOO_STATIC,
) -> list[dict]:
    """The ``speed`` mode (§3's runtime claim): the whole search of one network on one
    architecture once per operation cap.

    Parameters
    ----------
    net_name, arch
        A zoo network and a Flexer architecture name.
    workers
        Processes the layer searches run on.
    caps
        Operations per tiling at most (``max_ops``; 0: every viable tiling), one search each.
    limit
        Wall seconds for each whole search (``None``: no limit); a search cut short has
        ``complete`` false.
    opts
        :class:`~npusched.problem.flexer.settings.Settings` fields (``max_ops`` is replaced
        by each cap).
    kinds
        The OoO search (``ooo`` or ``beam``) and ``static``.

    Returns
    -------
    list of dict
        Per cap: the distinct layer geometries, their viable tilings and how many each kind
        evaluated, whether the search finished, the operations of the largest chosen tiling,
        the wall seconds and the three slowest layers ``[name, seconds, tilings, OoO
        evaluated, static evaluated]``.
    """
    rows = []
    net = load_network(net_name)
    for cap in caps:
        res = search_network(
            net,
            load_arch(flexer_arch_name(arch)),
            kinds=kinds,
            workers=workers,
            time_limit=limit,
            **{**opts, "max_ops": cap},
        )
        layers = {ly.name: ly for ly in net.layers}
        reps = list({layer_geometry(net, layers[r.name]): r for r in res.layers}.values())
        rows.append(
            {
                "network": net_name,
                "arch": arch,
                "max_ops": cap or "all",
                "distinct_layers": res.distinct,
                "tilings": sum(r.tilings for r in reps),
                "ooo_evaluated": sum(r.ooo_evaluated for r in reps),
                "static_evaluated": sum(r.static_evaluated for r in reps),
                "complete": res.complete,
                "largest_chosen_ops": max(
                    n_ops(net, layers[r.name], f["tiling"])
                    for r in reps
                    for f in (figures(r.ooo), figures(r.static))
                    if f is not None
                ),
                "search_s": round(res.search_seconds, 1),
                "workers": workers,
                "slowest": [
                    [r.name, round(r.seconds, 1), r.tilings, r.ooo_evaluated, r.static_evaluated]
                    for r in sorted(reps, key=lambda r: -r.seconds)[:3]
                ],
            }
        )
        print(tabulate([rows[-1]], headers="keys"), flush=True)
    return rows


def _ooo_searches(
    nets: list[str], archs: list[str], workers: int, opts: Options
) -> Iterator[tuple[str, str, Network, NetworkSearch]]:
    """The OoO search of every network × architecture: ``(network, arch, net, result)``."""
    for name, a in itertools.product(nets, archs):
        net = load_network(name)
        res = search_network(
            net, load_arch(flexer_arch_name(a)), kinds=("ooo",), workers=workers, **opts
        )
        yield name, a, net, res


def _chosen(net: Network, res: NetworkSearch, r: LayerRuns) -> TiledConv:
    """The DFG of layer ``r`` at the tiling its OoO search chose."""
    f = figures(r.ooo)
    assert f is not None
    layer = next(ly for ly in net.layers if ly.name == r.name)
    return layer_problem(net, layer, f["tiling"], res.settings)


def _dataflow(r: LayerRuns) -> str:
    """The dataflow the OoO search of ``r`` chose."""
    f = figures(r.ooo)
    assert f is not None
    return str(f["dataflow"])


def bench_optimal(
    nets: list[str], archs: list[str], workers: int, opts: Options, opt_ops: int, limit: float
) -> list[dict]:
    """The ``optimal`` mode: for each distinct layer whose best OoO tiling has at most
    ``opt_ops`` operations, the OoO schedule of that tiling and dataflow against
    ``flexer-cpsat``'s least latency for the same tiling
    (:func:`~npusched.formulations.flexer.schedule.schedule_exact`), warm-started from it.

    Parameters
    ----------
    nets, archs
        Zoo network names and Flexer architecture names.
    workers
        Processes the OoO layer searches run on.
    opts
        :class:`~npusched.problem.flexer.settings.Settings` fields of the OoO search.
    opt_ops
        The largest layer (operations of the chosen tiling) given to CP-SAT.
    limit
        CP-SAT's seconds per layer.

    Returns
    -------
    list of dict
        Per layer: the operations, whether every tile fits at once (``all_fit``: then the
        model is exact over all schedules), OoO's and CP-SAT's latencies (cycles), CP-SAT's
        proven bound and status, how far OoO is above CP-SAT (%), whether CP-SAT's schedule
        passed :func:`~npusched.verify.flexer.verify_flexer`, and the solver's seconds.
    """
    from npusched.verify.flexer import verify_flexer

    rows = []
    for name, a, net, res in _ooo_searches(nets, archs, workers, opts):
        layers = {ly.name: ly for ly in net.layers}
        seen: set[Any] = set()
        for r in res.layers:
            key = layer_geometry(net, layers[r.name])
            if figures(r.ooo) is None or key in seen:
                continue
            seen.add(key)
            p = _chosen(net, res, r)
            if p.n_ops > opt_ops:
                continue
            st = res.settings
            ooo = run(p, st, "ooo", _dataflow(r))
            inst = FlexerInstance(p, st.n_npus, st.capacity, st.bandwidth, st.prefetch)
            ex = solve(inst, "flexer-cpsat", time_limit=limit, warm_start=ooo)
            ok = isinstance(ex.solution, FlexerSchedule) and verify_flexer(ex.solution).ok
            latency = None if ex.objective is None else int(ex.objective)
            rows.append(
                {
                    "network": name,
                    "arch": a,
                    "layer": r.name,
                    "ops": p.n_ops,
                    "all_fit": ex.stats["all_fit"],
                    "ooo_latency": ooo.latency,
                    "cpsat_latency": latency,
                    "bound": None if ex.bound is None else int(ex.bound),
                    "status": ex.status.value,
                    "ooo_over_%": None
                    if latency is None
                    else round(100 * (ooo.latency - latency) / latency, 2),
                    "verified": ok,
                    "solve_s": round(ex.runtime_s, 1),
                }
            )
            print(tabulate([rows[-1]], headers="keys"), flush=True)
    return rows


def bench_offline(
    nets: list[str], archs: list[str], workers: int, opts: Options, sample: int, limit: float
) -> list[dict]:
    """The ``offline`` mode: for ``sample`` layers of each network × architecture, the DRAM
    bytes of the best OoO schedule against ``flexer-offline``'s lower bound for the same
    order of operation sets (:func:`~npusched.formulations.flexer.offline.offline_bound`).

    Parameters
    ----------
    nets, archs
        Zoo network names and Flexer architecture names.
    workers
        Processes the OoO layer searches run on.
    opts
        :class:`~npusched.problem.flexer.settings.Settings` fields of the OoO search.
    sample
        Layers per network × architecture, evenly spaced among those OoO scheduled.
    limit
        The bound's solver seconds per layer.

    Returns
    -------
    list of dict
        Per layer: the sets in the order (``steps``), OoO's bytes, the bound (bytes; the
        mandatory bytes when the solver proved none), the solver's status, OoO's gap above the
        bound (%) and the seconds.
    """
    rows = []
    for name, a, net, res in _ooo_searches(nets, archs, workers, opts):
        have = [r for r in res.layers if figures(r.ooo)]
        picked = have[:: max(1, len(res.layers) // sample)][:sample]
        for r in picked:
            p = _chosen(net, res, r)
            sched = run(p, res.settings, "ooo", _dataflow(r))
            t0 = time.perf_counter()
            problem = ResidencyProblem(p, sched.order, res.settings.capacity)
            ob = solve(problem, "flexer-offline", time_limit=limit)
            bound = ob.bound if ob.bound is not None else ob.stats["mandatory"]
            rows.append(
                {
                    "network": name,
                    "arch": a,
                    "layer": r.name,
                    "steps": len(sched.order),
                    "ooo_bytes": sched.transfer_bytes,
                    "bound": int(bound),
                    "status": ob.status.value,
                    "gap_%": round(100 * (sched.transfer_bytes - bound) / bound, 2),
                    "solve_s": round(time.perf_counter() - t0, 2),
                }
            )
            print(tabulate([rows[-1]], headers="keys"), flush=True)
    return rows


def _check_inputs(nets: list[str], archs: list[str]) -> str | None:
    """A one-line message for the first network or architecture that does not exist."""
    try:
        for name in nets:
            load_network(name)
        for a in archs:
            load_arch(flexer_arch_name(a))
    except (InputError, ValueError) as e:
        return str(e).splitlines()[0]
    return None


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.flexer``: the mode of the module docstring on ``argv``;
    print its table (``--doc`` also writes it into a Markdown file's block) and, with
    ``--json FILE``, write every row.

    Parameters
    ----------
    argv
        ``[MODE] [--networks a,b] [--archs arch1,…] [--workers N] …`` (``--help`` lists them;
        default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0, or 2 for a network or architecture that does not exist, a beam width or depth
        below 1 or a negative ``--beam-top`` (a one-line error on stderr).
    """
    ap = argparse.ArgumentParser(prog="python -m npusched.bench.flexer", description=__doc__)
    modes = ["search", "ablation", "offline", "speed", "optimal", "explain"]
    ap.add_argument("mode", nargs="?", default="search", choices=modes)
    ap.add_argument("--networks", "--network", default="vgg16,resnet50")
    ap.add_argument("--archs", "--arch", default=",".join(f"arch{i}" for i in range(1, 9)))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-ops", type=int, default=256, help="operations per tiling (0: all)")
    ap.add_argument(
        "--fill-drain",
        type=int,
        default=None,
        help="cycles per operation for the array's fill and drain (default: rows + columns)",
    )
    ap.add_argument("--cost", choices=["analytic", "zigzag", "compute"], default="analytic",
                    help="an operation's intra-core cost model (default analytic)")  # fmt: skip
    ap.add_argument("--sample", type=int, default=4, help="offline: layers per network × arch")
    ap.add_argument(
        "--time-limit", type=float, default=30.0, help="offline, optimal: seconds per layer"
    )
    ap.add_argument("--caps", default="256,0", help="speed: operation caps (0: no cap)")
    ap.add_argument("--opt-ops", type=int, default=16, help="optimal: largest layer (ops)")
    ap.add_argument(
        "--limit", type=float, default=None, help="speed: seconds per search (default: none)"
    )
    ap.add_argument(
        "--plot",
        default="flexer-explain.png",
        help="explain: the stacked bars' PNG ('' for none; -NETWORK-ARCH added for several)",
    )
    ap.add_argument("--scheduler", choices=list(OOO_KINDS), default="ooo",
                    help="search, explain, speed: the out-of-order search (flexer-ooo, the "
                    "paper's greedy, flexer-beam, or flexer-lns: the beam re-timed)")  # fmt: skip
    ap.add_argument("--lns-seconds", type=float, default=Settings.lns_seconds,
                    help="flexer-lns: seconds of re-timing per layer (default "
                    f"{Settings.lns_seconds:g})")  # fmt: skip
    ap.add_argument("--beam-width", type=int, default=8, help="flexer-beam: branches per step")
    ap.add_argument("--beam-depth", type=int, default=3, help="flexer-beam: sets looked ahead")
    ap.add_argument("--beam-top", type=int, default=16,
                    help="flexer-beam: the greedy's best tiling x dataflow pairs it refines "
                    "(0: all)")  # fmt: skip
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--doc", type=Path, help="write the table into this Markdown file")
    ap.add_argument("--block", default="tables", help="the file's block (<!-- BLOCK -->) to fill")
    args = ap.parse_args(argv)
    nets = [x.strip() for x in args.networks.split(",")]
    archs = [x.strip() for x in args.archs.split(",")]
    opts: Options = {"max_ops": args.max_ops, "fill_drain": args.fill_drain, "cost": args.cost}
    opts |= {"beam_width": args.beam_width, "beam_depth": args.beam_depth}
    opts |= {"beam_top": args.beam_top, "lns_seconds": args.lns_seconds}
    kinds = (args.scheduler, "static")
    bad = _check_inputs(nets, archs)
    w, d = args.beam_width, args.beam_depth
    if min(w, d) < 1:
        bad = f"--beam-width and --beam-depth must be >= 1, got {w} and {d}"
    if args.beam_top < 0:
        bad = f"--beam-top must be >= 0 (0: every tiling), got {args.beam_top}"
    if not 0 <= args.lns_seconds < float("inf"):
        bad = f"--lns-seconds must be finite and >= 0, got {args.lns_seconds}"
    if bad:
        print(f"error: {bad}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    if args.mode == "explain":
        rows: list[Any] = bench_explain(nets, archs, args.workers, opts, args.plot, kinds)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=1)
        return 0
    if args.mode == "search":
        rows = bench_search(nets, archs, args.workers, opts, kinds)
    elif args.mode == "ablation":
        rows = bench_ablation(nets, archs, args.workers, opts)
    elif args.mode == "optimal":
        rows = bench_optimal(nets, archs, args.workers, opts, args.opt_ops, args.time_limit)
    elif args.mode == "speed":
        caps = [int(c) for c in args.caps.split(",")]
        rows = bench_speed(nets[0], archs[0], args.workers, caps, args.limit, opts, kinds)
    else:
        rows = bench_offline(nets, archs, args.workers, opts, args.sample, args.time_limit)
    head = f"{args.mode}: {len(rows)} rows in {time.perf_counter() - t0:.1f} s (--cost {args.cost})"
    if rows:
        publish(f"{head}\n\n{tabulate(rows, headers='keys', tablefmt='github')}", args.doc,
                args.block)  # fmt: skip
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
