"""One core's resident data over time as a step function (:class:`Profile`), the memory the
memory-aware list (:mod:`npusched.heuristics.scheduling.memory_list`) books lifetimes in."""

from __future__ import annotations

import numpy as np


class Profile:
    """Data resident on one core as a step function: ``level[j]`` from ``time[j]`` to
    ``time[j + 1]`` (0 before the first), with lifetimes still open counted for ever.
    Times before ``floor`` are forgotten (no query reaches back there). The breakpoints live in
    buffers that grow by doubling, so inserting one moves a slice instead of copying arrays."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._t = np.zeros(64, dtype=np.int64)
        self._l = np.zeros(64, dtype=np.int64)
        self.lo, self.hi = 0, 1  # the live breakpoints are _t[lo:hi]
        self.held: dict[int, int] = {}
        self.open_bits = 0

    @property
    def time(self) -> np.ndarray:
        """The live breakpoints, increasing (a view: valid until the next change)."""
        return self._t[self.lo : self.hi]

    @property
    def level(self) -> np.ndarray:
        """Bits resident from each breakpoint of :attr:`time` to the next (a view, like it)."""
        return self._l[self.lo : self.hi]

    def earliest_fit(self, r: int, b: int) -> int | None:
        """The earliest ``t ≥ r`` from which ``b`` more bits fit at every later instant, or
        ``None`` when they never fit (the open lifetimes alone leave too little room).

        The maximum of the step function over ``[t, ∞)`` falls only where a lifetime ends, so
        the answer is ``r`` or one of the later breakpoints."""
        room = self.capacity - b
        if self.open_bits > room:
            return None
        time, level = self.time, self.level
        j = max(int(time.searchsorted(r, side="right")) - 1, 0)
        over = np.flatnonzero(level[j:] > room)  # not the last level: the open bits fit
        return r if over.size == 0 else int(time[j + int(over[-1]) + 1])

    def _shift(self, t: int, b: int) -> None:
        """Add ``b`` to the level from ``t`` on."""
        t = max(t, int(self._t[self.lo]))
        j = self.lo + int(self.time.searchsorted(t))
        if j == self.hi or self._t[j] != t:
            if self.hi == self._t.size:  # full: move the live part to the front, or grow
                live = self.hi - self.lo
                size = self._t.size * (2 if 2 * live > self._t.size else 1)
                t_new, l_new = np.zeros(size, np.int64), np.zeros(size, np.int64)
                t_new[:live], l_new[:live] = self.time, self.level
                self._t, self._l, j = t_new, l_new, j - self.lo
                self.lo, self.hi = 0, live
            self._t[j + 1 : self.hi + 1] = self._t[j : self.hi]
            self._l[j + 1 : self.hi + 1] = self._l[j : self.hi]
            self._t[j], self._l[j] = t, self._l[j - 1]
            self.hi += 1
        self._l[j : self.hi] += b

    def add(self, key: int, t: int, b: int) -> None:
        """Open lifetime ``key``: ``b`` more bits from ``t`` on, for ever until :meth:`close`.
        Does not check the capacity (:meth:`earliest_fit` chose ``t``)."""
        self._shift(t, b)
        self.held[key] = b
        self.open_bits += b

    def close(self, key: int, t: int) -> None:
        """End open lifetime ``key`` at ``t``: its bits are free from ``t`` on. Raises
        ``KeyError`` when ``key`` is not open."""
        b = self.held.pop(key)
        self._shift(t, -b)
        self.open_bits -= b

    def forget_before(self, t: int) -> None:
        """Keep the step function from ``t`` on only."""
        j = int(self.time.searchsorted(t, side="right")) - 1
        if j > 0:
            self.lo += j
