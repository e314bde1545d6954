"""Compute latency of a tile (μop) on a spatially unrolled PE array.

A convolution tile is the loop nest over ``K`` (output channels), ``C`` (input channels), ``OY``,
``OX`` (output rows, columns) and ``FY``, ``FX`` (kernel rows, columns); an FC layer has ``K`` and
``C`` with the rest 1. A PE array unrolls some dimensions in space (Klotski's KC-partition unrolls
``K`` and ``C`` on a 12×14 array; a TPU-like core ``K`` and ``C`` on 32×32); the others run in time.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping
from typing import Any

from npusched.arch.model import CONV_DIMS, CoreSpec, unroll_dims
from npusched.costmodel.shape import psum_bytes


def conv_loops(
    K: int, C: int, OY: int = 1, OX: int = 1, FY: int = 1, FX: int = 1
) -> dict[str, int]:
    """Loop extents of a convolution tile (an FC layer: ``conv_loops(K, C)``)."""
    return dict(zip(CONV_DIMS, (K, C, OY, OX, FY, FX), strict=True))


def _check(loops: Mapping[str, int], unroll: Mapping[str, int]) -> None:
    for d, n in loops.items():
        if n < 1:
            raise ValueError(f"loop {d} must have extent >= 1, got {n}")
    seen: set[str] = set()
    for key, u in unroll.items():
        if u < 1:
            raise ValueError(f"unrolling {key} must be >= 1, got {u}")
        dims = unroll_dims(key)
        if seen & set(dims) or len(set(dims)) != len(dims):
            raise ValueError(f"a loop dimension is unrolled twice in {dict(unroll)}")
        seen |= set(dims)


def macs(loops: Mapping[str, int]) -> int:
    """Multiply-accumulates of a tile: :math:`\\prod_d L_d`."""
    return math.prod(loops.values())


def compute_cycles(loops: Mapping[str, int], unroll: Mapping[str, int]) -> int:
    """Temporal steps of a tile on a PE array, counting the ceil() losses of partial tiles.

    .. math::

        t = \\prod_{g \\in U} \\left\\lceil \\frac{\\prod_{d \\in g} L_d}{u_g} \\right\\rceil
            \\cdot \\prod_{d \\notin \\cup U} L_d

    where :math:`L_d` is the extent of loop :math:`d` (a dimension missing from ``loops`` has
    extent 1) and each unrolling group :math:`g` (usually one dimension, e.g. ``{"K": 32,
    "C": 32}``) spreads its loops over :math:`u_g` PEs. One temporal step is one cycle of the
    array. With single-dimension groups this is :math:`\\prod_d \\lceil L_d / u_d \\rceil`
    (:math:`u_d = 1` for temporal loops); e.g. ``K = 33`` on ``u_K = 32`` takes 2 steps, the
    second using 1 of 32 rows.

    A group key ``"OY*OX*FY*FX"`` flattens those loops before dividing: TSO's MAC unit
    (eq. 7, :math:`Tile_{MAC} = T_N T_M \\lceil T_R T_C K^2 / \\#MACs \\rceil`) is
    ``unroll = {"OY*OX*FY*FX": 8}`` for 16-bit operands.

    Parameters
    ----------
    loops
        Loop dimension → extent (``>= 1``).
    unroll
        Loop dimension (or ``*``-joined group) → spatial unrolling factor (``>= 1``);
        :attr:`npusched.arch.CoreSpec.pe_unroll`.

    Returns
    -------
    int
        Cycles (``>= 1``).
    """
    _check(loops, unroll)
    spatial: set[str] = set()
    steps = 1
    for key, u in unroll.items():
        dims = unroll_dims(key)
        spatial |= set(dims)
        steps *= -(-math.prod(loops.get(d, 1) for d in dims) // u)
    for d, n in loops.items():
        if d not in spatial:
            steps *= n
    return steps


def utilization(loops: Mapping[str, int], unroll: Mapping[str, int]) -> float:
    """Fraction of PE-cycles doing useful MACs.

    .. math:: \\eta = \\frac{\\prod_d L_d}{t \\cdot \\prod_g u_g} \\in (0, 1]

    with :math:`t` = :func:`compute_cycles`; 1 exactly when every unrolled extent is a multiple of
    its factor (Klotski's remainder-free partition, Sec. III-B).
    """
    return macs(loops) / (compute_cycles(loops, unroll) * math.prod(unroll.values()))


def split_unrolling(u: int, extents: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Factors ``f_d <= L_d`` with ``prod f_d <= u`` minimising ``prod ceil(L_d / f_d)``; ties:
    the larger product, then larger factors on the first loops."""
    options = []
    for _, n in extents:  # the least factor reaching each step count
        cands = sorted({-(-n // steps) for steps in range(1, n + 1)} | {1})
        options.append([f for f in cands if f <= u])
    best: tuple[Any, ...] | None = None
    for combo in itertools.product(*options):
        if math.prod(combo) > u:
            continue
        steps = math.prod(-(-n // f) for (_, n), f in zip(extents, combo, strict=True))
        rank = (steps, -math.prod(combo), tuple(-f for f in combo))
        if best is None or rank < best[0]:
            best = (rank, combo)
    assert best is not None
    return [(d, f) for (d, _), f in zip(extents, best[1], strict=True)]


RELEVANT = {"W": ("K", "C", "FY", "FX"), "I": ("C", "OY", "OX", "FY", "FX"), "O": ("K", "OY", "OX")}
"""The loops each operand's data depends on (a loop outside is a broadcast or a reduction)."""


def searched_core(core: CoreSpec, loops: Mapping[str, int], elem_bytes: int = 1) -> CoreSpec:
    """``core`` with the spatial unrolling chosen for a tile of ``loops`` when its unrolling is
    ``"searched"`` (:attr:`~npusched.arch.CoreSpec.unrolling`; a fixed core is returned as is).

    Each array dimension (an entry of ``pe_unroll``) unrolls one loop of the tile or none, no
    loop twice, by at most its size and at most what the memory serving it can feed
    (:func:`unrolling_caps`). Of these assignments the one with the fewest
    :func:`compute_cycles` is kept, ties to the core's own order: the highest spatial
    utilisation, the one mapping Stream asks ZigZag's spatial mapping generator for
    (``nb_spatial_mappings_generated = 1``, its ``limit_unrolling_to_mem_bandwidth``). Where
    that leaves more cycles than the MACs need on the whole array, a mixed mapping (several
    loops on one dimension, ``_mixed``) replaces it if strictly faster; its ``pe_unroll``
    then has one key per unrolled loop. A register file shared over an array dimension stays
    shared over that dimension's loops. (The last of :func:`searched_cores`.)"""
    return searched_cores(core, loops, elem_bytes)[-1]


def searched_cores(core: CoreSpec, loops: Mapping[str, int], elem_bytes: int = 1
                   ) -> tuple[CoreSpec, ...]:  # fmt: skip
    """The spatial unrollings :func:`searched_core` weighs for a tile of ``loops``: the best of
    one loop per array dimension and, where a mixed mapping takes strictly fewer
    :func:`compute_cycles`, that one after it (a fixed core: itself alone). Stream 2.1.1 has
    ZigZag cost both wherever the mixed one fills more of the array and keeps the one of
    lower latency (its ``ZigZagCostEstimator``): a cost model that prices more than compute
    (:class:`~npusched.costmodel.roofline.Roofline`) keeps the one it prices lower."""
    if core.unrolling != "searched" or any("*" in key for key in core.pe_unroll):
        return (core,)
    return _searched(core, tuple(sorted(loops.items())), elem_bytes)


def unrolling_caps(core: CoreSpec, elem_bytes: int) -> list[dict[str, int]]:
    """Per array dimension of ``core`` (``pe_unroll`` order), the largest factor each loop may
    be unrolled by on it, where a memory serving the dimension limits it: a register file
    shared over the dimension (or the SRAM, for an operand without registers) delivers
    ``floor(bw / e)`` elements of its operand a cycle (``e`` the element bytes,
    partial-sum bytes for outputs), so a loop that operand depends on is unrolled at most that
    far there (ZigZag's ``limit_unrolling_to_mem_bandwidth``)."""
    keys = [set(unroll_dims(k)) for k in core.pe_unroll]
    caps: list[dict[str, int]] = [{} for _ in keys]
    for op, rel in RELEVANT.items():
        reg = core.registers.get(op)
        nbytes = psum_bytes(elem_bytes) if op == "O" else elem_bytes
        if reg is not None:
            bw, served = reg.bandwidth_bytes_per_cycle, [k & set(reg.shared_over) for k in keys]
        else:
            bw = core.sram_write_bytes_per_cycle if op == "O" else core.sram_read_bytes_per_cycle
            served = keys
        if bw is None:
            continue
        limit = max(1, int(bw // nbytes))
        for cap, hit in zip(caps, served, strict=True):
            for d in rel if hit else ():
                cap[d] = min(cap.get(d, limit), limit)
    return caps


MIXED = 3
"""The most loops one array dimension unrolls together in a mixed spatial mapping
(:func:`searched_core`): Stream asks ZigZag for mappings of up to this many loops on one
dimension where one loop fills too little of it (a 3 × 3 kernel with 3 channels on 32 PEs)."""

Pairs = tuple[tuple[str, int], ...]
"""Loop → integer pairs, in loop order (hashable, for the memoised searches)."""


@functools.lru_cache(maxsize=8192)
def _searched(core: CoreSpec, loops: Pairs, elem_bytes: int) -> tuple[CoreSpec, ...]:
    """:func:`searched_cores`, memoised per core, tile loops and element bytes: the best single
    loop per array dimension, then (where that leaves the array emptier than the MACs need) the
    best mixed mapping (:func:`_mixed`) where it takes strictly fewer cycles."""
    extents = dict(loops)
    own = list(core.pe_unroll)
    sizes = list(core.pe_unroll.values())
    caps = unrolling_caps(core, elem_bytes)
    idle = [f"D{i + 1}" for i in range(len(own))]  # a dimension that unrolls no loop
    cands = [d for d in CONV_DIMS if extents.get(d, 1) > 1] + idle
    best: tuple[tuple[int, int], dict[str, int]] | None = None
    for keys in itertools.permutations(cands, len(own)):
        unroll = {k: min(u, cap.get(k, u)) for k, u, cap in zip(keys, sizes, caps, strict=True)}
        rank = (compute_cycles(extents, unroll), 0 if list(keys) == own else 1)
        if best is None or rank < best[0]:
            best = (rank, unroll)
    assert best is not None
    out = [_unrolled(core, best[1], {o: (k,) for o, k in zip(own, best[1], strict=True)})]
    if best[0][0] > -(-macs(extents) // math.prod(sizes)):  # above the array's floor
        steps, mapping = _mixed(loops, tuple(core.pe_unroll.items()),
                                tuple(tuple(sorted(c.items())) for c in caps))
        if steps < best[0][0]:
            out.append(_unrolled(core, {d: f for dim in mapping for d, f in dim if f > 1},
                                 {o: tuple(d for d, f in dim if f > 1)
                                  for o, dim in zip(own, mapping, strict=True)}))  # fmt: skip
    return tuple(out)


def _unrolled(core: CoreSpec, unroll: dict[str, int], on_dim: dict[str, tuple[str, ...]]
              ) -> CoreSpec:  # fmt: skip
    """``core`` unrolling ``unroll``, its registers shared over the loops ``on_dim`` puts on
    the array dimensions they were shared over (``core`` itself where nothing changes)."""
    if unroll == core.pe_unroll:
        return core
    registers = {op: dataclasses.replace(r, shared_over=tuple(
                     k for d in r.shared_over for k in on_dim.get(d, (d,))))
                 for op, r in core.registers.items()}  # fmt: skip
    return dataclasses.replace(core, pe_unroll=unroll, registers=registers)


@functools.lru_cache(maxsize=8192)
def _mixed(loops: Pairs, own: Pairs, caps: tuple[Pairs, ...]) -> tuple[int, tuple[Pairs, ...]]:
    r"""The mixed spatial mapping with the fewest :func:`compute_cycles`: each array dimension
    :math:`a` (of size :math:`s_a`) unrolls a set :math:`S_a` of at most :data:`MIXED` loops,
    no loop on two dimensions, each loop :math:`d \in S_a` by a divisor :math:`f_d` of its
    extent within the dimension's cap (:func:`unrolling_caps`), :math:`\prod_{d \in S_a} f_d
    \le s_a`, minimising

    .. math:: t = \prod_a \prod_{d \in S_a} \frac{L_d}{f_d} \cdot
              \prod_{d \notin \cup_a S_a} L_d

    (a dynamic programme over the dimensions and the set of loops already placed; each
    dimension's factors by :func:`_fill`). Divisors, as ZigZag's mixed mappings take (prime
    factors of the loop sizes), so a mixed mapping is never credited with a partial tile
    ZigZag would not build. ``own`` is the core's ``pe_unroll`` (array dimensions, in order);
    among equal :math:`t`, the most of each dimension's own loop (the product of their
    factors). Returns :math:`t` and, per dimension, its loop → factor pairs."""
    extent = dict(loops)
    names = [d for d in (*CONV_DIMS, *sorted(set(extent) - set(CONV_DIMS))) if extent.get(d, 1) > 1]
    states: dict[int, tuple[int, int, tuple[Pairs, ...]]] = {0: (1, -1, ())}
    for (key, size), cap in zip(own, caps, strict=True):
        after: dict[int, tuple[int, int, tuple[Pairs, ...]]] = {}
        for used, (steps, ours, placed) in states.items():
            free = [i for i in range(len(names)) if not used >> i & 1]
            for k in range(min(MIXED, len(free)) + 1):
                for subset in itertools.combinations(free, k):
                    part = tuple((names[i], extent[names[i]]) for i in subset)
                    t, factors = _fill(size, part, cap)
                    mask = used | sum(1 << i for i in subset)
                    cand = (steps * t, ours * dict(factors).get(key, 1), (*placed, factors))
                    if mask not in after or cand < after[mask]:
                        after[mask] = cand
        states = after
    rest = {m: math.prod(extent[d] for i, d in enumerate(names) if not m >> i & 1) for m in states}
    return min((steps * rest[m], ours, placed) for m, (steps, ours, placed) in states.items()
               )[::2]  # fmt: skip


@functools.lru_cache(maxsize=65536)
def _fill(size: int, part: Pairs, caps: Pairs) -> tuple[int, Pairs]:
    r"""One array dimension of ``size`` PEs unrolling the loops of ``part`` (loop, extent):
    factors dividing each extent, within ``caps`` (loop → largest factor), of product at most
    ``size``, minimising the temporal steps :math:`\prod_d L_d / f_d` (a dynamic programme over
    the products reached). Returns the steps and the loop → factor pairs."""
    cap = dict(caps)
    reach: dict[int, tuple[int, Pairs]] = {1: (1, ())}
    for d, n in part:
        divisors = [f for f in range(1, min(n, cap.get(d, n), size) + 1) if n % f == 0]
        after: dict[int, tuple[int, Pairs]] = {}
        for product, (steps, factors) in reach.items():
            for f in divisors:
                if product * f > size:
                    break
                cand = (steps * (n // f), (*factors, (d, f)))
                if product * f not in after or cand < after[product * f]:
                    after[product * f] = cand
        reach = after
    return min(reach.values())
