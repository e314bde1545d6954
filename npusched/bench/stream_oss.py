"""Stream's own workloads on Stream's own accelerators, side by side with Stream 2.1.1.

    python -m npusched.bench.stream_oss [--time-limit 20|stream] [--threads 2] [--seed 0]
        [--stream-python PATH] [--workloads a,b] [--hardware x,y] [--json rows.json]
        [--doc docs/results_transformers.md] [--infeasible] [--mlp-tokens 512,1024]

For every shipped workload (``../shared/benchmarks/stream-oss/workload/*.onnx``: attention,
SwiGLU MLPs, CNNs) on every accelerator of the reference (``tpu_like_quad_core``,
``tpu_v7_ironwood``, ``simba``, ``eyeriss_like_quad_core``) that Stream accepts, it reads both
with npusched's own readers (the ONNX import, :mod:`npusched.arch.stream_yaml`), cuts the
workload into Stream's CNs (``--scheme stream``; every tensor at the ONNX file's element type,
``--precision workload``, as Stream prices it), searches the cut as Stream searches its
mappings (:func:`~npusched.search.cuts.search_cut`: cuts from the default one, each scheduled
by the memory-aware list, its allocations in ``--threads`` processes, and verified, the
shortest kept, for :data:`SEARCH_SHARE` of the pair's time), runs ``joint`` (the routed default,
on ``--threads`` threads) on the cut kept for the rest of ``--time-limit`` seconds, verifies
both, and prints per pair: Stream's cycles and wall time, the cut kept, the list's makespan on
the default cut and on the kept one, npusched's makespan, its proven bound (of the kept cut's
instance), their wall times, and the ratio to Stream. ``--time-limit stream`` compares at equal
time: the search gets :data:`SEARCH_SHARE` of Stream's wall time on the pair and ``joint``
what is left of it (less than :data:`~npusched.search.orchestrate.MIN_STAGE` left: the list's
schedule).

``--mlp-tokens 512,1024`` runs the LLaMA MLP at those lengths instead (:func:`mlp_at`: the
shipped 256-token file with its tokens dimension set; Stream's repository has such files, held
out of the shared set) on the accelerators given, npusched's list alone, verified, with no
Stream figure beside it (Stream 2.1.1 finds no allocation for most of them).

Stream's figures come from a live run when ``--stream-python`` names a Python ≥ 3.12 with
``stream-dse`` 2.1.1 installed (``python3.12 -m venv v && v/bin/pip install stream-dse==2.1.1
six``; ``stream.api.evaluate_mapping(hardware, onnx, out_dir)`` with the mapping Stream generates,
in a subprocess): then each pair's Stream run is timed here. Otherwise they are read from
``reference.json`` (recorded on a 2-core machine). Stream is never imported by npusched.

**Where npusched is longer.** Stream's cycles are the estimate of its steady-state model per
fused group, not a schedule. Where npusched's verified makespan exceeds it, the row names the
lower-bound term of npusched's machine model that already does (:func:`terms`): the off-chip
traffic (every DRAM tensor over the DRAM port's bandwidth), the work per core (the fastest
latencies over the compute cores) or the critical path; else ``bound`` where the bound ``joint``
proved does (:func:`longer_by`); or else ``schedule`` (npusched's bound is below Stream's
estimate, and its schedule is not).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from npusched.arch import load_arch
from npusched.bench.doc import publish
from npusched.common.errors import InputError
from npusched.common.jsonio import read_json
from npusched.methods import solve
from npusched.partition.api import partition_network, resolve_network
from npusched.search.cuts import cut_name, search_cut
from npusched.search.orchestrate import MIN_STAGE
from npusched.verify import check

SEARCH_SHARE = 0.8
"""Of a pair's time (``--time-limit``, or Stream's wall time), what the search of the cut
(:func:`~npusched.search.cuts.search_cut`) may take; ``joint`` gets the rest on the cut kept.
Set from one run of the 20-second bench at half and half (the code of commit 36da788): ``joint``
shortened the kept cut's list on 4 of the 22 pairs, by at most 3.5 %, and the search shortened
the default cut's list on 17, by up to 52 %; at Stream's wall time the search then ran out of
time before the shortest cut on the SwiGLU MLP 64 × 128 × 256 on ``simba``. Checked on Stream's
held-out workloads (``docs/results_transformers.md``)."""

SHARED = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "stream-oss"
LIVE = """
import json, sys, time, tempfile
t = time.perf_counter()
try:
    from stream.api import evaluate_mapping
    est = evaluate_mapping(sys.argv[1], sys.argv[2], sys.argv[3])
    out = {"cycles": float(est.cycles), "fused_groups": len(est.group_cycles),
           "stream_failed": None}
except Exception as err:
    out = {"cycles": None, "fused_groups": None, "stream_failed": type(err).__name__}
out["wall_s"] = round(time.perf_counter() - t, 1)
print("STREAM" + json.dumps(out))
"""


def stream_live(python: str, hardware: Path, onnx: Path, timeout: float = 900) -> dict[str, Any]:
    """Stream 2.1.1's estimate of one pair, run by ``python`` in a subprocess (its wall time
    includes the interpreter's start and Stream's imports, as the reference's does)."""
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        proc = subprocess.run([python, "-c", LIVE, str(hardware), str(onnx), out],
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("STREAM")]
        if not lines:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return {"cycles": None, "fused_groups": None, "stream_failed": tail,
                    "wall_s": round(time.perf_counter() - t0, 1)}  # fmt: skip
        row: dict[str, Any] = json.loads(lines[-1][len("STREAM"):])
        row["wall_s"] = round(time.perf_counter() - t0, 1)
        return row


def terms(inst: Any) -> dict[str, float]:
    """Lower-bound terms of a routed instance: ``dram`` (every DRAM tensor's bytes over the
    bandwidth of the one DRAM port every DRAM transfer holds, where there is one), ``work``
    (the fastest latencies summed over the cores) and ``critical path`` (the longest chain of
    fastest latencies)."""
    d = inst.min_duration
    ports = [ln for ln in inst.topology.links if ln.offchip and ln.receiver is None]
    data = sum(int(t.data) for t in inst.dram)  # each crosses the one port at least once
    return {
        "dram": data / ports[0].bandwidth if len(ports) == 1 else 0.0,
        "work": float(d.sum()) / inst.m,
        "critical path": float((inst.graph.heads(d) + d).max()),
    }


def longer_by(makespan: float, cycles: float | None, parts: dict[str, float],
              bound: float | None) -> str:  # fmt: skip
    """Where ``makespan`` exceeds Stream's ``cycles``: the largest of the :func:`terms` when it
    alone does, else ``bound`` when the proven bound does (the machine model's DRAM transfers
    to each core and loads together), else ``schedule``; ``""`` where it does not."""
    if cycles is None or makespan <= cycles:
        return ""
    name, value = max(parts.items(), key=lambda kv: kv[1])
    if value > cycles:
        return f"{name} {value:,.0f}"
    return f"bound {bound:,.0f}" if bound is not None and bound > cycles else "schedule"


def run_pair(workload: Path, hardware: Path, stream: dict[str, Any], time_limit: float | None,
             threads: int, seed: int, cost: str = "analytic") -> dict[str, Any]:  # fmt: skip
    """One workload on one accelerator (module docstring): the search of the cut for
    :data:`SEARCH_SHARE` of ``time_limit``, then ``joint`` on the cut kept for what is left of
    it where that is at least :data:`~npusched.search.orchestrate.MIN_STAGE` (``joint``'s own
    preparation takes about half a second on a 13 152-CN instance, so with less it would run
    past the time; else the list's schedule is the answer); ``time_limit`` ``None``: Stream's
    wall time on the pair. A ``ValueError`` before any work when Stream's entry has no wall time to
    compare at."""
    if time_limit is None and not isinstance(stream.get("wall_s"), int | float):
        raise ValueError("wall_s: --time-limit stream compares at Stream's wall time, and "
                         "Stream's entry for the pair gives none")  # fmt: skip
    t0 = time.perf_counter()
    total = float(stream["wall_s"]) if time_limit is None else time_limit
    cuts = search_cut(resolve_network(str(workload)), load_arch(hardware), threads=threads,
                      time_limit=SEARCH_SHARE * total, cost=cost, precision="workload",
                      verify=False)  # (verified below, outside the wall time)  # fmt: skip
    inst, listed = cuts.instance, cuts.result
    t_search = time.perf_counter() - t0
    t2 = time.perf_counter()
    left = total - t_search
    exact = listed if left < MIN_STAGE else solve(
        inst, "joint", time_limit=left, threads=threads, seed=seed,
        warm_start=listed.solution)  # fmt: skip
    t_exact = time.perf_counter() - t2
    ok = check(inst, listed.solution).ok and check(inst, exact.solution).ok
    best = min(float(listed.objective or np.inf), float(exact.objective or np.inf))
    parts = terms(inst)
    cycles = stream.get("cycles")
    bound = float(exact.bound) if exact.bound is not None else None
    return {
        "workload": workload.stem, "hardware": hardware.stem, "uops": inst.n,
        "stream_cycles": cycles, "stream_wall_s": stream.get("wall_s"),
        "list": float(listed.objective or np.inf), "makespan": best,
        "bound": bound,
        "status": exact.status.value, "verified": ok,
        "default_list": next((t.makespan for t in cuts.tried if not t.cn), None),
        "cut": cut_name(cuts.cn),
        "cuts_tried": len(cuts.tried),
        "wall_s": round(t_search + t_exact, 1), "search_s": round(t_search, 1),
        "joint_limit_s": round(left if left >= MIN_STAGE else 0.0, 1),
        "ratio": best / cycles if cycles else None,
        "longer_by": longer_by(best, cycles, parts, bound),
        "terms": {k: round(v) for k, v in parts.items()},
    }  # fmt: skip


def run_list_only(workload: Path, hardware: Path, stream: dict[str, Any],
                  cost: str = "analytic", threads: int = 1) -> dict[str, Any]:  # fmt: skip
    """A pair Stream finds no allocation for: npusched's memory-aware list alone (DRAM
    streaming and eviction where the weights do not fit on chip), verified."""
    t0 = time.perf_counter()
    inst = partition_network(resolve_network(str(workload)), load_arch(hardware), "stream",
                             precision="workload", cost=cost)  # fmt: skip
    t_part = time.perf_counter() - t0
    listed = solve(inst, "list", threads=threads)
    ok = listed.solution is not None and check(inst, listed.solution).ok
    return {
        "workload": workload.stem, "hardware": hardware.stem, "uops": inst.n,
        "stream_cycles": None, "stream_wall_s": stream.get("wall_s"),
        "stream_failed": stream.get("stream_failed"),
        "list": float(listed.objective) if listed.objective is not None else None,
        "makespan": float(listed.objective) if listed.objective is not None else None,
        "bound": float(listed.bound) if listed.bound is not None else None,
        "status": listed.status.value, "verified": ok,
        "wall_s": round(time.perf_counter() - t0, 1), "partition_s": round(t_part, 1),
        "ratio": None, "longer_by": "", "terms": {k: round(v) for k, v in terms(inst).items()},
    }  # fmt: skip


MLP = "swiglu_256_4096_14336"
"""Stream's LLaMA-3-8B MLP at 256 tokens, which :func:`mlp_at` sets to other lengths."""

NOT_RUN = "not run"
"""A row's ``stream_failed`` where Stream was not run on the pair (``--mlp-tokens``)."""


def mlp_at(tokens: int, data: Path, out_dir: Path) -> Path:
    """Stream's LLaMA MLP (:data:`MLP`) at ``tokens`` tokens, written into ``out_dir``: the
    same graph with the tokens dimension of its input, its activations and its output set to
    ``tokens`` (Stream's repository has the 512 to 4 096-token files, held out here; they differ
    from the shipped one in that dimension only)."""
    import onnx

    model = onnx.load(str(data / "workload" / f"{MLP}.onnx"), load_external_data=False)
    graph = model.graph
    for value in (*graph.input, *graph.output, *graph.value_info):
        dims = value.type.tensor_type.shape.dim
        if dims and dims[0].dim_value == 256:
            dims[0].dim_value = tokens
    path = out_dir / f"swiglu_{tokens}_4096_14336.onnx"
    onnx.save(model, str(path))
    return path


def _n(v: Any) -> str:
    return "–" if v is None else f"{v:,.0f}"


def table(rows: list[dict[str, Any]], live: bool) -> str:
    """The Markdown table of the rows, and a summary line."""
    src = "live" if live else "reference.json"
    lines = [
        f"| workload | hardware | cut | CNs | Stream cycles ({src}) | Stream wall (s) | "
        "list, default cut | list | npusched makespan | bound | status | npusched wall (s) | "
        "npusched / Stream | longer by | verified |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- |",
    ]
    for r in rows:
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.3f}"
        failed = r.get("stream_failed")
        stream = _n(r["stream_cycles"]) if not failed else (
            "not run" if failed == NOT_RUN else "no allocation")  # fmt: skip
        lines.append(
            f"| {r['workload']} | {r['hardware']} | {r.get('cut', 'default')} | {r['uops']} | "
            f"{stream} | {r['stream_wall_s'] if r['stream_wall_s'] is not None else '–'} | "
            f"{_n(r.get('default_list', r['list']))} | {_n(r['list'])} "
            f"| {_n(r['makespan'])} | {_n(r['bound'])} | {r['status']} | {r['wall_s']} | "
            f"{ratio} | {r['longer_by'] or '–'} | {r['verified']} |")  # fmt: skip
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    if ratios:
        shorter, near = sum(x < 1 for x in ratios), sum(x <= 1.25 for x in ratios)
        lines += ["", f"npusched's verified schedule is shorter than Stream's estimate on "
                      f"{shorter} of {len(ratios)} pairs and within 1.25 times it on {near}; "
                      f"geometric mean ratio "
                      f"{float(np.exp(np.mean(np.log(ratios)))):.3f}."]  # fmt: skip
    return "\n".join(lines) + "\n"


def _limit(text: str) -> float | None:
    """``--time-limit``: seconds, or ``stream`` (``None``: Stream's wall time, :func:`run_pair`)."""
    if text == "stream":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seconds or 'stream', not {text!r}") from None


def _tokens(text: str) -> list[int]:
    """``--mlp-tokens``: comma-separated positive token counts."""
    try:
        counts = [int(t) for t in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated integers, not {text!r}") from None
    if any(c < 1 for c in counts):
        raise argparse.ArgumentTypeError(f"token counts are positive, not {text!r}")
    return counts


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.stream_oss`` (module docstring)."""
    p = argparse.ArgumentParser(prog="python -m npusched.bench.stream_oss", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--time-limit", type=_limit, default=20.0,
                   help="seconds a pair (20): SEARCH_SHARE to search the cut, the rest to "
                   "joint on the cut kept; or 'stream': Stream's wall time on the pair")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stream-python", help="a Python with stream-dse 2.1.1: run Stream live")
    p.add_argument("--workloads", help="comma-separated workload names (default: all shipped)")
    p.add_argument("--hardware", help="comma-separated accelerators (default: the reference's)")
    p.add_argument("--data", type=Path, default=SHARED, help="the stream-oss folder")
    p.add_argument("--cost", default="analytic", choices=("analytic", "zigzag"),
                   help="the CNs' latencies: npusched's roofline or ZigZag on each core's own "
                   "description, as Stream prices them")
    p.add_argument("--infeasible", action="store_true",
                   help="also the pairs Stream finds no allocation for: npusched's list alone "
                   "(long: 10^5 CNs and more)")
    p.add_argument("--mlp-tokens", type=_tokens,
                   help="comma-separated token counts: the LLaMA MLP at each (mlp_at) "
                   "on the accelerators, npusched's list alone (no Stream figure)")
    p.add_argument("--json", type=Path, help="write the rows as JSON")
    p.add_argument("--doc", type=Path, help="Markdown file whose tables block is replaced")
    args = p.parse_args(argv)
    try:
        ref = read_json(args.data / "reference.json")
    except InputError as err:
        p.error(f"--data: {err}")
    wanted_w = set(args.workloads.split(",")) if args.workloads else None
    shipped = {e["workload"] for e in ref}
    if wanted_w and wanted_w - shipped:
        p.error(f"--workloads: no {', '.join(sorted(wanted_w - shipped))} in "
                f"{args.data / 'reference.json'} (there: {', '.join(sorted(shipped))})")
    wanted_h = set(args.hardware.split(",")) if args.hardware else None
    known = {f.stem for f in (args.data / "hardware").glob("*.yaml")}
    if wanted_h and wanted_h - known:
        p.error(f"--hardware: no {', '.join(sorted(wanted_h - known))} in "
                f"{args.data / 'hardware'} (there: {', '.join(sorted(known))})")
    rows = []
    if args.mlp_tokens:  # the list alone on the MLP at other lengths
        with tempfile.TemporaryDirectory() as tmp:
            for tokens in args.mlp_tokens:
                onnx = mlp_at(tokens, args.data, Path(tmp))
                for hw in sorted(wanted_h or {e["hardware"] for e in ref}):
                    row = run_list_only(onnx, args.data / "hardware" / f"{hw}.yaml",
                                        {"stream_failed": NOT_RUN}, args.cost, args.threads)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
        ref = []
    for entry in ref:
        if (wanted_w and entry["workload"] not in wanted_w) or (
                wanted_h and entry["hardware"] not in wanted_h):
            continue
        onnx = args.data / "workload" / f"{entry['workload']}.onnx"
        hw = args.data / "hardware" / f"{entry['hardware']}.yaml"
        stream = stream_live(args.stream_python, hw, onnx) if args.stream_python else entry
        if stream.get("stream_failed") and not args.infeasible:
            print(f"{entry['workload']} on {entry['hardware']}: Stream found no allocation "
                  f"({stream['stream_failed']}); skipped (--infeasible runs the list)",
                  flush=True)  # fmt: skip
            continue
        try:
            row = (run_list_only(onnx, hw, stream, args.cost, args.threads)
                   if stream.get("stream_failed")
                   else run_pair(onnx, hw, stream, args.time_limit, args.threads, args.seed,
                                 args.cost))  # fmt: skip
        except ValueError as err:  # a CN that fits no core: say so, go on
            print(f"{entry['workload']} on {entry['hardware']}: {err}", flush=True)
            continue
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    publish(table(rows, bool(args.stream_python)), args.doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
