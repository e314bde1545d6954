"""The design space of Klotski's μtensor shape ``s = (h, w, ic, oc)`` (§III-B).

- ``h`` and ``w``: the divisors of the largest output feature map's height (width) and the powers
  of two up to it — what divides the large maps evenly, and the sizes between.
- ``ic`` and ``oc``: multiples of the PE array's unrolling of ``C`` and ``K`` (remainder-free,
  §III-B: "ic and oc should be multiple of m and n"), doubling from one array width up to the
  network's largest channel count (a geometric grid: the linear one has thousands of values).
- Shapes that cut every layer alike (they differ only above some layer's extents) are one point:
  the smallest of them stays.
- Feasibility (§III-B, end): a shape whose μtensor exceeds a core's on-chip memory is infeasible
  (:func:`npusched.partition.api.over_memory`). The feasible set is enumerated up front, so
  Bayesian optimization never spends an evaluation on an infeasible shape.

Points are mapped to ``[0, 1]^4`` by the base-2 logarithm of each coordinate, normalised by the
largest value of that axis.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from npusched.arch.model import Arch
from npusched.partition.api import KlotskiMemory
from npusched.workload.network import Network

Shape4 = tuple[int, int, int, int]


def divisors_and_powers(n: int) -> list[int]:
    """Divisors of ``n`` and powers of two up to ``n``, sorted."""
    divs = {d for d in range(1, n + 1) if n % d == 0}
    return sorted(divs | {1 << k for k in range(n.bit_length()) if 1 << k <= n})


def multiples(unit: int, top: int) -> list[int]:
    """``unit``, ``2·unit``, ``4·unit``, … up to the first value that reaches ``top``."""
    out = [unit]
    while out[-1] < top:
        out.append(out[-1] * 2)
    return out


@dataclass(frozen=True)
class DesignSpace:
    """The feasible shapes of one network on one architecture, and their normalised inputs."""

    points: tuple[Shape4, ...]
    infeasible: int

    @classmethod
    def build(cls, net: Network, arch: Arch) -> DesignSpace:
        unroll = arch.cores[0].pe_unroll
        shapes = [net.shapes[ly.name] for ly in net.layers]
        hmax = max(s[1] for s in shapes)
        wmax = max(s[2] for s in shapes)
        cmax = max(s[0] for s in shapes)
        axes = (
            divisors_and_powers(hmax),
            divisors_and_powers(wmax),
            multiples(int(unroll.get("C", 1)), cmax),
            multiples(int(unroll.get("K", 1)), cmax),
        )
        memory = KlotskiMemory(net, arch)
        feasible, bad, seen = [], 0, set()
        for s in itertools.product(*axes):
            sig = memory.signature(s)  # the smallest s of each distinct partition stays
            if sig in seen:
                continue
            seen.add(sig)
            if memory.violation(s):
                bad += 1
            else:
                feasible.append(s)
        if not feasible:
            raise ValueError(f"no μtensor shape of {net.name} fits the core memory of {arch.name}")
        return cls(tuple(feasible), bad)

    def __len__(self) -> int:
        return len(self.points)

    def unit(self) -> np.ndarray:
        """``(len, 4)`` float64 inputs in ``[0, 1]``: log2 of each coordinate over its axis."""
        logs = np.log2(np.asarray(self.points, dtype=np.float64))
        top = logs.max(axis=0)
        return logs / np.where(top > 0, top, 1.0)

    def index(self, s: Shape4) -> int:
        """Position of shape ``s``; an ``s`` outside the space is a ValueError."""
        try:
            return self.points.index(tuple(s))
        except ValueError:
            raise ValueError(f"s = {s} is not a feasible point of the design space") from None
