"""DRAM transfer latency of a tile: the volume model and TSO's burst model.

Both follow TSO (Sousa et al., "Tensor Slicing and Optimization for Multicore NPUs", seed
``004_442fbcc29e97fffd.txt``), Sec. IV-E, Algorithm 4 ``CalcDataTransfer`` and eq. 9:

* *TSO-noburst* (volume): ``total_time = tile_size / BW`` (Algorithm 4, lines 12-13);
* *TSO-burst*: ``total_time = tile_size / BW + nbursts * CAS`` (lines 5-9), where ``nbursts``
  counts the DRAM bursts needed to read the tile row by row (``CalBurstCount``).

Times here are accelerator cycles: ``BW`` in bytes per cycle, ``CAS`` in cycles
(:meth:`npusched.arch.Arch.dram_bytes_per_cycle`, :meth:`npusched.arch.Arch.dram_cas_cycles`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from npusched.arch.model import Arch
from npusched.costmodel.noc import ceil_div


def dram_cycles_volume(nbytes: float, bandwidth_bytes_per_cycle: float) -> int:
    """Volume model (TSO-noburst, Algorithm 4 lines 12-13).

    .. math:: t = \\lceil bytes / bw \\rceil
    """
    return ceil_div(nbytes, bandwidth_bytes_per_cycle)


def burst_count(rows: int, row_bytes: int, burst_bytes: int, *, contiguous: bool = False) -> int:
    """Bursts to read ``rows`` rows of ``row_bytes`` bytes each (``CalBurstCount`` of TSO).

    .. math::

        n_{burst} = \\begin{cases}
            \\lceil r \\cdot w / B \\rceil & \\text{rows contiguous in DRAM} \\\\
            r \\cdot \\lceil w / B \\rceil & \\text{otherwise}
        \\end{cases}

    Each row that is not contiguous with the previous one starts a new burst of ``B`` bytes
    (TSO Sec. IV-E: a row of ``2 T_L`` bytes takes one CAS if smaller than ``BURST``, more bursts
    otherwise; Fig. 1). Rows are contiguous when the tile spans the full width of a row-major
    (NCHW) channel: TSO's InceptionV3 example reads a ``4 × 73`` 16-bit channel slice as one
    584-byte sequence, :math:`\\lceil 584/128 \\rceil = 5` bursts. Rows are assumed to start on a
    burst boundary (TSO's model has no alignment offsets).
    """
    if rows < 0 or row_bytes < 0 or burst_bytes < 1:
        raise ValueError("rows, row bytes must be >= 0 and the burst size >= 1")
    if contiguous:
        return -(-rows * row_bytes // burst_bytes)
    return rows * -(-row_bytes // burst_bytes)


def tile_burst_count(
    channels: int,
    rows: int,
    cols: int,
    element_bytes: int,
    burst_bytes: int,
    row_elems: int | None = None,
) -> int:
    """Bursts to read a ``channels × rows × cols`` tile of an NCHW tensor whose rows hold
    ``row_elems`` elements (``None``: the tile never spans a full row).

    .. math::

        n_{burst} = \\begin{cases}
            T_N \\lceil T_H T_L e / B \\rceil & T_L = L \\\\
            T_N T_H \\lceil T_L e / B \\rceil & T_L < L
        \\end{cases}

    Channels are counted separately, as in TSO's InceptionV3 example (14 channels × 5 = 70 bursts
    for a ``14 × 4 × 73`` 16-bit tile; the ``16 × 11 × 20`` tile of TSO-noburst takes
    ``16 · 11 · 1 = 176``).
    """
    full = row_elems is not None and cols >= row_elems
    return channels * burst_count(rows, cols * element_bytes, burst_bytes, contiguous=full)


def slicing_burst_count(
    channels: int,
    height: int,
    width: int,
    tile_rows: int,
    tile_cols: int,
    element_bytes: int,
    burst_bytes: int,
) -> int:
    """Bursts to read a whole ``channels × height × width`` tensor cut into
    ``tile_rows × tile_cols`` slices (edge slices partial), each read by :func:`tile_burst_count`.

    TSO Fig. 1 (128×128 single channel, 16-bit, 128 B bursts): ``128 × 32 B`` slices (16
    elements wide) → 1024 bursts, ``128 × 64 B`` → 512, ``64 × 128 B`` → 256.
    """
    if min(tile_rows, tile_cols) < 1:
        raise ValueError("tile sizes must be >= 1")
    total = 0
    for r0 in range(0, height, tile_rows):
        h = min(tile_rows, height - r0)
        for c0 in range(0, width, tile_cols):
            w = min(tile_cols, width - c0)
            total += tile_burst_count(channels, h, w, element_bytes, burst_bytes, width)
    return total


def dram_cycles_burst(
    nbytes: float, nbursts: int, bandwidth_bytes_per_cycle: float, cas_cycles: int
) -> int:
    """Burst model (TSO-burst, Algorithm 4 lines 5-9).

    .. math:: t = \\lceil bytes / bw \\rceil + n_{burst} \\cdot CAS

    ``transfer_time = tile_size / BW`` plus ``cas_latency = nbursts * CAS``.
    """
    if nbursts < 0 or cas_cycles < 0:
        raise ValueError("bursts and CAS latency must be >= 0")
    return ceil_div(nbytes, bandwidth_bytes_per_cycle) + nbursts * cas_cycles


def calc_data_transfer(
    arch: Arch,
    channels: int,
    rows: int,
    cols: int,
    *,
    row_elems: int | None = None,
    model: Literal["burst", "volume"] = "burst",
) -> int:
    """TSO's ``CalcDataTransfer(tile, conv, arch)`` (Algorithm 4) in accelerator cycles, for a
    ``channels × rows × cols`` tile of ``arch.precision_bits`` elements.

    ``model="burst"``: :func:`dram_cycles_burst` with :func:`tile_burst_count`;
    ``model="volume"``: :func:`dram_cycles_volume`.
    """
    e = arch.precision_bits // 8
    if e * 8 != arch.precision_bits:
        raise ValueError(f"{arch.name}: {arch.precision_bits}-bit elements are not whole bytes")
    nbytes = channels * rows * cols * e
    bw = arch.dram_bytes_per_cycle()
    if model == "volume":
        return dram_cycles_volume(nbytes, bw)
    if model != "burst":
        raise ValueError(f"unknown DRAM model {model!r}; use 'burst' or 'volume'")
    assert arch.dram is not None
    if arch.dram.burst_bytes is None:
        raise ValueError(f"{arch.name}: the DRAM has no burst size; use model='volume'")
    nb = tile_burst_count(channels, rows, cols, e, arch.dram.burst_bytes, row_elems)
    return dram_cycles_burst(nbytes, nb, bw, arch.dram_cas_cycles())


def t_dram(terms: Iterable[tuple[int, int]]) -> int:
    """TSO eq. 9: the DRAM time of a convolution from its tile loads and stores.

    .. math::

        T_{DRAM} = \\alpha_{in} t(IN) + \\alpha_w t(W) + \\alpha_{out} t(OUT)

    Parameters
    ----------
    terms
        ``(α, t)`` pairs: how many times a tile is moved and the cycles of one move
        (:func:`calc_data_transfer`).
    """
    total = 0
    for alpha, t in terms:
        if alpha < 0 or t < 0:
            raise ValueError("transfer counts and times must be >= 0")
        total += alpha * t
    return total
