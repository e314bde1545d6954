"""NoC transfer latency between cores."""

from __future__ import annotations

import math


def ceil_div(nbytes: float, bandwidth: float) -> int:
    """:math:`\\lceil bytes / bw \\rceil`, exact for integers and tolerant (``1e-9``) of float
    round-off otherwise, as :meth:`npusched.problem.Accelerator.transfer_cycles`."""
    if bandwidth <= 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth}")
    if nbytes < 0:
        raise ValueError(f"bytes must be >= 0, got {nbytes}")
    if isinstance(nbytes, int) and (isinstance(bandwidth, int) or float(bandwidth).is_integer()):
        return -(-nbytes // int(bandwidth))
    return max(0, math.ceil(nbytes / bandwidth - 1e-9))


def noc_cycles(
    nbytes: float, hops: int, bandwidth_bytes_per_cycle: float | None, hop_latency: int = 0
) -> int:
    """Cycles from a producer's end to a consumer's start ``hops`` router hops away.

    .. math::

        t_{NoC} = \\begin{cases} h \\cdot \\ell_{hop} + \\lceil b / bw \\rceil & h > 0 \\\\
                                  0 & h = 0 \\end{cases}

    the head of the message crosses ``h`` hops at ``hop_latency`` cycles each, and its ``b`` bytes
    are serialised onto a link of ``bw`` bytes per cycle (no serialisation term when ``bw`` is
    ``None``: an unlimited link). Data staying on one core costs nothing. This is
    :meth:`npusched.problem.Accelerator.comm_delay` for one transfer; contention for links is
    left to the routed models.

    Parameters
    ----------
    nbytes
        Bytes transferred.
    hops
        Manhattan hops between the cores (``>= 0``).
    bandwidth_bytes_per_cycle
        Link bandwidth, or ``None``.
    hop_latency
        Cycles per hop.
    """
    if hops < 0 or hop_latency < 0:
        raise ValueError("hops and hop latency must be >= 0")
    if hops == 0:
        return 0
    ser = 0 if bandwidth_bytes_per_cycle is None else ceil_div(nbytes, bandwidth_bytes_per_cycle)
    return hops * hop_latency + ser
