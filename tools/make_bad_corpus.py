"""Write the malformed-input corpus ``tests/data/bad/`` (issue 17) and its manifest.

    python tools/make_bad_corpus.py

Each case is a file and the command line that reads it (``{file}``: the case's path, ``{out}``:
an output path that must not be written). Every case must end in one ``npusched: error:`` line
naming the file, exit 2, no traceback and nothing written (``tests/cli/test_bad_corpus.py``).
The files are derived from valid ones (an instance on three cores, one on a mesh and its routed
form, a solution, a small Stream export, LeNet, klotski-3x3, a one-convolution ONNX model) by one
defect each, so each names one reason. The valid Stream export and its solution are written to
``tests/data/good/`` (the corpus's commands and the reader fuzzer read them). Running the script
again writes the same bytes.
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
GOOD_DIR = ROOT / "tests" / "data" / "good"
GOOD = "instances/examples/twelve.json"
GOOD_STREAM = "tests/data/good/stream_mini.json"
GOOD_STREAM_SOLUTION = "tests/data/good/stream_mini_solution.json"

SOLVE = ["solve", "{file}", "--method", "list", "--out", "{out}"]
INFO = ["info", "{file}"]
VERIFY_INSTANCE = ["verify", "{file}", GOOD]  # the instance is read (and refused) first
VERIFY_SOLUTION = ["verify", GOOD, "{file}"]
VERIFY_ROUTED = ["verify", GOOD_STREAM, "{file}"]
STG = ["solve", "{file}", "--cores", "2", "--method", "list", "--out", "{out}"]
CONVERT_STG = ["convert", "stg", "{file}", "--cores", "2", "-o", "{out}"]
INFO_STG = ["info", "{file}", "--cores", "2"]
VERIFY_STG = ["verify", "{file}", GOOD, "--cores", "2"]
MSPCD = ["convert", "mspcd", "{file}", "--procs", "4", "-o", "{out}"]
SOLVE_MSPCD = ["solve", "{file}", "--cores", "4", "--method", "list", "--out", "{out}"]
QAP = ["solve", "{file}", "--method", "snake", "--out", "{out}"]
CONVERT_QAP = ["convert", "qaplib", "{file}", "-o", "{out}"]
STREAM = ["convert", "stream", "{file}", "-o", "{out}"]
NETWORK = ["partition", "--network", "{file}", "--arch", "klotski-3x3", "--scheme", "stream",
           "-o", "{out}"]  # fmt: skip
ARCH = ["partition", "--network", "lenet", "--arch", "{file}", "--scheme", "stream", "-o", "{out}"]
TILE_NETWORK = ["tile", "--network", "{file}", "--arch", "tso-nmp-16", "--workers", "1"]
TILE_ARCH = ["tile", "--network", "lenet", "--arch", "{file}", "--workers", "1"]
FLEXER_NETWORK = ["flexer", "--network", "{file}", "--arch", "arch1", "--workers", "1"]
FLEXER_ARCH = ["flexer", "--network", "lenet", "--arch", "{file}", "--workers", "1"]
ORCHESTRATE = ["orchestrate", "--network", "{file}", "--arch", "klotski-3x3", "--budget", "2",
               "--out-dir", "{out}"]  # fmt: skip
ORCHESTRATE_ARCH = ["orchestrate", "--network", "lenet", "--arch", "{file}", "--budget", "2",
                    "--out-dir", "{out}"]  # fmt: skip
PLACEMENT = ["solve", "{file}", "--method", "snake", "--out", "{out}"]

STG_OK = "2\n0 0 0\n1 2 1 0\n2 3 1 1\n3 0 1 2\n"
TD_OK = "3\n1 5 1 2 4\n2 6 1 3 2\n3 7 0\n"
DAT_OK = "2\n\n0 1\n1 0\n\n0 3\n3 0\n"
DIGITS = "9" * 5000
"""An integer longer than Python's int() reads by default (4300 digits)."""

Cases = dict[str, tuple[bytes, list[str]]]


def _json(doc: Any) -> bytes:
    return json.dumps(doc, indent=1).encode()


_DELETE = object()


def _set(path: str, value: Any) -> Callable[[Any], None]:
    """Set (or, with ``_DELETE``, delete) ``a/0/b`` in a document (list indices as integers)."""

    def change(d: Any) -> None:
        *head, last = path.split("/")
        for key in head:
            d = d[int(key)] if isinstance(d, list) else d[key]
        if isinstance(d, list):
            if value is _DELETE:
                del d[int(last)]
            else:
                d[int(last)] = value
        elif value is _DELETE:
            del d[last]
        else:
            d[last] = value

    return change


def _edit(doc: Any, *changes: Callable[[Any], None]) -> bytes:
    d = copy.deepcopy(doc)
    for change in changes:
        change(d)
    return _json(d)


def _token(doc: Any, path: str, token: str) -> bytes:
    """``doc`` with the value at ``path`` written as the raw JSON text ``token`` (``NaN``,
    ``1e999``, an integer of 5000 digits: what :func:`json.dumps` would not write)."""
    text = _edit(doc, _set(path, "\x00token"))
    return text.replace(b'"\\u0000token"', token.encode(), 1)


def _columnar(inst: dict[str, Any]) -> dict[str, Any]:
    d = copy.deepcopy(inst)
    d["uops"] = {"id": [u["id"] for u in inst["uops"]],
                 "latency": [u["latency"] for u in inst["uops"]]}  # fmt: skip
    d["edges"] = {k: [e[k] for e in inst["edges"]] for k in ("src", "dst", "bytes")}
    return d


def instance_cases(inst: dict[str, Any], mesh: dict[str, Any], routed: dict[str, Any]) -> Cases:
    col = _columnar(inst)
    text = _json(inst)
    first, second = inst["uops"][0]["id"], inst["uops"][1]["id"]
    out_doc = _with_outputs(routed)
    cases: dict[str, bytes] = {
        "inst_empty.json": b"",
        "inst_garbage.json": b"this is not json\n",
        "inst_binary.json": bytes(range(256)) * 4,
        "inst_utf16.json": text.decode().encode("utf-16"),
        "inst_truncated.json": text[: len(text) // 2],
        "inst_nan.json": _token(inst, "uops/0/latency", "NaN"),
        "inst_infinity.json": _token(inst, "uops/0/latency", "Infinity"),
        "inst_latency_1e999.json": _token(inst, "uops/0/latency", "1e999"),
        "inst_latency_digits.json": _token(inst, "uops/0/latency", DIGITS),
        "inst_deep.json": b"[" * 200_000 + b"]" * 200_000,
        "inst_deep_value.json": _token(inst, "source", '{"a": ' * 100_000 + "1" + "}" * 100_000),
        "inst_top_list.json": b"[1, 2, 3]\n",
        "inst_no_uops.json": _edit(inst, _set("uops", _DELETE)),
        "inst_no_edges.json": _edit(inst, _set("edges", _DELETE)),
        "inst_uops_string.json": _edit(inst, _set("uops", "many")),
        "inst_latency_negative.json": _edit(inst, _set("uops/0/latency", -3)),
        "inst_latency_string.json": _edit(inst, _set("uops/0/latency", "30")),
        "inst_latency_fraction.json": _edit(inst, _set("uops/0/latency", 3.5)),
        "inst_latency_integral_float.json": _edit(inst, _set("uops/0/latency", 3.0)),
        "inst_latency_1e300.json": _token(inst, "uops/0/latency", "1e300"),
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
        "inst_duplicate_core.json": _edit(inst, _set("cores/1/id", 0)),
        "inst_per_core_short.json": _edit(inst, _set("uops/0/latency_per_core", [1])),
        "inst_format_wrong.json": _edit(inst, _set("format", "npusched/instance/v9")),
        "mesh_bandwidth_nan.json": _token(mesh, "mesh/link_bandwidth", "NaN"),
        "mesh_bandwidth_zero.json": _edit(mesh, _set("mesh/link_bandwidth", 0)),
        "mesh_hop_negative.json": _edit(mesh, _set("mesh/hop_latency", -1)),
        "mesh_rows_float.json": _edit(mesh, _set("mesh/rows", 2.0)),
        "mesh_delay_model.json": _edit(mesh, _set("mesh/delay_model", "teleport")),
        "mesh_coord_outside.json": _edit(mesh, _set("cores/3/coord", [5, 5])),
        "routed_unknown_link.json": _edit(routed, _set("topology/routes/0/links", [999])),
        "routed_allowed_unknown.json": _edit(routed, _set("uops/0/allowed_cores", [99])),
        "routed_bandwidth_negative.json": _edit(routed, _set("topology/links/0/bandwidth", -8)),
        "routed_output_negative.json": _edit(out_doc, _set("uops/0/output", -8)),
        "routed_output_fraction.json": _edit(out_doc, _set("uops/0/output", 8.5)),
        "routed_output_string.json": _edit(out_doc, _set("uops/0/output", "8")),
        "routed_output_missing.json": _edit(out_doc, lambda d: d["uops"][1].pop("output")),
        "routed_output_below_edge.json": _edit(out_doc, _set("uops/0/output", 1)),
        "inst_output_no_topology.json": _edit(inst, _set("uops/0/output", 8)),
        "col_lengths_differ.json": _edit(col, lambda d: d["uops"]["latency"].pop()),
        "col_edge_unknown.json": _edit(col, lambda d: d["edges"]["src"].__setitem__(0, "x")),
        "col_latency_negative.json": _edit(col, lambda d: d["uops"]["latency"].__setitem__(0, -1)),
        "col_latency_float.json": _edit(col, lambda d: d["uops"]["latency"].__setitem__(0, 0.5)),
        "col_latency_ragged.json": _edit(
            col, lambda d: d["uops"]["latency"].__setitem__(0, [1, 2])
        ),
        "col_bytes_string.json": _edit(col, lambda d: d["edges"]["bytes"].__setitem__(0, "8")),
        "col_latency_2p70.json": _edit(col, lambda d: d["uops"]["latency"].__setitem__(0, 2**70)),
        "inst_not_gzip.json.gz": text,
        "inst_truncated.json.gz": gzip.compress(text, mtime=0)[:40],
    }
    out = {name: (data, SOLVE) for name, data in cases.items()}
    out["info_garbage.json"] = (b"{]", INFO)
    out["info_cycle.json"] = (cases["inst_cycle.json"], INFO)
    out["info_columnar_ragged.json"] = (cases["col_latency_ragged.json"], INFO)
    out["verify_instance_nan.json"] = (cases["inst_nan.json"], VERIFY_INSTANCE)
    out["verify_instance_cycle.json"] = (cases["inst_cycle.json"], VERIFY_INSTANCE)
    return out


def _with_outputs(routed: dict[str, Any]) -> dict[str, Any]:
    """The routed instance with every μop's ``output`` 4 units above its largest edge (its edges
    then carry what their consumers read of it)."""
    d = copy.deepcopy(routed)
    for u in d["uops"]:
        sent = [e.get("bytes", 0) for e in d["edges"] if e["src"] == u["id"]]
        u["output"] = max(sent, default=0) + 4
    return d


def solution_cases(sol: dict[str, Any], routed_sol: dict[str, Any]) -> Cases:
    text = _json(sol)
    op0 = sol["ops"][0]
    cases = {
        "sol_start_string.json": _edit(sol, _set("ops/0/start", "30")),
        "sol_start_fraction.json": _edit(sol, _set("ops/0/start", 3.9)),
        "sol_start_negative.json": _edit(sol, _set("ops/0/start", -1)),
        "sol_start_2p70.json": _edit(sol, _set("ops/0/start", 2**70)),
        "sol_start_1e999.json": _token(sol, "ops/0/start", "1e999"),
        "sol_end_string.json": _edit(sol, _set("ops/0/end", "9")),
        "sol_core_string.json": _edit(sol, _set("ops/0/core", "zero")),
        "sol_no_ops.json": _edit(sol, _set("ops", _DELETE)),
        "sol_ops_object.json": _edit(sol, _set("ops", {"id": 1})),
        "sol_duplicate_op.json": _edit(sol, lambda d: d["ops"].append(dict(op0))),
        "sol_missing_op.json": _edit(sol, _set("ops/0", _DELETE)),
        "sol_nan.json": _token(sol, "ops/0/start", "NaN"),
        "sol_truncated.json": text[: len(text) // 3],
        "sol_binary.json": bytes(range(255, -1, -1)) * 4,
        "sol_utf16.json": text.decode().encode("utf-16"),
        "sol_top_list.json": b"[]",
        "sol_unknown_op.json": _edit(sol, _set("ops/0/id", "nobody")),
        "sol_corrupt.json.gz": gzip.compress(text, mtime=0)[:-12],
    }
    out = {name: (data, VERIFY_SOLUTION) for name, data in cases.items()}
    routed = {
        "solr_transfers_object.json": _edit(routed_sol, _set("transfers", {"src": 0})),
        "solr_transfer_unknown_core.json": _edit(routed_sol, _set("transfers/0/dst_core", 99)),
        "solr_transfer_start_word.json": _edit(routed_sol, _set("transfers/0/start", "soon")),
        "solr_transfer_twice.json": _edit(
            routed_sol, lambda d: d["transfers"].append(dict(d["transfers"][0]))
        ),
        "solr_memory_object.json": _edit(routed_sol, _set("memory", {"core": 0})),
        "solr_memory_unknown_tensor.json": _edit(routed_sol, _set("memory/0/tensor", "nobody")),
        "solr_memory_bits_negative.json": _edit(routed_sol, _set("memory/0/bits", -5)),
        "solr_memory_alloc_word.json": _edit(routed_sol, _set("memory/0/alloc", "early")),
        "solr_move_bad_kind.json": _edit(
            routed_sol, lambda d: d["transfers"].append(_move(d, kind="teleport"))
        ),
        "solr_move_missing_end.json": _edit(
            routed_sol,
            lambda d: d["transfers"].append({k: v for k, v in _move(d).items() if k != "end"}),
        ),
        "solr_move_unknown_core.json": _edit(
            routed_sol, lambda d: d["transfers"].append(_move(d, dst_core=99))
        ),
        "solr_move_wrong_way.json": _edit(
            routed_sol, lambda d: d["transfers"].append(_move(d, kind="evict"))
        ),
    }
    return out | {name: (data, VERIFY_ROUTED) for name, data in routed.items()}


def _move(sol: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A well-formed re-fetch record of the first op's output into core 0 (``changes`` break
    it)."""
    rec = {"kind": "refetch", "src": "dram", "tensor": sol["ops"][0]["id"], "src_core": 2,
           "dst_core": 0, "bits": 8, "links": [], "start": 0, "end": 1}  # fmt: skip
    return rec | changes


def text_cases() -> Cases:
    stg_cycle = STG_OK.replace("1 2 1 0", "1 2 1 2")
    return {
        "stg_empty.stg": (b"", STG),
        "stg_count.stg": (STG_OK.replace("2\n", "7\n", 1).encode(), STG),
        "stg_negative_count.stg": (STG_OK.replace("2\n", "-2\n", 1).encode(), CONVERT_STG),
        "stg_word.stg": (STG_OK.replace("1 2 1 0", "1 two 1 0").encode(), STG),
        "stg_negative.stg": (STG_OK.replace("1 2 1 0", "1 -2 1 0").encode(), STG),
        "stg_pred_range.stg": (STG_OK.replace("2 3 1 1", "2 3 1 9").encode(), STG),
        "stg_cycle.stg": (stg_cycle.encode(), CONVERT_STG),
        "stg_binary.stg": (bytes(range(128, 256)) * 8, STG),
        "stg_utf16.stg": (STG_OK.encode("utf-16"), STG),
        "stg_2p70.stg": (STG_OK.replace("1 2 1 0", f"1 {2**70} 1 0").encode(), STG),
        "stg_digits.stg": (STG_OK.replace("1 2 1 0", f"1 {DIGITS} 1 0").encode(), CONVERT_STG),
        "stg_info_utf16.stg": (STG_OK.encode("utf-16"), INFO_STG),
        "stg_verify_word.stg": (STG_OK.replace("1 2 1 0", "1 two 1 0").encode(), VERIFY_STG),
        "td_count.td": (TD_OK.replace("3\n", "5\n", 1).encode(), MSPCD),
        "td_zero_count.td": (TD_OK.replace("3\n", "0\n", 1).encode(), MSPCD),
        "td_successor_back.td": (TD_OK.replace("2 6 1 3 2", "2 6 1 1 2").encode(), MSPCD),
        "td_successor_range.td": (TD_OK.replace("2 6 1 3 2", "2 6 1 9 2").encode(), MSPCD),
        "td_negative.td": (TD_OK.replace("1 5 1", "1 -5 1").encode(), MSPCD),
        "td_amount_2p41.td": (TD_OK.replace("1 5 1 2 4", f"1 5 1 2 {2**41}").encode(), MSPCD),
        "td_word.td": (TD_OK.replace("2 6 1", "2 six 1").encode(), MSPCD),
        "td_digits.td": (TD_OK.replace("2 6 1", f"2 {DIGITS} 1").encode(), SOLVE_MSPCD),
        "td_binary.td": (bytes(range(200, 256)) * 10, MSPCD),
        "td_utf16.td": (TD_OK.encode("utf-16"), SOLVE_MSPCD),
        "dat_negative_n.dat": (DAT_OK.replace("2\n", "-2\n", 1).encode(), QAP),
        "dat_huge_n.dat": (DAT_OK.replace("2\n", "100000\n", 1).encode(), CONVERT_QAP),
        "dat_missing.dat": (b"3\n\n0 1 2\n1 0\n", QAP),
        "dat_word.dat": (DAT_OK.replace("0 3", "0 x").encode(), QAP),
        "dat_2p70.dat": (DAT_OK.replace("0 3\n3 0", f"0 {2**70}\n{2**70} 0").encode(), QAP),
        "dat_not_grid.dat": (b"3\n\n0 5 1\n5 0 7\n1 7 0\n\n0 2 9\n2 0 4\n9 4 0\n", CONVERT_QAP),
        "dat_empty.dat": (b"", CONVERT_QAP),
        "dat_binary.dat": (bytes(range(256)) * 2, QAP),
        "dat_utf16.dat": (DAT_OK.encode("utf-16"), CONVERT_QAP),
    }


def stream_cases(stream: dict[str, Any]) -> Cases:
    cases = {
        "stream_empty.json": _json({"schema": "stream_instance/v1"}),
        "stream_garbage.json": b'{"schema": "stream_instance/v1", "cores": [',
        "stream_utf16.json": _json(stream).decode().encode("utf-16"),
        "stream_size_bits_string.json": _edit(stream, _set("cns/0/operands/W/size_bits", "big")),
        "stream_memory_string.json": _edit(stream, _set("cores/0/top_memories/0/size_bits", "big")),
        "stream_latency_2p70.json": _edit(stream, _set("cns/0/cost_per_core/0/latency", 2**70)),
        "stream_unknown_core.json": _edit(stream, _set("cns/2/possible_cores", [7])),
        "stream_no_cost.json": _edit(stream, _set("cns/2/cost_per_core", {})),
        "stream_edge_unknown.json": _edit(stream, _set("edges/0/src", 99)),
        "stream_route_unknown_link.json": _edit(stream, _set("routes/0->1", [99])),
        "stream_bandwidth_zero.json": _edit(stream, _set("links/0/bandwidth_bits_per_cycle", 0)),
        "stream_bandwidth_1e999.json": _token(stream, "links/0/bandwidth_bits_per_cycle", "1e999"),
        "stream_receiver_word.json": _edit(stream, _set("links/0/receiver", "Some")),
        "stream_duplicate_idx.json": _edit(stream, _set("cns/1/idx", 0)),
        "stream_allocation_outside.json": _edit(stream, _set("cns/2/chosen_core", 0)),
        "stream_cycle.json": _edit(
            stream, lambda d: d["edges"].append({"src": 2, "dst": 0, "bits": 8})
        ),
    }
    # memories are capacities by default: a core without a size, or too small for a CN's own data
    cases["stream_memory_zero.json"] = _edit(stream, _set("cores/0/top_memories/0/size_bits", 0))
    cases["stream_memory_missing.json"] = _edit(stream, lambda d: d["cores"][1].pop("top_memories"))
    cases["stream_memory_too_small.json"] = _edit(
        stream, _set("cores/0/top_memories/0/size_bits", 100)
    )
    out = {name: (data, STREAM) for name, data in cases.items()}
    out["stream_info_cycle.json"] = (cases["stream_cycle.json"], INFO)
    out["stream_allocate_unknown_core.json"] = (
        cases["stream_unknown_core.json"], ["allocate", "{file}", "--out-dir", "{out}"]
    )  # fmt: skip
    out["stream_allocate_memory_zero.json"] = (
        cases["stream_memory_zero.json"], ["allocate", "{file}", "--out-dir", "{out}"]
    )  # fmt: skip
    out["stream_solve_unknown_core.json"] = (cases["stream_unknown_core.json"], SOLVE)
    return out


def model_cases(net: dict[str, Any], arch: dict[str, Any], onnx_model: bytes) -> Cases:
    conv = next(k for k, layer in enumerate(net["layers"]) if layer["op"] == "conv")
    return {
        "net_no_layers.json": (_edit(net, _set("layers", _DELETE)), NETWORK),
        "net_unknown_op.json": (_edit(net, _set("layers/0/op", "teleport")), NETWORK),
        "net_truncated.json": (_json(net)[:200], NETWORK),
        "net_binary.json": (bytes(range(256)), NETWORK),
        "net_utf16.json": (_json(net).decode().encode("utf-16"), TILE_NETWORK),
        "net_input_negative.json": (_edit(net, _set("input_shape/0", -1)), TILE_NETWORK),
        "net_input_float.json": (_edit(net, _set("input_shape/1", 28.0)), FLEXER_NETWORK),
        "net_later_input.json": (
            _edit(net, _set("layers/0/inputs", [net["layers"][-1]["name"]])),
            FLEXER_NETWORK,
        ),
        "net_duplicate_name.json": (
            _edit(net, _set("layers/1/name", net["layers"][0]["name"])),
            ORCHESTRATE,
        ),
        "net_kernel_too_big.json": (
            _edit(net, _set(f"layers/{conv}/kernel", [999, 999])),
            NETWORK,
        ),
        "net_conv_no_channels.json": (
            _edit(net, _set(f"layers/{conv}/out_channels", _DELETE)),
            NETWORK,
        ),
        "net_deep.json": (_token(net, "source", "[" * 100_000 + "]" * 100_000), ORCHESTRATE),
        "net_garbage.onnx": (b"not an onnx model at all" * 10, NETWORK),
        "net_empty.onnx": (b"", NETWORK),
        "net_truncated.onnx": (onnx_model[: len(onnx_model) // 2], FLEXER_NETWORK),
        "net_batch2.onnx": (_onnx(batch=2), NETWORK),
        "net_unsupported.onnx": (_onnx(op="LpNormalization"), ORCHESTRATE),
        "arch_no_cores.json": (_edit(arch, _set("cores", _DELETE)), ARCH),
        "arch_memory_negative.json": (_edit(arch, _set("cores/0/memory_bytes", -1)), ARCH),
        "arch_unroll_string.json": (_edit(arch, _set("cores/0/pe_unroll", "wide")), ARCH),
        "arch_unroll_zero.json": (_edit(arch, _set("cores/0/pe_unroll/K", 0)), TILE_ARCH),
        "arch_duplicate_core.json": (_edit(arch, _set("cores/1/id", 0)), FLEXER_ARCH),
        "arch_no_coord.json": (_edit(arch, _set("cores/0/coord", _DELETE)), ORCHESTRATE_ARCH),
        "arch_utf16.json": (_json(arch).decode().encode("utf-16"), ARCH),
        "arch_garbage.json": (b"{'cores': []}", TILE_ARCH),
    }


def placement_cases() -> Cases:
    good = {
        "format": "npusched/placement/v1",
        "name": "p",
        "mesh": {"rows": 1, "cols": 3},
        "flow": [[0, 1, 2], [1, 0, 3], [2, 3, 0]],
    }
    cases = {
        "placement_flow_nan.json": _token(good, "flow/0/1", "NaN"),
        "placement_not_square.json": _edit(good, _set("flow/0", [0, 1])),
        "placement_flow_float.json": _edit(good, _set("flow/0/1", 1.5)),
        "placement_flow_2p70.json": _edit(good, _set("flow/0/1", 2**70)),
        "placement_diagonal.json": _edit(good, _set("flow/1/1", 4)),
        "placement_mesh_huge.json": _edit(good, _set("mesh", {"rows": 4096, "cols": 4096})),
        "placement_cells_outside.json": _edit(good, _set("cells", [0, 1, 9])),
        "placement_cells_huge.json": _edit(good, _set("cells", [0, 1, 2**70])),
        "placement_too_few_cells.json": _edit(good, _set("cells", [0, 1])),
    }
    out = {name: (data, PLACEMENT) for name, data in cases.items()}
    out["placement_verify_diagonal.json"] = (cases["placement_diagonal.json"], VERIFY_INSTANCE)
    return out


def mini_stream() -> dict[str, Any]:
    """A Stream export of three CNs on two compute cores and a DRAM core, with every field the
    reader takes (routes, an off-chip bus link, allocation, constant operands, memories)."""

    def cn(idx: int, layer: int, cores: list[int], lat: int, w: int) -> dict[str, Any]:
        return {
            "idx": idx,
            "key": f"{layer},{idx}",
            "layer_id": layer,
            "group": 0,
            "possible_cores": cores,
            "cost_per_core": {str(c): {"latency": lat + c} for c in cores},
            "operands": {
                "O": {"size_bits": 64, "constant": False},
                "W": {"size_bits": w, "constant": True},
            },
            "chosen_core": cores[0],
        }

    mem = [{"name": "sram", "size_bits": 4096}]
    return {
        "schema": "stream_instance/v1",
        "offchip_core_id": 2,
        "cores": [
            {"id": 0, "name": "a", "is_offchip": False, "top_memories": mem},
            {"id": 1, "name": "b", "is_offchip": False, "top_memories": mem},
            {"id": 2, "name": "dram", "is_offchip": True},
        ],
        "links": [
            {"id": 0, "sender": 0, "receiver": 1, "bandwidth_bits_per_cycle": 32, "bus_id": -1},
            {"id": 1, "sender": 1, "receiver": 0, "bandwidth_bits_per_cycle": 32},
            {
                "id": 2,
                "sender": 2,
                "receiver": "Any",
                "bandwidth_bits_per_cycle": 64,
                "is_offchip_link": True,
            },
        ],
        "routes": {"0->1": [0], "1->0": [1], "2->0": [2], "2->1": [2], "0->2": [2], "1->2": [2]},
        "cns": [cn(0, 0, [0, 1], 10, 128), cn(1, 0, [0, 1], 12, 128), cn(2, 1, [1], 7, 256)],
        "edges": [
            {"src": 0, "dst": 2, "bits": 64},
            {"src": 1, "dst": 2, "bits": 64},
            {"src": 0, "dst": 1, "bits": 0},
        ],
        "stream_solution": {"makespan": 40, "allocation": {"0,0": 0, "0,1": 1}},
    }


def _onnx(batch: int = 1, op: str | None = None) -> bytes:
    """A one-convolution ONNX model (with ``op`` after it), input ``[batch, 1, 4, 4]``."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["y" if op is None else "c"], pads=[1, 1, 1, 1])]
    if op is not None:
        nodes.append(helper.make_node(op, ["c"], ["y"]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 2, 4, 4])], [w],
    )  # fmt: skip
    model = helper.make_model(graph, producer_name="make_bad_corpus", opset_imports=[
        helper.make_opsetid("", 17)])  # fmt: skip
    model.ir_version = 8
    return model.SerializeToString()


def _plain(doc: Any) -> Any:
    """``doc`` through JSON (numpy values as plain numbers), without a solution's run-dependent
    fields (runtime, trace, stats): the script writes the same bytes every time."""
    out = json.loads(json.dumps(doc, default=lambda a: a.tolist() if hasattr(a, "tolist") else a))
    for key in ("runtime_s", "trace", "stats"):
        out.pop(key, None)
    return out


def main() -> None:
    from npusched.bench.generate import layered_dag
    from npusched.heuristics.scheduling.list_scheduling import list_schedule
    from npusched.io import read_instance, read_stream, solution_to_dict
    from npusched.io.instance_json import instance_to_dict
    from npusched.methods.scheduling import heuristic_result
    from npusched.problem.scheduling.routed import RoutedInstance

    inst = json.loads((ROOT / GOOD).read_text())
    good = read_instance(ROOT / GOOD)
    res = heuristic_result("list", good, list_schedule(good))  # type: ignore[arg-type]
    sol = _plain(solution_to_dict(good, res, GOOD))
    layered = layered_dag(2, 2, (2, 2), seed=1)
    mesh = _plain(instance_to_dict(layered))
    routed = _plain(instance_to_dict(RoutedInstance.from_mesh(layered)))
    net = json.loads((ROOT / "npusched/workload/zoo/lenet.json").read_text())
    arch = json.loads((ROOT / "npusched/arch/data/klotski-3x3.json").read_text())
    stream = mini_stream()

    GOOD_DIR.mkdir(parents=True, exist_ok=True)
    (ROOT / GOOD_STREAM).write_bytes(_json(stream))
    sinst = read_stream(ROOT / GOOD_STREAM)
    from npusched.methods import solve

    sres = solve(sinst, "list")
    ssol = _plain(solution_to_dict(sinst, sres, GOOD_STREAM))
    assert ssol["transfers"], "the routed solution needs transfers to corrupt"
    (ROOT / GOOD_STREAM_SOLUTION).write_bytes(_json(ssol))

    cases = (
        instance_cases(inst, mesh, routed)
        | solution_cases(sol, ssol)
        | text_cases()
        | stream_cases(stream)
        | model_cases(net, arch, _onnx())
        | placement_cases()
    )
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
