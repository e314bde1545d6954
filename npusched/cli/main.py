"""The ``npusched`` command: convert, solve, compare."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from npusched.cli.args import int_list, mesh, positive_float, positive_int
from npusched.common.errors import InputError


def _cmd_convert_qaplib(args: argparse.Namespace) -> int:
    from npusched.io import read_qaplib, write_placement

    inst = read_qaplib(args.file)
    write_placement(inst, args.output)
    ref = inst.reference.optimum
    print(
        f"wrote {args.output}: {inst.n} tasks on a {inst.mesh.rows}x{inst.mesh.cols} mesh"
        + (f", reference optimum {ref}" if ref is not None else "")
    )
    return 0


def _cmd_convert_stream(args: argparse.Namespace) -> int:
    from npusched.io import read_stream, write_instance

    inst = read_stream(args.file, args.free_allocation)
    write_instance(inst, args.output)
    print(
        f"wrote {args.output}: {inst.n} CNs, {inst.graph.num_edges} edges, {inst.m} compute "
        f"cores, {len(inst.topology.links)} links, {len(inst.dram)} DRAM tensors, "
        f"{inst.source['allocation']} allocation; Stream's makespan "
        f"{inst.source.get('stream_makespan')}"
    )
    return 0


def _contended(inst, contention: bool):
    """The instance itself, or with ``--contention`` its routed form (transfers hold the links
    of their XY route, one at a time per link)."""
    if not contention:
        return inst
    from npusched.problem.scheduling.routed import RoutedInstance

    return RoutedInstance.from_mesh(inst)


def _cmd_generate(args: argparse.Namespace) -> int:
    from npusched.bench.generate import layered_dag
    from npusched.io import write_instance

    rows, cols = args.mesh
    inst = layered_dag(
        args.layers,
        args.width,
        (rows, cols),
        hop_latency=args.hop_latency,
        link_bandwidth=args.link_bandwidth,
        seed=args.seed,
    )
    write_instance(_contended(inst, args.contention), args.output)
    what = " with link contention" if args.contention else ""
    print(
        f"wrote {args.output}: {inst.n} μops, {inst.graph.num_edges} edges, "
        f"{rows}x{cols} mesh{what}"
    )
    return 0


def _cmd_convert(args: argparse.Namespace) -> int:
    from npusched.io import read_stg, write_instance

    if args.mesh:
        inst = read_stg(args.file, args.mesh[0] * args.mesh[1], mesh=args.mesh)
    else:
        inst = read_stg(args.file, args.cores)
    noc = {"hop_latency": args.hop_latency, "link_bandwidth": args.link_bandwidth}
    if args.edge_bytes or any(noc.values()):
        import numpy as np

        from npusched.problem import Accelerator, SchedulingInstance, UopGraph

        if not args.mesh:
            raise ValueError("--hop-latency, --link-bandwidth and --edge-bytes need --mesh")
        g = inst.graph
        graph = UopGraph(g.latency, g.src, g.dst, np.full(g.num_edges, args.edge_bytes), g.ids)
        rows, cols = args.mesh
        acc = Accelerator.mesh_grid(rows, cols, args.hop_latency, args.link_bandwidth)
        # the published optimum assumes free transfers: it is no reference for this variant
        source = {**inst.source, **noc, "edge_bytes": args.edge_bytes}
        inst = SchedulingInstance(graph, acc, name=inst.name, source=source)
    if args.contention and not (args.mesh and args.link_bandwidth):
        raise ValueError("--contention needs --mesh and --link-bandwidth")
    inst = _contended(inst, args.contention)
    write_instance(inst, args.output)
    print(
        f"wrote {args.output}: {inst.n} μops, {inst.graph.num_edges} edges, {inst.m} cores"
        + (f", reference optimum {inst.reference.optimum}" if inst.reference.optimum else "")
    )
    return 0


def _given(args: argparse.Namespace, **defaults: Any) -> dict[str, Any]:
    """The method options the user set: flags whose value differs from its default (a method
    rejects options it does not have)."""
    return {k: getattr(args, k) for k, v in defaults.items() if getattr(args, k) != v}


def _cmd_solve(args: argparse.Namespace) -> int:
    from npusched.io import load_instance, write_solution
    from npusched.methods import solve
    from npusched.problem.placement import PlacementInstance
    from npusched.verify import check

    inst = load_instance(args.instance, args.cores, args.free_allocation)
    res = solve(
        inst,
        args.method,
        args.backend,
        time_limit=args.time_limit,
        threads=args.threads,
        seed=args.seed,
        log=args.log,
        **_given(
            args, relaxed=False, precedence="eq18", weighted=False, beta=None, priority="blevel"
        ),
    )
    line = f"{inst.name}: {res.summary()}"
    if res.solution is not None:
        rep = check(inst, res.solution)
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
    _memory_note(inst, res.solution)
    if args.out:
        write_solution(args.out, inst, res, str(args.instance))
    if args.gantt and not isinstance(inst, PlacementInstance) and res.solution is not None:
        from npusched.plot import gantt

        title = f"{inst.name} — {res.method}/{res.backend}"
        gantt(inst, res.solution, args.gantt, title=title)  # type: ignore[arg-type]
    if args.heatmap and res.solution is not None:
        _heatmap(inst, res.solution, args.heatmap, args.weighted, f"{inst.name} — {res.method}")
    if args.anytime:
        from npusched.plot import anytime

        anytime([res], args.anytime, title=inst.name, reference=inst.reference.optimum)
    return 0


def _memory_note(inst, solution) -> None:
    """Routed instances: the peak data each core holds (the model has no memory limit)."""
    from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule

    if not isinstance(inst, RoutedInstance) or not isinstance(solution, RoutedSchedule):
        return
    from npusched.verify.scheduling.routed import memory_peaks

    cap = inst.source.get("memory_bits", {})
    parts = []
    for core, peak in zip(inst.accelerator.cores, memory_peaks(inst, solution), strict=True):
        size = cap.get(str(core.id))
        over = " OVER" if size and peak > size else ""
        parts.append(f"{core.id}: {peak}" + (f"/{size}{over}" if size else ""))
    print(
        f"peak {inst.data_unit} resident per core (no memory limit modelled): " + ", ".join(parts)
    )


def _heatmap(inst, solution, path, weighted: bool, title: str) -> None:
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


def _cmd_compare(args: argparse.Namespace) -> int:
    from npusched.bench.compare import Job, compare, summarize, table, write_csv

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
    jobs = [
        Job(
            str(p),
            name,
            backend,
            c if str(p).endswith(".stg") else None,
            args.time_limit,
            args.threads,
            args.seed,
            precedence=args.precedence if name == "timeindexed" else "eq18",
            solution_dir=args.solutions,
        )
        for p in args.instances
        for c in cores_list
        for name, backend in methods
    ]
    jobs = list(dict.fromkeys(jobs))  # JSON instances ignore --cores: drop duplicates
    rows = compare(jobs, workers=args.workers, progress=not args.quiet)
    if not args.quiet or not args.csv:
        print(table(rows))
    print()
    print(summarize(rows))
    if args.csv:
        write_csv(rows, args.csv)
    return 0


def _ints(text: str, n: int, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != n or min(values) < 1:
        raise ValueError(f"{what} needs {n} positive integers separated by commas, got {text!r}")
    return values


def _cmd_partition(args: argparse.Namespace) -> int:
    from npusched.arch import load_arch
    from npusched.io import write_instance
    from npusched.partition.api import partition_network, resolve_network

    net = resolve_network(args.network)
    arch = load_arch(args.arch)
    cn = None
    if args.cn:
        cn = {}
        for part in args.cn.split(","):
            key, _, value = part.partition("=")
            cn[key.strip().upper()] = int(_ints(value, 1, "--cn")[0])
    inst = partition_network(
        net,
        arch,
        args.scheme,
        s=_ints(args.s, 4, "--s") if args.s else None,  # type: ignore[arg-type]
        cn=cn,
        tiles=_ints(args.tiles, 4, "--tiles") if args.tiles else None,  # type: ignore[arg-type]
        loop_order=args.loop_order,
        align=not args.no_align,
    )
    write_instance(inst, args.output)
    print(
        f"wrote {args.output}: {inst.n} μops, {inst.graph.num_edges} edges on {inst.m} cores "
        f"({net.name}, {arch.name}, {args.scheme})"
    )
    return 0


def instance_info(inst) -> dict:
    """Size and workload figures of a scheduling (or routed) instance."""
    g = inst.graph
    d = inst.min_duration
    cp = int((g.heads(d) + d).max())
    work = int(d.sum())
    return {
        "name": inst.name,
        "uops": inst.n,
        "edges": g.num_edges,
        "cores": inst.m,
        "total_macs": inst.source.get("macs"),
        "total_edge_bytes": int(g.bytes.sum()),
        "critical_path": cp,
        "work": work,
        "work_per_core": work / inst.m,
        "lower_bound": inst.lower_bound(),
    }


def _cmd_info(args: argparse.Namespace) -> int:
    import json

    from npusched.io import load_instance
    from npusched.problem.placement import PlacementInstance

    inst = load_instance(args.instance, args.cores, args.free_allocation)
    if isinstance(inst, PlacementInstance):
        raise ValueError("info describes scheduling instances; this is a placement instance")
    info = instance_info(inst)
    if args.json:
        print(json.dumps(info))
    else:
        from tabulate import tabulate

        print(tabulate([(k.replace("_", " "), v) for k, v in info.items()]))
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from npusched.io import load_instance, read_solution
    from npusched.verify import check

    inst = load_instance(args.instance, args.cores, args.free_allocation)
    solution, data = read_solution(args.solution, inst)
    kind = data.get("kind", "dag_schedule")
    claimed = data.get("makespan") if kind == "dag_schedule" else data.get("noc_cost")
    rep = check(inst, solution, claimed)
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


CONTENTION = "transfers hold the links of their XY route, one at a time per link (routed)"
FREE = "Stream export: any core in each CN's possible_cores (default: Stream's allocation)"


def _flag(parser: argparse.ArgumentParser, name: str, text: str) -> None:
    parser.add_argument(name, action="store_true", help=text)


def build_parser() -> argparse.ArgumentParser:
    from npusched.methods import METHODS

    p = argparse.ArgumentParser(prog="npusched", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("convert", help="convert a benchmark file to an instance JSON")
    csub = c.add_subparsers(dest="format", required=True)
    stg = csub.add_parser("stg", help="Kasahara .stg task graph")
    stg.add_argument("file")
    cores = stg.add_mutually_exclusive_group(required=True)
    cores.add_argument("--cores", type=positive_int, help="identical cores without a mesh")
    cores.add_argument("--mesh", type=mesh, help="identical cores on a ROWSxCOLS mesh, e.g. 3x3")
    stg.add_argument("--hop-latency", type=int, default=0, help="cycles per hop (with --mesh)")
    stg.add_argument("--link-bandwidth", type=positive_float, help="bytes/cycle (with --mesh)")
    stg.add_argument("--edge-bytes", type=int, default=0, help="bytes on every edge (STG has none)")
    _flag(stg, "--contention", CONTENTION)
    stg.add_argument("-o", "--output", required=True)
    stg.set_defaults(func=_cmd_convert)
    qap = csub.add_parser("qaplib", help="QAPLIB .dat on a grid (Nugent): a placement instance")
    qap.add_argument("file")
    qap.add_argument("-o", "--output", required=True)
    qap.set_defaults(func=_cmd_convert_qaplib)
    stream = csub.add_parser("stream", help="Stream framework export (stream_instance/v1)")
    stream.add_argument("file")
    _flag(stream, "--free-allocation", FREE)
    stream.add_argument("-o", "--output", required=True)
    stream.set_defaults(func=_cmd_convert_stream)

    gen = sub.add_parser("generate", help="write a random instance")
    gsub = gen.add_subparsers(dest="kind", required=True)
    lay = gsub.add_parser("layered", help="layered DAG on a mesh with NoC delays")
    lay.add_argument("--layers", type=positive_int, default=6)
    lay.add_argument("--width", type=positive_int, default=4)
    lay.add_argument("--mesh", type=mesh, default=(3, 3), help="ROWSxCOLS (default 3x3)")
    lay.add_argument("--hop-latency", type=int, default=1, help="cycles per hop (default 1)")
    lay.add_argument("--link-bandwidth", type=positive_float, default=8.0, help="bytes/cycle")
    lay.add_argument("--seed", type=int, default=0)
    _flag(lay, "--contention", CONTENTION)
    lay.add_argument("-o", "--output", required=True)
    lay.set_defaults(func=_cmd_generate)

    s = sub.add_parser("solve", help="schedule one instance")
    s.add_argument("instance", help="instance .json, QAPLIB .dat, or .stg with --cores")
    s.add_argument("--cores", type=positive_int, help="number of cores for an .stg file")
    _flag(s, "--free-allocation", FREE)
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
        choices=["blevel", "asap", "alap"],
        help="list-scheduling priority (also the warm start)",
    )
    s.add_argument(
        "--weighted",
        action="store_true",
        help="twostage, joint: NoC cost in bytes x hops instead of hops (eq. 14)",
    )
    s.add_argument(
        "--beta",
        type=float,
        help="joint: minimise makespan + BETA x NoC cost (default: lexicographic)",
    )
    s.add_argument("--out", help="write the solution JSON here")
    s.add_argument("--gantt", help="write a Gantt chart PNG here")
    s.add_argument("--anytime", help="write the anytime curve PNG here")
    s.add_argument("--heatmap", help="write the mesh link-traffic heat map PNG here")
    s.add_argument("--log", action="store_true", help="show the solver's log")
    s.set_defaults(func=_cmd_solve)

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
    m.add_argument("--workers", type=positive_int, help="parallel jobs (default cores / threads)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument(
        "--precedence",
        default="eq18",
        choices=["eq18", "disaggregated"],
        help="precedence rows of timeindexed jobs",
    )
    m.add_argument("--csv", help="write the rows as CSV here")
    m.add_argument("--solutions", help="write every solution JSON into this folder")
    m.add_argument("--quiet", action="store_true", help="no progress bar; with --csv no table")
    m.set_defaults(func=_cmd_compare)
    pa = sub.add_parser("partition", help="cut a network into μops / CNs on an architecture")
    pa.add_argument("--network", required=True, help="zoo name, network .json or .onnx")
    pa.add_argument("--arch", required=True, help="architecture name or .json")
    pa.add_argument("--scheme", required=True, choices=["klotski", "stream", "flexer"])
    pa.add_argument("--s", help="klotski: μtensor H,W,IC,OC")
    _flag(pa, "--no-align", "klotski: do not round IC/OC up to the PE array")
    pa.add_argument("--cn", help="stream: CN loops, e.g. OY=1 or K=16,OY=4 (default OY=1)")
    pa.add_argument("--tiles", help="flexer: tile sizes OC,OH,OW,IC")
    pa.add_argument("--loop-order", default="K,OY,OX,C", help="flexer: loop order, outermost first")
    pa.add_argument("-o", "--output", required=True)
    pa.set_defaults(func=_cmd_partition)
    from npusched.cli.flexer import add_parser as add_flexer
    from npusched.cli.tile import add_parser as add_tile

    add_tile(sub)
    add_flexer(sub)
    i = sub.add_parser("info", help="size, MACs, bytes, critical path and work of an instance")
    i.add_argument("instance", help="instance .json, Stream export, or .stg with --cores")
    i.add_argument("--cores", type=positive_int, help="number of cores for an .stg file")
    _flag(i, "--free-allocation", FREE)
    _flag(i, "--json", "print one JSON object")
    i.set_defaults(func=_cmd_info)
    v = sub.add_parser("verify", help="check a solution JSON against its instance")
    v.add_argument("instance", help="instance .json (or .stg with --cores)")
    v.add_argument("solution", help="solution .json (DESIGN's contract)")
    v.add_argument("--cores", type=positive_int, help="number of cores for an .stg file")
    _flag(v, "--free-allocation", FREE)
    v.set_defaults(func=_cmd_verify)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as err:
        print(f"npusched: error: {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"npusched: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("npusched: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output went away (e.g. `| head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
