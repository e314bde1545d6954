"""The network zoo against published figures, and its loader.

Published figures (cited again in each file's ``source.published``):

* torchvision 0.28 weight metadata (``*_Weights.IMAGENET1K_V1.meta``): ``_ops`` (documented as
  GFLOPS, counted as multiply-adds of conv and linear layers) and ``num_params`` (which include
  BatchNorm's scale and shift, 2 per channel; our layers fold BatchNorm, so the tests add
  ``2 x sum(out_channels of the convs)`` back for the networks whose every conv has BatchNorm);
* LeCun et al. 1998, Sec. II.B (LeNet-5 per-layer parameters and connections);
* the darknet YOLOv2 page (34.90 / 59.68 / 6.97 Bn FLOPs, 2 FLOPs per MAC) and YOLO9000's Sec. 3
  (VGG-16: 30.69 billion FLOPs at 224x224);
* Dong et al. 2016, Sec. 3.2 (FSRCNN complexity ``(25d + sd + 9ms^2 + ds + 81d) S_LR``).

Rounded figures are checked to half a unit of their last published digit; counts exactly.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from npusched.common.errors import InputError
from npusched.workload import INPUT, Layer, Network
from npusched.workload.zoo import (
    ZOO_DIR,
    list_networks,
    load_network,
    network_from_dict,
    write_network,
)

ROOT = Path(__file__).resolve().parents[2]

NAMES = [
    "fsrcnn",
    "inceptionv3",
    "lenet",
    "mobilenetv2",
    "resnet152",
    "resnet18",
    "resnet50",
    "squeezenet",
    "tinyyolo",
    "vgg16",
    "vgg19",
    "yolov2",
]
#: the transformer layers (tensor programs), checked in tests/workload/test_transformers.py
TRANSFORMERS = [
    "bert-base-128",
    "bert-base-512",
    "gpt2-small",
    "llama3-8b-decode-4096",
    "llama3-8b-prefill-1024",
    "llama3-8b-prefill-256",
    "llama3-8b-prefill-4096",
    "vit-b16",
]

# name: (torchvision _ops in GFLOPS = GMACs, num_params, every conv followed by BatchNorm)
TORCHVISION: dict[str, tuple[str, int, bool]] = {
    "resnet18": ("1.814", 11_689_512, True),
    "resnet50": ("4.089", 25_557_032, True),
    "resnet152": ("11.514", 60_192_808, True),
    "vgg16": ("15.47", 138_357_544, False),
    "vgg19": ("19.632", 143_667_240, False),
    "mobilenetv2": ("0.301", 3_504_872, True),
    "squeezenet": ("0.819", 1_248_424, False),  # SqueezeNet1_0; the paper's Table 1 agrees
    "inceptionv3": ("5.713", 27_161_264, True),  # params include the AuxLogits head
}


def _gmacs(text: str) -> tuple[int, int]:
    """A GMAC figure as published (``"4.089"``): its value in MACs and half a unit of its last
    digit."""
    decimals = len(text.partition(".")[2])
    return int(text.replace(".", "")) * 10 ** (9 - decimals), 5 * 10 ** (8 - decimals)


def _bn_params(net: Network) -> int:
    """BatchNorm scale + shift of every conv (the convs carry no bias: BN follows each)."""
    convs = [layer for layer in net.layers if layer.op == "conv"]
    assert not any(layer.bias for layer in convs)
    return 2 * sum(layer.out_channels for layer in convs)


@pytest.fixture(scope="module")
def zoo() -> dict[str, Network]:
    return {name: load_network(name) for name in NAMES}


@pytest.fixture(scope="module")
def make_zoo() -> Any:
    spec = importlib.util.spec_from_file_location("make_zoo", ROOT / "tools" / "make_zoo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_list_networks() -> None:
    assert list_networks() == sorted(NAMES + TRANSFORMERS)


# ---- totals against published figures ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TORCHVISION))
def test_macs_match_torchvision(zoo: dict[str, Network], name: str) -> None:
    value, half_unit = _gmacs(TORCHVISION[name][0])
    assert abs(zoo[name].macs() - value) <= half_unit


@pytest.mark.parametrize("name", sorted(set(TORCHVISION) - {"inceptionv3"}))
def test_params_match_torchvision_exactly(zoo: dict[str, Network], name: str) -> None:
    _, params, has_bn = TORCHVISION[name]
    net = zoo[name]
    assert net.params() + (_bn_params(net) if has_bn else 0) == params


def test_inceptionv3_params_with_aux_head_match_torchvision(zoo: dict[str, Network]) -> None:
    # torchvision's count includes the training-only AuxLogits head on Mixed_6e (768x17x17):
    # avg_pool 5x5/3, conv0 1x1 768->128 + BN, conv1 5x5 128->768 + BN, fc 768->1000
    net = zoo["inceptionv3"]
    aux = Network(
        "aux",
        net.shapes["Mixed_6e"],
        (
            Layer("pool", "avgpool", (INPUT,), kernel=(5, 5), stride=(3, 3)),
            Layer("conv0", "conv", ("pool",), 128, bias=False),
            Layer("conv1", "conv", ("conv0",), 768, kernel=(5, 5), bias=False),
            Layer("fc", "fc", ("conv1",), 1000),
        ),
    )
    assert aux.shapes["conv1"] == (768, 1, 1)
    aux_params = aux.params() + _bn_params(Network("c", aux.input_shape, aux.layers[:3]))
    assert aux_params == 3_326_696
    assert net.params() + _bn_params(net) == 27_161_264 - aux_params == 23_834_568


def test_vgg16_conv_flops_match_yolo9000(zoo: dict[str, Network]) -> None:
    # YOLO9000 Sec. 3: VGG-16 needs 30.69 billion floating point operations at 224x224 (its
    # convolutional part, 2 FLOPs per MAC)
    net = zoo["vgg16"]
    conv = sum(layer.macs(net.in_shapes(layer)) for layer in net.layers if layer.op == "conv")
    assert abs(2 * conv - 30.69e9) <= 0.005e9


def test_lenet_matches_the_paper_per_layer(zoo: dict[str, Network]) -> None:
    # LeCun et al. 1998, Sec. II.B: (trainable parameters, connections) per layer; a connection
    # includes the bias; the RBF output has 840 connections and hand-set (untrained) parameters
    paper = {
        "C1": (156, 122_304),
        "S2": (12, 5_880),
        "C3": (1_516, 151_600),
        "S4": (32, 2_000),
        "C5": (48_120, 48_120),
        "F6": (10_164, 10_164),
        "output": (0, 840),
    }
    assert sum(p for p, _ in paper.values()) == 60_000
    assert sum(c for _, c in paper.values()) == 340_908
    net = zoo["lenet"]

    def macs(name: str) -> int:
        return net.layer(name).macs(net.in_shapes(net.layer(name)))

    def params(name: str) -> int:
        return net.layer(name).params(net.in_shapes(net.layer(name)))

    def bias_connections(name: str) -> int:  # one per output element
        k, h, w = net.shapes[name]
        return k * h * w

    for name in ("C1", "C5", "F6"):  # identical to the paper
        assert params(name) == paper[name][0]
        assert macs(name) == paper[name][1] - bias_connections(name)
    assert macs("output") == paper["output"][1] and params("output") == 840
    # S2, S4: subsampling without its trainable coefficient and bias
    assert macs("S2") == macs("S4") == params("S2") == params("S4") == 0
    # C3: the paper connects 60 of the 96 (S2 map, C3 map) pairs; we connect all 96
    c3_full_params = 16 * 6 * 25 + 16
    c3_full_macs = 16 * 10 * 10 * 6 * 25
    assert paper["C3"][0] == 60 * 25 + 16 and paper["C3"][1] == (60 * 25 + 16) * 100
    assert params("C3") == c3_full_params and macs("C3") == c3_full_macs
    total_params = 60_000 - 12 - 32 - paper["C3"][0] + c3_full_params + 840
    total_macs = (
        340_908
        - sum(bias_connections(n) for n in ("C1", "C3", "C5", "F6"))
        - paper["S2"][1]
        - paper["S4"][1]
        - (paper["C3"][1] - bias_connections("C3"))
        + c3_full_macs
    )
    assert (net.params(), net.macs()) == (total_params, total_macs) == (61_696, 416_520)


def _darknet_macs(net: Network) -> int:
    """MACs as darknet counts them: its reorg layer costs nothing."""
    return net.macs() - sum(
        layer.macs(net.in_shapes(layer)) for layer in net.layers if layer.name == "reorg"
    )


def test_yolov2_matches_darknet(zoo: dict[str, Network]) -> None:
    # darknet YOLOv2 page: 34.90 Bn FLOPs at 416x416, 59.68 Bn at 544x544 (2 FLOPs per MAC)
    net = zoo["yolov2"]
    reorg = net.layer("reorg")
    assert reorg.macs(net.in_shapes(reorg)) == 2048 * 13 * 13 * 4
    assert abs(2 * _darknet_macs(net) - 34.90e9) <= 0.005e9
    at544 = Network("yolov2_544", (3, 544, 544), net.layers)
    assert at544.shapes["conv22"] == (125, 17, 17)
    assert abs(2 * _darknet_macs(at544) - 59.68e9) <= 0.005e9


def test_tinyyolo_matches_darknet(zoo: dict[str, Network]) -> None:
    # darknet YOLOv2 page: Tiny YOLO (VOC) 6.97 Bn FLOPs at 416x416
    assert abs(2 * zoo["tinyyolo"].macs() - 6.97e9) <= 0.005e9


def test_fsrcnn_matches_the_paper(zoo: dict[str, Network]) -> None:
    # Dong et al. 2016, Sec. 3.2: complexity (25d + sd + 9ms^2 + ds + 81d) S_LR
    d, s, m = 56, 12, 4
    coefficient = 25 * d + s * d + 9 * m * s * s + d * s + 81 * d
    assert coefficient == 12_464
    net = zoo["fsrcnn"]
    _, h, w = net.input_shape
    assert net.macs() == coefficient * h * w
    biases = sum(layer.out_channels for layer in net.layers if layer.bias)
    assert net.params() - biases == coefficient
    # the sub-pixel deconv: 3x3 = 9 phases at LR size hold the x3 HR image's pixels
    k, oh, ow = net.shapes["deconv"]
    assert k * oh * ow == (3 * h) * (3 * w) == 1080 * 1920


def test_sources_cite_the_checked_figures(zoo: dict[str, Network]) -> None:
    for name, net in zoo.items():
        src = net.source
        assert src["citation"] and src["layout"] and src["conventions"], name
        assert isinstance(src["deviations"], list), name
        assert src["counted"] == {"macs": net.macs(), "params": net.params()}, name
        for figure in src["published"].values():
            assert figure["where"] and figure["as_published"], name
        if name in TORCHVISION:
            ops, params, _ = TORCHVISION[name]
            value, half_unit = _gmacs(ops)
            assert src["published"]["macs"]["value"] == value, name
            assert src["published"]["macs"]["rounding"] == half_unit, name
            assert src["published"]["params"]["value"] == params, name
    assert zoo["lenet"].source["published"]["params"]["value"] == 60_000
    assert zoo["lenet"].source["published"]["macs"]["value"] == 340_908
    assert zoo["yolov2"].source["published"]["macs"]["value"] == 34_900_000_000 // 2
    assert zoo["tinyyolo"].source["published"]["macs"]["value"] == 6_970_000_000 // 2
    assert zoo["fsrcnn"].source["published"]["params"]["value"] == 12_464


# ---- shapes --------------------------------------------------------------------------------------

SHAPES = {
    "lenet": {
        "C1": (6, 28, 28),
        "S2": (6, 14, 14),
        "C3": (16, 10, 10),
        "S4": (16, 5, 5),
        "C5": (120, 1, 1),
        "F6": (84, 1, 1),
        "output": (10, 1, 1),
    },
    "vgg16": {
        "conv1_2": (64, 224, 224),
        "pool4": (512, 14, 14),
        "pool5": (512, 7, 7),
        "fc8": (1000, 1, 1),
    },
    "vgg19": {"conv3_4": (256, 56, 56), "pool5": (512, 7, 7), "fc8": (1000, 1, 1)},
    "resnet18": {
        "conv1": (64, 112, 112),
        "maxpool": (64, 56, 56),
        "layer2.0.add": (128, 28, 28),
        "layer4.1.add": (512, 7, 7),
        "avgpool": (512, 1, 1),
        "fc": (1000, 1, 1),
    },
    "resnet50": {
        "maxpool": (64, 56, 56),
        "layer1.2.add": (256, 56, 56),
        "layer2.0.conv2": (128, 28, 28),
        "layer3.5.add": (1024, 14, 14),
        "layer4.2.add": (2048, 7, 7),
        "fc": (1000, 1, 1),
    },
    "resnet152": {
        "layer2.7.add": (512, 28, 28),
        "layer3.35.add": (1024, 14, 14),
        "layer4.2.add": (2048, 7, 7),
    },
    "inceptionv3": {
        "Conv2d_1a_3x3": (32, 149, 149),
        "Conv2d_4a_3x3": (192, 71, 71),
        "maxpool2": (192, 35, 35),
        "Mixed_5b": (256, 35, 35),
        "Mixed_5d": (288, 35, 35),
        "Mixed_6a": (768, 17, 17),
        "Mixed_6e": (768, 17, 17),
        "Mixed_7a": (1280, 8, 8),
        "Mixed_7c": (2048, 8, 8),
        "fc": (1000, 1, 1),
    },
    "squeezenet": {
        "conv1": (96, 109, 109),
        "maxpool1": (96, 54, 54),
        "fire4": (256, 54, 54),
        "maxpool4": (256, 27, 27),
        "maxpool8": (512, 13, 13),
        "fire9": (512, 13, 13),
        "avgpool10": (1000, 1, 1),
    },
    "mobilenetv2": {
        "features.0": (32, 112, 112),
        "features.1.project": (16, 112, 112),
        "features.3.add": (24, 56, 56),
        "features.13.add": (96, 14, 14),
        "features.17.project": (320, 7, 7),
        "features.18": (1280, 7, 7),
        "classifier": (1000, 1, 1),
    },
    "yolov2": {
        "conv1": (32, 416, 416),
        "conv13": (512, 26, 26),
        "conv18": (1024, 13, 13),
        "reorg": (2048, 13, 13),
        "route": (3072, 13, 13),
        "conv22": (125, 13, 13),
    },
    "tinyyolo": {"pool5": (256, 13, 13), "pool6": (512, 13, 13), "conv9": (125, 13, 13)},
    "fsrcnn": {"feature": (56, 360, 640), "map4": (12, 360, 640), "deconv": (9, 360, 640)},
}


@pytest.mark.parametrize("name", NAMES)
def test_intermediate_shapes(zoo: dict[str, Network], name: str) -> None:
    for layer, shape in SHAPES[name].items():
        assert zoo[name].shapes[layer] == shape, layer


def test_layer_counts(zoo: dict[str, Network]) -> None:
    def count(name: str, op: str) -> int:
        return sum(layer.op == op for layer in zoo[name].layers)

    # weighted layers as in the names: conv + fc
    for name, n in (
        ("vgg16", 16),
        ("vgg19", 19),
        ("resnet18", 18 + 3),
        ("resnet50", 50 + 4),
        ("resnet152", 152 + 4),
        ("lenet", 5),
    ):  # + 1x1 downsample convs
        assert count(name, "conv") + count(name, "fc") == n, name
    assert count("mobilenetv2", "add") == 10
    assert count("squeezenet", "concat") == 8  # fire2-9
    assert count("inceptionv3", "concat") == 11  # Mixed_5b ... Mixed_7c


# ---- files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_file_loads_and_round_trips(zoo: dict[str, Network], name: str, tmp_path: Path) -> None:
    path = ZOO_DIR / f"{name}.json"
    net = zoo[name]
    assert net.name == name
    raw = json.loads(path.read_text())
    assert net.to_dict() == raw
    again = network_from_dict(net.to_dict())
    assert again.to_dict() == raw and again.shapes == net.shapes
    assert load_network(path).to_dict() == raw and load_network(str(path)).to_dict() == raw
    write_network(net, tmp_path / "copy.json")
    assert (tmp_path / "copy.json").read_bytes() == path.read_bytes()


def test_files_are_what_make_zoo_writes(make_zoo: Any, tmp_path: Path) -> None:
    assert sorted(make_zoo.BUILDERS) == sorted(NAMES + TRANSFORMERS)
    make_zoo.main(["resnet18", "fsrcnn"], tmp_path)
    for name in ("resnet18", "fsrcnn"):
        assert (tmp_path / f"{name}.json").read_bytes() == (ZOO_DIR / f"{name}.json").read_bytes()
    for name, build in make_zoo.BUILDERS.items():
        assert build().to_dict() == json.loads((ZOO_DIR / f"{name}.json").read_text()), name


# ---- bad input -----------------------------------------------------------------------------------


def _tiny() -> dict[str, Any]:
    return {
        "format": "npusched/network/v1",
        "name": "tiny",
        "input_shape": [3, 8, 8],
        "layers": [
            {
                "name": "a",
                "op": "conv",
                "inputs": ["input"],
                "out_channels": 4,
                "kernel": [3, 3],
                "pad": [1, 1, 1, 1],
            },
            {"name": "b", "op": "conv", "inputs": ["a"], "out_channels": 4},
            {"name": "sum", "op": "add", "inputs": ["a", "b"]},
        ],
    }


def _error(data: Any, tmp_path: Path) -> InputError:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_network(path)
    assert info.value.path == str(path)
    return info.value


def test_tiny_network_loads(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(_tiny()))
    net = load_network(path)
    assert net.shapes["sum"] == (4, 8, 8) and net.macs() == 4 * 64 * 27 + 4 * 64 * 4


@pytest.mark.parametrize(
    ("edit", "field", "reason"),
    [
        (lambda d: d.update(format="npusched/instance/v1"), "format", "npusched/network/v1"),
        (lambda d: d.pop("layers"), "(top level)", "'layers' is a required property"),
        (lambda d: d.update(input_shape=[3, 8]), "input_shape", "too short"),
        (lambda d: d["layers"][1].update(op="deconv"), "layers/1/op", "deconv"),
        (lambda d: d["layers"][1].pop("out_channels"), "layers/1", "'out_channels' is a required"),
        (lambda d: d["layers"][0].update(kernel=[0, 3]), "layers/0/kernel/0", "less than"),
        (lambda d: d["layers"][0].update(pad=[1, 1]), "layers/0/pad", "too short"),
        (lambda d: d["layers"][1].update(colour="red"), "layers/1", "colour"),
        (lambda d: d["layers"][2].update(inputs=["a"]), "layers/2/inputs", "too short"),
        (lambda d: d["layers"][2].update(inputs=["a", "c"]), "layers/2/inputs/1", "'c'"),
        (lambda d: d["layers"][1].update(inputs=["sum"]), "layers/1/inputs/0", "'sum'"),
        (lambda d: d["layers"][1].update(name="a"), "layers/1/name", "duplicate"),
        (lambda d: d["layers"][1].update(name="input"), "layers/1/name", "should not be valid"),
        (lambda d: d["layers"][1].update(stride=[2, 2]), "layers/2", "differ in shape"),
        (lambda d: d["layers"][1].update(groups=3), "layers/1", "groups 3 must divide"),
        (lambda d: d["layers"][0].update(kernel=[11, 11], pad=[0, 0, 0, 0]), "layers/0", "empty"),
    ],
)
def test_bad_network_names_the_field(edit: Any, field: str, reason: str, tmp_path: Path) -> None:
    data = _tiny()
    edit(data)
    err = _error(data, tmp_path)
    assert err.field == field
    assert reason in err.reason


def test_bad_json_and_missing_files(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"format": "npusched/network/v1", "layers": [}')
    with pytest.raises(InputError, match="not valid JSON") as info:
        load_network(path)
    assert info.value.field.startswith("(line 1")
    with pytest.raises(InputError) as info:
        load_network(tmp_path / "absent.json")
    assert info.value.field == "(file)"
    with pytest.raises(InputError, match="no such zoo network; choose from bert-base-128") as info:
        load_network("resnet34")
    assert info.value.field == "(name)"
    with pytest.raises(InputError) as info:
        network_from_dict(["not", "a", "network"])
    assert info.value.path == "<memory>" and info.value.field == "(top level)"
