"""Per layer on one core: the latency in Stream's core cost LUT beside npusched's ZigZag latency
of the same loops on the same core.

    python -m npusched.bench.stream_lut [--stream-python PY] [--luts DIR] [--workloads a,b.onnx]
        [--hardware x,y] [--time-limit 120] [--json rows.json] [--doc F]

**Stream's side.** Each workload (default: those of ``reference.json``; a name in the shared
``workload/`` folder or an ONNX path) on each accelerator (default: the reference's four) runs
through Stream 2.1.1 in a subprocess (``--stream-python``: ``stream.api.evaluate_mapping`` with
the mapping Stream generates), whose script reads each fused group's ``core_cost_lut.pickle``
(the LUT behind ``core_cost_lut.yaml``, which lacks the loops): per computation node and core,
the latency Stream schedules (ZigZag's ``latency_total2`` less the systolic drain), the node's
loops as ZigZag saw them (Stream's CN: the layer cut by its intra- and inter-core tiling), their
relations, the operand precisions and the spatial mapping ZigZag chose. A pair Stream cannot
allocate still gives the LUTs of the groups it costed. ``--luts DIR`` keeps the extracts (live)
or reads them (without ``--stream-python``). npusched never imports Stream.

**npusched's side.** The node's loops are named as npusched's partitioners name a tile
(:func:`tile_of`): a convolution's ``K, C, OY, OX, FY, FX`` and strides; a Gemm/MatMul
``(b, m, k, n)`` the 1×1 convolution of :mod:`npusched.partition.tensor` (a CNN's fc layer:
``fc``); pooling and Stream's reductions (a softmax's max and sum) a pooling window; any other
op an element-wise ``add`` of its inputs. :class:`~npusched.costmodel.zigzag.ZigZagCost` prices
it on the same core (by id) of :func:`~npusched.arch.load_arch`'s reading. A row per node and
core type.

**Why they differ.** Beyond 5 %, the tile is priced twice more: with Stream's operand precision
(npusched takes the accelerator's ``operand_precision.input`` for every tensor, Stream the ONNX
type), and then also with Stream's spatial mapping on npusched's description of the core
(:func:`price_mapped`; npusched's reader fixes ``K, C, OX, OY`` on ``D1, D2, …``). The cause is
the first of: ``no ZigZag form`` (npusched's analytic fallback); ``precision`` or ``spatial
unrolling`` (that re-pricing is within 5 %); ``cycles per op`` (Stream charges Exp, Silu and
Sigmoid 4 cycles an element); ``broadcast operand``; ``memory ports`` (on Stream's mapping,
ZigZag cuts the unrolling that npusched's registers and SRAM ports cannot feed); ``temporal
steps`` (ideal cycles differ); ``memory`` (they agree; stalls and loading differ: npusched gives
ZigZag registers and one SRAM, Stream the core's own levels).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from tabulate import tabulate

from npusched.arch import Arch, CoreSpec, load_arch
from npusched.bench.doc import publish
from npusched.common.jsonio import read_json
from npusched.costmodel import TileShape
from npusched.costmodel.shape import cycles_per_op
from npusched.costmodel.zigzag import ZigZagBreakdown, ZigZagCost
from npusched.costmodel.zigzag_input import Unsupported, accelerator_dict, layer_dict, tile_text
from npusched.costmodel.zigzag_run import attempt
from npusched.partition.api import priced_arch, resolve_network
from npusched.workload.network import Network

SHARED = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "stream-oss"
TOL = 0.05
MAC = {"Conv", "Gemm", "MatMul", "Einsum"}
LOOPS = ("K", "C", "OY", "OX", "FY", "FX")
LIVE = r"""
import glob, json, os, pickle, sys, time
t = time.perf_counter()
res = {"cycles": None, "stream_failed": None}
try:
    from stream.api import evaluate_mapping
    res["cycles"] = float(evaluate_mapping(*sys.argv[1:4]).cycles)
except Exception as err:
    res["stream_failed"] = type(err).__name__
res["wall_s"] = round(time.perf_counter() - t, 1)
plain = lambda d: {str(k): int(v) for k, v in getattr(d, "data", d).items()}
res["entries"] = entries = []
for path in sorted(glob.glob(os.path.join(sys.argv[3], "*", "core_cost_lut.pickle"))):
    with open(path, "rb") as fp:
        lut = pickle.load(fp)["lut"]
    for node, per_core in lut.items():
        for core, e in per_core.items():
            row = {"node": node.name, "type": str(node.type), "core_id": int(core.id),
                   "core": str(getattr(core, "name", core.id)), "latency": float(e.latency_total)}
            sizes = getattr(getattr(core, "operational_array", None), "dimension_sizes", {})
            row["array"] = [str(d) for d, n in sizes.items() if n > 1]
            if (cme := e.cme) is not None:
                L = cme.layer
                row.update(equation=str(L.equation), loop_sizes=plain(L.layer_dim_sizes),
                    relations=[[str(r.dim_1), r.coef_2, str(r.dim_2), r.coef_3, str(r.dim_3)]
                               for r in L.dimension_relations],
                    precision=plain(L.operand_precision),
                    spatial_mapping={str(a): {str(d): float(f) for d, f in m.items()}
                                     for a, m in L.spatial_mapping.items()},
                    utilization=float(cme.mac_spatial_utilization),
                    ideal_temporal_cycle=float(cme.ideal_temporal_cycle),
                    cycles_per_op=float(getattr(cme, "cycles_per_op", 1) or 1))
            entries.append(row)
print("STREAMLUT" + json.dumps(res))
"""


def stream_lut(python: str, hardware: Path, onnx: Path, timeout: float = 900) -> dict[str, Any]:
    """Stream's cost LUT entries of one pair (module docstring), from ``python`` in a
    subprocess: ``cycles``, ``stream_failed``, ``wall_s`` and ``entries``."""
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([python, "-c", LIVE, str(hardware), str(onnx), out],
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("STREAMLUT")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"cycles": None, "stream_failed": tail, "entries": []}
    result: dict[str, Any] = json.loads(lines[-1][len("STREAMLUT"):])
    return result


def parse_equation(equation: str) -> list[list[str]]:
    """The loop dimensions of each operand of Stream's equation, the output first:
    ``"O[d0][d2] = A[d0][d1] * B[d1][d2]"`` → ``[["D0", "D2"], ["D0", "D1"], ["D1", "D2"]]``."""
    ops = re.findall(r"([A-Za-z]\w*)((?:\[\w*\])+)", equation)
    return [[d.upper() for d in re.findall(r"\[(\w+)\]", dims)] for _, dims in ops]


def _windows(ins: list[list[str]], out: list[str], relations: list[list[Any]]
             ) -> list[tuple[str, str, int, int]]:  # fmt: skip
    """``(output dim, kernel dim, stride, dilation)`` of each relation ``r = s·o + d·f``, in the
    order the first input indexes them (rows, then columns)."""
    found = []
    for r, c2, d2, c3, d3 in relations:
        o, f, s, d = (d2, d3, c2, c3) if d2 in out else (d3, d2, c3, c2)
        found.append((ins[0].index(r) if r in ins[0] else 99, (o, f, int(s), int(d))))
    return [w for _, w in sorted(found)]


def tile_of(entry: dict[str, Any], cnn: bool) -> tuple[TileShape, dict[str, str]]:
    """The node's tile as npusched names it (module docstring; ``cnn``: the workload reads as a
    CNN) and the npusched loop of each of Stream's loops that has one."""
    size = entry["loop_sizes"]
    out, *ins = parse_equation(entry["equation"])
    rel = {r[0]: (r[2], r[4]) for r in entry["relations"]}
    flat = [{x for d in op for x in rel.get(d, (d,))} for op in ins]
    names: dict[str, str] = {}
    geo: dict[str, int] = {}
    for (o, f, st, dl), ax in zip(_windows(ins, out, entry["relations"])[::-1], "XY",
                                  strict=False):  # fmt: skip
        names[o], names[f], geo[f"S{ax}"], geo[f"D{ax}"] = f"O{ax}", f"F{ax}", st, dl
    reduced = [d for d in size if d not in out and d not in names]
    if entry["type"] in MAC and len(ins) >= 2:  # batch and heads fold into the rows
        kind = "conv" if cnn else "gemm"
        for d in (d for d in size if d not in names):
            a, b = d in flat[0], d in flat[1]
            names[d] = "C" if d not in out else "K" if b and not a else \
                "OY" if (a and b) or geo else "OX"
        if cnn and not geo and all(size[d] == 1 for d in size if names[d] in ("OY", "OX")):
            kind = "fc"
    elif reduced or geo:  # pooling, or a reduction over its last loops: a pooling window
        kind = "pool"
        names.update({d: "FX" if d == reduced[-1] else "FY" for d in reduced})
        names.update({d: "K" for d in out if d not in names})
    else:  # element-wise: N, C, H, W of a CNN, else [b…, m, n] as partition.tensor cuts it
        kind = "add"
        axes = ("OY", "K", "OY", "OX") if cnn and len(out) == 4 else \
            ("OY",) * (len(out) - 2) + ("OX", "K")[-len(out):]
        names.update(zip(out, axes, strict=True))
    p = {k: math.prod(v for d, v in size.items() if names.get(d) == k) for k in LOOPS}
    if kind == "fc":
        return TileShape("fc", p["K"], p["C"]), names
    return TileShape(kind, **p, **geo, inputs=len(ins) if kind == "add" else 1,
                     cycles_per_op=cycles_per_op(entry["type"]) if kind == "add" else 1), names


def stream_mapping(entry: dict[str, Any], names: dict[str, str]) -> dict[str, list[str]]:
    """Stream's spatial mapping of ``entry`` in npusched's loop names, on the array dimensions
    as npusched's ZigZag accelerator names them: ``D1, D2, …``, the core's dimensions of size
    above 1 (``entry["array"]``) in order."""
    out = {}
    for i, dim in enumerate(entry["array"]):
        factors: dict[str, int] = {}
        for d, f in entry["spatial_mapping"].get(dim, {}).items():
            if d in names and round(f) > 1:
                factors[names[d]] = factors.get(names[d], 1) * round(f)
        out[f"D{i + 1}"] = [f"{loop}, {f}" for loop, f in factors.items()]
    return out


def price_mapped(arch: Arch, core: CoreSpec, shape: TileShape,
                 mapping: dict[str, list[str]]) -> ZigZagBreakdown | None:  # fmt: skip
    """ZigZag's latency of ``shape`` on npusched's description of ``core`` (as
    :class:`~npusched.costmodel.zigzag.ZigZagCost` gives it) with the spatial ``mapping``
    instead of the core's fixed unrolling; ``None`` where ZigZag rejects it."""
    try:
        layer, zz = layer_dict(shape, core, arch)
    except Unsupported:
        return None
    zz["spatial_mapping"] = {d: [x for x in v if x.split(",")[0] in layer["loop_dims"]]
                             for d, v in mapping.items()}  # fmt: skip
    status, got = attempt(accelerator_dict(arch, core), layer, zz, "loma", 6)
    if status != "ok":
        return None
    keys = ("latency_total2", "ideal_temporal_cycle", "stall_slack_comb", "data_onloading_cycle",
            "data_offloading_cycle", "spatial_mapping")  # fmt: skip
    return ZigZagBreakdown(latency=math.ceil(got["latency_total2"] - 1e-9),
                           spatial_utilization=got["mac_spatial_utilization"],
                           source="Stream's spatial mapping", **{k: got[k] for k in keys})


def _price(model: ZigZagCost, shape: TileShape, core: CoreSpec) -> ZigZagBreakdown | None:
    try:
        return model.explain(shape, core)
    except ValueError:
        return None


def within(a: float | None, b: float) -> bool:
    """Whether ``a`` is within :data:`TOL` of ``b``."""
    return a is not None and b > 0 and abs(a / b - 1) <= TOL


def cause(e: dict[str, Any], base: ZigZagBreakdown | None, prec: ZigZagBreakdown | None,
          unrolled: ZigZagBreakdown | None, bits: tuple[int, int], broadcast: bool) -> str:
    """Why npusched's ``base`` latency is more than 5 % off Stream's (module docstring)."""
    s, util = e["latency"], e["utilization"]
    if base is None or within(base.latency, s):
        return "" if base else "npusched: ZigZag rejects the tile"
    if base.fallback:
        return f"no ZigZag form ({base.source.split(': ', 1)[-1][:60]})"
    if bits[0] != bits[1] and prec is not None and within(prec.latency, s):
        return f"precision (Stream {bits[0]}-bit operands, npusched {bits[1]})"
    if unrolled is not None and within(unrolled.latency, s):
        return f"spatial unrolling (utilisation Stream {util:.0%}, npusched " \
               f"{base.spatial_utilization or 0:.0%})"
    if e["cycles_per_op"] > 1:
        return f"cycles per op (Stream: {e['cycles_per_op']:g} per element)"
    if broadcast:
        return "broadcast operand (a row vector to Stream, a whole tile to npusched)"
    best = unrolled or prec or base
    if unrolled is not None and (unrolled.spatial_utilization or 0) < util - 1e-3:
        return f"memory ports (npusched's core feeds {unrolled.spatial_utilization:.0%} of " \
               f"Stream's unrolling, which fills {util:.0%})"
    ideal = best.ideal_temporal_cycle or 0
    if not within(ideal, e["ideal_temporal_cycle"]):
        return f"temporal steps (ideal cycles Stream {e['ideal_temporal_cycle']:,.0f}, " \
               f"npusched {ideal:,.0f})"
    return f"memory (stalls and loading: Stream {s - e['ideal_temporal_cycle']:,.0f}, " \
           f"npusched {best.latency - ideal:,.0f})"


def pair_rows(lut: dict[str, Any], workload: Path, hardware: Path, time_limit: float | None,
              cache: Path | None) -> list[dict[str, Any]]:  # fmt: skip
    """The rows of one pair: each node once per core type (module docstring)."""
    net = resolve_network(str(workload))
    arch = priced_arch(net, load_arch(hardware), "workload")
    cnn = isinstance(net, Network)
    cores = {c.id: c for c in arch.cores}
    models: dict[int, ZigZagCost] = {}

    def model(bits: int) -> ZigZagCost:
        if bits not in models:
            a: Arch = arch if bits == arch.precision_bits else replace(arch, precision_bits=bits)
            models[bits] = ZigZagCost(a, cache_dir=cache, time_limit=time_limit)
        return models[bits]

    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for e in lut["entries"]:
        if (key := (e["node"], e["core"])) in rows:
            rows[key]["cores"] += 1
            continue
        rows[key] = row = {"workload": workload.stem, "hardware": hardware.stem,
                           "node": e["node"], "type": e["type"], "core": e["core"], "cores": 1,
                           "stream": e["latency"], "npusched": None}  # fmt: skip
        if "equation" not in e or (core := cores.get(e["core_id"])) is None:
            row["cause"] = "not priced (Stream's ideal-cycle estimate, or no such core)"
            continue
        shape, names = tile_of(e, cnn)
        out, *ins = parse_equation(e["equation"])
        bits = max(v for k, v in e["precision"].items() if not k.startswith("O"))
        base = _price(model(arch.precision_bits), shape, core)
        ok = within(base.latency if base else None, e["latency"])
        prec = None if ok else _price(model(bits), shape, core)
        unrolled = None if ok else price_mapped(
            model(bits).arch, core, shape, stream_mapping(e, names))
        broadcast = shape.kind == "add" and any(set(i) < set(out) for i in ins)
        row.update(tile=tile_text(shape), npusched=base.latency if base else None,
                   prec=prec.latency if prec else None, within=ok,
                   unrolled=unrolled.latency if unrolled else None,
                   util_stream=e["utilization"],
                   util_npusched=base.spatial_utilization if base else None,
                   cause=cause(e, base, prec, unrolled, (bits, arch.precision_bits), broadcast))
    return list(rows.values())


def _r(a: Any, b: float) -> str:
    return "–" if not a or not b else f"{a / b:.2f}"


def _share(rows: list[dict[str, Any]], key: str | None = None) -> str:
    """``k of n (x %)`` rows within 5 % as priced, or as priced by ``key`` where it was."""
    k = sum(r["within"] or within(r.get(key or "") if key else None, r["stream"]) for r in rows)
    return f"{k} of {len(rows)} ({k / max(1, len(rows)):.0%})"


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table of the rows and the summary (share within 5 %, causes counted)."""
    body = [{"workload": r["workload"], "hardware": r["hardware"], "node": r["node"],
             "core": f"{r['core']} ×{r['cores']}", "tile": r.get("tile", "–"),
             "Stream": f"{r['stream']:,.0f}", "npusched": f"{r['npusched'] or 0:,}",
             "ratio": _r(r["npusched"], r["stream"]), "≤ 5 %": "yes" if r.get("within") else
             "no", "Stream's precision": _r(r.get("prec"), r["stream"]),
             "and unrolling": _r(r.get("unrolled"), r["stream"]),
             "cause": r.get("cause") or ""} for r in rows]  # fmt: skip
    priced = [r for r in rows if r["npusched"] is not None]
    causes = Counter(r["cause"].split(" (")[0] for r in rows if r.get("cause"))
    lines = [f"Within 5 % of Stream's LUT: {_share(priced)} layer × core rows; priced with "
             f"Stream's operand precision: {_share(priced, 'prec')}; and its spatial "
             f"unrolling too: {_share(priced, 'unrolled')}.",
             "Causes of the rows outside 5 %: " + ", ".join(f"{c} {k}" for c, k in
                                                          causes.most_common()) + "."]
    for hw in dict.fromkeys(r["hardware"] for r in priced):
        lines.append(f"- {hw}: {_share([r for r in priced if r['hardware'] == hw])} within 5 %")
    return "\n".join(lines) + "\n\n" + str(tabulate(body, headers="keys", tablefmt="github")) + "\n"


def _lut(args: argparse.Namespace, onnx: Path, h: str) -> dict[str, Any] | None:
    """A pair's LUT extract: run live (and kept under ``--luts``) or read from ``--luts``."""
    saved = args.luts / f"{onnx.stem}__{h}.json" if args.luts else None
    if not args.stream_python:
        return read_json(saved) if saved is not None and saved.is_file() else None
    lut = stream_lut(args.stream_python, args.data / "hardware" / f"{h}.yaml", onnx)
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(lut))
    return lut


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.stream_lut`` (module docstring)."""
    p = argparse.ArgumentParser(prog="python -m npusched.bench.stream_lut", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--stream-python", help="a Python with stream-dse 2.1.1: run Stream live")
    p.add_argument("--luts", type=Path, help="folder of LUT extracts: written live, else read")
    p.add_argument("--workloads", help="comma-separated names or ONNX paths (default: shipped)")
    p.add_argument("--hardware", help="comma-separated accelerators (default: the reference's)")
    p.add_argument("--data", type=Path, default=SHARED, help="the stream-oss folder")
    p.add_argument("--time-limit", type=float, default=120.0, help="seconds per ZigZag call")
    p.add_argument("--cache", type=Path, help="ZigZag's cache folder (default: its own)")
    p.add_argument("--json", type=Path, help="write the rows as JSON")
    p.add_argument("--doc", type=Path, help="Markdown file whose stream-lut block is replaced")
    args = p.parse_args(argv)
    if not args.stream_python and not args.luts:
        p.error("give --stream-python (run Stream) or --luts (read saved extracts)")
    ref = read_json(args.data / "reference.json")
    works = args.workloads.split(",") if args.workloads else dict.fromkeys(r["workload"]
                                                                           for r in ref)
    hws = args.hardware.split(",") if args.hardware else dict.fromkeys(r["hardware"] for r in ref)
    rows: list[dict[str, Any]] = []
    for w, h in ((w, h) for w in works for h in hws):
        onnx = Path(w) if w.endswith(".onnx") else args.data / "workload" / f"{w}.onnx"
        lut = _lut(args, onnx, h)
        if not lut or not lut.get("entries"):
            print(f"{onnx.stem} on {h}: no LUT ({(lut or {}).get('stream_failed') or 'none'})")
            continue
        rows += pair_rows(lut, onnx, args.data / "hardware" / f"{h}.yaml", args.time_limit,
                          args.cache)  # fmt: skip
        print(f"{onnx.stem} on {h}: {len(lut['entries'])} LUT entries", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    publish(table(rows), args.doc, block="stream-lut")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
