"""The search of Stream's CN cut (npusched.search.cuts): the cuts tried, the shortest verified
one kept, the time limit, and the ``partition --cn search`` command."""

from __future__ import annotations

import json

import pytest

from npusched.arch import load_arch
from npusched.methods import solve
from npusched.partition.api import partition_network, resolve_network
from npusched.partition.instance import TooManyUops
from npusched.problem.scheduling.machine_view import MachineView
from npusched.search.cuts import (
    FIRST_SHARE,
    HALVINGS,
    ROWS,
    cut_axes,
    cut_name,
    fewest_uops,
    search_cut,
)
from npusched.verify import check
from npusched.workload.transformers import encoder_layer


def test_the_cuts_are_powers_of_two_below_the_workload_sizes():
    net = resolve_network("resnet18")
    axes = cut_axes(net)
    tallest = max(net.shapes[ly.name][1] for ly in net.layers)
    filters = max(net.shapes[ly.name][0] for ly in net.layers)  # the classifier's 1 000
    assert axes["OY"] == [r for r in ROWS if r <= tallest][::-1]  # the coarsest first
    assert axes["K"][0] is None and len(axes["K"]) == HALVINGS + 1
    ks = axes["K"][1:]
    assert all(k < filters and k & (k - 1) == 0 for k in ks) and ks[0] * 2 > filters
    prog = encoder_layer("enc", 16, 32, 4, 64)
    axes = cut_axes(prog)
    assert axes["M"] == [None, 16, 8, 4, 2, 1]
    view = MachineView.of(load_arch("klotski-4x4"))  # 16 cores: 16 rows per CN by default
    big = encoder_layer("enc", 256, 32, 4, 64)
    assert cut_axes(big, view)["M"] == [None, 256, 128, 64, 32, 16, 8, 4]  # 16 rows / FINER
    assert axes["N"][0] is None and all(n < 64 and n & (n - 1) == 0 for n in axes["N"][1:])
    longest = max(prog.tensors[op.inputs[0]].shape[-1] for op in prog.ops
                  if op.kind in ("gemm", "matmul"))  # the FFN's down projection: 64
    assert list(axes)[0] == "K" and axes["K"][0] is None  # the reduction first
    assert all(k < longest and k & (k - 1) == 0 for k in axes["K"][1:])
    assert axes["K"][1] * 2 >= longest and len(axes["K"]) <= HALVINGS + 1


def test_a_cut_without_k_fits_its_filters_to_the_largest_core():
    """``cn`` without ``K`` halves a layer's filters while its CN exceeds the largest core, as
    the default does; with ``K`` given, the filters are cut as told and may not fit."""
    net, arch = resolve_network("resnet18"), load_arch("stream-hetero")
    inst = partition_network(net, arch, "stream", cn={"OY": 2})
    assert inst.source["cn"] == {"OY": 2} and inst.source["cn_k"]
    with pytest.raises(ValueError, match="cut finer"):
        partition_network(net, arch, "stream", cn={"OY": 2, "K": 512})


@pytest.mark.parametrize("workload", ["lenet", "enc"])
def test_the_search_keeps_the_shortest_verified_cut(workload):
    # 24 tokens over stream-hetero's 6 cores: 4 rows per CN by default, a cut the search has
    net = encoder_layer("enc", 24, 32, 4, 64) if workload == "enc" else resolve_network(workload)
    arch = load_arch("stream-hetero")
    found = search_cut(net, arch, time_limit=60)
    first = fewest_uops(net, MachineView.of(arch), cut_axes(net, MachineView.of(arch)))[0]
    assert found.tried[0].cn == dict(first)  # the cut of fewest CNs first (a CNN: the default)
    assert (workload == "lenet") == (first == ()) and {} in [t.cn for t in found.tried]
    spans = [t.makespan for t in found.tried if t.makespan is not None]
    assert len(found.tried) > 1 and found.result.objective == min(spans)
    kept = next(t for t in found.tried if t.cn == found.cn)
    assert kept.makespan == found.result.objective and kept.uops == found.instance.n
    assert check(found.instance, found.result.solution).ok
    again = partition_network(net, arch, "stream", cn=found.cn or None)  # the cut it names
    assert again.n == found.instance.n
    assert check(again, solve(again, "list").solution).ok
    assert len({cut_name(t.cn) for t in found.tried}) == len(found.tried)  # each cut once
    for t in found.tried:  # each cut without a schedule says why
        assert (t.makespan is None) == bool(t.note)
        if t.note.startswith("abandoned: longer than"):
            assert int(t.note.split()[3].replace(",", "")) >= found.result.objective
    twins = [t for t in found.tried if t.note.startswith("the same CNs as")]
    assert all(t.makespan is None for t in twins)
    if workload == "enc":  # M=4 is the default's rows: noted as the cut without it
        assert twins and all(t.cn.get("M") == 4 for t in twins)
        for t in twins:
            rest = {k: v for k, v in t.cn.items() if k != "M"}
            assert t.note == f"the same CNs as {cut_name(rest)}"


def test_the_search_stops_at_its_time_limit_after_the_default_cut():
    net, arch = resolve_network("lenet"), load_arch("stream-hetero")
    found = search_cut(net, arch, time_limit=1e-6)
    assert [t.cn for t in found.tried] == [{}] and not found.complete
    assert found.cn == {} and check(found.instance, found.result.solution).ok


@pytest.mark.parametrize("arch_name", ["stream-hetero", "klotski-3x3"])
def test_a_tensor_program_lists_its_cut_of_fewest_cns_first(arch_name):
    """Of the default and the cuts along K or M alone, the one of fewest CNs (counted before
    building, as built), where at most FIRST_SHARE of the default's, is listed first and runs
    to its end however short the time; the default is left out once the time is up. A CNN
    starts at its default."""
    net, arch = encoder_layer("enc", 24, 32, 4, 64), load_arch(arch_name)
    view = MachineView.of(arch)
    axes = cut_axes(net, view)
    first, default = fewest_uops(net, view, axes)
    counts = {}
    for cut in [(), *(((a, v),) for a in ("K", "M") for v in axes[a] if v is not None)]:
        try:
            counts[cut] = partition_network(net, view, "stream", cn=dict(cut) or None).n
        except ValueError:  # (a cut whose CNs fit no core)
            continue
    least = min(counts.values())
    assert default == counts[()]
    assert counts[first] == least if least <= FIRST_SHARE * default else first == ()
    assert all(counts[c] > counts[first] for c in counts if list(counts).index(c)
               < list(counts).index(first))  # fmt: skip  (ties: the first in order)
    found = search_cut(net, view, time_limit=1e-6)
    assert found.tried[0].cn == dict(first) and found.tried[0].uops == counts[first]
    assert check(found.instance, found.result.solution).ok and not found.complete
    if first:
        assert all(t.cn for t in found.tried) and found.cn == dict(first)
    assert fewest_uops(resolve_network("lenet"), view, cut_axes(resolve_network("lenet"))) \
        == ((), None)


def test_partition_command_searches_the_cut(tmp_path):
    from conftest import run_cli

    out = run_cli("partition", "--network", "lenet", "--arch", "stream-hetero", "--scheme",
                  "stream", "--cn", "search", "--time-limit", "60", "-o", tmp_path / "i.json")
    assert out.returncode == 0, out.stderr
    assert "kept " in out.stdout and "makespan" in out.stdout
    source = json.loads((tmp_path / "i.json").read_text())["source"]
    assert sum(r["kept"] for r in source["cut_search"]) == 1
    solved = run_cli("solve", tmp_path / "i.json", "--method", "list", "--out", tmp_path / "s.json")
    assert solved.returncode == 0, solved.stderr
    ver = run_cli("verify", tmp_path / "i.json", tmp_path / "s.json")
    assert ver.returncode == 0, ver.stdout + ver.stderr
    bad = run_cli("partition", "--network", "lenet", "--arch", "stream-hetero", "--scheme",
                  "klotski", "--cn", "search", "-o", tmp_path / "j.json")
    assert bad.returncode == 2 and "--cn search" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "j.json").exists()


def test_a_cut_of_more_uops_than_allowed_is_not_built():
    """``max_uops`` stops a partition before its dependencies and costs (the search's cap:
    FINER times the default's μops, or what the time left lists), on both workload kinds."""
    arch = load_arch("stream-hetero")
    for net in (resolve_network("lenet"), encoder_layer("enc", 24, 32, 4, 64)):
        n = partition_network(net, arch, "stream").n
        assert partition_network(net, arch, "stream", max_uops=n).n == n
        with pytest.raises(TooManyUops, match=f"makes {n:,} μops, more than the {n - 1:,}"):
            partition_network(net, arch, "stream", max_uops=n - 1)
