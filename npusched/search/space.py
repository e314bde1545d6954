"""The design space of Klotski's μtensor shape ``s = (h, w, ic, oc)`` (§III-B).

- ``h`` and ``w``: the divisors of the largest output feature map's height (width) and the powers
  of two up to it — what divides the large maps evenly, and the sizes between.
- ``ic`` and ``oc``: multiples of the PE array's unrolling of ``C`` and ``K`` (remainder-free,
  §III-B: "ic and oc should be multiple of m and n"), doubling from one array width up to the
  network's largest channel count (a geometric grid: the linear one has thousands of values).
- Shapes that cut every layer alike (equal tile sizes in every layer: they differ only above
  some layer's extents, or in ``ic`` where the reduction stays whole) are one point: the smallest
  of them stays.
- One ``s`` serves every layer: :func:`~npusched.partition.schemes.klotski_tiling` clips it to
  each layer's extents (a layer smaller than ``h`` is whole in height) and cuts what does not
  divide into remainder μtensors (§III-B, Fig. 5).
- Feasibility (§III-B, end): a shape whose μtensor (input box + weights + output tile, in the
  partitioner's element and partial-sum bytes: :func:`npusched.partition.schemes.footprint`) exceeds
  the smallest core's on-chip memory is infeasible (:func:`npusched.partition.schemes.over_memory`).
- Size (ours, not the paper's): a shape that cuts the network into more than ``max_uops`` μops is
  left out too. Eq. 3 with α = the mean μop latency grows like ``n ln n`` with the μop count ``n``
  (:mod:`npusched.search.objective`), so without a cap the search runs to the finest shapes —
  1.5 million μops and gigabytes per evaluation on ResNet-18 — where no exact stage can follow.
- Both sets are enumerated up front, so Bayesian optimization never spends an evaluation on an
  infeasible shape.

Points are mapped to ``[0, 1]^4`` by the base-2 logarithm of each coordinate, normalised by the
largest value of that axis.
"""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

from npusched.arch.model import Arch
from npusched.costmodel import CostModel
from npusched.partition.build import EdgeCache, heads
from npusched.partition.costs import core_kinds, layer_latencies
from npusched.partition.schemes import KlotskiMemory
from npusched.problem.scheduling.dag import release_load_bound
from npusched.problem.scheduling.machine_view import MachineView
from npusched.workload.network import Network

Shape4 = tuple[int, int, int, int]

MAX_UOPS = 5000
"""Default cap on a shape's μop count (module docstring): the list scheduler evaluates such a
partition in a fraction of a second (the priority list) to a few seconds (earliest-task-first, up
to ``ETF_LIMIT`` μops), and the exact final stages still build their models."""


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


class Cuts:
    """What ``s`` does to each layer (:func:`~npusched.partition.schemes.klotski_tilings`): the tile
    sizes, layer by layer (equal for equal partitions), and the μop count; each layer's tiling is
    computed once per distinct clipped shape."""

    def __init__(self, net: Network, arch: Arch | MachineView) -> None:
        self.net, self.memory = net, KlotskiMemory(net, arch)
        self.cache: dict[tuple[str, tuple[int, ...]], tuple[tuple[int, ...], int]] = {}

    def __call__(self, s: Shape4) -> tuple[tuple[tuple[int, ...], ...], int]:
        sig, total = [], 0
        for layer in self.net.layers:
            key = (layer.name, self.memory.clipped(layer, s))
            if key not in self.cache:
                t = self.memory.tiling(layer, s)
                self.cache[key] = (tuple(int(t.lengths(d)[0]) for d in range(4)), t.size)
            tiles, n = self.cache[key]
            sig.append(tiles)
            total += n
        return tuple(sig), total


@dataclass(frozen=True)
class DesignSpace:
    """The feasible shapes of one network on one architecture, and their normalised inputs."""

    points: tuple[Shape4, ...]
    infeasible: int
    uops: tuple[int, ...] = ()
    too_large: int = 0
    max_uops: int | None = None
    square: bool = False

    @classmethod
    def build(cls, net: Network, arch: Arch | MachineView, max_uops: int | None = MAX_UOPS
              ) -> DesignSpace:  # fmt: skip
        """The feasible shapes of ``net`` on ``arch`` with at most ``max_uops`` μops (``None``:
        no cap); a ValueError when none is left."""
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
        cuts = Cuts(net, arch)
        feasible, sizes, bad, large, seen = [], [], 0, 0, set()
        for s in itertools.product(*axes):
            sig, n = cuts(s)  # the smallest s of each distinct partition stays
            if sig in seen:
                continue
            seen.add(sig)
            if cuts.memory.violation(s):
                bad += 1
            elif max_uops is not None and n > max_uops:
                large += 1
            else:
                feasible.append(s)
                sizes.append(n)
        if not feasible:
            why = "fits the core memory" + ("" if max_uops is None else f" in ≤ {max_uops} μops")
            raise ValueError(f"no μtensor shape of {net.name} {why} of {arch.name}")
        return cls(tuple(feasible), bad, tuple(sizes), large, max_uops, transposable(net))

    def __len__(self) -> int:
        return len(self.points)

    def lower_bounds(
        self,
        net: Network,
        arch: Arch | MachineView,
        model: CostModel,
        executor: Executor | None = None,
        parts: int = 1,
    ) -> np.ndarray:
        """For each point, a makespan bound of its partition, costed by ``model`` without
        building the instance (each layer's tiling is costed once per distinct clipped shape):
        the critical path and :func:`~npusched.problem.scheduling.dag.release_load_bound` over
        the μops, with each μop's fastest latency and its head (earliest start) along the
        partition's edges (:func:`~npusched.partition.build.uop_edges`: producer tiles and
        partial-sum chains), transfers left out. Each μop's head in its instance is at least
        this one, so the bound is at most the instance's
        (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.lower_bound`) and at least
        the load term ``⌈Σ_i min_c l_i / m⌉``.

        Their minimum bounds the makespan of every schedule of every partition of the space, so
        ``1 - min / T`` is the most that any search over ``s`` and any scheduler can gain over a
        schedule of ``T`` cycles (the headroom over baseline 2 in :mod:`npusched.bench.klotski`).
        With an ``executor``, ``parts`` runs of consecutive points share the work.
        """
        if executor is None or parts < 2:
            return _lower_bounds(self.points, net, arch, model)
        runs = [r for r in np.array_split(np.arange(len(self.points)), parts) if r.size]
        futures = [
            executor.submit(_lower_bounds, [self.points[i] for i in r], net, arch, model)
            for r in runs
        ]
        return np.concatenate([f.result() for f in futures])

    def unit(self) -> np.ndarray:
        """``(len, 4)`` float64 inputs in ``[0, 1]``: log2 of each coordinate over its axis."""
        logs = np.log2(np.asarray(self.points, dtype=np.float64))
        top = logs.max(axis=0)
        return logs / np.where(top > 0, top, 1.0)

    def features(self) -> np.ndarray:
        """:meth:`unit`, with ``h`` and ``w`` sorted in each row of a :attr:`square` space, so
        that a shape and its :meth:`transpose` are one input to a model of the space."""
        x = self.unit()
        if self.square:
            x[:, :2] = np.sort(x[:, :2], axis=1)
        return x

    def twins(self, points: Iterable[int]) -> list[int]:
        """The :meth:`transpose` of each of ``points`` in a :attr:`square` space (none
        otherwise): shapes that a search over the space up to transposition counts as
        visited with them."""
        if not self.square:
            return []
        return [t for k in points if (t := self.transpose(k)) is not None]

    def nearest(self, here: int, k: int, skip: Container[int] = ()) -> list[int]:
        """The ``k`` points nearest to point ``here`` (L1 distance in :meth:`unit` coordinates,
        the earlier point first on ties), ``here`` and the points of ``skip`` left out: the
        neighbourhood of the local searches (:mod:`npusched.search.anneal`)."""
        x = self.unit()
        order = np.argsort(np.abs(x - x[here]).sum(axis=1), kind="stable")
        out = []
        for j in order.tolist():
            if j != here and j not in skip:
                out.append(j)
                if len(out) == k:
                    break
        return out

    def steps(self, here: int, skip: Container[int] = ()) -> list[int]:
        """The coordinate steps from point ``here``: for each of ``h, w, ic, oc``, the points
        of the space with the other three equal and the next smaller or larger value on that
        axis, the points of ``skip`` left out, nearest first (L1 distance in :meth:`unit`
        coordinates). Unlike :meth:`nearest`, which crowds into the axes with the most values
        (``h`` and ``w``: 7, 8, 14, 16, 28, 32, …), every axis gets its step."""
        s = self.points[here]
        below: list[tuple[int, int] | None] = [None] * 4
        above: list[tuple[int, int] | None] = [None] * 4
        for j, p in enumerate(self.points):
            diff = [a for a in range(4) if p[a] != s[a]]
            if len(diff) != 1:
                continue
            a = diff[0]
            side = below if p[a] < s[a] else above
            best = side[a]
            if best is None or abs(p[a] - s[a]) < abs(best[0] - s[a]):
                side[a] = (p[a], j)
        found = [v[1] for v in (*below, *above) if v is not None and v[1] not in skip]
        x = self.unit()
        return sorted(found, key=lambda j: (float(np.abs(x[j] - x[here]).sum()), j))

    def transpose(self, here: int) -> int | None:
        """The point with ``h`` and ``w`` of point ``here`` swapped, if it is another point of
        the space: on a square feature map it cuts the same tiles turned by 90°, so it has
        the same load but sends its halos the other way round the mesh."""
        h, w, ic, oc = self.points[here]
        if h == w:
            return None
        try:
            return self.points.index((w, h, ic, oc))
        except ValueError:
            return None

    def index(self, s: Shape4) -> int:
        """Position of shape ``s``; an ``s`` outside the space is a ValueError."""
        try:
            return self.points.index(tuple(s))
        except ValueError:
            raise ValueError(f"s = {s} is not a feasible point of the design space") from None

    def locate(self, net: Network, arch: Arch | MachineView, s: Shape4) -> int:
        """The point that cuts ``net`` as a user's ``s`` does, or a ValueError naming why ``s``
        is outside the space (not positive, not remainder-free, over the core memory, too many
        μops)."""
        s = tuple(int(v) for v in s)  # type: ignore[assignment]
        unroll = arch.cores[0].pe_unroll
        k, c = int(unroll.get("K", 1)), int(unroll.get("C", 1))
        if len(s) != 4 or min(s) < 1:
            raise ValueError(f"s = {s}: four positive sizes h, w, ic, oc are needed")
        if s[2] % c or s[3] % k:
            raise ValueError(
                f"s = {s} is not remainder-free: ic must be a multiple of {c} and oc of {k} "
                f"(the PE array of {arch.name}, Klotski §III-B)"
            )
        cuts = Cuts(net, arch)
        if why := cuts.memory.violation(s):
            raise ValueError(f"s = {s} is infeasible: {why}")
        sig, n = cuts(s)
        for j, p in enumerate(self.points):
            if cuts(p)[0] == sig:
                return j
        if self.max_uops is not None and n > self.max_uops:
            raise ValueError(f"s = {s} cuts {net.name} into {n} μops, over the cap {self.max_uops}")
        raise ValueError(f"s = {s} is not a point of the design space of {net.name}")


def transposable(net: Network) -> bool:
    """Whether turning every feature map by 90° leaves ``net`` as it is: every map square
    (the input's and every layer's) and every layer's kernel, stride, dilation and padding
    the same along both axes. Then the shapes ``(h, w, ic, oc)`` and ``(w, h, ic, oc)`` cut
    the same μops turned, with the same work and dependencies; only the mesh's routes and the
    schedulers' tie-breaks by core index tell them apart: of 13 such pairs evaluated on VGG19
    5×5 and ResNet-50 4×4 (atomic plan, routed machine), 8 had equal makespans and the rest
    differed by at most 0.2 %."""
    if any(shape[1] != shape[2] for shape in net.shapes.values()):
        return False
    return all(
        ly.kernel[0] == ly.kernel[1]
        and ly.stride[0] == ly.stride[1]
        and ly.dilation[0] == ly.dilation[1]
        and ly.pad[:2] == ly.pad[2:]
        for ly in net.layers
    )


def _lower_bounds(
    points: Sequence[Shape4], net: Network, arch: Arch | MachineView, model: CostModel
) -> np.ndarray:
    """:meth:`DesignSpace.lower_bounds` of ``points``."""
    memory = KlotskiMemory(net, arch)
    kinds, _ = core_kinds(arch.cores)
    cost: dict[tuple[str, tuple[int, ...]], np.ndarray] = {}
    edges = EdgeCache()
    out = np.empty(len(points), dtype=np.int64)
    for j, s in enumerate(points):
        tilings, fastest = {}, {}
        for layer in net.layers:
            key = (layer.name, memory.clipped(layer, s))
            tilings[layer.name] = memory.tiling(layer, s)
            if key not in cost:
                lat = layer_latencies(layer, tilings[layer.name], kinds, model)
                cost[key] = lat.min(axis=1)
            fastest[layer.name] = cost[key]
        d = np.concatenate([fastest[layer.name] for layer in net.layers])
        head = heads(net, tilings, fastest, edges)
        out[j] = max(int((head + d).max()), release_load_bound(head, d, len(arch.cores)))
    return out
