"""ONNX import of tensor programs (npusched.io.onnx_tensor): Stream's transformer workloads and
a block exported by torch, counted by hand; CNNs still import as networks; bad graphs."""

from __future__ import annotations

import json

import onnx
import pytest
import torch
from conftest import SHARED, needs_shared, run_cli
from onnx import TensorProto, helper

from npusched.common.errors import InputError
from npusched.io.onnx_tensor import read_workload_onnx
from npusched.workload.network import Network
from npusched.workload.tensor import TensorProgram

WL = SHARED / "stream-oss" / "workload"


@needs_shared
def test_attention_head_with_weights_as_inputs():
    prog = read_workload_onnx(WL / "attention_head.onnx")
    assert isinstance(prog, TensorProgram)
    roles = {t.name: t.role for t in prog.tensors.values() if t.role != "activation"}
    assert roles == {"I": "input", "wQ": "weight", "wK": "weight", "wV": "weight"}
    kinds = [op.kind for op in prog.ops]
    assert kinds == ["gemm", "gemm", "gemm", "matmul", "softmax", "matmul"]  # Kt folded
    assert prog.ops[3].trans_b
    t, d, dh = 128, 512, 64
    assert prog.macs() == 3 * t * d * dh + 2 * t * t * dh
    assert prog.params() == 3 * d * dh


@needs_shared
@pytest.mark.parametrize(("m", "k", "n"), [(1, 16, 32), (64, 128, 256), (256, 4096, 14336)])
def test_swiglu_with_initializers_declared_without_data(m, k, n):
    prog = read_workload_onnx(WL / f"swiglu_{m}_{k}_{n}.onnx")
    assert [f"{op.kind} {op.fn}".strip() for op in prog.ops] == [
        "gemm", "gemm", "eltwise silu", "eltwise mul", "gemm"]
    assert prog.macs() == 3 * m * k * n and prog.params() == 3 * k * n


@needs_shared
def test_a_cnn_still_imports_as_a_network():
    assert isinstance(read_workload_onnx(WL / "2conv_1_8_32_32_16_32_3.onnx"), Network)


class _Block(torch.nn.Module):
    """A pre-norm transformer block, as torch exports it."""

    def __init__(self, d: int = 32, h: int = 4, ff: int = 64) -> None:
        super().__init__()
        self.h, self.dh = h, d // h
        self.ln, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.f1, self.f2 = torch.nn.Linear(d, ff), torch.nn.Linear(ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t, d = x.shape
        q, k, v = (z.reshape(t, self.h, self.dh).transpose(0, 1)
                   for z in self.qkv(self.ln(x)).split(d, dim=-1))
        a = torch.softmax(q @ k.transpose(-1, -2) / self.dh ** 0.5, dim=-1)
        x = x + self.o((a @ v).transpose(0, 1).reshape(t, d))
        return x + self.f2(torch.nn.functional.gelu(self.f1(self.ln2(x))))


def test_a_block_exported_by_torch(tmp_path):
    t, d, h, ff = 16, 32, 4, 64
    path = tmp_path / "block.onnx"
    torch.onnx.export(_Block(d, h, ff).eval(), (torch.randn(t, d),), str(path), dynamo=False,
                      opset_version=17)
    prog = read_workload_onnx(path)
    linear = t * d * 3 * d + t * d * d + 2 * t * d * ff
    assert prog.macs() == linear + 2 * h * t * t * (d // h)
    model = _Block(d, h, ff)
    assert prog.params() == sum(p.numel() for p in model.parameters())
    kinds = {op.kind for op in prog.ops}
    assert {"layernorm", "gemm", "matmul", "softmax", "slice", "transpose"} <= kinds


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_bad_graphs_name_the_node(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    bad = _model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=0)], [x], [y])
    path = tmp_path / "bad.onnx"
    onnx.save(bad, str(path))
    with pytest.raises(InputError, match=r"node sm \(Softmax\).*axis 0"):
        read_workload_onnx(path)
    odd = _model([helper.make_node("Hardmax", ["x"], ["y"], name="hm")], [x], [y])
    onnx.save(odd, str(path))
    with pytest.raises(InputError, match=r"node hm \(Hardmax\): operator not supported.*"
                                         r"supported: Add, .*MatMul, .*Softmax"):
        read_workload_onnx(path)
    path.write_bytes(b"not onnx")
    with pytest.raises(InputError, match="not a readable ONNX model"):
        read_workload_onnx(path)


def test_a_symbolic_dimension_is_set_by_dim_else_named(tmp_path):
    """An input of shape ``[seq, 32]``: without a value the error names the dimension and the
    option that sets it; ``dims`` (``--dim seq=N``) gives it one, and the MACs follow; a name no
    input has is refused; on the command line all of it exits 2 with the message."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 32])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [32, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["seq", 8])
    path = tmp_path / "dyn.onnx"
    onnx.save(_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [x, w], [y]),
              str(path))  # fmt: skip
    with pytest.raises(InputError, match=r"dimension 'seq' .* has no value.*--dim seq=N"):
        read_workload_onnx(path)
    for seq in (1, 100):
        assert read_workload_onnx(path, dims={"seq": seq}).macs() == seq * 32 * 8
    with pytest.raises(InputError, match=r"--dim sq: no graph input has a dimension"):
        read_workload_onnx(path, dims={"sq": 4})
    bad = run_cli("info", str(path))
    assert bad.returncode == 2 and "--dim seq=N" in bad.stderr and "Traceback" not in bad.stderr
    good = run_cli("info", str(path), "--dim", "seq=100", "--json")
    assert good.returncode == 0 and json.loads(good.stdout)["total_macs"] == 100 * 32 * 8


@needs_shared
def test_the_element_type_is_recorded_and_prices_the_partition_on_request():
    from npusched.arch import load_arch
    from npusched.partition.api import partition_network, priced_arch

    prog = read_workload_onnx(WL / "swiglu_64_128_256.onnx")  # bfloat16
    assert prog.source["precision_bits"] == 16
    arch = load_arch(SHARED / "stream-oss" / "hardware" / "tpu_like_quad_core.yaml")
    assert arch.precision_bits == 8
    assert priced_arch(prog, arch) is arch
    assert priced_arch(prog, arch, "workload").precision_bits == 16
    assert priced_arch(prog, arch, 4).precision_bits == 4
    with pytest.raises(ValueError, match="precision"):
        priced_arch(prog, arch, "fp8")
    own, wide = (partition_network(prog, arch, "stream", precision=p) for p in ("arch", "workload"))
    assert (own.source["elem_bytes"], wide.source["elem_bytes"]) == (1, 2)
    assert sum(int(t.data) for t in wide.dram) == 2 * sum(int(t.data) for t in own.dram)


def test_an_int8_graph_has_8_bit_elements_and_a_cli_option_takes_it(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.INT8, [4, 8])
    w = helper.make_tensor_value_info("w", TensorProto.INT8, [8, 16])
    y = helper.make_tensor_value_info("y", TensorProto.INT8, [4, 16])
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x, w], [y])
    path = tmp_path / "mm.onnx"
    onnx.save(helper.make_model(g), path)
    assert read_workload_onnx(path).source["precision_bits"] == 8
    out = tmp_path / "i.json"
    res = run_cli("partition", "--network", str(path), "--arch", "klotski-4x4", "--scheme",
                  "stream", "--precision", "32", "-o", str(out))
    assert res.returncode == 0 and "32-bit elements" in res.stdout
    assert json.loads(out.read_text())["source"]["elem_bytes"] == 4
    bad = run_cli("partition", "--network", str(path), "--arch", "klotski-4x4", "--scheme",
                  "stream", "--precision", "0", "-o", str(tmp_path / "j.json"))
    assert bad.returncode == 2 and "--precision" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "j.json").exists()


def test_an_input_without_a_shape_is_named(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)  # no shape at all
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x, w], [y])
    path = tmp_path / "noshape.onnx"
    onnx.save(helper.make_model(g), path)
    with pytest.raises(InputError, match="graph.input x: no tensor shape"):
        read_workload_onnx(path)
