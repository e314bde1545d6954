"""What a routed schedule decides and records (:mod:`npusched.problem.scheduling.routed`'s
instances): each μop's start and core, each required transfer's window, and for a schedule that
manages memory itself the data resident on each core (:class:`Residency`) and the moves its
evictions cause (:class:`Moves`: write-backs and re-fetches). ``inst`` arguments are routed
instances (typed ``Any``: this module is below the instance's, which re-exports it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from npusched.problem.scheduling.dag import IntArray


def _int_arrays(obj: Any, names: tuple[str, ...]) -> None:
    for name in names:
        object.__setattr__(obj, name, np.asarray(getattr(obj, name), dtype=np.int64).reshape(-1))


@dataclass(frozen=True, eq=False)
class Residency:
    """Data resident on cores: record ``r`` holds ``bits[r]`` of ``tensor[r]`` (a producer's
    μop index, or ``-1 - k`` for DRAM tensor ``k``) on core index ``core[r]`` over the half-open
    window ``[alloc[r], free[r])`` (the solution's ``memory`` records); ``bits[r]`` is the size
    of the copy held there
    (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.held_data`)."""

    core: IntArray
    tensor: IntArray
    bits: IntArray
    alloc: IntArray
    free: IntArray

    def __post_init__(self) -> None:
        _int_arrays(self, ("core", "tensor", "bits", "alloc", "free"))

    def usage(self, k: int) -> tuple[IntArray, IntArray]:
        """Core ``k``'s resident data as a step function: change times and the level after each
        (frees before allocations at the same cycle, as the windows are half-open)."""
        on = self.core == k
        t = np.concatenate([self.alloc[on], self.free[on]])
        sign = np.concatenate([self.bits[on], -self.bits[on]])
        order = np.lexsort((sign, t))
        return t[order], np.cumsum(sign[order])


EVICT, REFETCH, FORWARD = 0, 1, 2
MOVE_KINDS = ("evict", "refetch", "forward")
"""Kinds of :class:`Moves` (the solution's transfer ``kind``)."""


def move_direction_ok(kind: int, tensor: int, src_core: int, dst_core: int) -> bool:
    """A write-back takes an output from a core to DRAM (``-1``); a re-fetch brings a tensor
    from DRAM to a core; a forward takes a DRAM tensor from one core to another."""
    if kind == EVICT:
        return tensor >= 0 and src_core >= 0 and dst_core < 0
    if kind == FORWARD:
        return tensor < 0 and src_core >= 0 and dst_core >= 0 and src_core != dst_core
    return kind == REFETCH and src_core < 0 and dst_core >= 0


@dataclass(frozen=True, eq=False)
class Moves:
    """Transfers beyond the required ones, caused by eviction (Stream §III-E) or taking a DRAM
    tensor from a core that holds it: ``kind[t]`` is :data:`EVICT` (an activation written back
    from core ``src_core[t]`` to DRAM, ``dst_core[t] = -1``), :data:`REFETCH` (``tensor[t]``
    fetched again from DRAM, ``src_core[t] = -1``, into ``dst_core[t]``) or :data:`FORWARD` (a
    DRAM tensor sent from core ``src_core[t]``, which holds it, to ``dst_core[t]``, on an
    instance that allows it:
    :attr:`~npusched.problem.scheduling.routed.RoutedInstance.forward`); ``tensor`` as in
    :class:`Residency`; each over ``[tstart[t], tend[t])``. A write-back carries the whole
    output (from a core that holds all of it), a re-fetch or a forward the copy its destination
    holds (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.held_data`). A re-fetch or
    a forward may replace a required transfer (its window then ``-1``)."""

    kind: IntArray
    tensor: IntArray
    src_core: IntArray
    dst_core: IntArray
    tstart: IntArray
    tend: IntArray

    def __post_init__(self) -> None:
        _int_arrays(self, ("kind", "tensor", "src_core", "dst_core", "tstart", "tend"))

    @property
    def size(self) -> int:
        """Number of moves (write-backs, re-fetches and forwards)."""
        return int(self.kind.size)

    @staticmethod
    def empty() -> Moves:
        """No moves: a schedule that evicts nothing."""
        return Moves(*([np.zeros(0, dtype=np.int64)] * 6))


@dataclass(frozen=True, eq=False)
class RoutedSchedule:
    """Start and core of every μop, and the window ``[tstart, tend)`` of each transfer of
    ``required_transfers(instance, core)`` in its canonical order. A schedule that manages
    memory itself also carries its ``memory`` records and the ``moves`` its evictions cause
    (else both follow from Stream's lifetime rules, with no eviction)."""

    start: IntArray
    core: IntArray
    tstart: IntArray
    tend: IntArray
    memory: Residency | None = None
    moves: Moves | None = None

    def __post_init__(self) -> None:
        _int_arrays(self, ("start", "core", "tstart", "tend"))

    @property
    def evicts(self) -> bool:
        """The schedule evicts data (has eviction write-backs or re-fetches)."""
        return self.moves is not None and self.moves.size > 0

    def end(self, inst: Any) -> IntArray:
        """Finish cycle of each μop on its core (``start`` plus its duration there), shape
        ``(n,)``."""
        return self.start + inst.duration[np.arange(inst.n), self.core]

    def makespan(self, inst: Any) -> int:
        """The makespan in cycles: the latest finish of a μop (:meth:`end`). Transfers and moves
        do not count in themselves (a required transfer ends before the μops it serves start)."""
        return int(self.end(inst).max())
