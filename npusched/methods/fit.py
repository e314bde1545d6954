"""Fitting an allocation to the memories (:func:`fit_allocation`): the step the memory-aware list
takes on a free allocation, before it schedules.

A copy of a producer's output on a core holds what all the μops there read of it
(:meth:`~npusched.problem.scheduling.routed.RoutedInstance.held_data`), so μops that share a
core can overflow it together, and moving one μop changes the resident data of others: the
readers of the same producers on the two cores it leaves and joins, and its own readers there.
:class:`_Resident` keeps every μop's resident data
(:meth:`~npusched.problem.scheduling.routed.RoutedInstance.operand_data` under the allocation)
and updates only those μops when one moves, so a step costs the degrees it touches, not the
graph (the whole recomputation made the step quadratic: a 137 408-CN LLaMA MLP spent over 17
minutes in it).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from npusched.problem.scheduling.routed import RoutedInstance


class _Resident:
    """Each μop's resident data under an allocation, kept as single μops move.

    ``need[q] = base[q] + Σ_p held(p, core[q])`` over the data producers ``p`` of ``q``, with
    ``base`` the μop's own output and DRAM tensors, and ``held(p, c)`` the producer's whole
    output on its own core, else :meth:`~RoutedInstance.copy_data` of ``total[p, c]``, what the
    readers of ``p`` on core ``c`` read of it; 0 for a streamed μop. A move changes ``held``
    only for the moved μop's producers and its own output, on the two cores, and the readers
    there take the difference."""

    def __init__(self, inst: RoutedInstance, core: np.ndarray) -> None:
        g, n, m = inst.graph, inst.n, inst.m
        data = g.bytes > 0
        pair, inv = np.unique(g.dst[data] * n + g.src[data], return_inverse=True)
        read = np.zeros(pair.size, dtype=np.int64)
        np.add.at(read, inv, inst.read_data[data])
        q, p = pair // n, pair % n
        self.inst, self.m, self.core = inst, m, np.array(core, dtype=np.int64)
        self.output = np.asarray(inst.output_data, dtype=np.int64)
        self.streamed = inst.is_streamed
        self.inputs: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # q: (p, read)
        self.readers: list[dict[int, set[int]]] = [{} for _ in range(n)]  # p: core -> readers
        self.total: defaultdict[int, int] = defaultdict(int)
        for qq, pp, rr in zip(q.tolist(), p.tolist(), read.tolist(), strict=True):
            c = int(self.core[qq])
            self.inputs[qq].append((pp, rr))
            self.readers[pp].setdefault(c, set()).add(qq)
            self.total[pp * m + c] += rr
        self.base = self.output.copy()
        for t in inst.dram:
            self.base[t.consumers] += t.data
        self.need = np.array(inst.operand_data(self.core), dtype=np.int64)  # as _need gives

    def _held(self, p: int, c: int) -> int:
        if self.core[p] == c:
            return int(self.output[p])
        return int(self.inst.copy_data(p, self.total[p * self.m + c]))

    def _need(self, q: int) -> int:
        if self.streamed[q]:
            return 0
        c = int(self.core[q])
        return int(self.base[q]) + sum(self._held(p, c) for p, _ in self.inputs[q])

    def move(self, i: int, k: int) -> dict[int, int]:
        """Move μop ``i`` to core ``k``; the previous resident data of the μops it changed."""
        a = int(self.core[i])
        old: dict[int, int] = {i: int(self.need[i])}

        def shift(p: int, before: tuple[int, int]) -> None:
            for c, b in zip((a, k), before, strict=True):
                d = self._held(p, c) - b
                for q in self.readers[p].get(c, ()) if d else ():
                    if q != i and not self.streamed[q]:
                        old.setdefault(q, int(self.need[q]))
                        self.need[q] += d

        for p, r in self.inputs[i]:
            before = (self._held(p, a), self._held(p, k))
            self.total[p * self.m + a] -= r
            self.total[p * self.m + k] += r
            self.readers[p][a].discard(i)
            self.readers[p].setdefault(k, set()).add(i)
            shift(p, before)
        before = (self._held(i, a), self._held(i, k))
        self.core[i] = k
        shift(i, before)
        self.need[i] = self._need(i)
        return old


def fit_allocation(instance: RoutedInstance, core: np.ndarray) -> np.ndarray:
    """``core`` changed until every μop's resident data under it fits its core's memory
    (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.operand_data`: a copy on a core
    holds what all the μops there read, so μops that share a core can overflow it together).
    Each step moves the μop furthest over its core to the allowed core that leaves the least
    overflow in all (ties: the lowest core index); it stops when nothing overflows, or with the
    reason when no move lowers the overflow. Without capacities, or without overflow, ``core``
    as it is."""
    if instance.capacity is None:
        return core
    cap, mask = instance.capacity, instance.mask
    res = _Resident(instance, core)
    over = np.maximum(res.need - cap[res.core], 0)
    total = int(over.sum())
    while total > 0:
        i = int(np.argmax(over))
        a = int(res.core[i])
        moves = []
        for k in np.flatnonzero(mask[i]).tolist():
            if k == a:
                continue
            old = res.move(i, k)
            delta = sum(max(int(res.need[q]) - int(cap[res.core[q]]), 0) - int(over[q])
                        for q in old)  # fmt: skip
            moves.append((total + delta, k))
            res.move(i, a)
        best = min(moves, default=(total, -1))
        if best[0] >= total:
            cid = instance.accelerator.cores[a].id
            raise ValueError(
                f"core {cid}: μop {instance.graph.ids[i]} needs {int(over[i] + cap[a])} "
                f"{instance.data_unit} resident under the list's allocation, over the core's "
                f"{int(cap[a])}, and no move of a μop to another core lowers the overflow"
            )
        for q in res.move(i, best[1]):
            over[q] = max(int(res.need[q]) - int(cap[res.core[q]]), 0)
        total = best[0]
    return res.core
