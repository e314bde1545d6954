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
    there take the difference (:meth:`changes`). The state is kept in Python lists and dicts:
    a step reads and writes single entries."""

    def __init__(self, inst: RoutedInstance, core: np.ndarray) -> None:
        g, n, m = inst.graph, inst.n, inst.m
        data = g.bytes > 0
        pair, inv = np.unique(g.dst[data] * n + g.src[data], return_inverse=True)
        read = np.zeros(pair.size, dtype=np.int64)
        np.add.at(read, inv, inst.read_data[data])
        q, p = pair // n, pair % n
        self.inst, self.m = inst, m
        self.core: list[int] = np.asarray(core, dtype=np.int64).tolist()
        self.output: list[int] = np.asarray(inst.output_data, dtype=np.int64).tolist()
        self.streamed: list[bool] = inst.is_streamed.tolist()
        self.inputs: list[list[tuple[int, int]]] = [[] for _ in range(n)]  # q: (p, read)
        self.readers: list[dict[int, set[int]]] = [{} for _ in range(n)]  # p: core -> readers
        self.total: defaultdict[int, int] = defaultdict(int)
        for qq, pp, rr in zip(q.tolist(), p.tolist(), read.tolist(), strict=True):
            c = self.core[qq]
            self.inputs[qq].append((pp, rr))
            self.readers[pp].setdefault(c, set()).add(qq)
            self.total[pp * m + c] += rr
        base = np.asarray(inst.output_data, dtype=np.int64).copy()
        for t in inst.dram:
            base[t.consumers] += t.data
        self.base: list[int] = base.tolist()
        self.need: list[int] = inst.operand_data(np.asarray(self.core)).tolist()  # as below

    def _held(self, p: int, c: int, total: int) -> int:
        """``held(p, c)`` when the readers of ``p`` on ``c`` read ``total`` of it."""
        return self.output[p] if self.core[p] == c else self.inst.copy_data(p, total)

    def changes(self, i: int, k: int) -> tuple[dict[int, int], int]:
        """What moving μop ``i`` to core ``k`` adds to the resident data of each other μop it
        changes, and ``i``'s own resident data on ``k``."""
        a, m, total, readers, streamed = self.core[i], self.m, self.total, self.readers, \
            self.streamed  # fmt: skip
        add: dict[int, int] = {}

        def shift(p: int, c: int, d: int) -> None:
            for q in readers[p].get(c, ()) if d else ():
                if q != i and not streamed[q]:
                    add[q] = add.get(q, 0) + d

        own = self.base[i]
        for p, r in self.inputs[i]:
            ta, tk = total.get(p * m + a, 0), total.get(p * m + k, 0)
            shift(p, a, self._held(p, a, ta - r) - self._held(p, a, ta))
            after = self._held(p, k, tk + r)
            shift(p, k, after - self._held(p, k, tk))
            own += after
        out, copy = self.output[i], self.inst.copy_data
        shift(i, a, copy(i, total.get(i * m + a, 0)) - out)  # its own copy leaves a
        shift(i, k, out - copy(i, total.get(i * m + k, 0)))
        return add, 0 if streamed[i] else own

    def move(self, i: int, k: int) -> dict[int, int]:
        """Move μop ``i`` to core ``k``; the previous resident data of the μops it changed."""
        add, own = self.changes(i, k)
        a, m, need = self.core[i], self.m, self.need
        old = {i: need[i]}
        for q, d in add.items():
            old[q] = need[q]
            need[q] += d
        need[i] = own
        for p, r in self.inputs[i]:
            self.total[p * m + a] -= r
            self.total[p * m + k] += r
            self.readers[p][a].discard(i)
            self.readers[p].setdefault(k, set()).add(i)
        self.core[i] = k
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
    cap = instance.capacity.tolist()
    res = _Resident(instance, core)
    over = np.maximum(np.asarray(res.need) - instance.capacity[res.core], 0)
    total = int(over.sum())
    while total > 0:
        i = int(np.argmax(over))
        a = res.core[i]
        moves = []
        for k in np.flatnonzero(instance.mask[i]).tolist():
            if k == a:
                continue
            add, own = res.changes(i, k)
            delta = max(own - cap[k], 0) - int(over[i]) + sum(
                max(res.need[q] + d - cap[res.core[q]], 0) - int(over[q])
                for q, d in add.items())  # fmt: skip
            moves.append((total + delta, k))
        best = min(moves, default=(total, -1))
        if best[0] >= total:
            cid = instance.accelerator.cores[a].id
            raise ValueError(
                f"core {cid}: μop {instance.graph.ids[i]} needs {int(over[i] + cap[a])} "
                f"{instance.data_unit} resident under the list's allocation, over the core's "
                f"{int(cap[a])}, and no move of a μop to another core lowers the overflow"
            )
        for q in res.move(i, best[1]):
            over[q] = max(res.need[q] - cap[res.core[q]], 0)
        total = best[0]
    return np.array(res.core, dtype=np.int64)
