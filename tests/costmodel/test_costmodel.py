"""Cost model: hand-computed compute cycles (partial tiles), TSO's burst counts (Fig. 1 and the
InceptionV3 example), NoC delays equal to Accelerator.comm_delay, monotonicity properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched.arch import load_arch
from npusched.costmodel import (
    burst_count,
    calc_data_transfer,
    ceil_div,
    compute_cycles,
    conv_loops,
    dram_cycles_burst,
    dram_cycles_volume,
    macs,
    noc_cycles,
    slicing_burst_count,
    t_dram,
    tile_burst_count,
    utilization,
)
from npusched.problem import Accelerator

KC32 = {"K": 32, "C": 32}

# --- compute ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loops", "unroll", "cycles"),
    [
        ({"K": 33}, {"K": 32}, 2),  # partial tile: the second step uses 1 of 32 rows
        ({"K": 32}, {"K": 32}, 1),
        ({"K": 33, "C": 32}, KC32, 2),
        (conv_loops(64, 64, 7, 7, 3, 3), KC32, 2 * 2 * 7 * 7 * 3 * 3),
        (conv_loops(33, 31, 2, 2, 1, 1), KC32, 2 * 1 * 2 * 2),
        (conv_loops(1000, 512), {"K": 14, "C": 12}, 72 * 43),  # FC on a Klotski core
        (conv_loops(16, 3, 112, 112, 3, 3), {"OY": 14, "OX": 14}, 16 * 3 * 8 * 8 * 9),
        ({"K": 5, "C": 7}, {}, 35),  # no unrolling: every loop in time
        ({"K": 8}, {"C": 32}, 8),  # unrolled dimension absent from the tile: extent 1
        (conv_loops(8, 4, 3, 3, 3, 3), {"OY*OX*FY*FX": 8}, 4 * 8 * math.ceil(81 / 8)),
    ],
)
def test_compute_cycles_by_hand(loops, unroll, cycles):
    assert compute_cycles(loops, unroll) == cycles


def test_utilization_by_hand():
    assert utilization({"K": 64, "C": 32}, KC32) == 1.0
    assert utilization({"K": 33, "C": 32}, KC32) == pytest.approx(33 / 64)
    assert utilization(conv_loops(1000, 512), {"K": 14, "C": 12}) == pytest.approx(
        1000 * 512 / (72 * 43 * 168)
    )


def test_compute_rejects_bad_input():
    with pytest.raises(ValueError):
        compute_cycles({"K": 0}, KC32)
    with pytest.raises(ValueError):
        compute_cycles({"K": 4}, {"K": 0})
    with pytest.raises(ValueError):
        compute_cycles({"K": 4}, {"K": 2, "K*C": 2})


def test_core_unrolling_from_arch():
    core = load_arch("klotski-3x3").cores[0]
    assert compute_cycles(conv_loops(14, 12, 1, 1, 1, 1), core.pe_unroll) == 1
    assert compute_cycles(conv_loops(15, 12), core.pe_unroll) == 2


extent = st.integers(1, 70)
factor = st.integers(1, 40)
loops_st = st.fixed_dictionaries(
    {
        "K": extent,
        "C": extent,
        "OY": st.integers(1, 20),
        "OX": st.integers(1, 20),
        "FY": st.integers(1, 5),
        "FX": st.integers(1, 5),
    }
)
unroll_st = st.dictionaries(st.sampled_from(["K", "C", "OY", "OX", "FY", "FX"]), factor, max_size=3)


@settings(max_examples=150, deadline=None)
@given(loops=loops_st, unroll=unroll_st, dim=st.sampled_from(["K", "C", "OY", "OX"]))
def test_compute_monotone_and_bounded(loops, unroll, dim):
    t = compute_cycles(loops, unroll)
    pes = math.prod(unroll.values())
    assert math.ceil(macs(loops) / pes) <= t <= macs(loops)
    assert 0 < utilization(loops, unroll) <= 1
    bigger = {**loops, dim: loops[dim] + 1}
    assert compute_cycles(bigger, unroll) >= t
    if dim in unroll:
        wider = {**unroll, dim: unroll[dim] + 1}
        assert compute_cycles(loops, wider) <= t
    if all(loops[d] % u == 0 for d, u in unroll.items()):
        assert utilization(loops, unroll) == pytest.approx(1.0)


@settings(max_examples=100, deadline=None)
@given(
    tn=st.integers(1, 16),
    tm=st.integers(1, 16),
    tr=st.integers(1, 30),
    tc=st.integers(1, 30),
    k=st.sampled_from([1, 3, 5, 7]),
    nmacs=st.sampled_from([8, 16]),
)
def test_tso_eq7_is_a_flattened_unrolling(tn, tm, tr, tc, k, nmacs):
    # TSO eq. 7 in cycles: Tile_MAC = T_N * T_M * ceil(T_R * T_C * K * K / #MACs)
    eq7 = tn * tm * math.ceil(tr * tc * k * k / nmacs)
    loops = conv_loops(tm, tn, tr, tc, k, k)
    assert compute_cycles(loops, {"OY*OX*FY*FX": nmacs}) == eq7


# --- DRAM ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tile_rows", "tile_bytes", "bursts"),
    [(128, 32, 1024), (128, 64, 512), (64, 128, 256)],
)
def test_tso_fig1_burst_counts(tile_rows, tile_bytes, bursts):
    """TSO Fig. 1: 128x128 single channel, 16-bit, 1x1 kernel, 128 B bursts."""
    cols = tile_bytes // 2
    assert slicing_burst_count(1, 128, 128, tile_rows, cols, 2, 128) == bursts
    per_slice = tile_burst_count(1, tile_rows, cols, 2, 128, row_elems=128)
    n_slices = (128 // tile_rows) * (128 // cols)
    assert per_slice * n_slices == bursts
    assert n_slices == {1024: 8, 512: 4, 256: 4}[bursts]


def test_tso_inception_v3_example():
    """TSO Sec. VI: IN tile 14x4x73 (full width 73, 16-bit) -> 5 bursts a channel, 70 in all;
    the TSO-noburst tile 16x11x20 -> one burst a row, 176."""
    assert burst_count(4, 73 * 2, 128, contiguous=True) == 5
    assert tile_burst_count(14, 4, 73, 2, 128, row_elems=73) == 70
    assert tile_burst_count(16, 11, 20, 2, 128, row_elems=73) == 176


def test_rows_wider_than_a_burst_and_alignment_effect():
    # Sec. I: past w = 128 B the time worsens, then improves again at w = 256 B
    per_byte = [burst_count(1, w, 128) / w for w in (128, 160, 256)]
    assert per_byte[1] > per_byte[0] == per_byte[2]
    assert burst_count(3, 300, 128) == 9


def test_dram_cycles_by_hand():
    assert dram_cycles_volume(0, 17) == 0
    assert dram_cycles_volume(32768, 17) == 1928  # ceil(1927.5...)
    assert dram_cycles_volume(34, 17) == 2
    # Fig. 1 (c) on NMP: 32 KiB at 17 B/cycle plus 256 bursts x 14 cycles of CAS
    assert dram_cycles_burst(32768, 256, 17, 14) == 1928 + 256 * 14
    assert t_dram([(3, 100), (1, 50), (2, 7)]) == 364


def test_calc_data_transfer_on_nmp():
    arch = load_arch("tso-nmp-16")
    burst = calc_data_transfer(arch, 14, 4, 73, row_elems=73)
    volume = calc_data_transfer(arch, 14, 4, 73, row_elems=73, model="volume")
    nbytes = 14 * 4 * 73 * 2
    assert volume == math.ceil(nbytes / 17)
    assert burst == volume + 70 * 14
    with pytest.raises(ValueError, match="burst size"):
        calc_data_transfer(load_arch("flexer-arch1"), 1, 1, 1)
    assert calc_data_transfer(load_arch("flexer-arch1"), 2, 4, 8, model="volume") == 2


@settings(max_examples=150, deadline=None)
@given(
    channels=st.integers(1, 8),
    rows=st.integers(1, 40),
    cols=st.integers(1, 300),
    e=st.sampled_from([1, 2, 4]),
    burst=st.sampled_from([32, 64, 128, 256]),
    full=st.booleans(),
)
def test_burst_model_properties(channels, rows, cols, e, burst, full):
    row_elems = cols if full else None
    nb = tile_burst_count(channels, rows, cols, e, burst, row_elems)
    nbytes = channels * rows * cols * e
    assert nb >= math.ceil(nbytes / burst)  # at least the bursts the bytes fill
    assert nb >= channels  # every channel opens at least one burst
    assert tile_burst_count(channels, rows + 1, cols, e, burst, row_elems) >= nb
    assert tile_burst_count(channels + 1, rows, cols, e, burst, row_elems) >= nb
    assert tile_burst_count(channels, rows, cols, e, 2 * burst, row_elems) <= nb
    if full:  # a contiguous channel never needs more bursts than row-by-row
        assert nb <= tile_burst_count(channels, rows, cols, e, burst, None)
    bw = 17
    assert dram_cycles_burst(nbytes, nb, bw, 14) >= dram_cycles_volume(nbytes, bw)
    assert dram_cycles_burst(nbytes, nb, bw, 0) == dram_cycles_volume(nbytes, bw)


@settings(max_examples=100, deadline=None)
@given(nbytes=st.integers(0, 10**7), bw=st.integers(1, 1024), extra=st.integers(0, 1000))
def test_volume_monotone(nbytes, bw, extra):
    t = dram_cycles_volume(nbytes, bw)
    assert t == -(-nbytes // bw)
    assert dram_cycles_volume(nbytes + extra, bw) >= t
    assert dram_cycles_volume(nbytes, bw + extra) <= t


# --- NoC -------------------------------------------------------------------------------------


def test_noc_by_hand():
    assert noc_cycles(1000, 0, 512, 3) == 0  # same core
    assert noc_cycles(1000, 3, 512, 1) == 3 + 2
    assert noc_cycles(512, 1, 512, 0) == 1
    assert noc_cycles(1000, 2, None, 4) == 8
    assert noc_cycles(0, 2, 512, 1) == 2
    with pytest.raises(ValueError):
        noc_cycles(10, -1, 512, 1)
    with pytest.raises(ValueError):
        ceil_div(10, 0)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 4),
    lat=st.integers(0, 5),
    bw=st.one_of(st.none(), st.integers(1, 600), st.floats(0.25, 600)),
    nbytes=st.integers(0, 100_000),
)
def test_noc_equals_accelerator_comm_delay(rows, cols, lat, bw, nbytes):
    acc = Accelerator.mesh_grid(rows, cols, lat, bw)
    hops = acc.hops()
    delay = acc.comm_delay(hops, np.full_like(hops, nbytes))
    for i in range(acc.m):
        for j in range(acc.m):
            assert delay[i, j] == noc_cycles(nbytes, int(hops[i, j]), bw, lat)


@settings(max_examples=100, deadline=None)
@given(
    nbytes=st.integers(0, 10**6),
    hops=st.integers(0, 10),
    lat=st.integers(0, 5),
    bw=st.integers(1, 1024),
    more=st.integers(1, 1000),
)
def test_noc_monotone(nbytes, hops, lat, bw, more):
    t = noc_cycles(nbytes, hops, bw, lat)
    assert noc_cycles(nbytes + more, hops, bw, lat) >= t
    assert noc_cycles(nbytes, hops + 1, bw, lat) >= t
    assert noc_cycles(nbytes, hops, bw + more, lat) <= t
    assert noc_cycles(nbytes, hops, bw, lat + 1) >= t


# --- a searched unrolling (Stream's cores without dataflows) -----------------------------------


def _searched(unroll, registers=None):
    from npusched.arch import CoreSpec

    return CoreSpec(0, "c", dict(unroll), 1 << 20, registers=registers or {},
                    unrolling="searched")  # fmt: skip


def test_a_searched_unrolling_takes_the_fewest_steps_and_ties_to_its_own_order():
    from npusched.costmodel.compute import searched_core

    core = _searched({"K": 32, "C": 32})
    # a GEMM row block: K 64, C 4, OX 128 -> K and OX fill the array, C would waste 28 rows
    loops = conv_loops(64, 4, 1, 128)
    got = searched_core(core, loops)
    assert compute_cycles(loops, got.pe_unroll) == 2 * 4 * 4
    assert compute_cycles(loops, core.pe_unroll) == 2 * 1 * 128 > 32
    assert sorted(got.pe_unroll.values()) == [32, 32] and "C" not in got.pe_unroll
    square = conv_loops(64, 64)  # K and C both fill it: the core's own order is kept
    assert searched_core(core, square) is core
    fixed = load_arch("klotski-3x3").cores[0]
    assert searched_core(fixed, loops) is fixed


@settings(max_examples=60, deadline=None)
@given(loops=loops_st, a=st.integers(1, 40), b=st.integers(1, 40))
def test_a_searched_unrolling_is_never_slower_than_the_fixed_one(loops, a, b):
    from npusched.costmodel.compute import searched_core

    core = _searched({"K": a, "C": b})
    got = searched_core(core, loops)
    assert compute_cycles(loops, got.pe_unroll) <= compute_cycles(loops, core.pe_unroll)
    assert math.prod(got.pe_unroll.values()) <= a * b and set(got.pe_unroll) <= {*loops, "D1", "D2"}
    assert macs(loops) <= compute_cycles(loops, got.pe_unroll) * a * b
    if len(got.pe_unroll) > 2:  # a mixed mapping divides each loop it unrolls
        assert all(loops[d] % f == 0 for d, f in got.pe_unroll.items())


def test_a_shared_register_follows_its_array_dimension_and_caps_it():
    from npusched.arch import Register
    from npusched.costmodel.compute import searched_core, unrolling_caps

    # Stream's TPU-like core: one 2-byte output register per row, shared over the C columns,
    # fed 2 bytes a cycle: 16-bit partial sums of a K or OX loop cannot spread over them
    core = _searched({"K": 32, "C": 32}, {"O": Register(2, 2.0, ("C",))})
    assert unrolling_caps(core, 1) == [{}, {"K": 1, "OY": 1, "OX": 1}]
    loops = conv_loops(64, 3, 2, 16, 3, 3)
    got = searched_core(core, loops)  # ZigZag's mixed mapping: K 32 | C 3, FY 3, FX 3
    assert got.pe_unroll == {"K": 32, "C": 3, "FY": 3, "FX": 3}
    assert compute_cycles(loops, got.pe_unroll) == 2 * 2 * 16 < 2 * 2 * 16 * 3 * 3
    assert got.registers["O"].shared_over == ("C", "FY", "FX")
    wide = _searched({"K": 32, "C": 32}, {"O": Register(64, 64.0, ("C",))})
    got = searched_core(wide, conv_loops(64, 1, 1, 128))
    second = list(got.pe_unroll)[1]  # the dimension that unrolled C now unrolls OX or K
    assert second in ("K", "OX") and got.registers["O"].shared_over == (second,)


def test_a_mixed_mapping_fills_an_array_one_loop_leaves_empty():
    """FSRCNN's first layer (56 filters of 5 x 5 over one channel) on Stream's TPU-like
    32 x 32 array, whose columns reduce into a shared output register: one loop a dimension
    puts ``FY`` 5 on the 32 columns; ``FY`` x ``FX`` puts 25 there, and the rows take ``K``
    with an output loop, down to the MACs over 32 rows. A square tile that fills both
    dimensions keeps the core's own mapping, and a mixed mapping only divides each loop (no
    partial tile ZigZag would not build)."""
    from npusched.arch import Register
    from npusched.costmodel.compute import MIXED, searched_core

    core = _searched({"K": 32, "C": 32}, {"O": Register(2, 2.0, ("C",))})
    loops = conv_loops(56, 1, 16, 16, 5, 5)
    got = searched_core(core, loops)
    assert MIXED >= 2 and got.pe_unroll["FY"] * got.pe_unroll["FX"] == 25
    assert compute_cycles(loops, got.pe_unroll) == -(-56 * 16 * 16 // 32)
    assert compute_cycles(loops, {"K": 32, "FY": 5}) == 2 * 16 * 16 * 5 > 5 * 448
    assert set(got.registers["O"].shared_over) == {"FY", "FX"}
    assert searched_core(core, conv_loops(64, 64)) is core
    odd = conv_loops(7, 7, 1, 1, 3, 3)  # 441 MACs on 1024 PEs: e.g. K 7, FY 3 | C 7, FX 3
    got = searched_core(_searched({"K": 32, "C": 32}), odd)
    assert compute_cycles(odd, got.pe_unroll) == 1 and len(got.pe_unroll) == 4


def test_the_analytic_models_search_the_unrolling_of_a_searched_core():
    from dataclasses import replace

    from npusched.costmodel import ComputeSteps
    from npusched.costmodel.roofline import Roofline
    from npusched.costmodel.shape import TileShape

    arch = load_arch("klotski-3x3")
    fixed = replace(arch.cores[0], pe_unroll={"K": 16, "C": 16})
    searched = replace(fixed, unrolling="searched")
    shape = TileShape(kind="fc", K=64, C=4, OY=1, OX=1)
    for model in (ComputeSteps(), Roofline(arch)):
        assert model.latency(shape, searched) <= model.latency(shape, fixed)
    conv = TileShape(kind="conv", K=64, C=3, OY=8, OX=8, FY=3, FX=3)
    assert ComputeSteps().latency(conv, searched) < ComputeSteps().latency(conv, fixed)
    assert Roofline(arch).latency(conv, searched) < Roofline(arch).latency(conv, fixed)


def test_a_function_of_several_cycles_an_element_takes_them_on_every_model():
    from npusched.costmodel import ComputeSteps
    from npusched.costmodel.roofline import Roofline
    from npusched.costmodel.shape import TileShape, cycles_per_op

    assert (cycles_per_op("SiLU"), cycles_per_op("exp"), cycles_per_op("mul")) == (4, 4, 1)
    assert cycles_per_op("softmax") == 1 + 4 + 1 + 1  # Stream's max, exp, sum, division
    arch = load_arch("klotski-3x3")
    core = arch.cores[0]
    one, four = (TileShape("add", 4096, 1, 1, 64, cycles_per_op=c) for c in (1, 4))
    assert one.key() != four.key()
    assert ComputeSteps().latency(four, core) == 4 * ComputeSteps().latency(one, core)
    roof = Roofline(arch)
    assert roof.explain(four, core).compute == 4 * roof.explain(one, core).compute
    with pytest.raises(ValueError):
        TileShape("add", 4, cycles_per_op=0)
