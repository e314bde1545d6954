"""Partitions of tensor programs (npusched.partition.tensor): every μop reads exactly the data
of its operands' boxes, partial sums chain, weights tile into DRAM tensors, and every schedule
verifies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import SHARED, needs_shared

from npusched.arch import load_arch
from npusched.methods import solve
from npusched.partition.api import partition_network, resolve_network
from npusched.partition.tensor import FLOOR_GAIN, array_wide, fitting_cut
from npusched.verify import check
from npusched.workload.tensor import Tensor, TensorOp, TensorProgram


def _mlp(t: int = 24, d: int = 32, ff: int = 48) -> TensorProgram:
    """SwiGLU after an RMSNorm, with a residual: every kind a transformer MLP has."""
    T = {"x": Tensor("x", ("tokens", "features"), (t, d), "input"),
         "g": Tensor("g", ("features",), (d,), "weight"),
         "w1": Tensor("w1", ("in", "out"), (d, ff), "weight"),
         "w2": Tensor("w2", ("in", "out"), (d, ff), "weight"),
         "w3": Tensor("w3", ("in", "out"), (ff, d), "weight")}
    for name, f in (("n", d), ("a", ff), ("b", ff), ("s", ff), ("h", ff), ("o", d), ("y", d)):
        T[name] = Tensor(name, ("tokens", "features"), (t, f))
    ops = (TensorOp("norm", "rmsnorm", ("x", "g"), "n"),
           TensorOp("up", "gemm", ("n", "w1"), "a"), TensorOp("gate", "gemm", ("n", "w2"), "b"),
           TensorOp("silu", "eltwise", ("a",), "s", fn="silu"),
           TensorOp("mul", "eltwise", ("s", "b"), "h", fn="mul"),
           TensorOp("down", "gemm", ("h", "w3"), "o"),
           TensorOp("res", "eltwise", ("o", "x"), "y", fn="add"))
    return TensorProgram("mlp", T, ops)


@pytest.mark.parametrize(("scheme", "kw"), [("stream", {}), ("stream", {"cn": {"M": 5, "N": 16}}),
                                            ("stream", {"cn": {"K": 12}}),
                                            ("klotski", {"s": (1, 7, 12, 20)})])
def test_every_uop_reads_its_operand_boxes_exactly(scheme, kw):
    prog = _mlp()
    arch = load_arch("stream-hetero")
    inst = partition_network(prog, arch, scheme, **kw)
    g, elem = inst.graph, max(1, round(arch.element_bytes))
    layer = np.asarray(inst.layer)
    names = [op.name for op in prog.ops]
    # the output tiles of the last K chunks cover each activation exactly once
    for li, op in enumerate(prog.ops):
        mine = np.flatnonzero(layer == li)
        last = [u for u in mine if not np.any((g.src == u) & (layer[g.dst] == li))]
        assert sum(int(inst.output_data[u]) for u in last) == (
            prog.tensors[op.output].elements * elem)
    # a consumer reads, of each producer, as many bytes as all its μops' operand boxes hold
    up, down = names.index("up"), names.index("down")
    into_down = (layer[g.src] == names.index("mul")) & (layer[g.dst] == down)
    t, ff = 24, 48
    k_len = kw["s"][2] if scheme == "klotski" else kw.get("cn", {}).get("K")
    k_chunks = -(-ff // k_len) if k_len else 1
    m_chunks = -(-t // inst.source["tiles"]["M"])
    n_chunks = int((layer == down).sum()) // (k_chunks * m_chunks)
    # each row block of h is read once per column block of down
    assert int(g.bytes[into_down].sum()) == t * ff * elem * n_chunks
    # partial sums chain within a gemm when K is cut
    chain = (layer[g.src] == up) & (layer[g.dst] == up)
    assert bool(chain.any()) == (k_len is not None)
    # the weight tiles in DRAM make up each weight once
    w1 = [d for d in inst.dram if d.name.startswith("w1[")]
    assert sum(d.data for d in w1) == 32 * 48 * elem
    res = solve(inst, "list")
    assert check(inst, res.solution).ok
    assert inst.source["macs"] == prog.macs()


def test_a_short_exact_solve_verifies():
    inst = partition_network(_mlp(8, 16, 16), load_arch("stream-hetero"), "stream")
    res = solve(inst, "joint", time_limit=10, threads=2, seed=0)
    assert check(inst, res.solution).ok and res.bound is not None
    assert res.objective <= solve(inst, "list").objective


def test_columns_are_cut_until_a_cn_fits():
    prog = _mlp(16, 4096, 14336)
    up = prog.ops[1]
    _, rows, n = fitting_cut(prog, up, 4, 2 ** 21 * 0.25, 1)
    assert rows == 4
    assert (4 * 4096 + 4096 * n + 4 * n) <= 2 ** 19 < (4 * 4096 + 4096 * 2 * n + 8 * n)


def test_rows_are_cut_where_one_column_does_not_fit():
    """LLaMA's down projection reads 14 336-wide rows: at 64 rows one column's CN holds
    917 504 bytes, over a 524 288-byte budget, so its rows are halved first (to 32), then its
    columns; the up projection (4 096-wide rows) fits at one column and keeps its rows."""
    prog = _mlp(64, 4096, 14336)
    down, up = prog.ops[-2], prog.ops[1]
    assert down.kind == "gemm" and prog.tensors[down.inputs[0]].shape[-1] == 14336
    _, rows, n = fitting_cut(prog, down, 64, 2 ** 19, 1)
    need = rows * 14336 + 14336 * n + rows * n
    assert rows == 32 and need <= 2 ** 19 < need + 14336 * n + rows * n  # columns halved last
    assert 64 * 14336 + 14336 + 64 > 2 ** 19  # twice the rows would not fit at one column
    assert fitting_cut(prog, up, 64, 2 ** 19, 1)[1] == 64


@pytest.mark.parametrize("width", [8, 32, 64])
def test_a_gemm_cn_is_never_narrower_than_the_array(width):
    """At 64 columns (the PE array's width) a CN of the up projection does not fit at 64
    rows: its rows are halved instead of cutting it narrower; at 8 and 32 it fits and keeps
    them. Its columns are halved no further than ``width``. One column would fit at 64 rows
    (the cut without the floor)."""
    prog = _mlp(64, 4096, 14336)
    up = prog.ops[1]
    budget = 2 ** 19

    def need(r: int, c: int) -> int:
        return r * 4096 + 4096 * c + r * c

    _, rows, n = fitting_cut(prog, up, 64, budget, 1, width)
    assert n >= width and need(rows, n) <= budget
    if need(64, width) > budget:
        assert width == 64 and rows < 64 and need(2 * rows, width) > budget
    else:
        assert width < 64 and rows == 64
    assert n == width or need(rows, 2 * n - 1) > budget  # halved until it fits
    assert fitting_cut(prog, up, 64, budget, 1)[1] == 64


def test_the_array_wide_cut_is_taken_where_the_cost_model_says_it_pays():
    """At 64 columns the up projection's CN must halve its rows (above). The cost model decides:
    a narrower CN priced at FLOOR_GAIN times the cycles per MAC or more gives the array-wide
    cut, one priced at less keeps the rows; without a price the array-wide cut."""
    prog = _mlp(64, 4096, 14336)
    up = prog.ops[1]
    wide = fitting_cut(prog, up, 64, 2 ** 19, 1, 64)
    narrow = fitting_cut(prog, up, 64, 2 ** 19, 1)
    assert wide[1] < narrow[1] == 64 and wide[2] >= 64 > narrow[2]

    def price(ratio):
        return lambda op, cut: ratio if cut[2] < 64 else 1.0

    assert array_wide(prog, up, 64, 2 ** 19, 1, 64, price(FLOOR_GAIN)) == wide
    assert array_wide(prog, up, 64, 2 ** 19, 1, 64, price(FLOOR_GAIN * 0.9)) == narrow
    assert array_wide(prog, up, 64, 2 ** 19, 1, 64, None) == wide
    assert array_wide(prog, prog.ops[3], 64, 2 ** 19, 1, 64, price(9.0)) == fitting_cut(
        prog, prog.ops[3], 64, 2 ** 19, 1)  # an element-wise op has no array width


def test_rows_align_along_the_program_so_copies_stay_what_is_read():
    """The down projection's 14 336-wide rows cut it into fewer rows than the ops before it; its
    producers are cut into at most its rows (fusion along tokens). Otherwise each of its CNs
    reads a slice of many producers, a copy holds what all readers on its core read, and one
    core per layer needs 2.6 MB of copies on a 2 MB core."""
    prog, arch = _mlp(512, 64, 14336), load_arch("stream-hetero")
    inst = partition_network(prog, arch, "stream")
    core = np.asarray(inst.layer) % 4  # one core per layer, on the four 2 MB cores
    need = inst.operand_data(core)
    assert (need <= inst.capacity[core]).all()
    assert need.max() <= 2 * inst.operand_data().max()  # next to what a CN needs alone
    res = solve(inst, "list")
    assert check(inst, res.solution).ok


@pytest.mark.parametrize(("ff", "streams"), [(16384, True), (15872, False)])
def test_a_gemm_whose_weights_are_too_large_is_streamed(ff, streams):
    """On stream-hetero (2 MB cores, int8, a 32-wide PE array) the down projection's CN of one
    input row and 32 columns takes 540 704 bytes at K = 16 384, over a CN's 512 KB share: its
    CNs are cut at the program's rows and 32 columns and streamed (they hold none of their
    operands); the other ops' are not. At K = 15 872 that CN takes 523 808 bytes, fits, and
    nothing is streamed. Either way the list's schedule verifies."""
    prog = _mlp(64, 512, ff)
    inst = partition_network(prog, load_arch("stream-hetero"), "stream")
    down = np.asarray(inst.layer) == [op.name for op in prog.ops].index("down")
    assert inst.is_streamed[down].all() == streams and not inst.is_streamed[~down].any()
    if streams:  # the program's row blocks (rows shared out over the cores), 32 columns
        w3 = [w for w in inst.dram if w.name.startswith("w3[")]
        assert len(w3) == 512 // 32 and all(w.data == ff * 32 for w in w3)
        assert inst.output_data[down].max() == -(-64 // inst.m) * 32
        assert (inst.operand_data()[down] == 0).all()
    res = solve(inst, "list")
    assert check(inst, res.solution).ok


@pytest.mark.parametrize(("t", "ff", "cn", "stationary"), [
    (64, 48, {"N": 16}, False),  # weight and input stay on chip: row blocks first
    (64, 8192, {"N": 128}, True),  # a 4 MB weight again per row block: column blocks first
    (2048, 4096, {"M": 256, "N": 32}, False),  # but the 1 MB input again per column block
])  # fmt: skip
def test_a_gemm_runs_weight_stationary_where_that_moves_fewer_bytes(t, ff, cn, stationary):
    """The readers of one weight tile have consecutive ids (column block first) where the
    weight does not stay on chip (over a CN's share, 512 KB of stream-hetero's 2 MB at int8)
    and fetching the input again for each column block moves less than fetching the weight
    again for each row block; else the row blocks come first (fused along tokens)."""
    prog, arch = _mlp(t, 512, ff), load_arch("stream-hetero")
    inst = partition_network(prog, arch, "stream", cn=cn)
    tiles = [w for w in inst.dram if w.name.startswith("w1[")]
    assert len(tiles) > 1 and all(w.consumers.size > 1 for w in tiles)
    runs = [bool((np.diff(np.sort(w.consumers)) == 1).all()) for w in tiles]
    assert all(runs) == stationary


def test_bad_tiles_say_which():
    prog, arch = _mlp(), load_arch("stream-hetero")
    with pytest.raises(ValueError, match="lengths >= 1"):
        partition_network(prog, arch, "stream", cn={"K": 0})
    with pytest.raises(ValueError, match=r"makes [\d,]+ μops, more than the 99 allowed"):
        partition_network(prog, arch, "stream", cn={"K": 1}, max_uops=99)
    with pytest.raises(ValueError, match="needs --s B,M,K,N"):
        partition_network(prog, arch, "klotski")
    with pytest.raises(ValueError, match="stream or klotski"):
        partition_network(prog, arch, "flexer", tiles=(1, 1, 1, 1))
    with pytest.raises(ValueError, match="cut finer"):
        partition_network(_mlp(512, 4096, 8192), arch, "stream", cn={"M": 512, "N": 8192})


@needs_shared
def test_stream_attention_on_stream_hardware_verifies():
    prog = resolve_network(str(SHARED / "stream-oss" / "workload" / "attention_head.onnx"))
    arch = load_arch(SHARED / "stream-oss" / "hardware" / "tpu_like_quad_core.yaml")
    inst = partition_network(prog, arch, "stream")
    res = solve(inst, "list")
    assert check(inst, res.solution).ok
    # Q·Kᵀ of a row block reads all of K: each of its μops depends on every K μop
    layer, g = np.asarray(inst.layer), inst.graph
    kcount = int((layer == 1).sum())
    qk = np.flatnonzero(layer == 3)
    for u in qk:
        assert int(((g.dst == u) & (layer[g.src] == 1)).sum()) == kcount
    assert math.isclose(sum(int(d.data) for d in inst.dram if d.name.startswith("wQ")),
                        512 * 64 * max(1, round(arch.element_bytes)))


def test_zigzag_prices_gemm_eltwise_and_norm_tiles(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUSCHED_CACHE", str(tmp_path))
    prog, arch = _mlp(8, 16, 16), load_arch("stream-hetero")
    z = partition_network(prog, arch, "stream", cost="zigzag")
    a = partition_network(prog, arch, "stream", cost="analytic")
    assert z.source["cost"] == "zigzag"  # ZigZag prices every gemm tile itself
    assert not [w for w in z.source.get("cost_fallbacks", []) if not w.startswith("add ")]
    layer = np.asarray(z.layer)
    pes = [c.num_pes for c in arch.cores]
    for li, op in enumerate(prog.ops):
        for u in np.flatnonzero(layer == li):
            if op.kind == "gemm":  # no core does more MACs a cycle than it has PEs
                macs = prog.macs(op) // int((layer == li).sum())
                assert all(z.duration[u, c] >= -(-macs // pes[c]) for c in range(z.m))
            assert (z.duration[u] > 0).all() and (a.duration[u] > 0).all()
    res = solve(z, "list")
    assert check(z, res.solution).ok


def test_gemms_go_through_flexer_and_tso():
    from npusched.methods.flexer import search_network, verify_choices
    from npusched.methods.tiling import tile_network

    prog = _mlp(16, 32, 48)
    nets = prog.gemm_networks()
    assert [n.name for n in nets] == ["mlp.up", "mlp.gate", "mlp.down"]
    assert sum(n.macs() for n in nets) == prog.macs()
    res = search_network(nets[2], load_arch("flexer-arch1"), workers=1, time_limit=30)
    assert verify_choices(res) == 2  # the OoO and the static schedule, both re-checked
    row = res.to_json()["layers"][0]
    assert row["ooo_latency"] >= row["latency_bound"]
    tso = tile_network(nets[0], load_arch("tso-nmp-8"), workers=1)
    assert tso.results[0].status.value == "optimal"


@needs_shared
def test_flexer_and_tile_commands_take_a_tensor_program():
    from conftest import run_cli

    onnx = SHARED / "stream-oss" / "workload" / "swiglu_64_128_256.onnx"
    out = run_cli("flexer", "--network", onnx, "--arch", "arch1", "--workers", "1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("schedules verified") == 3
    out = run_cli("tile", "--network", onnx, "--arch", "tso-nmp-8", "--workers", "1")
    assert out.returncode == 0 and out.stdout.count("TSO-burst") == 3


def test_heads_are_cut_before_rows_where_one_softmax_row_block_does_not_fit():
    """LLaMA-3-8B's softmax at 4 096 tokens: 256 rows of its 32 heads (8 KV groups of 4) × 4 096
    keys take 128 MiB, so its heads are halved first (to one of each leading dimension), then
    its rows; its keys stay whole."""
    from npusched.workload.zoo import load_network

    prog = load_network("llama3-8b-prefill-4096")
    soft = next(op for op in prog.ops if op.kind == "softmax")
    *lead, _, keys = prog.tensors[soft.output].shape
    assert math.prod(lead) == 32
    budget = 1.5 * 2 ** 20
    b, rows, n = fitting_cut(prog, soft, 256, budget, 2)
    assert n == keys and b == 1 and 1 < rows < 256
    assert rows * keys * 2 * 2 <= budget < 2 * rows * keys * 2 * 2
    whole = 32 * 256 * keys * 2 * 2
    assert fitting_cut(prog, soft, 256, whole, 2) == (max(lead), 256, keys)


def test_silu_tiles_take_their_cycles_per_element():
    from npusched.costmodel import ComputeSteps

    prog = _mlp()
    arch = load_arch("stream-hetero")
    inst = partition_network(prog, arch, "stream", cost=ComputeSteps())
    layer = np.asarray(inst.layer)
    names = [op.name for op in prog.ops]
    silu, mul = (np.flatnonzero(layer == names.index(n)) for n in ("silu", "mul"))
    d = inst.min_duration
    # the same row blocks of the same width: SiLU 4 cycles an element, the product 1
    assert len(silu) == len(mul)
    assert int(d[silu].sum()) == 4 * int(d[mul].sum())


def test_heads_merged_back_are_cut_along_the_tokens_the_projection_reads():
    """The heads merged back, ``[h, g, T, d] → [T, h, g, d]``, then reshaped to ``[T, h·g·d]``
    for the output projection: the transpose is cut along the tokens (``token_dim``), into the
    projection's row blocks, so each projection CN reads the merged rows of its own tokens.
    Cut by its own last two dimensions, every CN of the transpose held all tokens of a few
    heads, each projection CN read all of them, and the copies of one core per layer held
    the whole merged tensor several times over (17.8 MB on a 6 MB core of klotski-4x4 for
    LLaMA-3-8B at 1 024 tokens)."""
    from npusched.partition.tensor import token_dim
    from npusched.workload.zoo import load_network

    prog = load_network("bert-base-128")
    producer = {op.output: op for op in prog.ops}
    merge = next(op for op in prog.ops if op.kind == "transpose" and op.perm[0] == 2)
    assert token_dim(prog, producer, merge) == 0
    assert {token_dim(prog, producer, op) for op in prog.ops if op.kind == "transpose"
            and op is not merge} == {2}  # the heads split off keep the tokens second last
    (proj,) = [op for op in prog.ops if op.kind == "gemm" and op.inputs[0] in producer
               and producer[op.inputs[0]].inputs[0] == merge.output]  # fmt: skip
    tokens = prog.tensors[merge.output].shape[0]
    arch = load_arch("klotski-4x4")
    inst = partition_network(prog, arch, "stream")
    g, layer = inst.graph, np.asarray(inst.layer)
    names = [op.name for op in prog.ops]
    into = (layer[g.src] == names.index(merge.name)) & (layer[g.dst] == names.index(proj.name))
    rows = -(-tokens // inst.source["tiles"]["M"])  # the projection's row blocks
    merged = prog.tensors[merge.output].elements * max(1, round(arch.element_bytes))
    for u in np.unique(g.dst[into]):  # a projection CN: the merge CNs it reads are its rows
        read_from = g.src[into & (g.dst == u)]
        assert inst.output_data[read_from].sum() <= -(-merged // rows)
    core = layer % inst.m  # one core per layer: the copies stay what is read
    assert (inst.operand_data(core) <= inst.capacity[core]).all()
    assert check(inst, solve(inst, "list").solution).ok


def _gqa(t: int, d: int, kv: int, group: int) -> TensorProgram:
    """Grouped-query P·V: values projected from ``x``, split into ``kv`` heads of width ``d``
    and moved head first (``[kv, 1, t, d]``), read by the probabilities of ``group`` query
    heads each (``[kv, group, t, t]``, an input here)."""
    T = {"x": Tensor("x", ("tokens", "features"), (t, kv * d), "input"),
         "wv": Tensor("wv", ("in", "out"), (kv * d, kv * d), "weight"),
         "v": Tensor("v", ("tokens", "features"), (t, kv * d)),
         "vs": Tensor("vs", ("tokens", "heads", "group", "features"), (t, kv, 1, d)),
         "vh": Tensor("vh", ("heads", "group", "tokens", "features"), (kv, 1, t, d)),
         "p": Tensor("p", ("heads", "group", "tokens", "keys"), (kv, group, t, t), "input"),
         "o": Tensor("o", ("heads", "group", "tokens", "features"), (kv, group, t, d))}
    ops = (TensorOp("v", "gemm", ("x", "wv"), "v"),
           TensorOp("vs", "reshape", ("v",), "vs", shape=(t, kv, 1, d)),
           TensorOp("vh", "transpose", ("vs",), "vh", perm=(1, 2, 0, 3)),
           TensorOp("pv", "matmul", ("p", "vh"), "o"))
    return TensorProgram("gqa", T, ops)


def test_values_are_cut_into_the_heads_that_read_them():
    """Where P·V is cut one head a CN, the values it reads (a matmul's second operand, every
    token of them for each row block) are cut into at most its heads: each P·V CN reads whole
    value CNs of its own head. Cut across all heads, each P·V CN read a head's slice of every
    value CN, and the copies on a core grew to all the values (9.4 MB for one P·V CN of
    LLaMA-3-8B at 4 096 tokens on a 6 MB core)."""
    prog, arch = _gqa(2048, 64, 4, 2), load_arch("stream-hetero")
    inst = partition_network(prog, arch, "stream")
    g, layer = inst.graph, np.asarray(inst.layer)
    names = [op.name for op in prog.ops]
    into = (layer[g.src] == names.index("vh")) & (layer[g.dst] == names.index("pv"))
    assert into.any()
    assert (np.unique(layer[g.dst[into]]).size == 1) and (g.bytes[into] > 0).all()
    assert (g.bytes[into] == inst.output_data[g.src[into]]).all()  # whole value CNs
    core = layer % inst.m
    assert (inst.operand_data(core) <= inst.capacity[core]).all()
    assert check(inst, solve(inst, "list").solution).ok


def test_a_tensor_programs_cost_fallbacks_are_in_its_source(tmp_path):
    """ZigZag past its time limit on every tile: the tensor program's instance says which tiles
    got the analytic latency (``cost_fallbacks``, as a CNN's does), those of this partition
    only when one model serves two."""
    from npusched.costmodel.zigzag import ZigZagCost

    prog, arch = _mlp(8, 16, 16), load_arch("stream-hetero")
    model = ZigZagCost(arch, cache_dir=tmp_path, time_limit=1e-4)
    first = partition_network(prog, arch, "stream", cost=model)
    said = first.source["cost_fallbacks"]
    gemms = [why for why in said if why.startswith("gemm ")]
    assert gemms and all("time limit" in why for why in gemms)
    again = partition_network(prog, arch, "stream", cost=model)  # each tile answered from memory
    assert "cost_fallbacks" not in again.source and len(model.fallbacks) == len(said)
    assert check(first, solve(first, "list").solution).ok
