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

    ``segs`` holds ``(size, data, free_at)`` per segment in address order (``data = FREE`` for
    free space, ``free_at`` the time it became free). ``now`` (cycles, 0 at first) is when the
    set being placed could start: space free by then ranks first (module notes); the engine
    sets it to the time the first NPU is free before it places a set.
    """

    def __init__(self, capacity: int, policy: str | SpillPolicy = "flexer") -> None:
        self.capacity = capacity
        self.segs: list[tuple[int, int, int]] = [(capacity, FREE, 0)]
        self.now = 0  # when the set being placed could start; space free by then goes first
        self.policy = POLICIES[policy] if isinstance(policy, str) else policy

    def copy(self) -> Buffer:
        """An independent copy: the segments are copied, the spill policy shared (for dry
        runs of a set and for the branches of :mod:`~npusched.heuristics.flexer.beam`)."""
        out = Buffer.__new__(Buffer)
        out.capacity, out.policy, out.now = self.capacity, self.policy, self.now
        out.segs = self.segs[:]  # the segments are tuples: shared
        return out

    def used(self) -> int:
        """Bytes held by data tiles now (dead blocks not yet reused count as free)."""
        return sum(s[0] for s in self.segs if s[1] != FREE)

    def address(self, data: int) -> int:
        """Byte offset of ``data``'s block in the buffer.

        Raises
        ------
        KeyError
            ``data`` is not in the buffer.
        """
        addr = 0
        for size, d, _ in self.segs:
            if d == data:
                return addr
            addr += size
        raise KeyError(data)

    def free(self, data: int, at: int) -> None:
        """Mark ``data``'s block free from time ``at`` (it stays a separate segment so that an
        equally sized tile can replace it in place)."""
        for k, s in enumerate(self.segs):
            if s[1] == data:
                self.segs[k] = (s[0], FREE, at)
                return
        raise KeyError(data)

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
        segs = self.segs
        span = self._fit(size)
        if span is None:  # 3. spill
            live = [d != FREE for _, d, _ in segs]
            victims = self.policy(
                [s for s, _, _ in segs],
                [uses[d] if d != FREE else 0 for _, d, _ in segs],
                [d not in pinned for _, d, _ in segs],
                live,
                size,
            )
            if victims is None:
                raise NoFit(f"{size} bytes do not fit next to the pinned blocks")
            for i in victims:
                if segs[i][1] != FREE:
                    segs[i] = (segs[i][0], FREE, evict(segs[i][1]))
            span = self._fit(size)
            assert span is not None, "the spill policy freed too little"
        return self._take(span, data, size)

    def _fit(self, size: int) -> tuple[int, int] | None:
        """Steps 1–2 (module notes): the span ``[i, j)`` of free segments for ``size`` bytes
        with the least ``(max(free time, now), not in place, hole bytes, i)``, or ``None``.

        Per hole (maximal run of free segments) the start ``i`` and the end ``j`` only move
        forward, and a queue of decreasing free times gives each span's latest free time, so
        the pass is linear in the number of segments."""
        segs, n, now = self.segs, len(self.segs), self.now
        best: tuple[tuple[int, bool, int, int], int] | None = None
        k = 0
        while k < n:
            if segs[k][1] != FREE:
                k += 1
                continue
            lo, hole = k, 0
            while k < n and segs[k][1] == FREE:
                hole += segs[k][0]
                k += 1
            if hole < size:
                continue
            j, total, latest = lo, 0, deque[int]()
            for i in range(lo, k):
                while j < k and total < size:
                    total += segs[j][0]
                    while latest and segs[latest[-1]][2] <= segs[j][2]:
                        latest.pop()
                    latest.append(j)
                    j += 1
                if total < size:
                    break
                key = (max(segs[latest[0]][2], now), j > i + 1 or total != size, hole, i)
                if best is None or key < best[0]:
                    best = (key, j)
                total -= segs[i][0]
                if latest[0] == i:
                    latest.popleft()
        return None if best is None else (best[0][3], best[1])

    def _take(self, hole: tuple[int, int], data: int, size: int) -> int:
        """Put ``data`` at the start of free segments ``[i, j)`` (which hold ≥ ``size`` bytes);
        the rest of the last segment stays free with its own time."""
        i, j = hole
        segs = self.segs
        at = max(segs[k][2] for k in range(i, j))
        total = sum(segs[k][0] for k in range(i, j))
        rest = [] if total == size else [(total - size, FREE, segs[j - 1][2])]
        segs[i:j] = [(size, data, at), *rest]
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
