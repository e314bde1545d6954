"""Where a Flexer schedule's time goes (:func:`npusched.heuristics.flexer.explain.time_split`):
the split adds up to latency × NPUs under both schedulers on real layers of several
architectures; a one-operation layer is checked by hand; and the bench's ``explain`` mode."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched.arch import flexer_arch_name, load_arch
from npusched.heuristics.flexer.explain import CATEGORIES, split_fractions, time_split
from npusched.heuristics.flexer.ooo import NoFit, ooo_schedule
from npusched.heuristics.flexer.search import STATIC_DATAFLOWS, layer_problem, run
from npusched.heuristics.flexer.static import static_schedule
from npusched.partition.flexer import tiled_conv
from npusched.problem.flexer.layer import Waits, dram_cycles
from npusched.problem.flexer.settings import Settings
from npusched.verify.flexer import verify_flexer
from npusched.workload.layers import INPUT, Layer
from npusched.workload.network import Network
from npusched.workload.zoo import load_network

UNROLL = {"K": 32, "C": 32}


def small_net(c: int = 64, k: int = 64, hw: int = 16, kernel: int = 3) -> Network:
    pad = kernel // 2
    conv = Layer("conv", "conv", (INPUT,), out_channels=k, kernel=(kernel, kernel), pad=(pad,) * 4)
    return Network("small", (c, hw, hw), (conv,))


def _adds_up(sched) -> dict[str, int]:
    assert verify_flexer(sched).ok
    split = time_split(sched)
    assert set(split) == set(CATEGORIES)
    assert all(v >= 0 for v in split.values()), split
    assert sum(split.values()) == sched.latency * sched.n_npus
    assert split["compute"] == int(sched.problem.latency.sum())
    return split


def test_one_operation_by_hand():
    """One operation on one NPU: it waits for its input and weight loads, computes, and the
    output's write-back ends the schedule."""
    net = small_net(c=32, k=32, hw=4, kernel=1)
    p = tiled_conv(net, net.layers[0], (32, 4, 4, 32), UNROLL, fill_drain=10)
    assert p.n_ops == 1
    s = ooo_schedule(p, 1, 10**6, 8)
    loads = dram_cycles(32 * 16, 8) + dram_cycles(32 * 32, 8)
    out = dram_cycles(32 * 16, 8)
    split = _adds_up(s)
    want = {"compute": int(p.latency[0]), "load": loads, "writeback": out}
    assert split == {**dict.fromkeys(CATEGORIES, 0), **want}
    assert s.latency == loads + int(p.latency[0]) + out
    # a second NPU has nothing to do: idle while the first computes, then the write-back
    s2 = ooo_schedule(p, 2, 10**6, 8)
    split2 = _adds_up(s2)
    assert split2["tail"] == loads + int(p.latency[0]) and split2["writeback"] == 2 * out


ARCHS = ("arch1", "arch5", "arch7")
LAYERS = ("layer1.0.conv2", "layer2.0.conv1", "layer3.1.conv3", "fc")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("prefetch", [False, True])
def test_split_adds_up_on_resnet50_layers(arch, prefetch):
    """Four ResNet-50 layers × three architectures × both schedulers (OoO with its three
    dataflows, static with several loop orders): every split adds up to latency × NPUs."""
    net = load_network("resnet50")
    layers = {ly.name: ly for ly in net.layers}
    s = Settings.from_arch(load_arch(flexer_arch_name(arch)), prefetch=prefetch)
    tilings = {"fc": (256, 1, 1, 512)}
    checked = 0
    for name in LAYERS:
        p = layer_problem(net, layers[name], tilings.get(name, (64, 7, 7, 64)), s)
        kinds = [("ooo", df) for df in ("OS", "WS", "IS")]
        kinds += [("static", f"{o}/{st}") for o, st in STATIC_DATAFLOWS[::9]]
        for kind, df in kinds:
            try:
                sched = run(p, s, kind, df)
            except NoFit:
                continue
            _adds_up(sched)
            checked += 1
    assert checked >= 12


@given(
    st.sampled_from([1, 3]),
    st.tuples(
        st.sampled_from([32, 64]), st.integers(1, 8), st.integers(1, 8), st.sampled_from([32, 64])
    ),
    st.integers(1, 4),
    st.sampled_from([24_000, 60_000, 200_000]),
    st.sampled_from([4, 16, 64]),
    st.booleans(),
)
@settings(max_examples=30, deadline=None)
def test_split_adds_up_on_random_layers(kernel, tiles, n, cap, bw, prefetch):
    """Random tilings, NPU counts, buffers (tight ones spill) and bandwidths, both schedulers."""
    net = small_net(c=96, k=96, hw=12, kernel=kernel)
    p = tiled_conv(net, net.layers[0], tiles, UNROLL, fill_drain=64)
    for make in (
        lambda: ooo_schedule(p, n, cap, bw, prefetch=prefetch),
        lambda: static_schedule(
            p, n, cap, bw, loop_order="C,OY,OX,K", stationary="WS", prefetch=prefetch
        ),
    ):
        try:
            sched = make()
        except NoFit:
            continue
        _adds_up(sched)


def test_spills_show_as_spill_stalls():
    """A buffer too small for the layer's tiles: the static order reloads, and its split
    counts stalls on spill traffic."""
    net = small_net(c=128, k=128, hw=8, kernel=3)
    p = tiled_conv(net, net.layers[0], (32, 4, 4, 32), UNROLL, fill_drain=64)
    sched = static_schedule(p, 2, 40_000, 8, loop_order="K,OY,OX,C", stationary="OS")
    split = _adds_up(sched)
    assert sched.bytes_by_type()["input"] > p.onchip_bytes()["input"]  # it reloads
    assert split["spill"] > 0
    fr = split_fractions(split)
    assert abs(sum(fr.values()) - 1) < 1e-9


def test_without_waits_is_an_error():
    net = small_net(c=32, k=32, hw=4, kernel=1)
    p = tiled_conv(net, net.layers[0], (32, 4, 4, 32), UNROLL)
    s = ooo_schedule(p, 1, 10**6, 8)
    s.waits = None
    with pytest.raises(ValueError, match="no waits"):
        time_split(s)


# ---- the bench's explain mode ------------------------------------------------------------


def test_bench_explain(tmp_path, capsys):
    from npusched.bench.flexer import main as bench

    out, png = tmp_path / "explain.json", tmp_path / "bars.png"
    argv = ["explain", "--network", "squeezenet", "--arch", "arch5", "--max-ops", "8",
            "--workers", "1", "--plot", str(png), "--json", str(out)]  # fmt: skip
    assert bench(argv) == 0
    rows = json.loads(out.read_text())
    assert {r["scheduler"] for r in rows} == {"ooo", "static"}
    for r in rows:
        assert sum(r["cycles"].values()) % r["latency"] == 0  # latency × NPUs (4)
        assert sum(r["cycles"].values()) == 4 * r["latency"]
        assert abs(sum(r[c] for c in CATEGORIES) - 100) < 1
    text = capsys.readouterr().out
    assert "total over the" in text and "OoO loses by latency x bytes on" in text
    assert png.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "args, word",
    [(["--network", "nosuchnet", "--arch", "arch5"], "nosuchnet"),
     (["--network", "squeezenet", "--arch", "arch9"], "arch9")],
)  # fmt: skip
def test_bench_explain_bad_input(capsys, args, word):
    from npusched.bench.flexer import main as bench

    assert bench(["explain", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and word in err and err.startswith("error:")


def test_categories_are_stable():
    """The JSON and the plot key on these names."""
    assert CATEGORIES[0] == "compute" and len(set(CATEGORIES)) == len(CATEGORIES)
    assert list(itertools.islice(CATEGORIES, 1, 4)) == ["load", "spill", "writeback"]


def test_waits_check_their_shape():
    with pytest.raises(ValueError, match="3 columns"):
        Waits(np.zeros((2, 2), np.int64), np.zeros((0, 3), np.int64))
