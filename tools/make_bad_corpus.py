"""Write the malformed-input corpus ``tests/data/bad/`` (issue 17) and its manifest.

    python tools/make_bad_corpus.py

Each case is a file and the command line that reads it (``{file}``: the case's path, ``{out}``:
an output path that must not be written, ``{good}``: a valid instance). Every case must end in
one ``npusched: error:`` line naming the file, exit 2, no traceback and nothing written
(``tests/cli/test_bad_corpus.py``). The files are derived from bundled valid ones (an instance,
a solution, LeNet, klotski-3x3) by one defect each, so each names one reason.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "bad"
GOOD = "instances/examples/twelve.json"

SOLVE = ["solve", "{file}", "--method", "list", "--out", "{out}"]
INFO = ["info", "{file}"]
VERIFY_SOLUTION = ["verify", GOOD, "{file}"]
STG = ["solve", "{file}", "--cores", "2", "--method", "list", "--out", "{out}"]
MSPCD = ["convert", "mspcd", "{file}", "--procs", "4", "-o", "{out}"]
QAP = ["solve", "{file}", "--method", "snake", "--out", "{out}"]
STREAM = ["convert", "stream", "{file}", "-o", "{out}"]
NETWORK = ["partition", "--network", "{file}", "--arch", "klotski-3x3", "--scheme", "stream",
           "-o", "{out}"]  # fmt: skip
ARCH = ["partition", "--network", "lenet", "--arch", "{file}", "--scheme", "stream", "-o", "{out}"]
PLACEMENT = ["solve", "{file}", "--method", "snake", "--out", "{out}"]

STG_OK = "2\n0 0 0\n1 2 1 0\n2 3 1 1\n3 0 1 2\n"
TD_OK = "3\n1 5 1 2 4\n2 6 1 3 2\n3 7 0\n"
DAT_OK = "2\n\n0 1\n1 0\n\n0 3\n3 0\n"


def _json(doc: Any) -> bytes:
    return json.dumps(doc, indent=1).encode()


def _edit(doc: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> bytes:
    d = copy.deepcopy(doc)
    change(d)
    return _json(d)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set ``a/0/b`` in a document (list indices as integers)."""

    def change(d: dict[str, Any]) -> None:
        *head, last = path.split("/")
        for key in head:
            d = d[int(key)] if isinstance(d, list) else d[key]  # type: ignore[assignment]
        if isinstance(d, list):
            d[int(last)] = value
        elif value is _DELETE:
            del d[last]
        else:
            d[last] = value

    return change


_DELETE = object()


def _columnar(inst: dict[str, Any]) -> dict[str, Any]:
    d = copy.deepcopy(inst)
    d["uops"] = {"id": [u["id"] for u in inst["uops"]],
                 "latency": [u["latency"] for u in inst["uops"]]}  # fmt: skip
    d["edges"] = {k: [e[k] for e in inst["edges"]] for k in ("src", "dst", "bytes")}
    return d


def instance_cases(inst: dict[str, Any]) -> dict[str, tuple[bytes, list[str]]]:
    col = _columnar(inst)
    text = _json(inst)
    first, second = inst["uops"][0]["id"], inst["uops"][1]["id"]
    cases: dict[str, bytes] = {
        "inst_empty.json": b"",
        "inst_garbage.json": b"this is not json\n",
        "inst_binary.json": bytes(range(256)) * 4,
        "inst_utf16.json": text.decode().encode("utf-16"),
        "inst_truncated.json": text[: len(text) // 2],
        "inst_nan.json": text.replace(b'"latency": 3', b'"latency": NaN', 1),
        "inst_infinity.json": text.replace(b'"latency": 3', b'"latency": Infinity', 1),
        "inst_deep.json": b"[" * 200_000 + b"]" * 200_000,
        "inst_top_list.json": b"[1, 2, 3]\n",
        "inst_no_uops.json": _edit(inst, _set("uops", _DELETE)),
        "inst_no_edges.json": _edit(inst, _set("edges", _DELETE)),
        "inst_uops_string.json": _edit(inst, _set("uops", "many")),
        "inst_latency_negative.json": _edit(inst, _set("uops/0/latency", -3)),
        "inst_latency_string.json": _edit(inst, _set("uops/0/latency", "30")),
        "inst_latency_fraction.json": _edit(inst, _set("uops/0/latency", 3.5)),
        "inst_latency_1e300.json": text.replace(b'"latency": 3', b'"latency": 1e300', 1),
        "inst_latency_2p70.json": _edit(inst, _set("uops/0/latency", 2**70)),
        "inst_latency_2p41.json": _edit(inst, _set("uops/0/latency", 2**41)),
        "inst_duplicate_id.json": _edit(inst, _set("uops/1/id", first)),
        "inst_edge_unknown_src.json": _edit(inst, _set("edges/0/src", "nobody")),
        "inst_edge_unknown_dst.json": _edit(inst, _set("edges/0/dst", "nobody")),
        "inst_self_loop.json": _edit(
            inst, lambda d: d["edges"].append({"src": first, "dst": first})
        ),
        "inst_cycle.json": _edit(
            inst,
            lambda d: d["edges"].extend(
                [{"src": first, "dst": second}, {"src": second, "dst": first}]
            ),
        ),
        "inst_bytes_negative.json": _edit(inst, _set("edges/0/bytes", -8)),
        "inst_bytes_2p70.json": _edit(inst, _set("edges/0/bytes", 2**70)),
        "inst_no_cores.json": _edit(inst, _set("cores", [])),
        "inst_per_core_short.json": _edit(inst, _set("uops/0/latency_per_core", [1])),
        "inst_format_wrong.json": _edit(inst, _set("format", "npusched/instance/v9")),
        "col_lengths_differ.json": _edit(col, lambda d: d["uops"]["latency"].pop()),
        "col_edge_unknown.json": _edit(col, lambda d: d["edges"]["src"].__setitem__(0, "x")),
        "col_latency_negative.json": _edit(col, lambda d: d["uops"]["latency"].__setitem__(0, -1)),
        "col_latency_float.json": _edit(col, lambda d: d["uops"]["latency"].__setitem__(0, 0.5)),
        "col_bytes_string.json": _edit(col, lambda d: d["edges"]["bytes"].__setitem__(0, "8")),
        "inst_not_gzip.json.gz": text,
        "inst_truncated.json.gz": gzip.compress(text)[:40],
    }
    out = {name: (data, SOLVE) for name, data in cases.items()}
    out["info_garbage.json"] = (b"{]", INFO)
    out["info_cycle.json"] = (cases["inst_cycle.json"], INFO)
    return out


def solution_cases(sol: dict[str, Any]) -> dict[str, tuple[bytes, list[str]]]:
    text = _json(sol)
    cases = {
        "sol_start_string.json": _edit(sol, _set("ops/0/start", "30")),
        "sol_start_fraction.json": _edit(sol, _set("ops/0/start", 3.9)),
        "sol_start_2p70.json": _edit(sol, _set("ops/0/start", 2**70)),
        "sol_core_string.json": _edit(sol, _set("ops/0/core", "zero")),
        "sol_no_ops.json": _edit(sol, _set("ops", _DELETE)),
        "sol_nan.json": text.replace(b'"start": 0', b'"start": NaN', 1),
        "sol_truncated.json": text[: len(text) // 3],
        "sol_binary.json": bytes(range(255, -1, -1)) * 4,
        "sol_unknown_op.json": _edit(sol, _set("ops/0/id", "nobody")),
    }
    return {name: (data, VERIFY_SOLUTION) for name, data in cases.items()}


def text_cases() -> dict[str, tuple[bytes, list[str]]]:
    return {
        "stg_empty.stg": (b"", STG),
        "stg_count.stg": (STG_OK.replace("2\n", "7\n", 1).encode(), STG),
        "stg_word.stg": (STG_OK.replace("1 2 1 0", "1 two 1 0").encode(), STG),
        "stg_negative.stg": (STG_OK.replace("1 2 1 0", "1 -2 1 0").encode(), STG),
        "stg_pred_range.stg": (STG_OK.replace("2 3 1 1", "2 3 1 9").encode(), STG),
        "stg_binary.stg": (bytes(range(128, 256)) * 8, STG),
        "stg_utf16.stg": (STG_OK.encode("utf-16"), STG),
        "stg_2p70.stg": (STG_OK.replace("1 2 1 0", f"1 {2**70} 1 0").encode(), STG),
        "td_count.td": (TD_OK.replace("3\n", "5\n", 1).encode(), MSPCD),
        "td_successor_back.td": (TD_OK.replace("2 6 1 3 2", "2 6 1 1 2").encode(), MSPCD),
        "td_successor_range.td": (TD_OK.replace("2 6 1 3 2", "2 6 1 9 2").encode(), MSPCD),
        "td_negative.td": (TD_OK.replace("1 5 1", "1 -5 1").encode(), MSPCD),
        "td_word.td": (TD_OK.replace("2 6 1", "2 six 1").encode(), MSPCD),
        "td_binary.td": (bytes(range(200, 256)) * 10, MSPCD),
        "td_utf16.td": (TD_OK.encode("utf-16"), MSPCD),
        "dat_negative_n.dat": (DAT_OK.replace("2\n", "-2\n", 1).encode(), QAP),
        "dat_missing.dat": (b"3\n\n0 1 2\n1 0\n", QAP),
        "dat_word.dat": (DAT_OK.replace("0 3", "0 x").encode(), QAP),
        "dat_binary.dat": (bytes(range(256)) * 2, QAP),
        "dat_utf16.dat": (DAT_OK.encode("utf-16"), QAP),
    }


def model_cases(net: dict[str, Any], arch: dict[str, Any]) -> dict[str, tuple[bytes, list[str]]]:
    stream = {"schema": "stream_instance/v1"}
    return {
        "net_no_layers.json": (_edit(net, _set("layers", _DELETE)), NETWORK),
        "net_unknown_op.json": (_edit(net, _set("layers/0/op", "teleport")), NETWORK),
        "net_truncated.json": (_json(net)[:200], NETWORK),
        "net_binary.json": (bytes(range(256)), NETWORK),
        "net_garbage.onnx": (b"not an onnx model at all" * 10, NETWORK),
        "net_empty.onnx": (b"", NETWORK),
        "arch_no_cores.json": (_edit(arch, _set("cores", _DELETE)), ARCH),
        "arch_memory_negative.json": (_edit(arch, _set("cores/0/memory_bytes", -1)), ARCH),
        "arch_unroll_string.json": (_edit(arch, _set("cores/0/pe_unroll", "wide")), ARCH),
        "arch_utf16.json": (_json(arch).decode().encode("utf-16"), ARCH),
        "stream_empty.json": (_json(stream), STREAM),
        "stream_garbage.json": (b'{"schema": "stream_instance/v1", "cores": [', STREAM),
        "placement_flow_nan.json": (
            b'{"format": "npusched/placement/v1", "name": "p", "mesh": {"rows": 1, "cols": 2}, '
            b'"flow": [[0, NaN], [1, 0]]}',
            PLACEMENT,
        ),
        "placement_not_square.json": (
            _json(
                {
                    "format": "npusched/placement/v1",
                    "name": "p",
                    "mesh": {"rows": 1, "cols": 2},
                    "flow": [[0, 1, 2], [1, 0]],
                }
            ),  # fmt: skip
            PLACEMENT,
        ),
    }


def main() -> None:
    inst = json.loads((ROOT / GOOD).read_text())
    from npusched.heuristics.scheduling.list_scheduling import list_schedule
    from npusched.io import read_instance, solution_to_dict
    from npusched.methods.scheduling import heuristic_result

    good = read_instance(ROOT / GOOD)
    res = heuristic_result("list", good, list_schedule(good))  # type: ignore[arg-type]
    sol = solution_to_dict(good, res, GOOD)
    net = json.loads((ROOT / "npusched/workload/zoo/lenet.json").read_text())
    arch = json.loads((ROOT / "npusched/arch/data/klotski-3x3.json").read_text())
    cases = instance_cases(inst) | solution_cases(sol) | text_cases() | model_cases(net, arch)
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    manifest = []
    for name, (data, args) in sorted(cases.items()):
        (OUT / name).write_bytes(data)
        manifest.append({"file": name, "args": args})
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(manifest)} malformed files in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
