"""The memory-aware list's pool of candidates (:mod:`~npusched.heuristics.scheduling.memory_list`):
every ready μop by priority, and those of them worth a look.

A step looks at the :data:`~npusched.heuristics.scheduling.memory_list.LOOKAHEAD` best
candidates and places the first that fits. Most of them are known not to fit: a candidate that
did not fit with ``space`` to receive fits only once its core's open bits are no more than its
capacity less ``space``, or once data it needs comes to its core (it is *dirty*), or, for a
streamed μop, after an eviction
(the list's ``fitting``). Looking at all of
them at every step cost each step the whole window (on LLaMA-3-8B's layer at 1 024 tokens, a
sixth of the list's time under cProfile; the list took about 0.9 of its time without it, one
A/B run). Here such a candidate is *parked*: taken
out of the candidates looked at until one of those events *wakes* it (a heap of thresholds per
core, read at each step; the dirty ones; the streamed ones at the next eviction). The window
is still the best :data:`LOOKAHEAD` of the whole pool, so the list places what it placed
before, in the same order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from sortedcontainers import SortedList

Key = tuple[int, int, int]
"""A candidate's place in the pool: its priority, then its μop index last."""


class Candidates:
    """The pool (``pool``, every ready μop) and those of it not parked (``active``)."""

    def __init__(self, keys: Iterable[Key], cores: int) -> None:
        self.pool = SortedList(keys)
        self.active = SortedList(self.pool)
        self.parked: dict[int, tuple[Key, int | None, int]] = {}  # μop -> key, threshold, serial
        self.heaps: list[list[tuple[int, int, int]]] = [[] for _ in range(cores)]
        self.serial = 0  # parkings so far: a heap entry of an older parking is stale
        self.streamed: list[int] = []  # parked at evictions == self.stamp
        self.stamp = -1

    def add(self, key: Key) -> None:
        """A new ready μop."""
        self.pool.add(key)
        self.active.add(key)

    def take(self, key: Key) -> None:
        """The μop of ``key`` is placed."""
        self.pool.remove(key)
        if self.parked.pop(key[2], None) is None:
            self.active.remove(key)

    def window(self, size: int) -> list[Key]:
        """The candidates not parked among the best ``size`` of the pool, in order."""
        top = self.pool[size - 1] if len(self.pool) > size else None
        return list(self.active.irange(maximum=top))

    def park(self, key: Key, core: int, threshold: int, streamed: bool) -> None:
        """The μop of ``key`` does not fit on ``core`` until its open bits are at most
        ``threshold`` (or, ``streamed``, until the next eviction)."""
        self.active.remove(key)
        self.serial += 1
        self.parked[key[2]] = (key, None if streamed else threshold, self.serial)
        if streamed:
            self.streamed.append(key[2])
        else:
            heapq.heappush(self.heaps[core], (-threshold, key[2], self.serial))

    def wake(self, items: Iterable[int]) -> None:
        """The μops ``items`` are worth a look again (those parked)."""
        for i in items:
            got = self.parked.pop(i, None)
            if got is not None:
                self.active.add(got[0])

    def wake_fitting(self, mem: list[Any], evictions: int) -> None:
        """Wake the parked μops whose core's open bits have fallen to their threshold, and
        after an eviction the streamed ones."""
        for c, heap in enumerate(self.heaps):
            open_bits = mem[c].open_bits
            while heap and -heap[0][0] >= open_bits:
                _, i, serial = heapq.heappop(heap)
                got = self.parked.get(i)
                if got is not None and got[2] == serial:  # (not an older parking's)
                    self.wake((i,))
        if evictions != self.stamp:
            self.wake([i for i in self.streamed if (got := self.parked.get(i)) and got[1] is None])
            self.streamed.clear()
            self.stamp = evictions
