"""The global buffer of Flexer's memory manager (§4.1) and the fixed regions of loop-order
schedules (Fig. 5b).

:class:`Buffer` is a list of contiguous segments in address order, each free or holding one data
tile, with the time from which a free segment may be reused. A request for ``size`` bytes is
served in three steps (§4.1):

1. **in place** — a free segment of exactly ``size`` bytes (a dead block of the same size);
2. **best fit** — the smallest hole (maximal run of free segments) of at least ``size`` bytes;
3. **spill** — the policy (Algorithm 2 or Table 2's alternatives,
   :mod:`npusched.heuristics.flexer.spill`) names live blocks to evict; the caller's ``evict``
   frees each (writing back partial sums) and returns when its space is free; then steps 1–2.

Deviation (time): the paper's memory manager has no clock; here a block is freed when its last
reader *ends*, which may be later than the moment the set being placed could start
(``Buffer.now``, set by the caller before each set). Steps 1 and 2 are therefore one search
over every *span* — from each free segment, the shortest run of adjacent free segments holding
``size`` bytes — ranked by
``(max(free time of the span, now), not in place, hole bytes, address)``: the span usable
earliest (all spans free by ``now`` tie), then in place, then best fit, then the lowest address.
Without clocks (every free time ≤ ``now``) this is exactly §4.1's in place, then best fit. A
request thus never waits for a dead block still in use while space free by ``now`` fits
elsewhere, and spans starting inside a hole are tried too (the search before this fix tried a
hole only from its first segment). One pass, two pointers and a monotone queue: linear in the
number of segments.

:class:`Regions` is the static baseline's memory: one region per data type, cut into equal slots
at fixed addresses; a tile goes into a free slot of its type's region, or replaces the least
recently used unpinned tile of that region.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Sequence

from npusched.heuristics.flexer.spill import POLICIES, SpillPolicy

FREE = -1
#: evict(data) → time from which the data's space is free
Evict = Callable[[int], int]


class NoFit(Exception):
    """The request cannot be placed even after spilling every unpinned block."""


class Buffer:
    """Contiguous global buffer of ``capacity`` bytes managed as in Flexer §4.1.

    The segments, in address order, are three parallel lists: ``sizes``, ``data`` (the tile a
    segment holds, ``FREE`` for free space) and ``free_at`` (the time it became free); a tile
    holds at most one segment. :attr:`segs` reads (and sets) them as ``(size, data, free_at)``
    tuples. ``now`` (cycles, 0 at first) is when the set being placed could start: space free
    by then ranks first (module notes); the engine sets it to the time the first NPU is free
    before it places a set.
    """

    def __init__(self, capacity: int, policy: str | SpillPolicy = "flexer") -> None:
        self.capacity = capacity
        self.sizes, self.data, self.free_at = [capacity], [FREE], [0]
        self.now = 0  # when the set being placed could start; space free by then goes first
        self.policy = POLICIES[policy] if isinstance(policy, str) else policy

    @property
    def segs(self) -> list[tuple[int, int, int]]:
        """The segments as ``(size, data, free_at)`` in address order."""
        return list(zip(self.sizes, self.data, self.free_at, strict=True))

    @segs.setter
    def segs(self, segs: Sequence[tuple[int, int, int]]) -> None:
        self.sizes = [s[0] for s in segs]
        self.data = [s[1] for s in segs]
        self.free_at = [s[2] for s in segs]

    def copy(self) -> Buffer:
        """An independent copy: the segments are copied, the spill policy shared (for dry
        runs of a set and for the branches of :mod:`~npusched.heuristics.flexer.beam`)."""
        out = Buffer.__new__(Buffer)
        out.capacity, out.policy, out.now = self.capacity, self.policy, self.now
        out.sizes, out.data, out.free_at = self.sizes[:], self.data[:], self.free_at[:]
        return out

    def used(self) -> int:
        """Bytes held by data tiles now (dead blocks not yet reused count as free)."""
        return sum(b for b, d in zip(self.sizes, self.data, strict=True) if d != FREE)

    def _index(self, data: int) -> int:
        try:
            return self.data.index(data)
        except ValueError:
            raise KeyError(data) from None

    def address(self, data: int) -> int:
        """Byte offset of ``data``'s block in the buffer.

        Raises
        ------
        KeyError
            ``data`` is not in the buffer.
        """
        return sum(self.sizes[: self._index(data)])

    def free(self, data: int, at: int) -> None:
        """Mark ``data``'s block free from time ``at`` (it stays a separate segment so that an
        equally sized tile can replace it in place)."""
        k = self._index(data)
        self.data[k], self.free_at[k] = FREE, at

    def place(
        self,
        data: int,
        size: int,
        pinned: Collection[int],
        uses: Sequence[int],
        evict: Evict,
    ) -> int:
        """Place ``data`` (``size`` bytes) and return the time from which its space is free.

        ``pinned`` blocks are never spilled; ``uses[d]`` is the remaining uses of ``d``
        (Algorithm 2's reuse term).
        """
        span = self._fit(size)
        if span is None:  # 3. spill
            held = self.data
            victims = self.policy(
                self.sizes,
                [uses[d] if d != FREE else 0 for d in held],
                [d not in pinned for d in held],
                [d != FREE for d in held],
                size,
            )
            if victims is None:
                raise NoFit(f"{size} bytes do not fit next to the pinned blocks")
            for i in victims:
                if held[i] != FREE:
                    t = evict(held[i])
                    held[i], self.free_at[i] = FREE, t
            span = self._fit(size)
            assert span is not None, "the spill policy freed too little"
        return self._take(span, data, size)

    def _fit(self, size: int) -> tuple[int, int] | None:
        """Steps 1–2 (module notes): the span ``[i, j)`` of free segments for ``size`` bytes
        with the least ``(max(free time, now), not in place, hole bytes, i)``, or ``None``.

        Per hole (maximal run of free segments) the start ``i`` and the end ``j`` only move
        forward, and a queue of decreasing free times gives each span's latest free time, so
        the pass is linear in the number of segments (the holes are found by ``list.index``)."""
        sizes, held, free_at, now = self.sizes, self.data, self.free_at, self.now
        n = len(held)
        best: tuple[tuple[int, bool, int, int], int] | None = None
        k = 0
        while k < n:
            try:
                k = lo = held.index(FREE, k)
            except ValueError:
                break
            hole = 0
            while k < n and held[k] == FREE:
                hole += sizes[k]
                k += 1
            if hole < size:
                continue
            if k == lo + 1:  # one segment: its one span
                key = (max(free_at[lo], now), hole != size, hole, lo)
                if best is None or key < best[0]:
                    best = (key, k)
                continue
            j, total, latest = lo, 0, deque[int]()
            for i in range(lo, k):
                while j < k and total < size:
                    total += sizes[j]
                    while latest and free_at[latest[-1]] <= free_at[j]:
                        latest.pop()
                    latest.append(j)
                    j += 1
                if total < size:
                    break
                key = (max(free_at[latest[0]], now), j > i + 1 or total != size, hole, i)
                if best is None or key < best[0]:
                    best = (key, j)
                total -= sizes[i]
                if latest[0] == i:
                    latest.popleft()
        return None if best is None else (best[0][3], best[1])

    def _take(self, hole: tuple[int, int], data: int, size: int) -> int:
        """Put ``data`` at the start of free segments ``[i, j)`` (which hold ≥ ``size`` bytes);
        the rest of the last segment stays free with its own time."""
        i, j = hole
        at = max(self.free_at[i:j])
        total = sum(self.sizes[i:j])
        if total == size:
            self.sizes[i:j], self.data[i:j], self.free_at[i:j] = [size], [data], [at]
        else:
            last = self.free_at[j - 1]
            self.sizes[i:j], self.data[i:j] = [size, total - size], [data, FREE]
            self.free_at[i:j] = [at, last]
        return at


class Regions:
    """Fixed regions of a loop-order schedule (Fig. 5b): ``slots[t]`` slots of ``slot_bytes[t]``
    bytes for data type ``t``, at fixed addresses, with least-recently-used replacement.

    Free slots of a region sit in a heap by the time they became free (ties: lowest slot);
    occupied ones in an LRU queue (least recently used first)."""

    def __init__(self, slots: Sequence[int], slot_bytes: Sequence[int], types: Sequence[int]):
        self.types = types
        self.base: list[int] = []
        addr = 0
        for n, b in zip(slots, slot_bytes, strict=True):
            self.base.append(addr)
            addr += n * b
        self.size = addr
        self.slot_bytes = list(slot_bytes)
        self.n_slots = list(slots)
        self.free_slots: list[list[tuple[int, int]]] = [[(0, k) for k in range(n)] for n in slots]
        self.lru: list[OrderedDict[int, int]] = [OrderedDict() for _ in slots]
        self.where: dict[int, tuple[int, int]] = {}

    def address(self, data: int) -> int:
        """Byte offset of ``data``'s slot: its region's base plus the slot's index × the
        region's slot bytes.

        Raises
        ------
        KeyError
            ``data`` holds no slot.
        """
        t, k = self.where[data]
        return self.base[t] + k * self.slot_bytes[t]

    def touch(self, data: int) -> None:
        """Mark ``data`` (on chip) as used now: it becomes the most recently used tile of its
        region, the last to be replaced."""
        self.lru[self.where[data][0]].move_to_end(data)

    def free(self, data: int, at: int) -> None:
        """Release ``data``'s slot from time ``at`` (cycles); the slot becomes free in its
        region, to be taken by the time it became free (earliest first, then lowest slot).

        Raises
        ------
        KeyError
            ``data`` holds no slot.
        """
        t, k = self.where.pop(data)
        del self.lru[t][data]
        heapq.heappush(self.free_slots[t], (at, k))

    def place(
        self, data: int, size: int, pinned: Collection[int], uses: Sequence[int], evict: Evict
    ) -> int:
        """Put ``data`` into a slot of its type's region and return the time (cycles) from
        which the slot is free: the earliest free slot, else the least recently used unpinned
        tile's, which ``evict`` spills.

        ``size`` and ``uses`` are not read (a slot holds any tile of its type; the signature is
        :meth:`Buffer.place`'s).

        Raises
        ------
        NoFit
            The data type has no region, or every slot of its region holds a pinned tile.
        """
        t = self.types[data]
        if not self.n_slots[t]:
            raise NoFit(f"no region for data type {t}")
        if self.free_slots[t]:
            at, k = heapq.heappop(self.free_slots[t])
        else:
            victim = next((d for d in self.lru[t] if d not in pinned), None)
            if victim is None:
                raise NoFit(f"every slot of region {t} is pinned")
            k = self.where.pop(victim)[1]
            del self.lru[t][victim]
            at = evict(victim)
        self.where[data] = (t, k)
        self.lru[t][data] = k
        return at
