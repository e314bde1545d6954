r"""Analytic intra-core latency: a roofline per memory level, as MAESTRO and ZigZag model it.

A tile (:class:`~npusched.costmodel.shape.TileShape`) runs on a PE array that unrolls some loops
in space (the core's ``pe_unroll``); the others run in time, one step per cycle, which takes
:math:`T_c` = :func:`~npusched.costmodel.compute.compute_cycles` cycles. Its data starts in the
core's SRAM, and each PE holds a register file per operand (the core's ``registers``). For a
temporal loop order, an operand :math:`X` stays in its registers over the innermost loops
:math:`B_X` whose footprint fits them (a loop the operand does not depend on fits for free;
the first one that does not fit enters :math:`B_X` in part, tiled to the room left). Every loop
outside :math:`B_X` that :math:`X` does not depend on fetches it again (for inputs also a kernel
loop outside :math:`B_X` whose output loop is inside, the sliding window), so the traffic
between SRAM and the registers is

.. math::

    V_X = |X| \prod_{d \notin B_X,\ d \notin \mathrm{rel}(X)} t_d ,

with :math:`|X|` the operand's elements and :math:`t_d` the loop's temporal count. Partial
outputs are written back :math:`V_O` times (in partial-sum bytes, the last write in element
bytes) and read back :math:`V_O - |O|` times. A register file that cannot hold its operand's
data of the tile is used either whole, its refills waited for (:math:`T_{stall} = (V_X - F_X)
b_X / bw_{rd}`, :math:`F_X` the first fill: ZigZag's stall when a block does not fit a memory
twice), or in two halves, the next block loading while the array uses the other (no wait, half
the room): the cheaper of the two for each. The array also waits for the registers' first fill
(:math:`T_{fill}`, each at its own port's rate). The tile's latency is the slowest of that and
the SRAM's two ports (and each register file's fill port):

.. math::

    T = \max\Big(T_c + T_{fill} + T_{stall},\
        \frac{e (V_W + V_I) + p (V_O - |O|)}{bw_{rd}},\
        \frac{p (V_O - |O|) + e |O|}{bw_{wr}}\Big) .

The order is the best of all orders of the four loop groups ``K``, ``C``, the output plane
``OY·OX`` and the kernel window ``FY·FX`` (the search LOMA does over all loops, coarsened).
Pooling, add and concat take one step per output (and window position) on the lanes that
unroll their loops (``cycles_per_op`` steps for a function such as SiLU), read their inputs
once and write their outputs once.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

from npusched.arch.model import Arch, CoreSpec, unroll_dims
from npusched.costmodel.compute import searched_cores, split_unrolling
from npusched.costmodel.shape import TileShape, psum_bytes

GROUPS = {"K": ("K",), "C": ("C",), "P": ("OY", "OX"), "F": ("FY", "FX")}
"""Loop groups the order search permutes."""

REL = {
    "W": {"K", "C", "F"},
    "O": {"K", "P"},
    "I": {"C", "P", "F"},
}
"""The groups each operand depends on (inputs of depthwise convs and pooling: ``K`` for
``C``)."""


Use = tuple[int, float, float, float]
"""One operand's part of one use of the registers (:meth:`Roofline._use`)."""


@dataclass(frozen=True)
class Breakdown:
    """One tile's latency and where it comes from (cycles)."""

    latency: int
    compute: int
    sram_read: int
    sram_write: int
    fill: int
    order: str

    @property
    def bound(self) -> str:
        """What limits the tile: ``compute``, ``sram_read`` or ``sram_write``."""
        parts = {"compute": self.compute, "sram_read": self.sram_read,
                 "sram_write": self.sram_write}  # fmt: skip
        return max(parts, key=lambda k: parts[k])


class Roofline:
    """The analytic cost model of the module docstring for the cores of ``arch``."""

    name = "analytic"

    def __init__(self, arch: Arch) -> None:
        self.elem = max(1, math.ceil(arch.element_bytes))
        self.psum = psum_bytes(self.elem)
        self.cache: dict[tuple[object, ...], Breakdown] = {}

    def latency(self, shape: TileShape, core: CoreSpec) -> int:
        """Cycles of the tile ``shape`` on ``core``: :math:`T` of the module docstring, the
        slowest of compute (with fills and stalls) and the SRAM's ports, over the best loop
        order (:attr:`Breakdown.latency` of :meth:`explain`, cached)."""
        return self.explain(shape, core).latency

    def explain(self, shape: TileShape, core: CoreSpec) -> Breakdown:
        """The latency of ``shape`` on ``core`` and its parts (cached per shape and core); a
        core whose unrolling is searched takes the one
        :func:`~npusched.costmodel.compute.searched_cores` weighs, the lowest latency (ties:
        the first, one loop per array dimension), as Stream keeps the faster of ZigZag's
        single and mixed mappings."""
        options = [self._priced(shape, c)
                   for c in searched_cores(core, self._loops(shape), self.elem)]  # fmt: skip
        return min(options, key=lambda b: b.latency)

    def _priced(self, shape: TileShape, core: CoreSpec) -> Breakdown:
        """:meth:`_explain` of ``shape`` on ``core`` with its unrolling, cached."""
        key = (shape.key(), tuple(sorted(core.pe_unroll.items())),
               tuple(sorted(core.registers.items())), core.sram_read_bytes_per_cycle,
               core.sram_write_bytes_per_cycle)  # fmt: skip
        if key not in self.cache:
            self.cache[key] = self._explain(shape, core)
        return self.cache[key]

    def _explain(self, shape: TileShape, core: CoreSpec) -> Breakdown:
        rd = core.sram_read_bytes_per_cycle or math.inf
        wr = core.sram_write_bytes_per_cycle or math.inf
        size = shape.elements()
        t = self._temporal(shape, core)
        steps = math.prod(t.values())
        if not shape.has_weights:  # one step per output (and window position) on its lanes
            steps *= shape.cycles_per_op
            read = math.ceil(size["I"] * self.elem / rd) if rd < math.inf else 0
            write = math.ceil(size["O"] * self.elem / wr) if wr < math.inf else 0
            return Breakdown(max(steps, read, write), steps, read, write, 0, "-")
        operands = self._operands(shape, core, t)
        best: Breakdown | None = None
        for order in itertools.permutations(GROUPS):  # outermost first
            cand = self._order(operands, t, order, size, steps, rd, wr)
            if best is None or cand.latency < best.latency:
                best = cand
        assert best is not None
        return best

    def _temporal(self, shape: TileShape, core: CoreSpec) -> dict[str, int]:
        """Temporal count of each loop group: each unrolled loop divided by its factor, ceil
        (a flattened key such as TSO's ``OY*OX*FY*FX`` split into one factor per loop as the
        array can unroll it, :func:`~npusched.costmodel.compute.split_unrolling`). Pooling,
        add and concat have no ``C`` loop for the array to spread."""
        loops = self._loops(shape)
        t = dict(loops)
        for key, u in core.pe_unroll.items():
            dims = unroll_dims(key)
            if len(dims) == 1:
                t[dims[0]] = -(-loops.get(dims[0], 1) // u)
                continue
            for d, f in split_unrolling(u, [(d, loops.get(d, 1)) for d in dims]):
                t[d] = -(-loops.get(d, 1) // f)
        return {g: math.prod(t[d] for d in dims) for g, dims in GROUPS.items()}

    @staticmethod
    def _loops(shape: TileShape) -> dict[str, int]:
        """The tile's loops as the array sees them: pooling, add and concat have no ``C``
        loop for it to spread."""
        loops = shape.loops()
        if not shape.has_weights:
            loops["C"] = 1
        return loops

    def _operands(self, shape: TileShape, core: CoreSpec,
                  t: dict[str, int]) -> list[tuple[Any, ...]]:  # fmt: skip
        """What no loop order changes, per operand: ``(name, groups it depends on, bytes per
        element, its register port's bandwidth, the register files behind that port, the
        files holding distinct data, the ways its register file can be used)``; a way is the
        room (elements) and whether reloads stall."""
        out = []
        for x in ("W", "I", "O"):
            rel = REL[x] if shape.kind != "dwconv" or x != "I" else (REL[x] - {"C"}) | {"K"}
            nbytes = self.psum if x == "O" else self.elem
            reg = core.registers.get(x)
            room = 0 if reg is None else reg.bytes // nbytes
            total = math.prod(t[g] for g in rel)
            ways = (
                [(room, False)] if total <= room or room < 2 else [(room, True), (room // 2, False)]
            )
            bw = reg.bandwidth_bytes_per_cycle if reg is not None else 0
            port_files = self._files(core, reg.shared_over, rel) if bw and reg else 1
            out.append((x, rel, nbytes, bw, port_files, self._files(core, (), rel), ways))
        return out

    def _order(self, operands: list[tuple[Any, ...]], t: dict[str, int], order: tuple[str, ...],
               size: dict[str, int], steps: int, rd: float, wr: float) -> Breakdown:  # fmt: skip
        """The best breakdown of one loop order (outermost first) over the ways each register
        file is used (:meth:`_operands`): whole (its data reloaded between uses, which stalls
        the array) or in two halves (the next block loads while the array uses the other)."""
        options = [[self._use(size[x], nbytes, bw, port_files, files, rd, stall,
                              *self._reuse(order, t, rel, room, x == "I")) for room, stall in ways]
                   for x, rel, nbytes, bw, port_files, files, ways in operands]  # fmt: skip
        best: tuple[int, int, int, int] | None = None
        for w, i, o in itertools.product(*options):
            cand = self._cost(w, i, o, size["O"], steps, rd, wr)
            if best is None or cand[0] < best[0]:
                best = cand
        assert best is not None
        latency, read, write, busy = best
        return Breakdown(latency, steps, read, write, busy - steps, ">".join(order))

    @staticmethod
    def _use(elements: int, nbytes: int, bw: float, port_files: int, files: int, rd: float,
             stalls: bool, refetch: int, first: int) -> Use:  # fmt: skip
        """One operand's part of one use of the registers: its SRAM traffic ``V_X`` (elements),
        its register port's cycles, its first fill's cycles and its reload stalls (cycles)."""
        v = elements * refetch
        port = v * nbytes / port_files / bw if bw else 0.0  # a register file's own port
        fill = first * nbytes / bw if bw else 0.0
        stall = (v - first * files) * nbytes / rd if stalls and rd < math.inf else 0.0
        return v, port, fill, stall

    def _cost(self, w: Use, i: Use, o: Use, outputs: int, steps: int, rd: float,
              wr: float) -> tuple[int, int, int, int]:  # fmt: skip
        """Latency, SRAM read and write cycles and busy cycles of one use of the registers, from
        each operand's part (:meth:`_use`; reloads of a whole register wait for the SRAM)."""
        psum_traffic = o[0] - outputs
        read_bytes = self.elem * (w[0] + i[0]) + self.psum * psum_traffic
        write_bytes = self.psum * psum_traffic + self.elem * outputs
        read = math.ceil(read_bytes / rd) if rd < math.inf else 0
        write = math.ceil(write_bytes / wr) if wr < math.inf else 0
        stall = w[3] + i[3] + o[3]
        busy = steps + math.ceil(max(w[2], i[2], o[2])) + math.ceil(max(0.0, stall))
        return max(busy, read, write, math.ceil(max(w[1], i[1], o[1]))), read, write, busy

    @staticmethod
    def _files(core: CoreSpec, shared: tuple[str, ...], rel: set[str]) -> int:
        """How many PEs hold distinct data of an operand depending on ``rel``: the product of
        the unrollings of the loops it depends on (the others broadcast), less those of the loops
        one register file is ``shared`` over."""
        return _files(tuple(core.pe_unroll.items()), tuple(shared), frozenset(rel))

    @staticmethod
    def _reuse(
        order: tuple[str, ...], t: dict[str, int], rel: set[str], room: int, window: bool
    ) -> tuple[int, int]:
        """The refetch factor of an operand depending on ``rel`` whose registers hold ``room``
        elements, and its per-PE footprint (the first fill)."""
        held, factor, inside = 1, 1, room > 0
        kept: set[str] = set()
        for g in reversed(order):  # innermost first
            n = t[g]
            if inside and g not in rel:
                kept.add(g)
                continue
            if inside and held * n <= room:
                held *= n
                kept.add(g)
                continue
            if inside:  # the first loop that does not fit: an inner tile of it stays
                held *= max(1, room // held)
                inside = False
                continue
            if g not in rel or (window and g == "F" and "P" in kept):
                factor *= n
        return factor, held


@functools.lru_cache(maxsize=4096)
def _files(
    unroll: tuple[tuple[str, int], ...], shared: tuple[str, ...], rel: frozenset[str]
) -> int:
    """:meth:`Roofline._files` on the core's unrolling, memoised (it is asked once per operand
    of every register use of every loop order)."""
    out = 1
    for key, u in unroll:
        dims = set(unroll_dims(key))
        groups = {g for g, members in GROUPS.items() if dims & set(members)}
        if groups & rel and not dims & set(shared):
            out *= u
    return out
