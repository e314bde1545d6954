"""The intra-core cost models side by side: the analytic roofline against ZigZag, per layer, and
both against the ZigZag latencies Stream exported (an independent third source).

    python -m npusched.bench.costmodel [--networks resnet18,resnet50,vgg16]
        [--archs klotski-4x4,flexer-arch5,stream-hetero] [--cache DIR] [--time-limit S]
        [--doc docs/results_costmodel.md] [--json rows.json]

**Per layer.** Each layer of each network is one tile on the first core of each architecture,
its data in that core's SRAM: the whole layer when its weights, inputs and outputs fit the
SRAM, else its output rows halved (then its output channels, then its input channels) until
they do (:func:`fitting_tile`). The analytic roofline (:class:`~npusched.costmodel.roofline.
Roofline`) and ZigZag (:class:`~npusched.costmodel.zigzag.ZigZagCost`, LOMA, cached on disk)
cost the same tile on the same generated core; the PE array's compute steps are shown beside.
The summary gives, per architecture and layer kind, the median of ``analytic / zigzag`` and the
share of layers within 30 %: the issue's goal is within 10 % on the median conv layer and
within 30 % on 90 % of layers.

**Stream's exports.** Every distinct computation node (CN) tile of each export in
``../shared/benchmarks/stream`` (its conv, pooling, add and gemm CNs; Stream's separate ReLU
nodes have no layer here) is rebuilt from the network the export names (``source.workload``:
``resnet18.onnx``, ZigZag's own file, the one Stream ran) and the CN's operand sizes, and
costed on the matching core of ``stream-hetero`` by both models; the export's ``cost_per_core``
latency is ZigZag's ``latency_total2`` from Stream's run. An export whose network ZigZag does
not ship (the TinyResNet-16 export's ``tiny_res.onnx``) is named as left out. CNs whose operands
Stream left in DRAM (``too_large_operands``) are costed by Stream with a DRAM level, which this
model (data in SRAM) does not have; they are counted apart.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

from tabulate import tabulate

from npusched.arch import Arch, CoreSpec, load_arch
from npusched.bench.doc import publish
from npusched.common.jsonio import read_json, write_json
from npusched.costmodel import CostModel, TileShape, cost_model
from npusched.costmodel.models import ComputeSteps
from npusched.costmodel.shape import psum_bytes
from npusched.partition.grid import layer_extents
from npusched.problem.scheduling.machine import capacities
from npusched.workload.layers import Layer
from npusched.workload.network import Network
from npusched.workload.zoo import load_network

SHARED = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "stream"


def tile_bytes(shape: TileShape, elem: int) -> int:
    """Bytes of a tile's weights, inputs and (partial) outputs."""
    size = shape.elements()
    return (size["W"] + size["I"]) * elem + size["O"] * psum_bytes(elem)


def fitting_tile(net: Network, layer: Layer, sram: int, elem: int) -> TileShape:
    """The layer as one tile, its output rows, then output and input channels halved until its
    data fits ``sram`` bytes (module docstring)."""
    k, y, x, c = layer_extents(layer, net.in_shapes(layer), net.shapes[layer.name])
    shape = TileShape.of(layer, k, y, x, c)
    while tile_bytes(shape, elem) > sram:
        if y > 1 and layer.op != "fc":
            y = -(-y // 2)
        elif k > 1:
            k = -(-k // 2)
        elif c > 1 and layer.op in ("conv", "fc"):
            c = -(-c // 2)
        else:
            break
        shape = TileShape.of(layer, k, y, x, c)
    return shape


def _cost(model: CostModel, shape: TileShape, core: CoreSpec) -> int | None:
    try:
        return model.latency(shape, core)
    except ValueError:
        return None


def layer_rows(net: Network, arch: Arch, models: dict[str, CostModel]) -> list[dict[str, Any]]:
    """One row per layer of ``net`` on the first core of ``arch`` (module docstring)."""
    core = arch.cores[0]
    elem = max(1, round(arch.element_bytes))
    sram = int(capacities(arch)[0])
    rows = []
    for layer in net.layers:
        shape = fitting_tile(net, layer, sram, elem)
        row: dict[str, Any] = {"network": net.name, "arch": arch.name, "layer": layer.name,
                               "kind": shape.kind, "type": layer_type(shape),
                               "tile": _tile(shape)}  # fmt: skip
        for name, model in models.items():
            row[name] = _cost(model, shape, core)
        rows.append(row)
    return rows


def layer_type(shape: TileShape) -> str:
    """A finer kind: convolutions by kernel and stride."""
    if shape.kind in ("conv", "dwconv"):
        return f"{shape.kind} {shape.FY}x{shape.FX}/{shape.SY}"
    return shape.kind


def _tile(shape: TileShape) -> str:
    return f"K{shape.K} C{shape.C} {shape.OY}x{shape.OX} F{shape.FY}x{shape.FX}"


def export_rows(
    models: dict[str, CostModel], arch: Arch, folder: Path = SHARED
) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per distinct CN tile of every Stream export in ``folder`` (module docstring), and
    a line for each export left out: its CN tiles are rebuilt from the network it names
    (``source.workload``), which must be one that ZigZag ships."""
    rows: list[dict[str, Any]] = []
    left_out: list[str] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = read_json(path)
        workload = str(data.get("source", {}).get("workload", ""))
        onnx_file = _zigzag_workload(workload) if workload else None
        if onnx_file is None:
            left_out.append(f"{path.name}: its workload {workload or '(unnamed)'} is not "
                            "among ZigZag's ONNX files, so its CN tiles cannot be rebuilt")
            continue
        rows += _export_cns(data, path.name, onnx_file, models, arch)
    return rows, left_out


def _export_cns(data: dict[str, Any], export: str, onnx_file: Path,
                models: dict[str, CostModel], arch: Arch) -> list[dict[str, Any]]:  # fmt: skip
    """The rows of one export: each distinct (tile, core, operands in DRAM) once."""
    from npusched.io.onnx_import import read_onnx

    net = read_onnx(onnx_file)
    by_name = {layer.name: layer for layer in net.layers}
    cores = {c.id: c for c in arch.cores}
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for cn in data["cns"]:
        layer = by_name.get(re.sub(r"[^A-Za-z0-9_.-]+", "_", cn["name"]).strip("_"))
        core_id, cost = next(iter(sorted(cn["cost_per_core"].items())))
        shape = _cn_shape(net, layer, cn) if layer is not None else None
        if shape is None:
            continue
        key = (shape.key(), int(core_id), bool(cost["too_large_operands"]))
        if key in seen:
            seen[key]["cns"] += 1
            continue
        core = cores[int(core_id)]
        row: dict[str, Any] = {"export": export, "cn": cn["name"], "kind": shape.kind,
                               "tile": _tile(shape), "core": core.name, "cns": 1,
                               "stream": int(cost["latency"]),
                               "dram": bool(cost["too_large_operands"])}  # fmt: skip
        for name, model in models.items():
            row[name] = _cost(model, shape, core)
        seen[key] = row
    return list(seen.values())


def _cn_shape(net: Network, layer: Layer, cn: dict[str, Any]) -> TileShape | None:
    """A CN's tile from its layer and operand sizes (Stream's CNs cut output rows, and the
    output channels of layers whose weights it splits over cores; 8-bit operands)."""
    ops = cn["operands"]
    out = ops["O"]["size_bits"] // 8
    k, y, x, c = layer_extents(layer, net.in_shapes(layer), net.shapes[layer.name])
    if layer.op in ("conv", "fc"):
        r, s = layer.kernel if layer.op == "conv" else (1, 1)
        k = ops["W"]["size_bits"] // 8 // (c * r * s) if "W" in ops else k
    rows = max(1, out // max(1, k * x))
    return TileShape.of(layer, k, min(rows, y), x, c)


def _zigzag_workload(name: str) -> Path | None:
    """A workload file shipped inside the ``zigzag`` package, if it is installed."""
    try:
        root = resources.files("zigzag").joinpath("inputs", "workload", name)
    except ModuleNotFoundError:
        return None
    return Path(str(root)) if root.is_file() else None


def _table(rows: list[dict[str, Any]]) -> str:
    return str(tabulate(rows, headers="keys", tablefmt="github"))


def ratio(a: int | None, b: int | None) -> float | None:
    """``a / b``, or ``None`` when either is missing or 0 (a model that gave no latency)."""
    return None if not a or not b else a / b


def summary(
    rows: list[dict[str, Any]], num: str, den: str, by: str = "kind"
) -> list[dict[str, Any]]:
    """Per architecture and ``by`` (``kind`` or ``type``): layers, median, least and largest
    of ``num / den`` and the share within 10 % and 30 %."""
    out = []
    groups: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        q = ratio(r.get(num), r.get(den))
        if q is not None:
            groups.setdefault((r.get("arch", r.get("core", "")), r[by]), []).append(q)
            groups.setdefault((r.get("arch", r.get("core", "")), "all"), []).append(q)
    for (arch, kind), qs in sorted(groups.items()):
        out.append({
            "arch": arch, by: kind, "layers": len(qs),
            "median": round(statistics.median(qs), 3),
            "min": round(min(qs), 2), "max": round(max(qs), 2),
            "within 10 %": f"{sum(abs(q - 1) <= 0.1 for q in qs) / len(qs):.0%}",
            "within 30 %": f"{sum(abs(q - 1) <= 0.3 for q in qs) / len(qs):.0%}",
        })  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m npusched.bench.costmodel``: cost every layer of ``--networks`` on the first
    core of each of ``--archs`` with the analytic roofline, the PE array's compute steps and
    (unless ``--no-zigzag``) ZigZag (``--cache``, ``--time-limit`` and ``--lpf`` for its
    search), and on ``stream-hetero`` Stream's exported CNs too (:func:`export_rows`, when the
    shared export is there); print the summaries and the per-layer table, write them into
    ``--doc``'s ``tables`` block and the rows to ``--json``.

    Parameters
    ----------
    argv
        The arguments of the module docstring's command line (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default="resnet18,resnet50,vgg16")
    ap.add_argument("--archs", default="klotski-4x4,flexer-arch5,stream-hetero")
    ap.add_argument("--cache", type=Path, help="ZigZag's cache folder (default: its own)")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per ZigZag call")
    ap.add_argument("--lpf", type=int, default=6, help="LOMA's loop prime factor limit")
    ap.add_argument("--no-zigzag", action="store_true", help="analytic against the export only")
    ap.add_argument("--doc", type=Path, help="write the tables into this Markdown file")
    ap.add_argument("--json", type=Path, help="write the rows to this file")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    exported: list[dict[str, Any]] = []
    left_out: list[str] = []
    for a in args.archs.split(","):
        arch = load_arch(a.strip())
        models: dict[str, CostModel] = {"analytic": cost_model("analytic", arch),
                                        "compute": ComputeSteps()}  # fmt: skip
        if not args.no_zigzag:
            models["zigzag"] = cost_model(
                "zigzag", arch, cache_dir=args.cache, time_limit=args.time_limit,
                lpf_limit=args.lpf,
            )  # fmt: skip
        for n in args.networks.split(","):
            rows += layer_rows(load_network(n.strip()), arch, models)
        if arch.name == "stream-hetero":
            exported, left_out = export_rows(models, arch)
    parts = [f"Measured in {time.perf_counter() - t0:.0f} s (ZigZag calls cached on disk).\n"]
    if not args.no_zigzag:
        parts += ["## Analytic over ZigZag, per architecture and layer kind\n",
                  _table(summary(rows, "analytic", "zigzag")),
                  "\n## The same by layer type (convolutions by kernel and stride)\n",
                  _table(summary(rows, "analytic", "zigzag", by="type"))]  # fmt: skip
    if exported:
        onchip = [r for r in exported if not r["dram"]]
        parts += ["\n## Stream's exported CNs: each model over Stream's latency\n",
                  "analytic:\n", _table(summary(onchip, "analytic", "stream"))]  # fmt: skip
        if not args.no_zigzag:
            parts += ["\nZigZag (ours):\n", _table(summary(onchip, "zigzag", "stream"))]
        parts.append("\n" + tabulate(exported, headers="keys", tablefmt="github"))
    if left_out:
        parts += ["\nLeft out:\n", *(f"- {why}" for why in left_out)]
    parts += ["\n## Per layer\n", tabulate(rows, headers="keys", tablefmt="github")]
    publish("\n".join(parts), args.doc)
    if args.json:
        write_json(args.json, {"layers": rows, "export": exported})
    return 0


if __name__ == "__main__":
    sys.exit(main())
