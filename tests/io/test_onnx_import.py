"""ONNX import (:func:`npusched.io.onnx_import.read_onnx`): small graphs built with
:mod:`onnx.helper` for each supported operator (shapes and MACs checked by hand), batch-norm
folding, ``auto_pad``, the errors, a ResNet-18 built like torchvision's export compared with
the zoo's ``resnet18``, weights stored as external data (read by their dims, the file deleted),
and ZigZag's shipped ``zigzag/inputs/workload/*.onnx`` (``zigzag-dse`` is a dependency)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import uses_external_data

from npusched.common.errors import InputError
from npusched.io import onnx_state
from npusched.io.onnx_import import read_onnx
from npusched.workload import INPUT, Network
from npusched.workload.zoo import list_networks, load_network, network_from_dict

OPSET = 17


class _Builder:
    """A tiny graph builder: random float32 initializers, nodes in order, one input."""

    def __init__(self, in_shape: list[Any], seed: int = 0) -> None:
        self.in_shape = in_shape
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)

    def init(self, name: str, shape: tuple[int, ...], positive: bool = False) -> str:
        if positive:
            value = self.rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
        else:
            value = self.rng.standard_normal(shape, dtype=np.float32)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], output: str, name: str = "", **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        return output

    def conv(
        self, x: str, name: str, cin: int, cout: int, k: int, bias: bool = False, **attrs: Any
    ) -> str:
        inputs = [x, self.init(f"{name}.weight", (cout, cin // attrs.get("group", 1), k, k))]
        if bias:
            inputs.append(self.init(f"{name}.bias", (cout,)))
        return self.node("Conv", inputs, f"{name}.out", name=name, kernel_shape=[k, k], **attrs)

    def bn(self, x: str, name: str, c: int) -> str:
        params = [
            self.init(f"{name}.weight", (c,)),
            self.init(f"{name}.bias", (c,)),
            self.init(f"{name}.running_mean", (c,)),
            self.init(f"{name}.running_var", (c,), positive=True),
        ]
        return self.node("BatchNormalization", [x, *params], f"{name}.out", name=name)

    def model(self, output: str | None = None, graph: str = "g") -> onnx.ModelProto:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, self.in_shape)
        out = output or self.nodes[-1].output[0]
        y = helper.make_tensor_value_info(out, TensorProto.FLOAT, None)
        g = helper.make_graph(self.nodes, graph, [x], [y], initializer=self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])


def _only(net: Network) -> tuple[Any, ...]:
    """(op, shape, MACs, params) of a one-layer network."""
    assert len(net.layers) == 1
    layer = net.layers[0]
    return (layer.op, net.shapes[layer.name], net.macs(), net.params())


# ---- layers ---------------------------------------------------------------------------------


def test_conv_pads_strides_bias() -> None:
    b = _Builder([1, 3, 32, 32])
    b.conv("x", "conv", 3, 16, 3, bias=True, strides=[2, 2], pads=[1, 1, 1, 1])
    net = read_onnx(b.model())
    layer = net.layers[0]
    # OH = (32 + 2 - 2 - 1) // 2 + 1 = 16; MACs = 16·16·16 · 3·3·3; params = 16·27 + 16
    assert _only(net) == ("conv", (16, 16, 16), 110_592, 448)
    assert (layer.kernel, layer.stride, layer.pad, layer.bias) == (
        (3, 3),
        (2, 2),
        (1, 1, 1, 1),
        True,
    )
    assert layer.inputs == (INPUT,) and net.input_shape == (3, 32, 32)


def test_conv_asymmetric_pads_order() -> None:
    # ONNX pads are [top, left, bottom, right]; the layer's are (top, bottom, left, right)
    b = _Builder([1, 2, 10, 10])
    b.conv("x", "conv", 2, 4, 3, pads=[0, 1, 2, 3])
    net = read_onnx(b.model())
    assert net.layers[0].pad == (0, 2, 1, 3)
    # OH = (10 + 0 + 2 - 3) + 1 = 10, OW = (10 + 1 + 3 - 3) + 1 = 12
    assert net.shapes["conv"] == (4, 10, 12)


def test_depthwise_dilated_conv() -> None:
    b = _Builder([1, 8, 16, 16])
    b.conv("x", "dw", 8, 8, 3, group=8, dilations=[2, 2], pads=[2, 2, 2, 2])
    net = read_onnx(b.model())
    layer = net.layers[0]
    assert (layer.groups, layer.dilation, layer.bias) == (8, (2, 2), False)
    # OH = (16 + 4 - 2·2 - 1) + 1 = 16; MACs = 8·16·16 · 1·3·3; params = 8·1·3·3
    assert _only(net) == ("conv", (8, 16, 16), 18_432, 72)


@pytest.mark.parametrize(
    ("auto_pad", "pad", "shape"),
    [
        # out = ceil(7 / 2) = 4; total pad = (4 - 1)·2 + 4 - 7 = 3, the odd one at the end (UPPER)
        ("SAME_UPPER", (1, 2, 1, 2), (6, 4, 4)),
        ("SAME_LOWER", (2, 1, 2, 1), (6, 4, 4)),
        ("VALID", (0, 0, 0, 0), (6, 2, 2)),
        ("NOTSET", (0, 0, 0, 0), (6, 2, 2)),
    ],
)
def test_conv_auto_pad(auto_pad: str, pad: tuple[int, ...], shape: tuple[int, ...]) -> None:
    b = _Builder([1, 4, 7, 7])
    b.conv("x", "conv", 4, 6, 4, strides=[2, 2], auto_pad=auto_pad)
    net = read_onnx(b.model())
    assert net.layers[0].pad == pad
    assert net.shapes["conv"] == shape
    assert net.macs() == 6 * shape[1] * shape[2] * 4 * 4 * 4


def test_same_pad_stride_one_and_pool() -> None:
    b = _Builder([1, 3, 9, 9])
    c = b.conv("x", "conv", 3, 5, 3, auto_pad="SAME_UPPER")
    b.node(
        "MaxPool", [c], "p", name="pool", kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER"
    )
    net = read_onnx(b.model())
    assert net.layer("conv").pad == (1, 1, 1, 1)
    # pool: out = ceil(9 / 2) = 5; total = 4·2 + 2 - 9 = 1, at the start (LOWER)
    assert net.layer("pool").pad == (1, 0, 1, 0)
    assert net.shapes["pool"] == (5, 5, 5)


def test_gemm_after_flatten() -> None:
    b = _Builder([1, 4, 2, 2])
    f = b.node("Flatten", ["x"], "flat", name="flatten", axis=1)
    b.node("Gemm", [f, b.init("W", (10, 16)), b.init("B", (10,))], "y", name="fc", transB=1)
    net = read_onnx(b.model())
    assert _only(net) == ("fc", (10, 1, 1), 160, 170)
    assert net.layers[0].inputs == (INPUT,) and net.source["absorbed"] == {"Flatten": 1}


def test_matmul_plus_bias_is_one_fc() -> None:
    b = _Builder([1, 4, 2, 2])
    shape = numpy_helper.from_array(np.array([1, -1], dtype=np.int64), "shape")
    b.inits.append(shape)
    f = b.node("Reshape", ["x", "shape"], "flat", name="reshape")
    m = b.node("MatMul", [f, b.init("W", (16, 10))], "mm", name="fc")
    b.node("Add", [m, b.init("B", (10,))], "y", name="bias")
    net = read_onnx(b.model())
    assert _only(net) == ("fc", (10, 1, 1), 160, 170)
    assert net.layers[0].bias is True


def test_fc_without_bias_and_transposed_weight() -> None:
    b = _Builder([1, 6, 1, 1])
    f = b.node("Flatten", ["x"], "flat")
    b.node("Gemm", [f, b.init("W", (6, 3))], "y", name="fc")  # transB = 0: B is [N, K]
    net = read_onnx(b.model())
    assert _only(net) == ("fc", (3, 1, 1), 18, 18)
    assert net.layers[0].bias is False


def test_pools() -> None:
    b = _Builder([1, 8, 15, 15])
    p = b.node(
        "MaxPool", ["x"], "p1", name="max", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]
    )
    a = b.node("AveragePool", [p], "p2", name="avg", kernel_shape=[2, 2], strides=[2, 2])
    b.node("GlobalAveragePool", [a], "p3", name="gap")
    net = read_onnx(b.model())
    assert [layer.op for layer in net.layers] == ["maxpool", "avgpool", "avgpool"]
    # max: (15 + 2 - 3) // 2 + 1 = 8; avg: (8 - 2) // 2 + 1 = 4; global: 1 × 1
    assert [net.shapes[layer.name] for layer in net.layers] == [(8, 8, 8), (8, 4, 4), (8, 1, 1)]
    assert net.layer("gap").global_pool and net.layer("avg").inputs == ("max",)
    assert net.macs() == 0 and net.params() == 0


def test_maxpool_ceil_mode_becomes_bottom_right_pad() -> None:
    b = _Builder([1, 8, 16, 16])
    b.node("MaxPool", ["x"], "p", name="pool", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    net = read_onnx(b.model())
    # floor((16 - 3) / 2) + 1 = 7, ceil gives 8: one extra row and column at the end
    assert net.layers[0].pad == (0, 1, 0, 1)
    assert net.shapes["pool"] == (8, 8, 8)


def test_global_max_pool() -> None:
    b = _Builder([1, 5, 6, 7])
    b.node("GlobalMaxPool", ["x"], "g", name="gmp")
    net = read_onnx(b.model())
    assert _only(net) == ("maxpool", (5, 1, 1), 0, 0) and net.layers[0].global_pool


@pytest.mark.parametrize("opset", [17, 18])  # axes: an attribute up to 17, an input from 18
def test_reduce_mean_over_hw_is_global_pool(opset: int) -> None:
    b = _Builder([1, 5, 6, 7])
    if opset < 18:
        b.node("ReduceMean", ["x"], "r", name="mean", axes=[2, 3], keepdims=0)
    else:
        b.inits.append(numpy_helper.from_array(np.array([-1, -2], np.int64), "axes"))
        b.node("ReduceMean", ["x", "axes"], "r", name="mean", keepdims=0)
    b.node("Gemm", ["r", b.init("W", (4, 5))], "y", name="fc", transB=1)
    model = b.model()
    model.opset_import[0].version = opset
    net = read_onnx(model)
    assert [(layer.op, layer.global_pool) for layer in net.layers] == [
        ("avgpool", True),
        ("fc", False),
    ]
    assert net.shapes["mean"] == (5, 1, 1) and net.shapes["fc"] == (4, 1, 1)
    assert net.macs() == 20


def test_reduce_over_channels_is_unsupported() -> None:
    b = _Builder([1, 5, 6, 7])
    b.node("ReduceMax", ["x"], "r", name="cmax", axes=[1])
    err = _error(b.model())
    assert err.field == "node cmax (ReduceMax)" and "axes 2, 3" in err.reason


def test_residual_add_and_concat() -> None:
    b = _Builder([1, 8, 8, 8])
    c1 = b.conv("x", "c1", 8, 8, 3, pads=[1, 1, 1, 1])
    r1 = b.node("Relu", [c1], "r1")
    c2 = b.conv(r1, "c2", 8, 8, 3, pads=[1, 1, 1, 1])
    s = b.node("Add", [c2, "x"], "sum", name="add")
    r2 = b.node("Relu", [s], "r2")
    a = b.conv(r2, "a", 8, 4, 1)
    c = b.conv(r2, "c", 8, 6, 1)
    b.node("Concat", [a, c], "cat", name="cat", axis=1)
    net = read_onnx(b.model())
    assert [(layer.op, layer.inputs) for layer in net.layers] == [
        ("conv", (INPUT,)),
        ("conv", ("c1",)),
        ("add", ("c2", INPUT)),
        ("conv", ("add",)),
        ("conv", ("add",)),
        ("concat", ("a", "c")),
    ]
    assert net.shapes["add"] == (8, 8, 8) and net.shapes["cat"] == (10, 8, 8)
    assert net.macs() == 2 * 8 * 64 * 8 * 9 + (4 + 6) * 64 * 8


def test_activations_are_absorbed() -> None:
    b = _Builder([1, 3, 8, 8])
    c = b.conv("x", "conv", 3, 4, 1)
    r = b.node("Relu", [c], "r")
    k = b.node("Clip", [r, b.init("lo", ()), b.init("hi", ())], "k")
    s = b.node("Sigmoid", [k], "s")
    sw = b.node("Mul", [s, b.node("Sigmoid", [s], "s2")], "swish")  # x · σ(x)
    d = b.node("Dropout", [sw], "d")
    i = b.node("Identity", [d], "i")
    b.node("MaxPool", [i], "p", name="pool", kernel_shape=[2, 2], strides=[2, 2])
    net = read_onnx(b.model())
    assert [layer.name for layer in net.layers] == ["conv", "pool"]
    assert net.layer("pool").inputs == ("conv",)
    assert net.source["absorbed"] == {
        "Clip": 1,
        "Dropout": 1,
        "Identity": 1,
        "Mul": 1,
        "Relu": 1,
        "Sigmoid": 2,
    }


def test_constant_arithmetic_is_absorbed() -> None:
    # input normalization (x - mean) / std, a Constant node, and a scale after an activation
    b = _Builder([1, 3, 4, 4])
    b.nodes.append(
        helper.make_node(
            "Constant",
            [],
            ["mean"],
            value=numpy_helper.from_array(np.zeros((1, 3, 1, 1), np.float32)),
        )
    )
    n = b.node("Sub", ["x", "mean"], "n")
    n2 = b.node("Div", [n, b.init("std", (1, 3, 1, 1), positive=True)], "n2")
    c = b.conv(n2, "conv", 3, 2, 1)
    r = b.node("Relu", [c], "r")
    b.node("Add", [r, b.init("shift", (1,))], "y")  # not on the conv's own output: no bias
    net = read_onnx(b.model())
    assert [layer.name for layer in net.layers] == ["conv"]
    assert net.layers[0].inputs == (INPUT,) and net.layers[0].bias is False


def test_conv_bias_add_is_folded() -> None:
    b = _Builder([1, 3, 4, 4])
    c = b.conv("x", "conv", 3, 2, 1)
    b.node("Add", [c, b.init("b", (1, 2, 1, 1))], "y")
    net = read_onnx(b.model())
    assert _only(net) == ("conv", (2, 4, 4), 2 * 16 * 3, 6 + 2)
    assert net.layers[0].bias is True


# ---- batch normalization --------------------------------------------------------------------


def test_batchnorm_folds_into_conv_with_bias() -> None:
    b = _Builder([1, 3, 8, 8])
    c = b.conv("x", "conv", 3, 16, 3, pads=[1, 1, 1, 1])
    n = b.bn(c, "bn", 16)
    b.node("Relu", [n], "y")
    net = read_onnx(b.model())
    # one layer; folding creates the bias: 16·3·3·3 weights + 16
    assert _only(net) == ("conv", (16, 8, 8), 16 * 64 * 27, 432 + 16)
    assert net.layers[0].bias is True
    assert net.source["folded_batchnorm"] == 1 and net.source["unfolded_batchnorm"] == []


def test_batchnorm_folds_into_fc() -> None:
    b = _Builder([1, 4, 1, 1])
    f = b.node("Flatten", ["x"], "f")
    g = b.node("Gemm", [f, b.init("W", (3, 4))], "g", name="fc", transB=1)
    b.bn(g, "bn", 3)
    net = read_onnx(b.model())
    assert _only(net) == ("fc", (3, 1, 1), 12, 15)


def test_batchnorm_not_after_conv_is_absorbed_unfolded() -> None:
    b = _Builder([1, 3, 8, 8])
    n0 = b.bn("x", "bn_in", 3)  # on the input
    c = b.conv(n0, "conv", 3, 4, 1)
    r = b.node("Relu", [c], "r")
    b.bn(r, "bn_post", 4)  # after the activation: not a plain affine of the conv output
    net = read_onnx(b.model())
    assert [layer.name for layer in net.layers] == ["conv"]
    assert net.layers[0].bias is False and net.params() == 12
    assert net.source["folded_batchnorm"] == 0
    assert net.source["unfolded_batchnorm"] == ["bn_in", "bn_post"]


def test_batchnorm_on_a_shared_conv_output_is_not_folded() -> None:
    b = _Builder([1, 3, 8, 8])
    c = b.conv("x", "conv", 3, 4, 1)
    n = b.bn(c, "bn", 4)
    b.node("Add", [n, c], "y", name="add")  # the conv output is read twice
    net = read_onnx(b.model())
    assert net.layer("conv").bias is False
    assert net.source["unfolded_batchnorm"] == ["bn"]
    assert net.layer("add").inputs == ("conv", "conv")


# ---- names and sources ----------------------------------------------------------------------


def test_layer_names_sanitized_and_unique(tmp_path: Path) -> None:
    b = _Builder([1, 3, 8, 8])
    c1 = b.conv("x", "/layer1/conv 1/Conv", 3, 4, 1)
    c2 = b.conv(c1, "/layer1/conv 1/Conv", 4, 4, 1)  # duplicate node name
    b.nodes.append(helper.make_node("Relu", [c2], ["r"]))
    b.nodes.append(helper.make_node("MaxPool", ["r"], ["pool:out"], kernel_shape=[2, 2]))
    b.nodes.append(
        helper.make_node("MaxPool", ["pool:out"], ["p2"], name="input", kernel_shape=[1, 1])
    )
    # the two convs share weight names; rename the second's initializer
    b.inits[1].name = "w2"
    b.nodes[1].input[1] = "w2"
    path = tmp_path / "tiny.onnx"
    onnx.save(b.model(), path)
    net = read_onnx(path)
    assert [layer.name for layer in net.layers] == [
        "layer1_conv_1_Conv",
        "layer1_conv_1_Conv_2",
        "pool_out",  # no node name: the output tensor's
        "input_2",  # "input" is the network input
    ]
    assert net.name == "tiny" and net.source["file"] == str(path)
    assert read_onnx(path, name="other").name == "other"
    again = Network.from_dict(net.to_dict())
    assert [net.shapes[k] for k in net.shapes] == [again.shapes[k] for k in again.shapes]


def test_model_default_name_is_graph_name() -> None:
    b = _Builder([1, 3, 8, 8])
    b.conv("x", "conv", 3, 4, 1)
    net = read_onnx(b.model(graph="tiny_graph"))
    assert net.name == "tiny_graph"
    assert net.source["opset"] == OPSET and net.source["format"] == "onnx"


# ---- errors ---------------------------------------------------------------------------------


def _error(model_or_path: Any) -> InputError:
    with pytest.raises(InputError) as info:
        read_onnx(model_or_path)
    return info.value


def test_unsupported_operator() -> None:
    b = _Builder([1, 3, 8, 8])
    c = b.conv("x", "conv", 3, 4, 1)
    b.node("ConvTranspose", [c, b.init("wt", (4, 2, 2, 2))], "y", name="up", strides=[2, 2])
    err = _error(b.model())
    assert err.field == "node up (ConvTranspose)"
    assert err.reason.startswith("unsupported operator ConvTranspose")


def test_custom_domain_operator() -> None:
    b = _Builder([1, 3, 8, 8])
    b.nodes.append(helper.make_node("Fancy", ["x"], ["y"], name="f", domain="com.example"))
    model = b.model()
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    err = _error(model)
    assert err.field == "node f (Fancy)" and "unsupported operator com.example.Fancy" in err.reason


def test_unsupported_patterns() -> None:
    b = _Builder([1, 3, 8, 8])
    c1 = b.conv("x", "c1", 3, 4, 1)
    c2 = b.conv("x", "c2", 3, 4, 1)
    b.node("Mul", [c1, c2], "y", name="gate")
    assert "two different layers" in _error(b.model()).reason
    b = _Builder([1, 3, 8, 8])
    shape = numpy_helper.from_array(np.array([1, 12, 16], dtype=np.int64), "shape")
    b.inits.append(shape)
    b.node("Reshape", ["x", "shape"], "y", name="rs")
    err = _error(b.model())
    assert err.field == "node rs (Reshape)" and "[1, 12, 16]" in err.reason


def test_corrupt_and_missing_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not an onnx file\x00\xff garbage")
    err = _error(bad)
    assert (err.path, err.field) == (
        str(bad),
        "(file)",
    ) and "not a readable ONNX model" in err.reason
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"\x08\x07")  # parses as a ModelProto with an empty graph
    assert _error(empty).field == "graph"
    missing = tmp_path / "missing.onnx"
    assert _error(missing).field == "(file)"
    b = _Builder([1, 3, 8, 8])
    b.conv("x", "conv", 3, 4, 1)
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(b.model().SerializeToString()[:-7])
    assert _error(truncated).path == str(truncated)


@pytest.mark.parametrize(
    ("shape", "reason"),
    [
        ([2, 3, 8, 8], "batch 2; only batch 1"),
        (["N", 3, 8, 8], "dynamic dimension 'N' at axis 0"),
        ([1, 3, "H", 8], "dynamic dimension 'H' at axis 2"),
        ([1, 3, 8], "rank 3"),
    ],
)
def test_input_shape_errors(shape: list[Any], reason: str) -> None:
    b = _Builder(shape)
    b.node("Relu", ["x"], "y")
    err = _error(b.model())
    assert err.field == "input x" and reason in err.reason


def test_shape_inference_error() -> None:
    b = _Builder([1, 3, 8, 8])
    c = b.conv("x", "conv", 3, 4, 1)
    b.node("Add", [c, "x"], "y", name="add")  # 4 channels + 3 channels
    err = _error(b.model())
    assert err.field == "(shape inference)" and "Incompatible dimensions" in err.reason


def test_weight_that_does_not_fit_the_input() -> None:
    b = _Builder([1, 3, 8, 8])
    b.conv("x", "conv", 5, 4, 1)  # a weight for 5 input channels on a 3-channel input
    err = _error(b.model())
    assert err.field == "node conv (Conv)" and "does not fit 3 channels" in err.reason


# ---- ResNet-18 against the zoo --------------------------------------------------------------


def resnet18_onnx(seed: int = 0) -> onnx.ModelProto:
    """torchvision's ResNet-18 (``BasicBlock``, ``[2, 2, 2, 2]``) as ``torch.onnx.export`` would
    lay it out in training-free form: ``Conv`` (no bias) + ``BatchNormalization`` + ``Relu``,
    ``MaxPool``, residual ``Add``, ``GlobalAveragePool``, ``Flatten``, ``Gemm``; random weights,
    nodes in forward order (a block's ``downsample`` after its ``conv2``)."""
    b = _Builder([1, 3, 224, 224], seed)

    def conv_bn(x: str, name: str, cin: int, cout: int, k: int, s: int, relu: bool) -> str:
        w = b.init(f"{name}.weight", (cout, cin, k, k))
        y = b.node(
            "Conv",
            [x, w],
            f"{name}.conv",
            name=f"/{name}/Conv",
            kernel_shape=[k, k],
            strides=[s, s],
            pads=[k // 2] * 4,
        )
        bn = name.replace("conv", "bn") if "downsample" not in name else name[:-1] + "1"
        y = b.bn(y, bn, cout)
        return b.node("Relu", [y], f"{name}.relu", name=f"/{name}/Relu") if relu else y

    x = conv_bn("x", "conv1", 3, 64, 7, 2, relu=True)
    x = b.node(
        "MaxPool",
        [x],
        "maxpool",
        name="/maxpool/MaxPool",
        kernel_shape=[3, 3],
        strides=[2, 2],
        pads=[1, 1, 1, 1],
    )
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            p = f"layer{stage}.{block}"
            s = 2 if stage > 1 and block == 0 else 1
            y = conv_bn(x, f"{p}.conv1", cin, cout, 3, s, relu=True)
            y = conv_bn(y, f"{p}.conv2", cout, cout, 3, 1, relu=False)
            identity = (
                conv_bn(x, f"{p}.downsample.0", cin, cout, 1, s, relu=False)
                if s > 1 or cin != cout
                else x
            )
            y = b.node("Add", [y, identity], f"{p}.add", name=f"/{p}/Add")
            x = b.node("Relu", [y], f"{p}.out", name=f"/{p}/Relu")
            cin = cout
    x = b.node("GlobalAveragePool", [x], "avgpool", name="/avgpool/GlobalAveragePool")
    x = b.node("Flatten", [x], "flatten", name="/Flatten", axis=1)
    b.node(
        "Gemm",
        [x, b.init("fc.weight", (1000, 512)), b.init("fc.bias", (1000,))],
        "logits",
        name="/fc/Gemm",
        transB=1,
    )
    return b.model(graph="resnet18")


@pytest.fixture(scope="module")
def resnet18() -> Network:
    return read_onnx(resnet18_onnx())


def test_resnet18_import(resnet18: Network) -> None:
    ops = Counter(layer.op for layer in resnet18.layers)
    # 20 convs (17 + 3 downsample), maxpool, 8 residual adds, global average pool, fc
    assert ops == {"conv": 20, "maxpool": 1, "add": 8, "avgpool": 1, "fc": 1}
    assert resnet18.source["folded_batchnorm"] == 20
    assert resnet18.source["absorbed"] == {"Flatten": 1, "Relu": 17}
    assert all(layer.bias for layer in resnet18.layers if layer.op in ("conv", "fc"))
    # torchvision's figures: 1.814 GMACs; 11,689,512 parameters counting BN's γ and β (2 · 4,800)
    # — folding keeps one bias per channel instead: 11,689,512 - 9,600 + 4,800
    assert resnet18.macs() == 1_814_073_344
    assert resnet18.params() == 11_684_712
    assert resnet18.shapes["fc_Gemm"] == (1000, 1, 1)


def test_resnet18_matches_zoo(resnet18: Network) -> None:
    """The import equals the zoo's hand-written ResNet-18 layer for layer, except names and the
    conv biases.

    Bias accounting: the zoo folds BatchNorm into each conv and keeps ``bias=False`` (its params,
    11,679,912, exclude BN entirely: torchvision's 11,689,512 minus γ and β, 2 · 4,800). The
    importer folds the same BatchNorms but marks each conv ``bias=True``, because folding
    ``BN(W * x)`` gives ``W' * x + b'`` with ``b' = β - γ μ / √(σ² + ε)``: one parameter per
    output channel. So the import has exactly ``Σ K`` over the 20 convs = 4,800 parameters more
    (11,684,712); MACs do not count biases and are equal.
    """
    zoo = load_network("resnet18")
    assert len(resnet18.layers) == len(zoo.layers) == 31
    geometry = (
        "op",
        "out_channels",
        "kernel",
        "stride",
        "pad",
        "dilation",
        "groups",
        "global_pool",
    )
    for mine, theirs in zip(resnet18.layers, zoo.layers, strict=True):
        assert resnet18.shapes[mine.name] == zoo.shapes[theirs.name], theirs.name
        assert [getattr(mine, g) for g in geometry] == [getattr(theirs, g) for g in geometry]
        # same wiring: producers at the same positions
        assert [resnet18.index.get(p, -1) for p in mine.inputs] == [
            zoo.index.get(p, -1) for p in theirs.inputs
        ], theirs.name
        if theirs.op == "conv":
            assert (mine.bias, theirs.bias) == (True, False)  # created by folding BN
        elif theirs.op == "fc":
            assert mine.bias and theirs.bias  # Gemm's C, torchvision's fc.bias
    assert resnet18.macs() == zoo.macs() == 1_814_073_344
    folded_biases = sum(layer.out_channels for layer in zoo.layers if layer.op == "conv")
    assert folded_biases == 4_800
    assert resnet18.params() == zoo.params() + folded_biases
    published = zoo.source["published"]["params"]["value"]  # torchvision, with BN's γ and β
    assert resnet18.params() == published - 2 * folded_biases + folded_biases


def test_imported_network_passes_the_network_schema(resnet18: Network) -> None:
    again = network_from_dict(resnet18.to_dict())
    assert again.macs() == resnet18.macs() and again.params() == resnet18.params()


# ---- weights stored as external data --------------------------------------------------------


def _save_external(model: onnx.ModelProto, folder: Path, attributes: bool = False) -> Path:
    """Save a copy of ``model`` with every tensor (``attributes``: also the ``Constant`` nodes')
    in one external file ``net.weights`` beside ``net.onnx``."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    path = folder / "net.onnx"
    onnx.save_model(
        copy,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="net.weights",
        size_threshold=0,
        convert_attribute=attributes,
    )
    stored = onnx.load(str(path), load_external_data=False)
    assert stored.graph.initializer
    assert all(uses_external_data(t) for t in stored.graph.initializer)
    assert (folder / "net.weights").is_file()
    return path


def _small_cnn() -> onnx.ModelProto:
    """conv 3→8 (bias) + BN + Relu, 2×2 max pool, grouped conv 8→8 (no bias), residual add,
    global average pool, Flatten, Gemm 8→10."""
    b = _Builder([1, 3, 16, 16])
    c1 = b.conv("x", "conv1", 3, 8, 3, bias=True, pads=[1, 1, 1, 1])
    r = b.node("Relu", [b.bn(c1, "bn1", 8)], "r", name="relu")
    p = b.node("MaxPool", [r], "p", name="pool", kernel_shape=[2, 2], strides=[2, 2])
    c2 = b.conv(p, "conv2", 8, 8, 3, group=2, pads=[1, 1, 1, 1])
    a = b.node("Add", [c2, p], "a", name="add")
    g = b.node("GlobalAveragePool", [a], "g", name="gap")
    f = b.node("Flatten", [g], "f", name="flatten", axis=1)
    b.node("Gemm", [f, b.init("fc.w", (10, 8)), b.init("fc.b", (10,))], "y", name="fc", transB=1)
    return b.model(graph="small")


def test_external_weights_missing_are_read_by_their_dims(tmp_path: Path) -> None:
    model = _small_cnn()
    path = _save_external(model, tmp_path)
    (tmp_path / "net.weights").unlink()
    net = read_onnx(path)
    assert [(layer.name, layer.op) for layer in net.layers] == [
        ("conv1", "conv"),
        ("pool", "maxpool"),
        ("conv2", "conv"),
        ("add", "add"),
        ("gap", "avgpool"),
        ("fc", "fc"),
    ]
    assert net.shapes == {
        INPUT: (3, 16, 16),
        "conv1": (8, 16, 16),
        "pool": (8, 8, 8),
        "conv2": (8, 8, 8),
        "add": (8, 8, 8),
        "gap": (8, 1, 1),
        "fc": (10, 1, 1),
    }
    assert net.layer("conv2").groups == 2 and net.layer("add").inputs == ("conv2", "pool")
    # conv1 8·16·16 · 3·3·3 = 55,296; conv2 8·8·8 · 4·3·3 = 18,432; fc 8·10 = 80
    assert net.macs() == 55_296 + 18_432 + 80
    # conv1 8·27 + 8 (BN folds into its bias); conv2 8·36; fc 80 + 10
    assert net.params() == 224 + 288 + 90
    assert net.source["folded_batchnorm"] == 1
    assert net.source["external_data"] == ["net.weights"]
    # the same network as from the model with its weights in memory
    again = read_onnx(model)
    assert (net.layers, net.shapes) == (again.layers, again.shapes)
    assert again.source["external_data"] == []


def test_external_weights_of_a_model_in_memory(tmp_path: Path) -> None:
    path = _save_external(_small_cnn(), tmp_path)
    model = onnx.load(str(path), load_external_data=False)
    assert read_onnx(model).macs() == 55_296 + 18_432 + 80


def _reshape_to_fc(b: _Builder, shape: str) -> None:
    c = b.conv("x", "conv", 3, 2, 1)
    r = b.node("Reshape", [c, shape], "flat", name="rs")
    b.node("Gemm", [r, b.init("fc.w", (5, 32))], "y", name="fc", transB=1)


def _value_from_initializer() -> onnx.ModelProto:
    b = _Builder([1, 3, 4, 4])
    b.inits.append(numpy_helper.from_array(np.array([1, 32], np.int64), "shape"))
    _reshape_to_fc(b, "shape")
    return b.model()


def _value_from_arithmetic() -> onnx.ModelProto:
    b = _Builder([1, 3, 4, 4])
    b.inits.append(numpy_helper.from_array(np.array([0, 16], np.int64), "half"))
    b.inits.append(numpy_helper.from_array(np.array([1, 16], np.int64), "more"))
    b.node("Add", ["half", "more"], "shape", name="sum")
    _reshape_to_fc(b, "shape")
    return b.model()


def _value_from_constant_node() -> onnx.ModelProto:
    b = _Builder([1, 3, 4, 4])
    value = numpy_helper.from_array(np.array([1, 32], np.int64), "shape_value")
    b.nodes.append(helper.make_node("Constant", [], ["shape"], name="k", value=value))
    _reshape_to_fc(b, "shape")
    return b.model()


def _reduce_axes_input() -> onnx.ModelProto:
    b = _Builder([1, 3, 4, 4])
    c = b.conv("x", "conv", 3, 2, 1)
    b.inits.append(numpy_helper.from_array(np.array([2, 3], np.int64), "axes"))
    b.node("ReduceMean", [c, "axes"], "y", name="gap", keepdims=1)
    model = b.model()
    model.opset_import[0].version = 18  # axes: an input from opset 18
    return model


@pytest.mark.parametrize(
    ("build", "attributes", "field", "tensor", "layers"),
    [
        (_value_from_initializer, False, "node rs (Reshape)", "shape", ["conv", "fc"]),
        (_value_from_arithmetic, False, "node sum (Add)", "half", ["conv", "fc"]),
        (_value_from_constant_node, True, "node rs (Reshape)", "shape", ["conv", "fc"]),
        (_reduce_axes_input, False, "node gap (ReduceMean)", "axes", ["conv", "gap"]),
    ],
)
def test_external_values_the_import_needs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    build: Any,
    attributes: bool,
    field: str,
    tensor: str,
    layers: list[str],
) -> None:
    model = build()
    path = _save_external(model, tmp_path, attributes)
    read: list[str] = []
    load = onnx_state.load_external_data_for_tensor

    def recording(t: onnx.TensorProto, base_dir: str) -> None:
        read.append(t.name)
        load(t, base_dir)

    monkeypatch.setattr(onnx_state, "load_external_data_for_tensor", recording)
    # data present: read as before, and only the values needed (never a weight)
    net = read_onnx(path)
    expected = read_onnx(model)
    assert [layer.name for layer in net.layers] == layers
    assert (net.layers, net.shapes, net.macs()) == (
        expected.layers,
        expected.shapes,
        expected.macs(),
    )
    weights = {"conv.weight", "fc.w"}
    assert read and not weights & set(read)
    assert set(read) <= {"shape", "shape_value", "half", "more", "axes"}
    # data missing: a one-line error naming the node, the tensor and the file
    (tmp_path / "net.weights").unlink()
    err = _error(path)
    assert (err.path, err.field) == (str(path), field)
    assert err.reason.startswith(f"needs the value of {tensor!r}, stored in the external data file")
    assert "'net.weights'" in err.reason and "missing" in err.reason and "\n" not in str(err)


def test_external_value_of_a_model_in_memory(tmp_path: Path) -> None:
    path = _save_external(_value_from_initializer(), tmp_path)
    err = _error(onnx.load(str(path), load_external_data=False))
    assert err.field == "node rs (Reshape)"
    assert "cannot be located for a model given in memory" in err.reason


def test_truncated_external_data_file(tmp_path: Path) -> None:
    path = _save_external(_value_from_initializer(), tmp_path)
    (tmp_path / "net.weights").write_bytes(b"")
    err = _error(path)
    assert err.field == "node rs (Reshape)" and "'shape'" in err.reason
    assert "which cannot be read" in err.reason


def test_external_value_outside_the_table_falls_back_to_reading_all(tmp_path: Path) -> None:
    """Expand's shape is read by shape inference but is not in ``VALUE_INPUTS``: with the data
    present everything is read (the error is then the same as for the model in memory); without
    it the shape-inference error says the file is missing."""
    b = _Builder([1, 3, 4, 4])
    c = b.conv("x", "conv", 3, 2, 1)
    b.inits.append(numpy_helper.from_array(np.array([1, 2, 4, 4], np.int64), "to"))
    b.node("Expand", [c, "to"], "y", name="ex")
    model = b.model()
    path = _save_external(model, tmp_path)
    err = _error(path)
    assert err.field == "node ex (Expand)" and err.reason == _error(model).reason
    (tmp_path / "net.weights").unlink()
    err = _error(path)
    assert err.field == "(shape inference)" and "external data file(s) ['net.weights'] missing" in (
        err.reason
    )


# ---- ZigZag's shipped workloads -------------------------------------------------------------


def _assert_same_as_zoo(net: Network, zoo: Network) -> None:
    """Same layers (geometry, shapes, producers; an add's inputs in any order) and MACs; the
    parameters differ by exactly the biases one side has and the other does not."""
    geometry = ("op", "out_channels", "kernel", "stride", "pad", "dilation", "groups")
    assert Counter(layer.op for layer in net.layers) == Counter(layer.op for layer in zoo.layers)
    bias_params = 0
    for mine, theirs in zip(net.layers, zoo.layers, strict=True):
        assert [getattr(mine, g) for g in geometry] == [getattr(theirs, g) for g in geometry]
        assert mine.global_pool == theirs.global_pool, theirs.name
        assert net.shapes[mine.name] == zoo.shapes[theirs.name], theirs.name
        assert sorted(net.index.get(p, -1) for p in mine.inputs) == sorted(
            zoo.index.get(p, -1) for p in theirs.inputs
        ), theirs.name
        if theirs.op in ("conv", "fc"):
            bias_params += (mine.bias - theirs.bias) * theirs.out_channels
    assert net.macs() == zoo.macs()
    assert net.params() == zoo.params() + bias_params


def test_zigzag_shipped_workloads() -> None:
    """ZigZag (PyPI ``zigzag-dse``) ships ``zigzag/inputs/workload/*.onnx`` whose weights point
    to ``*.external`` files it does not ship. Every CNN among them is read; those the zoo also has
    match it (ResNet-18: 1,814,073,344 MACs; the convs carry the bias of the BN folded at export,
    4,800 parameters more than the zoo's)."""
    import zigzag  # a dependency of npusched

    folder = Path(zigzag.__file__).parent / "inputs" / "workload"
    files = sorted(folder.glob("*.onnx"))
    cnns = [
        f
        for f in files
        if any(n.op_type == "Conv" for n in onnx.load(str(f), load_external_data=False).graph.node)
    ]
    assert "resnet18.onnx" in [f.name for f in cnns], f"{folder}: {[f.name for f in files]}"
    nets = {f.stem: read_onnx(f) for f in cnns}
    for stem, net in nets.items():
        assert net.layers[0].op == "conv" and net.macs() > 0, stem
        assert net.layers[-1].op == "fc" and net.shapes[net.layers[-1].name] == (1000, 1, 1), stem
    resnet18 = nets["resnet18"]
    zoo = load_network("resnet18")
    assert Counter(layer.op for layer in resnet18.layers) == {
        "conv": 20,
        "maxpool": 1,
        "add": 8,
        "avgpool": 1,
        "fc": 1,
    }
    assert resnet18.macs() == zoo.macs() == 1_814_073_344
    assert resnet18.params() == zoo.params() + 4_800
    _assert_same_as_zoo(resnet18, zoo)
    for stem in sorted(set(nets) & set(list_networks()) - {"resnet18"}):
        _assert_same_as_zoo(nets[stem], load_network(stem))
