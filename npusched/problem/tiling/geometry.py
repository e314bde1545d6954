"""TSO's data: a convolution in TSO's notation (:class:`ConvGeom`), the NMP (:class:`NmpParams`),
a TLE slice (:class:`TleSlice`, filled by :func:`npusched.problem.tiling.equations.tle_slicing`)
and the names of slicings, schedules and DRAM models.

Sousa et al., "Tensor Slicing and Optimization for Multicore NPUs" (seed
``004_442fbcc29e97fffd.txt``), §II-§IV; the model is described in :mod:`npusched.problem.tiling`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from npusched.arch.model import Arch
from npusched.workload.layers import Layer, Shape

#: TLE slicings of Algorithm 2 (§IV-B), in TSO's order.
TLE_SLICINGS = ("KS", "KS&OFM", "OFM")
#: TLT schedules of §IV-D, in TSO's order.
TLT_SCHEDULES = ("IS", "OS", "WS")
#: DRAM models of Algorithm 4: ``"burst"`` (TSO-burst), ``"noburst"`` (TSO-noburst, volume);
#: ``"volume"`` is accepted as a synonym of ``"noburst"``.
MODELS = ("burst", "noburst")

Model = Literal["burst", "noburst", "volume"]


def check_model(model: str) -> str:
    """``"burst"`` or ``"volume"`` for a model name (``"noburst"`` → ``"volume"``)."""
    if model == "burst":
        return "burst"
    if model in ("noburst", "volume"):
        return "volume"
    raise ValueError(f"unknown DRAM model {model!r}; choose from burst, noburst")


# ---- the convolution --------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvGeom:
    """A convolution in TSO's notation (§II, Fig. 2).

    Parameters
    ----------
    name
        Layer name.
    N, H, L
        Input channels, rows, columns (the whole input, all groups).
    M, R, C
        Filters (output channels), output rows, output columns.
    Ky, Kx, Sy, Sx, Dy, Dx
        Kernel, stride and dilation per axis.
    Nf
        Channels each filter reads (:math:`N` / groups).
    mg
        Filters per group (:math:`M` / groups).
    coupled
        Channel-coupled grouped convolution (``Nf == 1`` and groups > 1, e.g. depthwise).
    reps
        Groups run one after another (grouped with ``Nf > 1``), else 1.
    """

    name: str
    N: int
    H: int
    L: int
    M: int
    R: int
    C: int
    Ky: int
    Kx: int
    Sy: int
    Sx: int
    Dy: int
    Dx: int
    Nf: int
    mg: int
    coupled: bool
    reps: int

    @property
    def filters(self) -> int:
        """Filters split over the TLEs: :math:`M`, or one group's for ``reps > 1``."""
        return self.mg if self.reps > 1 else self.M

    @property
    def n_loop(self) -> int:
        """Channel-loop extent :math:`N` of eq. 3-5 (1 when channel-coupled)."""
        return 1 if self.coupled else self.Nf


def conv_geometry(layer: Layer, in_shape: Shape) -> ConvGeom:
    """TSO's view of a ``conv`` or ``fc`` layer with input ``(C, H, W)`` = ``in_shape``.

    Raises
    ------
    ValueError
        For other ops, or shapes the layer rejects.
    """
    if layer.op not in ("conv", "fc"):
        raise ValueError(f"layer {layer.name}: TSO tiles conv and fc layers, not {layer.op}")
    c, h, w = (int(v) for v in in_shape)
    m, r, cc = layer.output_shape([(c, h, w)])
    if layer.op == "fc":
        n = c * h * w
        return ConvGeom(layer.name, n, 1, 1, m, 1, 1, 1, 1, 1, 1, 1, 1, n, m, False, 1)
    g = layer.groups
    nf, mg = c // g, m // g
    coupled = g > 1 and nf == 1
    reps = g if (g > 1 and nf > 1) else 1
    (ky, kx), (sy, sx), (dy, dx) = layer.kernel, layer.stride, layer.dilation
    return ConvGeom(layer.name, c, h, w, m, r, cc, ky, kx, sy, sx, dy, dx, nf, mg, coupled, reps)


# ---- the machine ------------------------------------------------------------------------------


@dataclass(frozen=True)
class NmpParams:
    """The NMP numbers TSO's model uses (§III), read from an :class:`~npusched.arch.Arch`.

    Parameters
    ----------
    E, P
        TLEs and TLTs per TLE (cores grouped by ``CoreSpec.cluster``).
    mb0, mb1, mb2
        Bytes of MB0 (IN), MB1 (W), MB2 (OUT) of a TLT.
    e
        Bytes per element (``type`` in eq. 2).
    bw
        DRAM bytes per cycle (``BW`` of Algorithm 4).
    cas
        CAS latency in cycles.
    burst
        Burst bytes (``BURST``).
    freq_hz
        Clock (``Freq`` of eq. 7).
    unroll
        The MAC unit's ``pe_unroll`` as pairs (``(("OY*OX*FY*FX", 8),)``: ``#MACs`` of eq. 7).
    """

    E: int
    P: int
    mb0: int
    mb1: int
    mb2: int
    e: int
    bw: float
    cas: int
    burst: int
    freq_hz: float
    unroll: tuple[tuple[str, int], ...]

    def us(self, cycles: float) -> float:
        """Cycles → µs."""
        return cycles / (self.freq_hz / 1e6)


def nmp_params(arch: Arch) -> NmpParams:
    """:class:`NmpParams` of ``arch``.

    Raises
    ------
    ValueError
        The cores differ, the TLEs have different sizes, a buffer ``MB0``/``MB1``/``MB2``, the
        DRAM burst size or the clock is missing, or elements are not whole bytes.
    """
    c0 = arch.cores[0]
    for c in arch.cores:
        if c.pe_unroll != c0.pe_unroll or c.buffers != c0.buffers:
            raise ValueError(f"{arch.name}: TSO needs identical TLTs (core {c.id} differs)")
    sizes: dict[int | None, int] = {}
    for c in arch.cores:
        sizes[c.cluster] = sizes.get(c.cluster, 0) + 1
    if len(set(sizes.values())) != 1:
        raise ValueError(f"{arch.name}: TLEs (core clusters) of different sizes {sizes}")
    missing = [b for b in ("MB0", "MB1", "MB2") if b not in c0.buffers]
    if missing:
        raise ValueError(f"{arch.name}: TLTs need buffers MB0, MB1, MB2; missing {missing}")
    if arch.dram is None or arch.dram.burst_bytes is None:
        raise ValueError(f"{arch.name}: TSO needs a DRAM with a burst size")
    if arch.frequency_hz is None:
        raise ValueError(f"{arch.name}: TSO needs the clock frequency")
    e = arch.precision_bits // 8
    if e * 8 != arch.precision_bits:
        raise ValueError(f"{arch.name}: {arch.precision_bits}-bit elements are not whole bytes")
    return NmpParams(
        E=len(sizes),
        P=next(iter(sizes.values())),
        mb0=c0.buffers["MB0"],
        mb1=c0.buffers["MB1"],
        mb2=c0.buffers["MB2"],
        e=e,
        bw=arch.dram_bytes_per_cycle(),
        cas=arch.dram_cas_cycles(),
        burst=arch.dram.burst_bytes,
        freq_hz=float(arch.frequency_hz),
        unroll=tuple(sorted(c0.pe_unroll.items())),
    )


# ---- a TLE slice ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TleSlice:
    """A TLE slice (Algorithm 2) and how its filters spread over the TLTs (Algorithm 3, line 7).

    Parameters
    ----------
    tle
        The slicing (:data:`TLE_SLICINGS`).
    TLE_R, TLE_W
        Output rows and filters of one TLE.
    E_a
        TLEs with work.
    P_a
        TLTs per TLE with filters, :math:`\\min(P, TLE_W)`.
    F
        Filters of the busiest TLT, :math:`\\lceil TLE_W / P \\rceil` ("the remaining filters are
        spread among the TLTs which have the lowest IDs").
    """

    tle: str
    TLE_R: int
    TLE_W: int
    E_a: int
    P_a: int
    F: int
