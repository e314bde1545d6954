"""The interchangeable-core relaxation of a routed instance: the NoC forgotten up to what every
route shares, so that cores of one kind become interchangeable and the symmetry between them
can be broken.

A routed instance on a mesh has almost no symmetry that keeps its routes (the Klotski meshes
have none), so an exact model of it explores every relabelling of the cores. On a free
allocation that is most of the search: a 19-μop graph on 3×3 is proven on 2×2 in a second and
not in a minute on 3×3. The relaxation (ours) replaces the topology by

- a private link ``a → c`` for every ordered pair of cores, one hop long, at the highest
  bottleneck bandwidth of any route between two cores: every transfer from ``a`` to ``c``
  shares the route ``a → c`` with the others, so they still take turns, and none is longer
  than on its real route (``hops · hop latency + ⌈b / B⌉`` with ``hops ≥ 1`` and ``B`` at
  most the best);
- one link between the DRAM core and every core, one hop, at the best bandwidth of a route to
  or from DRAM, carrying up to ``P`` transfers at once (:attr:`Interchangeable.lanes`), where
  ``P`` counts the distinct resources that DRAM routes start (fetches) or end (write-backs)
  on: each DRAM transfer holds one of them for all its length, so no more than ``P`` are in
  flight.

Every schedule of the instance is a solution of the relaxation with the same μop times (each
transfer keeps its start and ends no later), so the relaxation's optimum is a lower bound.
Cores with the same latencies, allowed μops and capacity are then interchangeable
(:attr:`Interchangeable.classes`): permuting them maps solutions to solutions, and the
relaxation's model may require each core of a class to be used only after the one before it
(:meth:`~npusched.formulations.scheduling.routed.RoutedModel` ``classes``).

The relaxation's own :meth:`~npusched.problem.scheduling.routed.RoutedInstance.lower_bound` is
not a bound of the instance (its terms read the one DRAM link as a single port): the model of
it takes the instance's bound as its floor.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from npusched.problem.scheduling.routed import Link, RoutedInstance, Topology


@dataclass(frozen=True)
class Interchangeable:
    """The relaxation of the module docstring: ``instance`` (the relaxed topology, no
    capacities, no preferred allocation), ``lanes`` (resource index → transfers it carries at
    once, for the DRAM link when ``P > 1``) and ``classes`` (core indices, ascending, of each
    class of two or more interchangeable cores)."""

    instance: RoutedInstance
    lanes: dict[int, int]
    classes: tuple[tuple[int, ...], ...]


def core_classes(inst: RoutedInstance) -> tuple[tuple[int, ...], ...]:
    """Cores with the same latency for every μop, the same allowed μops and the same capacity,
    in classes of two or more (ascending core indices)."""
    cap = np.zeros(inst.m, dtype=np.int64) if inst.capacity is None else inst.capacity
    keys: dict[bytes, list[int]] = {}
    for k in range(inst.m):
        col = np.concatenate([inst.duration[:, k], inst.mask[:, k], [cap[k]]]).astype(np.int64)
        keys.setdefault(col.tobytes(), []).append(k)
    return tuple(tuple(ks) for ks in keys.values() if len(ks) > 1)


def interchangeable(inst: RoutedInstance, contention: bool = True) -> Interchangeable | None:
    """The relaxation of ``inst`` (module docstring), or ``None`` where it breaks no symmetry:
    a fixed allocation, or no two interchangeable cores. Without ``contention`` the links
    between cores carry any number of transfers at once (``lanes`` ``n``: the relaxation for
    schedules that evict, :func:`relays_dominated`)."""
    classes = core_classes(inst)
    if inst.fixed_allocation or not classes:
        return None
    topo, m = inst.topology, inst.m
    ids = [c.id for c in inst.accelerator.cores]

    def bottleneck(route: tuple[int, ...]) -> float:
        return min(topo.links[x].bandwidth for x in route)

    best = max(bottleneck(inst.route(a, c)) for a in range(m) for c in range(m) if a != c)
    links: list[Link] = []
    routes: dict[tuple[int, int], tuple[int, ...]] = {}
    for a in range(m):
        for c in range(m):
            if a != c:
                routes[(ids[a], ids[c])] = (len(links),)
                links.append(Link(len(links), ids[a], ids[c], best, name=f"{ids[a]}->{ids[c]}"))
    lanes = {} if contention else dict.fromkeys(range(len(links)), inst.n)
    if topo.dram is not None:
        ways = [inst.route(-1, c) for c in range(m)]
        back = [inst.route(c, -1) for c in range(m)] if inst.can_write_back else []
        ports = {int(topo.resource_of[r[0]]) for r in ways}
        ports |= {int(topo.resource_of[r[-1]]) for r in back}
        dram = Link(len(links), topo.dram, None, max(map(bottleneck, ways + back)),
                    offchip=True, name="dram")  # fmt: skip
        links.append(dram)
        for c in range(m):
            routes[(topo.dram, ids[c])] = (dram.id,)
            if back:
                routes[(ids[c], topo.dram)] = (dram.id,)
        carried = int(sum(topo.lanes[p] for p in ports))
        if carried > 1:
            lanes[len(links) - 1] = carried  # (the DRAM link is its own last resource)
    relaxed = Topology(tuple(links), routes, topo.dram, topo.hop_latency)
    out = dataclasses.replace(inst, topology=relaxed, capacity=None, preferred=None)
    return Interchangeable(out, lanes, classes)



def relays_dominated(inst: RoutedInstance) -> bool:
    """Whether, in the relaxation without ``contention``, a copy sent directly is never later
    than one relayed through DRAM, so that it needs no relays to bound the schedules that
    evict: the best bandwidth between two cores is at least that of every route from DRAM.

    A schedule that evicts may deliver ``p``'s copy to core ``c`` only by a re-fetch after a
    write-back. The relaxation sends it directly instead, inside the re-fetch's interval: it
    starts no earlier (after ``e_p``), lasts no longer (one hop at the best bandwidth against
    at least one hop at a DRAM route's), so it still arrives before the copy's readers, and
    while in flight it takes no more room on ``c`` than the re-fetch did. The links between
    cores then carry it without contention; the DRAM link is not asked to.
    """
    topo, m = inst.topology, inst.m
    if topo.dram is None:
        return True
    best = max(min(topo.links[x].bandwidth for x in inst.route(a, c))
               for a in range(m) for c in range(m) if a != c)  # fmt: skip
    return all(best >= min(topo.links[x].bandwidth for x in inst.route(-1, c)) for c in range(m))
