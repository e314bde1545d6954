"""Write the network zoo, ``npusched/workload/zoo/*.json`` (``npusched/network/v1``; the
transformer layers ``npusched/tensor-program/v1``).

One builder a network, each following a published layout layer by layer; the ``source`` of every
file cites the paper and the layout, the published MAC and parameter figures that
``tests/workload/test_zoo.py`` checks, our own counts, and every deviation from the original.
Re-running
writes the same bytes::

    .venv/bin/python tools/make_zoo.py            # all networks
    .venv/bin/python tools/make_zoo.py resnet18   # some

Conventions shared by all networks (also stored in each file's ``source.conventions``):

* batch 1, tensors ``(C, H, W)``;
* activations (ReLU, ReLU6, leaky ReLU, PReLU, sigmoid), dropout, flatten, softmax and detection
  post-processing are not layers: they cost no MACs here;
* BatchNorm is folded into the preceding convolution and is not a layer; such a convolution has
  no bias (as in torchvision and darknet). Parameter counts therefore exclude BatchNorm's
  2 trainable parameters (scale, shift) per channel; published figures that include them are
  compared after adding them back (see ``tests/workload/test_zoo.py``);
* MACs are those of conv and fc layers (``Layer.macs``): a multiply-accumulate per weight use,
  zero padding included, biases excluded.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from npusched.workload import INPUT, Layer, Network
from npusched.workload.tensor import TensorProgram
from npusched.workload.transformers import encoder_layer, llama_layer
from npusched.workload.zoo import ZOO_DIR, write_network

CONVENTIONS = (
    "Batch 1, tensors (C, H, W). Activations, dropout, flatten, softmax and detection "
    "post-processing are not layers. BatchNorm is folded into the preceding conv (which then has "
    "no bias) and is not a layer, so params exclude BatchNorm's 2 trainable parameters (scale, "
    "shift) per channel. MACs count conv and fc multiply-accumulates (zero padding included, "
    "biases excluded)."
)

Pad = int | tuple[int, int] | tuple[int, int, int, int]


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else v


def _pad(p: Pad) -> tuple[int, int, int, int]:
    """``p`` for all sides, ``(ph, pw)`` as in PyTorch, or ``(top, bottom, left, right)``."""
    if isinstance(p, int):
        return (p, p, p, p)
    if len(p) == 2:
        return (p[0], p[0], p[1], p[1])
    return p


class _Net:
    """Collects layers; each method appends one and returns its name."""

    def __init__(self, name: str, input_shape: tuple[int, int, int]) -> None:
        self.name = name
        self.input_shape = input_shape
        self.layers: list[Layer] = []

    def _add(self, layer: Layer) -> str:
        self.layers.append(layer)
        return layer.name

    def conv(
        self,
        name: str,
        src: str,
        k: int,
        kernel: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        pad: Pad = 0,
        groups: int = 1,
        bias: bool = True,
    ) -> str:
        return self._add(
            Layer(
                name,
                "conv",
                (src,),
                k,
                _pair(kernel),
                _pair(stride),
                _pad(pad),
                groups=groups,
                bias=bias,
            )
        )

    def maxpool(self, name: str, src: str, kernel: int, stride: int, pad: Pad = 0) -> str:
        return self._add(
            Layer(
                name, "maxpool", (src,), kernel=_pair(kernel), stride=_pair(stride), pad=_pad(pad)
            )
        )

    def avgpool(self, name: str, src: str, kernel: int, stride: int, pad: Pad = 0) -> str:
        return self._add(
            Layer(
                name, "avgpool", (src,), kernel=_pair(kernel), stride=_pair(stride), pad=_pad(pad)
            )
        )

    def global_avgpool(self, name: str, src: str) -> str:
        return self._add(Layer(name, "avgpool", (src,), global_pool=True))

    def fc(self, name: str, src: str, k: int, bias: bool = True) -> str:
        return self._add(Layer(name, "fc", (src,), k, bias=bias))

    def add(self, name: str, *srcs: str) -> str:
        return self._add(Layer(name, "add", srcs))

    def concat(self, name: str, *srcs: str) -> str:
        return self._add(Layer(name, "concat", srcs))

    def build(self, source: dict[str, Any]) -> Network:
        """The network, with ``source`` completed by our counts and the shared conventions."""
        net = Network(self.name, self.input_shape, tuple(self.layers))
        full = {
            **source,
            "counted": {"macs": net.macs(), "params": net.params()},
            "conventions": CONVENTIONS,
        }
        return Network(self.name, self.input_shape, tuple(self.layers), full)


def _published(value: int, rounding: int, as_published: str, where: str) -> dict[str, Any]:
    """A published figure: ``value`` with ``rounding``, half a unit of its last published digit
    (0 for an exact count)."""
    return {"value": value, "rounding": rounding, "as_published": as_published, "where": where}


def _published_gmacs(gmacs: str, as_published: str, where: str) -> dict[str, Any]:
    """A figure published in GMACs (``"4.089"``), rounded to its digits."""
    decimals = len(gmacs.partition(".")[2])
    value = int(gmacs.replace(".", "")) * 10 ** (9 - decimals)
    return _published(value, 5 * 10 ** (8 - decimals), as_published, where)


TV = "torchvision 0.28 model builders and weight metadata (torchvision.models, docs table "
TV_OPS = (
    "{w}.meta['_ops'] = {ops} GFLOPS, listed as GFLOPS in torchvision's model table; torchvision "
    "counts one multiply-add of conv and linear layers as one op, so this is GMACs"
)
BN_NOTE = (
    "includes BatchNorm scale and shift (2 per output channel of every conv; none on the fc), "
    "folded away here: the test adds them back"
)

# ---- ResNet (He et al. 2016), torchvision layout ------------------------------------------------


def _resnet(name: str, bottleneck: bool, blocks: tuple[int, int, int, int]) -> _Net:
    b = _Net(name, (3, 224, 224))
    x = b.conv("conv1", INPUT, 64, 7, 2, 3, bias=False)
    x = b.maxpool("maxpool", x, 3, 2, 1)
    inplanes = 64
    for stage, (planes, n) in enumerate(zip((64, 128, 256, 512), blocks, strict=True), 1):
        for i in range(n):
            s = 2 if stage > 1 and i == 0 else 1
            p = f"layer{stage}.{i}"
            if bottleneck:  # v1.5: the stride is on the 3x3 conv
                out = planes * 4
                y = b.conv(f"{p}.conv1", x, planes, 1, bias=False)
                y = b.conv(f"{p}.conv2", y, planes, 3, s, 1, bias=False)
                y = b.conv(f"{p}.conv3", y, out, 1, bias=False)
            else:
                out = planes
                y = b.conv(f"{p}.conv1", x, planes, 3, s, 1, bias=False)
                y = b.conv(f"{p}.conv2", y, planes, 3, 1, 1, bias=False)
            shortcut = x
            if s != 1 or inplanes != out:
                shortcut = b.conv(f"{p}.downsample", x, out, 1, s, bias=False)
            x = b.add(f"{p}.add", y, shortcut)
            inplanes = out
    x = b.global_avgpool("avgpool", x)
    b.fc("fc", x, 1000)
    return b


def _resnet_source(depth: int, ops: str, params: int, weights: str) -> dict[str, Any]:
    block = (
        "BasicBlock (two 3x3 convs)"
        if depth < 50
        else "Bottleneck 1x1-3x3-1x1, stride on the 3x3 conv (torchvision 'ResNet v1.5'; the "
        "paper's v1 strides the first 1x1 conv, same params, more MACs)"
    )
    return {
        "citation": "K. He, X. Zhang, S. Ren, J. Sun, 'Deep Residual Learning for Image "
        f"Recognition', CVPR 2016 (arXiv:1512.03385), Table 1, {depth}-layer",
        "layout": f"torchvision.models.resnet{depth}: 224x224x3 input; conv1 7x7/2 pad 3 "
        f"(64, no bias); maxpool 3x3/2 pad 1; {block}; projection shortcut = 1x1 conv with the "
        "block's stride, no bias ('downsample', BN folded) where shape changes, identity "
        "otherwise; residual add (ReLU fused); global average pool; fc 1000 with bias. "
        "Names follow torchvision's modules.",
        "published": {
            "macs": _published_gmacs(
                ops, f"{ops} GFLOPS", TV + "'GFLOPS'), " + TV_OPS.format(w=weights, ops=ops)
            ),
            "params": _published(
                params,
                0,
                f"{params:,}",
                TV + f"'Params'), {weights}.meta['num_params']; " + BN_NOTE,
            ),
        },
        "deviations": ["BatchNorm folded (not layers, params excluded; see conventions)."],
    }


def resnet18() -> Network:
    """ResNet-18, torchvision layout (He et al. 2016)."""
    src = _resnet_source(18, "1.814", 11_689_512, "ResNet18_Weights.IMAGENET1K_V1")
    return _resnet("resnet18", False, (2, 2, 2, 2)).build(src)


def resnet50() -> Network:
    """ResNet-50 v1.5, torchvision layout (He et al. 2016)."""
    src = _resnet_source(50, "4.089", 25_557_032, "ResNet50_Weights.IMAGENET1K_V1")
    return _resnet("resnet50", True, (3, 4, 6, 3)).build(src)


def resnet152() -> Network:
    """ResNet-152 v1.5, torchvision layout (He et al. 2016)."""
    src = _resnet_source(152, "11.514", 60_192_808, "ResNet152_Weights.IMAGENET1K_V1")
    return _resnet("resnet152", True, (3, 8, 36, 3)).build(src)


# ---- VGG (Simonyan & Zisserman 2015) ----------------------------------------------------------


def _vgg(name: str, convs: tuple[int, ...]) -> _Net:
    b = _Net(name, (3, 224, 224))
    x = INPUT
    for stage, (n, k) in enumerate(zip(convs, (64, 128, 256, 512, 512), strict=True), 1):
        for i in range(1, n + 1):
            x = b.conv(f"conv{stage}_{i}", x, k, 3, 1, 1)
        x = b.maxpool(f"pool{stage}", x, 2, 2)
    x = b.fc("fc6", x, 4096)
    x = b.fc("fc7", x, 4096)
    b.fc("fc8", x, 1000)
    return b


def _vgg_source(depth: int, config: str, ops: str, params: int, weights: str) -> dict[str, Any]:
    return {
        "citation": "K. Simonyan, A. Zisserman, 'Very Deep Convolutional Networks for "
        f"Large-Scale Image Recognition', ICLR 2015 (arXiv:1409.1556), Table 1 config {config}",
        "layout": f"torchvision.models.vgg{depth} (no BatchNorm): 224x224x3; 3x3 convs pad 1 "
        "with bias; 2x2/2 max pools; fc6 25088->4096, fc7 4096, fc8 1000 with bias. Names "
        "follow the paper (conv1_1 ... pool5, fc6-8).",
        "published": {
            "macs": _published_gmacs(
                ops, f"{ops} GFLOPS", TV + "'GFLOPS'), " + TV_OPS.format(w=weights, ops=ops)
            ),
            "params": _published(
                params,
                0,
                f"{params:,}",
                TV + f"'Params'), {weights}.meta['num_params'] (no BatchNorm); the paper's "
                f"Table 2 gives {138 if depth == 16 else 144} M",
            ),
        },
        "deviations": [
            "torchvision's AdaptiveAvgPool2d((7, 7)) before fc6 is the identity at 224x224 and is "
            "omitted."
        ],
    }


def vgg16() -> Network:
    """VGG-16 (configuration D)."""
    src = _vgg_source(16, "D", "15.47", 138_357_544, "VGG16_Weights.IMAGENET1K_V1")
    return _vgg("vgg16", (2, 2, 3, 3, 3)).build(src)


def vgg19() -> Network:
    """VGG-19 (configuration E)."""
    src = _vgg_source(19, "E", "19.632", 143_667_240, "VGG19_Weights.IMAGENET1K_V1")
    return _vgg("vgg19", (2, 2, 4, 4, 4)).build(src)


# ---- LeNet-5 (LeCun et al. 1998) ---------------------------------------------------------------


def lenet() -> Network:
    """LeNet-5 on a 32x32 grey image (LeCun et al. 1998, Sec. II.B)."""
    b = _Net("lenet", (1, 32, 32))
    x = b.conv("C1", INPUT, 6, 5)
    x = b.avgpool("S2", x, 2, 2)
    x = b.conv("C3", x, 16, 5)
    x = b.avgpool("S4", x, 2, 2)
    x = b.conv("C5", x, 120, 5)
    x = b.fc("F6", x, 84)
    b.fc("output", x, 10, bias=False)
    paper = (
        "LeCun et al. 1998, Sec. II.B: C1 156 params / 122,304 connections; S2 12 / 5,880; "
        "C3 1,516 / 151,600; S4 32 / 2,000; C5 48,120 / 48,120; F6 10,164 / 10,164; RBF output "
        "840 connections (its 840 parameters are fixed by hand, not trained)"
    )
    src = {
        "citation": "Y. LeCun, L. Bottou, Y. Bengio, P. Haffner, 'Gradient-Based Learning Applied "
        "to Document Recognition', Proc. IEEE 86(11), 1998, Sec. II.B and Fig. 2 (LeNet-5)",
        "layout": "32x32x1 input; C1 conv 6@5x5; S2 2x2/2 subsampling; C3 conv 16@5x5; S4 2x2/2; "
        "C5 conv 120@5x5 (1x1 output); F6 fc 84; output 10 Euclidean RBF units over F6 "
        "(modelled as fc 10 without bias: 84 multiply-accumulates per unit).",
        "published": {
            "macs": _published(
                340_908,
                0,
                "340,908 connections",
                paper + ". A connection includes bias and subsampling connections; the test "
                "converts to our MACs exactly (see deviations).",
            ),
            "params": _published(
                60_000,
                0,
                "60,000 trainable free parameters",
                paper + ". 156+12+1,516+32+48,120+10,164 = 60,000; the test converts exactly.",
            ),
        },
        "deviations": [
            "C3 is fully connected to all 6 S2 maps (2,416 params, 240,000 MACs) instead of the "
            "paper's Table I partial connection scheme (60 of 96 map pairs: 1,516 params, "
            "151,600 connections), which the available ops cannot express.",
            "S2 and S4 are plain 2x2/2 average pools: the paper's trainable coefficient and bias "
            "per map (12 and 32 params) and the sigmoid are not modelled.",
            "The RBF output layer is an fc 84->10 without bias (840 MACs, its 840 fixed "
            "parameters counted as params).",
        ],
    }
    return b.build(src)


# ---- Inception v3 (Szegedy et al. 2016), torchvision layout ------------------------------------


def inceptionv3() -> Network:
    """Inception v3 at 299x299, torchvision layout, inference graph (no auxiliary head)."""
    b = _Net("inceptionv3", (3, 299, 299))

    def cbr(
        name: str, src: str, k: int, kernel: int | tuple[int, int], stride: int = 1, pad: Pad = 0
    ) -> str:  # BasicConv2d: conv (no bias) + BN + ReLU
        return b.conv(name, src, k, kernel, stride, pad, bias=False)

    def block_a(p: str, x: str, pool_features: int) -> str:
        b1 = cbr(f"{p}.branch1x1", x, 64, 1)
        b5 = cbr(f"{p}.branch5x5_1", x, 48, 1)
        b5 = cbr(f"{p}.branch5x5_2", b5, 64, 5, pad=2)
        b3 = cbr(f"{p}.branch3x3dbl_1", x, 64, 1)
        b3 = cbr(f"{p}.branch3x3dbl_2", b3, 96, 3, pad=1)
        b3 = cbr(f"{p}.branch3x3dbl_3", b3, 96, 3, pad=1)
        bp = b.avgpool(f"{p}.branch_pool.avgpool", x, 3, 1, 1)
        bp = cbr(f"{p}.branch_pool", bp, pool_features, 1)
        return b.concat(p, b1, b5, b3, bp)

    def block_b(p: str, x: str) -> str:
        b3 = cbr(f"{p}.branch3x3", x, 384, 3, 2)
        bd = cbr(f"{p}.branch3x3dbl_1", x, 64, 1)
        bd = cbr(f"{p}.branch3x3dbl_2", bd, 96, 3, pad=1)
        bd = cbr(f"{p}.branch3x3dbl_3", bd, 96, 3, 2)
        bp = b.maxpool(f"{p}.branch_pool", x, 3, 2)
        return b.concat(p, b3, bd, bp)

    def block_c(p: str, x: str, c7: int) -> str:
        b1 = cbr(f"{p}.branch1x1", x, 192, 1)
        b7 = cbr(f"{p}.branch7x7_1", x, c7, 1)
        b7 = cbr(f"{p}.branch7x7_2", b7, c7, (1, 7), pad=(0, 3))
        b7 = cbr(f"{p}.branch7x7_3", b7, 192, (7, 1), pad=(3, 0))
        bd = cbr(f"{p}.branch7x7dbl_1", x, c7, 1)
        bd = cbr(f"{p}.branch7x7dbl_2", bd, c7, (7, 1), pad=(3, 0))
        bd = cbr(f"{p}.branch7x7dbl_3", bd, c7, (1, 7), pad=(0, 3))
        bd = cbr(f"{p}.branch7x7dbl_4", bd, c7, (7, 1), pad=(3, 0))
        bd = cbr(f"{p}.branch7x7dbl_5", bd, 192, (1, 7), pad=(0, 3))
        bp = b.avgpool(f"{p}.branch_pool.avgpool", x, 3, 1, 1)
        bp = cbr(f"{p}.branch_pool", bp, 192, 1)
        return b.concat(p, b1, b7, bd, bp)

    def block_d(p: str, x: str) -> str:
        b3 = cbr(f"{p}.branch3x3_1", x, 192, 1)
        b3 = cbr(f"{p}.branch3x3_2", b3, 320, 3, 2)
        b7 = cbr(f"{p}.branch7x7x3_1", x, 192, 1)
        b7 = cbr(f"{p}.branch7x7x3_2", b7, 192, (1, 7), pad=(0, 3))
        b7 = cbr(f"{p}.branch7x7x3_3", b7, 192, (7, 1), pad=(3, 0))
        b7 = cbr(f"{p}.branch7x7x3_4", b7, 192, 3, 2)
        bp = b.maxpool(f"{p}.branch_pool", x, 3, 2)
        return b.concat(p, b3, b7, bp)

    def block_e(p: str, x: str) -> str:
        b1 = cbr(f"{p}.branch1x1", x, 320, 1)
        b3 = cbr(f"{p}.branch3x3_1", x, 384, 1)
        b3a = cbr(f"{p}.branch3x3_2a", b3, 384, (1, 3), pad=(0, 1))
        b3b = cbr(f"{p}.branch3x3_2b", b3, 384, (3, 1), pad=(1, 0))
        bd = cbr(f"{p}.branch3x3dbl_1", x, 448, 1)
        bd = cbr(f"{p}.branch3x3dbl_2", bd, 384, 3, pad=1)
        bda = cbr(f"{p}.branch3x3dbl_3a", bd, 384, (1, 3), pad=(0, 1))
        bdb = cbr(f"{p}.branch3x3dbl_3b", bd, 384, (3, 1), pad=(1, 0))
        bp = b.avgpool(f"{p}.branch_pool.avgpool", x, 3, 1, 1)
        bp = cbr(f"{p}.branch_pool", bp, 192, 1)
        # torchvision concatenates 2a|2b and 3a|3b first; one concat gives the same channels
        return b.concat(p, b1, b3a, b3b, bda, bdb, bp)

    x = cbr("Conv2d_1a_3x3", INPUT, 32, 3, 2)
    x = cbr("Conv2d_2a_3x3", x, 32, 3)
    x = cbr("Conv2d_2b_3x3", x, 64, 3, pad=1)
    x = b.maxpool("maxpool1", x, 3, 2)
    x = cbr("Conv2d_3b_1x1", x, 80, 1)
    x = cbr("Conv2d_4a_3x3", x, 192, 3)
    x = b.maxpool("maxpool2", x, 3, 2)
    x = block_a("Mixed_5b", x, 32)
    x = block_a("Mixed_5c", x, 64)
    x = block_a("Mixed_5d", x, 64)
    x = block_b("Mixed_6a", x)
    for p, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        x = block_c(p, x, c7)
    x = block_d("Mixed_7a", x)
    x = block_e("Mixed_7b", x)
    x = block_e("Mixed_7c", x)
    x = b.global_avgpool("avgpool", x)
    b.fc("fc", x, 1000)
    w = "Inception_V3_Weights.IMAGENET1K_V1"
    src = {
        "citation": "C. Szegedy, V. Vanhoucke, S. Ioffe, J. Shlens, Z. Wojna, 'Rethinking the "
        "Inception Architecture for Computer Vision', CVPR 2016 (arXiv:1512.00567), Table 1",
        "layout": "torchvision.models.inception_v3, inference graph: 299x299x3; every conv is "
        "BasicConv2d (conv without bias + BN + ReLU); stem Conv2d_1a..4a with maxpool1/2 (3x3/2, "
        "no pad); Mixed_5b-d (InceptionA, pool features 32/64/64), Mixed_6a (InceptionB), "
        "Mixed_6b-e (InceptionC, c7 = 128/160/160/192), Mixed_7a (InceptionD), Mixed_7b-c "
        "(InceptionE); branch pools 3x3/1 pad 1 average or 3x3/2 max; global average pool "
        "(8x8x2048); fc 1000 with bias. Names follow torchvision's modules.",
        "published": {
            "macs": _published_gmacs(
                "5.713",
                "5.713 GFLOPS",
                TV
                + "'GFLOPS'), "
                + TV_OPS.format(w=w, ops="5.713")
                + "; measured in eval mode, where the auxiliary head does not run",
            ),
            "params": _published(
                27_161_264,
                0,
                "27,161,264",
                TV + f"'Params'), {w}.meta['num_params']; includes the training-only AuxLogits "
                "head (3,326,696 params: 1x1 conv 768->128 + BN, 5x5 conv 128->768 + BN, fc "
                f"768->1000) and {BN_NOTE}. Without the head: 23,834,568 "
                "(inception_v3(aux_logits=False)).",
            ),
        },
        "deviations": [
            "The auxiliary classifier (AuxLogits, training only) is omitted: this is the "
            "inference graph. The test adds its 3,326,696 params back to compare with "
            "torchvision's documented count.",
            "torchvision's input transform (transform_input) and dropout are not layers.",
        ],
    }
    return b.build(src)


# ---- SqueezeNet v1.0 (Iandola et al. 2016), torchvision layout ---------------------------------


def squeezenet() -> Network:
    """SqueezeNet v1.0 at 224x224, torchvision squeezenet1_0 layout."""
    b = _Net("squeezenet", (3, 224, 224))

    def fire(p: str, x: str, squeeze: int, expand: int) -> str:
        s = b.conv(f"{p}.squeeze", x, squeeze, 1)
        e1 = b.conv(f"{p}.expand1x1", s, expand, 1)
        e3 = b.conv(f"{p}.expand3x3", s, expand, 3, pad=1)
        return b.concat(p, e1, e3)

    x = b.conv("conv1", INPUT, 96, 7, 2)
    x = b.maxpool("maxpool1", x, 3, 2)  # 109 -> 54: ceil_mode gives the same
    x = fire("fire2", x, 16, 64)
    x = fire("fire3", x, 16, 64)
    x = fire("fire4", x, 32, 128)
    x = b.maxpool("maxpool4", x, 3, 2, (0, 1, 0, 1))  # ceil_mode: 54 -> 27
    x = fire("fire5", x, 32, 128)
    x = fire("fire6", x, 48, 192)
    x = fire("fire7", x, 48, 192)
    x = fire("fire8", x, 64, 256)
    x = b.maxpool("maxpool8", x, 3, 2)  # 27 -> 13: ceil_mode gives the same
    x = fire("fire9", x, 64, 256)
    x = b.conv("conv10", x, 1000, 1)
    b.global_avgpool("avgpool10", x)
    w = "SqueezeNet1_0_Weights.IMAGENET1K_V1"
    src = {
        "citation": "F. N. Iandola, S. Han, M. W. Moskewicz, K. Ashraf, W. J. Dally, K. Keutzer, "
        "'SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and <0.5MB model size', "
        "arXiv:1602.07360 (2016), Table 1 and Fig. 2 (left): SqueezeNet v1.0",
        "layout": "torchvision.models.squeezenet1_0 (version 1.0, not 1.1): 224x224x3; conv1 "
        "96@7x7/2 no pad; max pools 3x3/2 (ceil mode) after conv1, fire4 and fire8; fire "
        "modules = squeeze 1x1 then concat(expand 1x1, expand 3x3 pad 1), all convs with bias, "
        "no BatchNorm; conv10 1x1 -> 1000; global average pool.",
        "published": {
            "macs": _published_gmacs(
                "0.819",
                "0.819 GFLOPS",
                TV + "'GFLOPS'), " + TV_OPS.format(w=w, ops="0.819"),
            ),
            "params": _published(
                1_248_424,
                0,
                "1,248,424",
                TV + f"'Params'), {w}.meta['num_params']; the same total as the paper's "
                "Table 1 (1,248,424 before pruning). No BatchNorm.",
            ),
        },
        "deviations": [
            "Input 224x224 as torchvision (the paper's Table 1 shapes assume 227x227, e.g. conv1 "
            "111x111); parameters do not depend on it.",
            "ceil_mode max pooling is written as floor-mode pooling with one row and column of "
            "padding at the bottom and right where ceil and floor differ (maxpool4: 54 -> 27); "
            "the padded position never wins the max.",
        ],
    }
    return b.build(src)


# ---- MobileNetV2 (Sandler et al. 2018), torchvision layout -------------------------------------


def mobilenetv2() -> Network:
    """MobileNetV2, width multiplier 1.0, 224x224, torchvision layout."""
    b = _Net("mobilenetv2", (3, 224, 224))
    x = b.conv("features.0", INPUT, 32, 3, 2, 1, bias=False)
    cin, idx = 32, 1
    # (expansion t, output channels c, repeats n, first stride s): the paper's Table 2
    for t, c, n, s in (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ):
        for i in range(n):
            stride = s if i == 0 else 1
            p = f"features.{idx}"
            hidden = cin * t
            y = x if t == 1 else b.conv(f"{p}.expand", x, hidden, 1, bias=False)
            y = b.conv(f"{p}.depthwise", y, hidden, 3, stride, 1, groups=hidden, bias=False)
            y = b.conv(f"{p}.project", y, c, 1, bias=False)
            x = b.add(f"{p}.add", y, x) if stride == 1 and cin == c else y
            cin, idx = c, idx + 1
    x = b.conv(f"features.{idx}", x, 1280, 1, bias=False)
    x = b.global_avgpool("avgpool", x)
    b.fc("classifier", x, 1000)
    w = "MobileNet_V2_Weights.IMAGENET1K_V1"
    src = {
        "citation": "M. Sandler, A. Howard, M. Zhu, A. Zhmoginov, L.-C. Chen, 'MobileNetV2: "
        "Inverted Residuals and Linear Bottlenecks', CVPR 2018 (arXiv:1801.04381), Tables 1-2; "
        "Table 4 gives 3.4M params and 300M multiply-adds",
        "layout": "torchvision.models.mobilenet_v2 (width 1.0): 224x224x3; features.0 conv "
        "3x3/2 32; 17 inverted residual blocks (t, c, n, s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) "
        "(6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1): 1x1 expand (absent when t = 1), 3x3 "
        "depthwise with the stride, linear 1x1 project, residual add when stride 1 and "
        "channels match; features.18 conv 1x1 1280; global average pool; classifier fc 1000 "
        "with bias. All convs without bias (BN folded).",
        "published": {
            "macs": _published_gmacs(
                "0.301",
                "0.301 GFLOPS",
                TV
                + "'GFLOPS'), "
                + TV_OPS.format(w=w, ops="0.301")
                + " (the paper's Table 4: 300M multiply-adds)",
            ),
            "params": _published(
                3_504_872,
                0,
                "3,504,872",
                TV + f"'Params'), {w}.meta['num_params']; {BN_NOTE} (the paper's Table 4: 3.4M)",
            ),
        },
        "deviations": ["BatchNorm folded (not layers, params excluded; see conventions)."],
    }
    return b.build(src)


# ---- YOLOv2 and Tiny YOLOv2 (Redmon & Farhadi 2017), darknet VOC configurations ---------------

DARKNET = (
    "J. Redmon, 'YOLO: Real-Time Object Detection' (YOLOv2) web page and the darknet README, "
    "table of VOC 2007+2012 models; darknet counts 2 FLOPs per multiply-accumulate "
    "(conv layers only)"
)


DARKNET19 = (
    "32x3 M 64x3 M 128x3 64x1 128x3 M 256x3 128x1 256x3 M "
    "512x3 256x1 512x3 256x1 512x3 M 1024x3 512x1 1024x3 512x1 1024x3"
)


def yolov2() -> Network:
    """YOLOv2 416x416 for VOC (Darknet-19 backbone + passthrough), as in the paper."""
    b = _Net("yolov2", (3, 416, 416))
    x = INPUT
    n = 0
    pool = 0
    # Darknet-19 without its classifier (the paper's Table 6): filters x kernel, M = 2x2/2 max pool
    for spec in DARKNET19.split():
        if spec == "M":
            pool += 1
            x = b.maxpool(f"pool{pool}", x, 2, 2)
        else:
            k, r = map(int, spec.split("x"))
            n += 1
            x = b.conv(f"conv{n}", x, k, r, 1, r // 2, bias=False)
    fine = "conv13"  # the last 26x26x512 layer
    x = b.conv("conv19", x, 1024, 3, 1, 1, bias=False)
    x = b.conv("conv20", x, 1024, 3, 1, 1, bias=False)
    # passthrough: space-to-depth 26x26x512 -> 13x13x2048 as its exact linear equivalent
    reorg = b.conv("reorg", fine, 2048, 2, 2, groups=512, bias=False)
    x = b.concat("route", reorg, x)
    x = b.conv("conv21", x, 1024, 3, 1, 1, bias=False)
    b.conv("conv22", x, 125, 1)
    src = {
        "citation": "J. Redmon, A. Farhadi, 'YOLO9000: Better, Faster, Stronger', CVPR 2017 "
        "(arXiv:1612.08242), Sec. 2-3 and Table 6 (Darknet-19); darknet cfg/yolo-voc.2.0.cfg",
        "layout": "416x416x3; Darknet-19 convs 1-18 (3x3 pad 1 or 1x1, all with BN, no bias) "
        "and five 2x2/2 max pools, its classifier removed; conv19, conv20 3x3x1024; passthrough "
        "from conv13 (26x26x512) reorganised to 13x13x2048 and concatenated in front of conv20's "
        "output (darknet: route -9, reorg stride 2, route -1,-3); conv21 3x3x1024; conv22 1x1 "
        "125 = 5 anchors x (5 + 20 VOC classes), with bias. The region layer (decoding) is not "
        "a layer. This is the paper's passthrough (26x26x512 -> 13x13x2048) as in "
        "yolo-voc.2.0.cfg; darknet's later yolo-voc.cfg inserts a 1x1x64 conv before the "
        "reorg (about 29.4 BFLOPs by the same count) and is not modelled.",
        "published": {
            "macs": _published(
                17_450_000_000,
                2_500_000,
                "34.90 Bn FLOPS",
                DARKNET + ": 'YOLOv2, VOC 2007+2012, 76.8 mAP, 34.90 Bn FLOPS' at 416x416 "
                "(= 17.45 GMACs; 544x544: 59.68 Bn). darknet counts the reorg as 0 FLOPs: the "
                "test subtracts our reorg layer's MACs.",
            ),
        },
        "deviations": [
            "The reorg (space-to-depth, stride 2) has no op of its own: it is the conv 'reorg', "
            "2x2/2, groups 512, 2048 outputs, whose one-hot weights copy each 2x2 block of an "
            "input channel into 4 output channels. That is the same function up to the order "
            "of the output channels, the same tensor shapes and receptive fields, and one "
            "consumer of conv13; but it adds 1,384,448 MACs (0.008 %) and 8,192 fixed weights "
            "(not trained) to the counts, which darknet counts as zero.",
            "BatchNorm folded into convs 1-21 (no bias); leaky ReLU not a layer.",
            "No published parameter count is checked (darknet does not list one).",
        ],
    }
    return b.build(src)


def tinyyolo() -> Network:
    """Tiny YOLOv2 416x416 for VOC (darknet cfg/tiny-yolo-voc.cfg)."""
    b = _Net("tinyyolo", (3, 416, 416))
    x = INPUT
    for i, k in enumerate((16, 32, 64, 128, 256, 512), 1):
        x = b.conv(f"conv{i}", x, k, 3, 1, 1, bias=False)
        # the sixth pool keeps 13x13: darknet pads 2x2/1 pooling at the bottom and right
        x = b.maxpool(f"pool{i}", x, 2, 2) if i < 6 else b.maxpool("pool6", x, 2, 1, (0, 1, 0, 1))
    x = b.conv("conv7", x, 1024, 3, 1, 1, bias=False)
    x = b.conv("conv8", x, 1024, 3, 1, 1, bias=False)
    b.conv("conv9", x, 125, 1)
    src = {
        "citation": "J. Redmon, A. Farhadi, 'YOLO9000: Better, Faster, Stronger', CVPR 2017 "
        "(arXiv:1612.08242); Tiny YOLO (v2) as darknet cfg/tiny-yolo-voc.cfg",
        "layout": "416x416x3; conv1-6 3x3 pad 1 (16, 32, 64, 128, 256, 512; BN, no bias), each "
        "followed by a 2x2 max pool, stride 2 for pool1-5 and stride 1 for pool6 (darknet pads "
        "it by one at the bottom and right: 13x13 stays 13x13); conv7, conv8 3x3x1024; conv9 "
        "1x1 125 = 5 anchors x (5 + 20 VOC classes) with bias. Region layer not a layer.",
        "published": {
            "macs": _published(
                3_485_000_000,
                2_500_000,
                "6.97 Bn FLOPS",
                DARKNET + ": 'Tiny YOLO, VOC 2007+2012, 57.1 mAP, 6.97 Bn FLOPS' at 416x416 "
                "(= 3.485 GMACs)",
            ),
        },
        "deviations": [
            "BatchNorm folded into conv1-8 (no bias); leaky ReLU not a layer.",
            "No published parameter count is checked (darknet does not list one).",
        ],
    }
    return b.build(src)


# ---- FSRCNN (Dong et al. 2016) -----------------------------------------------------------------

FSRCNN_D, FSRCNN_S, FSRCNN_M, FSRCNN_SCALE = 56, 12, 4, 3


def fsrcnn() -> Network:
    """FSRCNN(56, 12, 4), x3 upscaling of a 360x640 luminance image to 1080x1920."""
    d, s, m, n = FSRCNN_D, FSRCNN_S, FSRCNN_M, FSRCNN_SCALE
    b = _Net("fsrcnn", (1, 360, 640))
    x = b.conv("feature", INPUT, d, 5, 1, 2)
    x = b.conv("shrink", x, s, 1)
    for i in range(1, m + 1):
        x = b.conv(f"map{i}", x, s, 3, 1, 1)
    x = b.conv("expand", x, d, 1)
    # 9x9 deconv, stride 3, pad 3 == 3x3 conv, pad 1, to n^2 = 9 sub-pixel phases (+ depth-to-space)
    b.conv("deconv", x, n * n, 9 // n, 1, (9 // n) // 2, bias=False)
    src = {
        "citation": "C. Dong, C. C. Loy, X. Tang, 'Accelerating the Super-Resolution "
        "Convolutional Neural Network', ECCV 2016 (arXiv:1608.00367), Sec. 3 (Fig. 2; "
        "complexity formula in Sec. 3.2)",
        "layout": f"FSRCNN(d={d}, s={s}, m={m}), upscaling factor {n}, on a 1x360x640 "
        "luminance input (output 1080x1920, full HD): feature conv 5x5x56, shrink 1x1x12, "
        "map1-4 3x3x12, expand 1x1x56 (each with bias, PReLU not a layer, zero padding keeps "
        "360x640), deconv 9x9 stride 3 to one channel.",
        "published": {
            "macs": _published(
                12_464 * 360 * 640,
                0,
                "O{(25d + sd + 9ms^2 + ds + 81d) S_LR} = 12,464 S_LR",
                "Dong et al. 2016, Sec. 3.2: computational complexity O{(25d + sd + 9ms^2 + ds + "
                "81d) S_LR} with S_LR the LR image size, = 12,464 x 360 x 640 for (56, 12, 4)",
            ),
            "params": _published(
                12_464,
                0,
                "12,464",
                "Dong et al. 2016, Sec. 3.2: the coefficient of the complexity formula, 25d + "
                "sd + 9ms^2 + ds + 81d (= f^2 x inputs x outputs summed over the layers), is "
                "the weight count, 12,464 for (56, 12, 4); biases and PReLU slopes are not in "
                "it, so the test compares our weights (params minus biases)",
            ),
        },
        "deviations": [
            "The deconvolution (transposed conv 9x9, stride 3, pad 3, 56 -> 1) is written as "
            "its exact sub-pixel equivalent: a 3x3 conv (pad 1, stride 1) from 56 channels to "
            "9 = 3x3 output phases at 360x640, each phase taking 3x3 of the 9x9 taps; a "
            "depth-to-space (pure data movement, not a layer) turns 9x360x640 into 1x1080x1920. "
            "Same 4,536 weights, same 81d MACs per LR pixel, same output elements; its single "
            "bias is not representable per phase and is not counted (params are 1 short).",
            "PReLU slopes (one per channel) are not counted, as in the paper's count.",
        ],
    }
    return b.build(src)


def _transformer_source(paper: str, config: str, published: dict[str, Any]) -> dict[str, Any]:
    return {"paper": paper, "config": config, "published": published,
            "conventions": "One layer at batch 1 (npusched.workload.transformers): no causal "
                           "mask, no rotary embedding, no dropout; the score scaling is one "
                           "element-wise pass."}  # fmt: skip


_BERT = _transformer_source(
    "Devlin et al., BERT, NAACL 2019, Sec. 3 (BERT-base: L=12, H=768, A=12, 4H feed-forward)",
    "post-norm encoder layer", {"params_total": 109_482_240, "where": "the 12 layers, the "
                                "embeddings (30 522 + 512 + 2) x 768 with their LayerNorm and "
                                "the 768 x 768 pooler; HuggingFace bert-base-uncased "
                                "num_parameters()"})  # fmt: skip
_LLAMA = _transformer_source(
    "Grattafiori et al., The Llama 3 Herd of Models, 2024, Table 3 (8B: 32 layers, d=4096, "
    "FFN 14 336, 32 heads, 8 key/value heads)", "decoder layer: RMSNorm, GQA, SwiGLU",
    {"params_total": 8_030_261_248, "where": "32 layers, the 128 256 x 4096 embedding and "
     "output matrices (untied) and the final RMSNorm: 8.03 B as published"})  # fmt: skip


def bert_base_128() -> TensorProgram:
    return encoder_layer("bert-base-128", 128, 768, 12, 3072, source=_BERT)


def bert_base_512() -> TensorProgram:
    return encoder_layer("bert-base-512", 512, 768, 12, 3072, source=_BERT)


def vit_b16() -> TensorProgram:
    src = _transformer_source(
        "Dosovitskiy et al., An Image is Worth 16x16 Words, ICLR 2021, Table 1 (ViT-Base: 12 "
        "layers, D=768, MLP 3072, 12 heads; 224 x 224 in 16 x 16 patches: 196 + 1 tokens)",
        "pre-norm encoder block", {"params_total": 86_000_000, "rounding": 1_000_000,
                                   "where": "Table 1: 86M"})  # fmt: skip
    return encoder_layer("vit-b16", 197, 768, 12, 3072, pre_norm=True, source=src)


def gpt2_small() -> TensorProgram:
    src = _transformer_source(
        "Radford et al., Language Models are Unsupervised Multitask Learners, 2019, Table 2 "
        "(117M: 12 layers, d=768; context 1024 tokens)", "pre-norm decoder block at 1024 tokens",
        {"params_total": 124_439_808, "where": "12 blocks, the 50 257 x 768 token and 1024 x 768 "
         "position embeddings (tied output) and the final LayerNorm; HuggingFace gpt2 "
         "num_parameters()"})  # fmt: skip
    return encoder_layer("gpt2-small", 1024, 768, 12, 3072, pre_norm=True, source=src)


def _llama(tokens: int, cache: int = 0) -> TensorProgram:
    name = f"llama3-8b-decode-{cache}" if cache else f"llama3-8b-prefill-{tokens}"
    return llama_layer(name, tokens, cache=cache, source=_LLAMA)


BUILDERS: dict[str, Callable[[], Network | TensorProgram]] = {
    # resnet18 first: other work depends on it
    "resnet18": resnet18,
    "resnet50": resnet50,
    "resnet152": resnet152,
    "vgg16": vgg16,
    "vgg19": vgg19,
    "lenet": lenet,
    "inceptionv3": inceptionv3,
    "squeezenet": squeezenet,
    "mobilenetv2": mobilenetv2,
    "yolov2": yolov2,
    "tinyyolo": tinyyolo,
    "fsrcnn": fsrcnn,
    "bert-base-128": bert_base_128,
    "bert-base-512": bert_base_512,
    "vit-b16": vit_b16,
    "gpt2-small": gpt2_small,
    "llama3-8b-prefill-256": lambda: _llama(256),
    "llama3-8b-prefill-1024": lambda: _llama(1024),
    "llama3-8b-prefill-4096": lambda: _llama(4096),
    "llama3-8b-decode-4096": lambda: _llama(1, 4096),
}


def main(names: list[str], out: Path = ZOO_DIR) -> None:
    for name in names or list(BUILDERS):
        net = BUILDERS[name]()
        write_network(net, out / f"{name}.json")
        count = len(net.ops) if isinstance(net, TensorProgram) else len(net.layers)
        print(
            f"{name:12s} {count:4d} layers  {net.macs() / 1e9:8.3f} GMACs  "
            f"{net.params():12,d} params"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
