"""Partition and dependency generation: coverage, overlap volumes and MACs, against brute force
on random layer shapes and tilings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from npusched import Accelerator
from npusched.methods import solve
from npusched.partition import (
    Tiling,
    dependencies,
    klotski_tiling,
    layer_extents,
    loop_order_rank,
    stream_cn_io,
    stream_tiling,
    tile_macs,
)
from npusched.partition.build import EdgeCache, Layout, heads, uop_edges
from npusched.partition.instance import build_instance
from npusched.problem.scheduling.dag import UopGraph
from npusched.verify import check, verify
from npusched.workload import INPUT, Layer, Network


@st.composite
def two_layer_nets(draw, ops=("conv", "dw", "maxpool", "fc", "add", "concat"), plain=False):
    """A conv producer and a random consumer (conv, depthwise conv, pooling, fc, add, concat,
    or those of ``ops``); ``plain``: no dilation and strides no longer than the kernel (every
    receptive field an interval)."""
    c = draw(st.integers(1, 4))
    h, w = draw(st.integers(3, 9)), draw(st.integers(3, 9))
    k = draw(st.integers(1, 5))
    pk = draw(st.sampled_from([1, 3]))
    first = Layer("p", "conv", (INPUT,), k, (pk, pk), (1, 1), (pk // 2,) * 4)
    op = draw(st.sampled_from(list(ops)))
    kern = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = tuple(draw(st.integers(1, min(2, kern[a]) if plain else 2)) for a in range(2))
    pad = tuple(draw(st.integers(0, 1)) for _ in range(4))
    dil = (1, 1) if plain else (draw(st.integers(1, 2)), 1)
    layers = [first]
    if op == "conv":
        layers.append(Layer("q", "conv", ("p",), draw(st.integers(1, 5)), kern, stride, pad, dil))
    elif op == "dw":
        layers.append(Layer("q", "conv", ("p",), k, kern, stride, pad, dil, groups=k))
    elif op == "maxpool":
        layers.append(Layer("q", "maxpool", ("p",), kernel=kern, stride=stride, pad=pad))
    elif op == "fc":
        layers.append(Layer("q", "fc", ("p",), draw(st.integers(1, 4))))
    else:
        layers.append(Layer("p2", "conv", (INPUT,), k, (1, 1)))
        layers.append(Layer("q", op, ("p", "p2")))
    try:
        net = Network("t", (c, h, w), tuple(layers))
    except ValueError:  # e.g. a kernel larger than its padded input
        assume(False)
    tilings = {}
    for layer in net.layers:
        ext = layer_extents(layer, net.in_shapes(layer), net.shapes[layer.name])
        tiles = [draw(st.integers(1, e)) for e in ext]
        if layer.op != "conv" or layer.groups > 1:
            tiles[3] = ext[3]
        if layer.op == "fc" and np.prod(net.in_shapes(layer)[0][1:]) > 1:
            tiles[3] = ext[3]
        tilings[layer.name] = Tiling.regular(ext, tuple(tiles))
    return net, tilings


def _boxes(tiling: Tiling):
    kb, yb, xb, cb = tiling.bounds
    for k in range(kb.size - 1):
        for y in range(yb.size - 1):
            for x in range(xb.size - 1):
                for c in range(cb.size - 1):
                    yield (k, y, x, c), (kb[k], kb[k + 1], yb[y], yb[y + 1], xb[x], xb[x + 1])


def _needs(layer: Layer, box, in_shape, cb, c, offset):
    """The input box one consumer μop reads, computed element by element (brute force)."""
    k0, k1, y0, y1, x0, x1 = box
    cin, h, w = in_shape
    need = np.zeros(in_shape, dtype=bool)

    def taps(o: int, axis: int, size: int) -> list[int]:
        if layer.op in ("add", "concat"):
            return [o]
        if layer.op == "fc" or layer.global_pool:
            return list(range(size))
        r, s, d, p = (
            layer.kernel[axis],
            layer.stride[axis],
            layer.dilation[axis],
            layer.pad[2 * axis],
        )
        return [o * s - p + t * d for t in range(r) if 0 <= o * s - p + t * d < size]

    for oy in range(y0, y1):
        for ox in range(x0, x1):
            ry, rx = taps(oy, 0, h), taps(ox, 1, w)
            if layer.op == "fc":
                chans = range(cin) if h * w > 1 else range(cb[c], cb[c + 1])
            elif layer.op == "conv" and layer.groups == 1:
                chans = range(cb[c], cb[c + 1])
            elif layer.op == "conv":
                kg, cg = layer.out_channels // layer.groups, cin // layer.groups
                chans = range((k0 // kg) * cg, -(-k1 // kg) * cg)
            else:
                chans = range(max(0, k0 - offset), min(cin, k1 - offset))
            for ch in chans:
                need[np.ix_([ch], ry, rx)] = True
    return need


@settings(max_examples=60, deadline=None)
@given(two_layer_nets())
def test_dependencies_equal_brute_force_overlaps(case):
    net, tilings = case
    q = net.layer("q")
    qt = tilings["q"]
    offset = 0
    for p in q.inputs:
        pt = tilings[p]
        shape = net.shapes[p]
        src, dst, vol = dependencies(pt, q, qt, shape, offset)
        got = {(int(s), int(d)): int(v) for s, d, v in zip(src, dst, vol, strict=True)}
        assert len(got) == src.size  # no duplicate edges
        # producer tiles cover the output exactly once
        cover = np.zeros(shape, dtype=np.int64)
        for (_, _, _, c), (k0, k1, y0, y1, x0, x1) in _boxes(pt):
            if c == pt.counts[3] - 1:
                cover[k0:k1, y0:y1, x0:x1] += 1
        assert (cover == 1).all()
        want = {}
        for (k, y, x, c), box in _boxes(qt):
            need = _needs(q, box, shape, qt.bounds[3], c, offset)
            got_in = 0
            for (pk, py, px, pc), (a0, a1, b0, b1, e0, e1) in _boxes(pt):
                if pc != pt.counts[3] - 1:
                    continue
                v = int(need[a0:a1, b0:b1, e0:e1].sum())
                if v:
                    want[(int(pt.index(pk, py, px, pc)), int(qt.index(k, y, x, c)))] = v
                    got_in += v
            assert got_in == int(need.sum())  # the input region is covered by producers
        assert got == want
        if q.op == "concat":
            offset += shape[0]


@settings(max_examples=40, deadline=None)
@given(two_layer_nets(), st.integers(0, 2**31 - 1))
def test_heads_without_a_graph_are_the_graphs_heads(case, seed):
    """The heads a design space's bounds use, layer after layer without building the graph,
    equal the longest paths on the μop graph of the same partition (every op, concat's channel
    offsets and partial-sum chains included), with and without the edge cache."""
    net, tilings = case
    rng = np.random.default_rng(seed)
    latency = {ly.name: rng.integers(0, 50, tilings[ly.name].size) for ly in net.layers}
    d = np.concatenate([latency[ly.name] for ly in net.layers])
    layout = Layout.of(net, tilings)
    want = UopGraph(d, *uop_edges(layout)).heads()
    assert np.array_equal(heads(net, tilings, latency), want)
    cache = EdgeCache()
    for _ in range(2):  # the second call reads the cache
        assert np.array_equal(heads(net, tilings, latency, cache), want)
    assert cache.edges > 0 or not any(ly.inputs != (INPUT,) for ly in net.layers)


@settings(max_examples=30, deadline=None)
@given(two_layer_nets())
def test_macs_preserved_and_instance_schedules(case):
    net, tilings = case
    for layer in net.layers:
        assert tile_macs(layer, tilings[layer.name]).sum() == layer.macs(net.in_shapes(layer))
    inst = build_instance(net, tilings, Accelerator.identical(2), [{"K": 2, "C": 2}] * 2)
    res = solve(inst, "list")
    assert verify(inst, res.solution).ok


def test_klotski_remainders_make_at_most_16_kinds_and_align_to_the_pe_array():
    net = Network("t", (30, 14, 14), (Layer("c", "conv", (INPUT,), 50, (3, 3), pad=(1,) * 4),))
    t = klotski_tiling(net, net.layers[0], (4, 4, 8, 16))
    assert t.counts == (4, 4, 4, 4) and t.kinds() == 16
    aligned = klotski_tiling(net, net.layers[0], (4, 4, 8, 16), {"K": 12, "C": 14})
    assert aligned.lengths(0).tolist() == [24, 24, 2] and aligned.lengths(3).tolist() == [14, 14, 2]


def test_loop_order_is_a_permutation_with_the_chosen_loop_innermost():
    t = Tiling.regular((4, 2, 2, 3), (2, 1, 1, 1))
    rank = loop_order_rank(t, "C,K,OY,OX")
    assert sorted(rank.tolist()) == list(range(t.size))
    # with C outermost, the first μops are the c = 0 slices
    first = np.argsort(rank)[: t.size // 3]
    assert (first % 3 == 0).all()


def test_stream_cns_by_rows_discard_inputs_once():
    net = Network("t", (2, 8, 8), (Layer("c", "conv", (INPUT,), 4, (3, 3), pad=(1,) * 4),))
    t = stream_tiling(net, net.layers[0], {"OY": 1})
    new, discard = stream_cn_io(net, net.layers[0], t)
    assert t.counts == (1, 8, 1, 1) and (new == 4 * 8).all()
    assert discard.sum() == 2 * 8 * 8  # every input element is discarded exactly once
    assert discard[0] == 0 and discard[-1] == 2 * 2 * 8  # the last CN frees the last two rows


def _tiny_net_file(tmp_path):
    import json

    net = Network(
        "tiny",
        (3, 16, 16),
        (
            Layer("c1", "conv", (INPUT,), 16, (3, 3), pad=(1,) * 4),
            Layer("c2", "conv", ("c1",), 32, (3, 3), (2, 2), (1,) * 4),
            Layer("p", "maxpool", ("c2",), kernel=(2, 2), stride=(2, 2)),
            Layer("fc", "fc", ("p",), 10),
        ),
    )
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(net.to_dict()))
    return net, path


def test_cli_partition_info_solve_verify(tmp_path):
    import json

    from conftest import run_cli

    net, path = _tiny_net_file(tmp_path)
    for scheme, extra in (
        ("klotski", ["--s", "4,4,8,8"]),
        ("stream", ["--cn", "OY=2"]),
        ("flexer", ["--tiles", "8,4,4,8"]),
    ):
        out = tmp_path / f"{scheme}.json"
        r = run_cli(
            "partition",
            "--network",
            path,
            "--arch",
            "flexer-arch3",
            "--scheme",
            scheme,
            *extra,
            "-o",
            out,
        )
        assert r.returncode == 0, r.stderr
        info = json.loads(run_cli("info", out, "--json").stdout)
        assert info["total_macs"] == net.macs()  # MACs preserved by every scheme
        assert info["uops"] > len(net.layers) and info["critical_path"] <= info["lower_bound"]
        sol = tmp_path / f"{scheme}.sol.json"
        r = run_cli("solve", out, "--method", "list", "--out", sol)
        assert r.returncode == 0 and "verify=ok" in r.stdout, r.stdout + r.stderr
        assert run_cli("verify", out, sol).returncode == 0


def test_cli_partition_bad_arguments(tmp_path):
    from conftest import run_cli

    _, path = _tiny_net_file(tmp_path)
    out = tmp_path / "o.json"
    r = run_cli(
        "partition",
        "--network",
        path,
        "--arch",
        "flexer-arch3",
        "--scheme",
        "klotski",
        "--s",
        "4,4,8",
        "-o",
        out,
    )
    assert r.returncode == 2 and "--s needs 4 positive integers" in r.stderr
    assert "Traceback" not in r.stderr and not out.exists()
    r = run_cli(
        "partition", "--network", path, "--arch", "no-such-arch", "--scheme", "stream", "-o", out
    )
    assert r.returncode == 2 and "no-such-arch" in r.stderr and not out.exists()


@settings(max_examples=40, deadline=None)
@given(two_layer_nets(ops=("conv", "maxpool"), plain=True))
def test_general_box_path_equals_the_product_path(case):
    """Where every receptive field is an interval, the general box intersection (any partition)
    finds exactly the edges of the per-dimension product path."""
    from npusched.partition.grid import box_overlaps, needed_input

    net, tilings = case
    q = net.layer("q")
    assume(q.op in ("conv", "maxpool") and q.dilation == (1, 1))
    assume(q.stride[0] <= q.kernel[0] and q.stride[1] <= q.kernel[1])
    pt, qt = tilings["p"], tilings["q"]
    shape = net.shapes["p"]
    prod = dependencies(pt, q, qt, shape)
    pboxes = np.array(
        [
            [k0, k1, y0, y1, x0, x1]
            for (_, _, _, c), (k0, k1, y0, y1, x0, x1) in _boxes(pt)
            if c == pt.counts[3] - 1
        ]
    )
    pidx = [int(pt.index(k, y, x, c)) for (k, y, x, c), _ in _boxes(pt) if c == pt.counts[3] - 1]
    ch, rows, cols = needed_input(q, qt, shape)
    cboxes, cidx = [], []
    for (k, y, x, c), _ in _boxes(qt):
        t = c if q.op == "conv" and q.groups == 1 else k
        cboxes.append([ch[0][t], ch[1][t], rows[0][y], rows[1][y], cols[0][x], cols[1][x]])
        cidx.append(int(qt.index(k, y, x, c)))
    pj, ci, vol = box_overlaps(pboxes, np.array(cboxes))
    general = {(pidx[a], cidx[b]): int(v) for a, b, v in zip(pj, ci, vol, strict=True)}
    assert general == {(int(s), int(d)): int(v) for s, d, v in zip(*prod, strict=True)}


def test_resnet50_and_vgg16_partitioned_keep_published_macs_and_solve(tmp_path):
    """`npusched info` on partitioned ResNet-50 and VGG16 (the compute-only machine: Stream's
    CNs keep a layer's weights whole, which VGG16's fc layers make far larger than any core's
    memory) reports the published MAC totals (torchvision: 4.09 and 15.47 GMACs, to the
    rounding of the published figure); the ResNet-50 instance solves with list scheduling and
    with time-limited CP-SAT, and both pass verify."""
    import json

    from conftest import run_cli

    published = {"resnet50": 4.09e9, "vgg16": 15.47e9}
    for name, macs in published.items():
        out = tmp_path / f"{name}.json"
        r = run_cli(
            "partition",
            "--network",
            name,
            "--arch",
            "flexer-arch7",
            "--scheme",
            "stream",
            "--cn",
            "OY=4",
            "--machine",
            "compute-only",
            "-o",
            out,
        )
        assert r.returncode == 0, r.stderr
        info = json.loads(run_cli("info", out, "--json").stdout)
        assert abs(info["total_macs"] - macs) <= 0.005e9
    inst = tmp_path / "resnet50.json"
    for method, extra in (("list", []), ("cpsat", ["--time-limit", "10", "--threads", "2"])):
        sol = tmp_path / f"{method}.sol.json"
        r = run_cli("solve", inst, "--method", method, *extra, "--out", sol)
        assert r.returncode == 0 and "verify=ok" in r.stdout, r.stdout + r.stderr
        assert run_cli("verify", inst, sol).returncode == 0


def test_flexer_loop_order_numbers_the_operations():
    """Flexer Fig. 3c: with the input-channel loop outermost, the first third of a layer's
    operations start partial sums (no predecessor) and the rest accumulate onto them."""
    from npusched.arch import load_arch
    from npusched.partition.api import partition_network

    net = Network("one", (6, 4, 4), (Layer("c", "conv", (INPUT,), 4, (3, 3), pad=(1,) * 4),))
    arch = load_arch("flexer-arch1")
    for order, first_free in (("K,OY,OX,C", False), ("C,K,OY,OX", True)):
        inst = partition_network(net, arch, "flexer", tiles=(2, 2, 2, 2), loop_order=order)
        indeg = np.bincount(inst.graph.dst, minlength=inst.n)
        third = inst.n // 3
        assert (indeg[:third] == 0).all() == first_free
        assert indeg.sum() == inst.n - third  # chains of 3: two partial-sum edges per output
        assert verify(inst, solve(inst, "list").solution).ok


def test_klotski_mutensor_must_fit_the_core_memory(tmp_path):
    from conftest import run_cli

    out = tmp_path / "o.json"
    r = run_cli(
        "partition",
        "--network",
        "vgg16",
        "--arch",
        "klotski-3x3",
        "--scheme",
        "klotski",
        "--s",
        "224,224,512,512",
        "-o",
        out,
    )
    assert r.returncode == 2 and "core memory" in r.stderr and not out.exists()


def test_a_uop_over_its_core_memory_says_how_to_cut_finer():
    """ResNet-18's layer4 3×3 convolution, one CN per output row, holds more than a 2 MB core
    of stream-hetero: the error names the μop and the scheme's finer cut, and that cut works."""
    from npusched.arch import load_arch
    from npusched.partition.api import partition_network, resolve_network

    net, arch = resolve_network("resnet18"), load_arch("stream-hetero")
    with pytest.raises(ValueError, match=r"μop \d+ needs .* cut finer with more CNs per layer"):
        partition_network(net, arch, "stream", cn={"OY": 1, "K": 512})  # the filters whole
    inst = partition_network(net, arch, "stream", cn={"K": 16, "OY": 1})
    assert inst.n > 0


def test_the_default_stream_cut_halves_the_filters_of_a_layer_over_every_core():
    """Without ``cn``, a layer whose row CN fits is cut by rows as before, and one that fits no
    core (ResNet-18's layer4 on stream-hetero) gets its output channels halved until each CN
    fits the largest core: the instance builds (every μop's data fits a core) and the list's
    schedule verifies."""
    from npusched.arch import load_arch
    from npusched.partition.api import partition_network, resolve_network, scheme_tilings
    from npusched.partition.schemes import stream_tiling

    net, arch = resolve_network("resnet18"), load_arch("stream-hetero")
    tilings, given = scheme_tilings(net, arch, "stream")
    rows = {ly.name: stream_tiling(net, ly, {"OY": 1}) for ly in net.layers}
    cut = {name for name, t in tilings.items() if t.counts != rows[name].counts}
    assert cut and cut == set(given["cn_k"])
    assert all(name.startswith("layer4") for name in cut)
    for name in cut:
        assert tilings[name].counts[1:] == rows[name].counts[1:]  # rows as before, K cut
        assert tilings[name].counts[0] > 1
    inst = partition_network(net, arch, "stream")
    res = solve(inst, "list")
    assert check(inst, res.solution).ok
    small = resolve_network("lenet")
    assert "cn_k" not in scheme_tilings(small, arch, "stream")[1]
