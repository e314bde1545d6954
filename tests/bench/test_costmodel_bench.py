"""The cost-model bench against Stream's exports: every export in the folder is read, its CNs
costed, and one whose network cannot be rebuilt is named, not dropped in silence."""

from __future__ import annotations

import shutil

from conftest import SHARED, needs_shared

from npusched.arch import load_arch
from npusched.bench import costmodel
from npusched.costmodel import cost_model


@needs_shared
def test_every_export_is_costed_or_named(tmp_path):
    arch = load_arch("stream-hetero")
    rows, left_out = costmodel.export_rows({"analytic": cost_model("analytic", arch)}, arch)
    exports = sorted(p.name for p in (SHARED / "stream").glob("*.json"))
    costed = {r["export"] for r in rows}
    named = {line.split(":")[0] for line in left_out}
    assert costed | named == set(exports) and not costed & named
    assert "resnet18_tpu_quad_core_fused.json" in costed  # ZigZag ships resnet18.onnx
    assert all(r["analytic"] and r["analytic"] > 0 and r["stream"] > 0 for r in rows)
    # a folder with one export whose workload is unknown: named, with the file it needs
    shutil.copy(SHARED / "stream" / "tiny_res16_tpu_quad_core_fused.json", tmp_path)
    rows, left_out = costmodel.export_rows({}, arch, tmp_path)
    assert rows == [] and len(left_out) == 1 and "tiny_res.onnx" in left_out[0]


@needs_shared
def test_the_doc_names_what_was_left_out(tmp_path):
    doc = tmp_path / "out.md"
    doc.write_text("<!-- tables -->\n<!-- /tables -->\n")
    assert costmodel.main(["--networks", "lenet", "--archs", "stream-hetero", "--no-zigzag",
                           "--doc", str(doc)]) == 0  # fmt: skip
    text = doc.read_text()
    assert "Stream's exported CNs" in text and "Left out" in text
