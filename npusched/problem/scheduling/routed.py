"""Scheduling with routed transfers: links and buses shared one transfer at a time, an off-chip
DRAM core, and tensors sent once per destination core (Stream's hardware model, §III-D/E of the
Stream paper, with its exported topology).

A :class:`RoutedInstance` is a μop DAG on compute cores (``base``) plus

- a :class:`Topology`: directed links (or buses, links with one ``bus_id``) with a bandwidth in
  data units per cycle, and a route (list of link indices) between every pair of cores including
  the DRAM core;
- which cores each μop may run on (``allowed``): Stream's allocation fixed (one core each) or free
  within each CN's ``possible_cores``;
- :class:`DramTensor` s: constant operands (weights, first-layer inputs) that start in DRAM;
- optionally a ``preferred`` allocation (Stream's), one of the warm starts of free allocations;
- optionally a memory ``capacity`` per core, in data units (Stream's top-level memories), enforced
  by the memory-aware list scheduler and checked by verify at every instant, each μop's
  ``layer`` index (Stream's memory priority, §III-E), and the ``streamed`` μops whose operands
  stay in DRAM (Stream's ``too_large_operands``: the cost model already charges their off-chip
  traffic in their latency), which take no space on their core;
- optionally the ``output`` each μop produces (below; default: its largest out-edge);
- ``forward``: whether a core's copy of a DRAM tensor may come from another core that holds
  it, over the NoC, in place of the fetch from DRAM (a move of kind ``forward``; Stream's
  current release sends a tensor from the cores that hold it, ``CommunicationManager``'s
  multicast plans over several sources). Off by default: the exact models do not model it, so
  on an instance that allows it their bounds are capped by the instance's own
  (:meth:`RoutedInstance.lower_bound`, whose terms then hold for forwarded copies too).

**A copy carries what its readers read.** Each μop ``p`` produces ``output[p]`` data units
(:attr:`RoutedInstance.output_data`): the instance's ``output`` when given, else its largest
out-edge. A data edge (``bytes > 0``; edges with 0 only order μops) carries what its consumer
reads of its producer's output (:attr:`RoutedInstance.read_data`): its ``bytes`` when the
instance gives ``output``; without ``output`` (Stream's exports, where every edge carries the
producer's whole output, and every instance made before the field) the whole output. Then:

- the producer's own copy, on its core, holds ``output[p]``; so does a re-fetch of it from DRAM
  into that core (its local readers may read less, but the copy is whole);
- the copy of ``p``'s output on another core ``c`` holds
  ``min(output[p], Σ read of the data edges from p to its consumers on c)``
  (:meth:`RoutedInstance.copy_data`, the one place of the rule; :meth:`RoutedInstance.held_data`
  for an allocation), however it comes: by the required transfer or re-fetched from DRAM;
- a write-back to DRAM (eviction) always writes the whole output, from a core that holds all of
  it (the producer's, or one whose copy is whole), so DRAM then holds all of it and any
  core's re-fetch of its part is valid.

Given the cores of all μops, the transfers are determined (:func:`required_transfers`):

- producer ``p`` sends its copy for core ``c`` (above) once to every other core ``c`` that
  hosts a consumer of data from ``p``, however many consumers sit there;
- every DRAM tensor goes once to every core that hosts one of its consumers.

A transfer occupies every link of its route at once for at least ``⌈data / min bandwidth⌉``
cycles, and each link (each bus) carries one transfer at a time, a link with ``lanes`` ``P``
(a DRAM port wider than any route through it) ``P`` at once. It starts after its producer
ends (DRAM tensors: at 0 or later) and ends before every consumer it serves starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from npusched.problem.scheduling import routed_bounds
from npusched.problem.scheduling.accelerator import Accelerator
from npusched.problem.scheduling.dag import IntArray
from npusched.problem.scheduling.instance import SchedulingInstance
from npusched.problem.scheduling.noc import Mesh
from npusched.problem.scheduling.routed_schedule import (  # noqa: F401 (re-exported)
    EVICT,
    FORWARD,
    MOVE_KINDS,
    REFETCH,
    Moves,
    Residency,
    RoutedSchedule,
    move_direction_ok,
)

BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class Link:
    """A directed link ``sender → receiver`` (``receiver = None``: to any core, as Stream's
    off-chip link), ``bandwidth`` data units per cycle. Links with one ``bus_id >= 0`` form a
    bus: one transfer at a time on all of them together. ``lanes`` ``P``: the link carries up to
    ``P`` transfers at once (a port whose bandwidth is ``P`` times that of every route through
    it, which then runs at its route's rate; no bus has more than one)."""

    id: int
    sender: int
    receiver: int | None
    bandwidth: float
    bus_id: int = -1
    offchip: bool = False
    name: str = ""
    lanes: int = 1

    def __post_init__(self) -> None:
        if self.bandwidth <= 0:
            raise ValueError(f"link {self.id}: bandwidth must be positive, got {self.bandwidth}")
        if self.lanes < 1 or (self.lanes > 1 and self.bus_id >= 0):
            raise ValueError(f"link {self.id}: lanes must be 1 on a bus and at least 1, "
                             f"got {self.lanes}")


@dataclass(frozen=True, eq=False)
class Topology:
    """Links, routes between core ids, and the id of the off-chip DRAM core (if any)."""

    links: tuple[Link, ...]
    routes: dict[tuple[int, int], tuple[int, ...]]
    dram: int | None = None
    hop_latency: int = 0
    resource_of: IntArray = field(init=False, repr=False)
    link_index: dict[int, int] = field(init=False, repr=False)
    _slowest: dict[tuple[int, ...], float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = [ln.id for ln in self.links]
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate link ids")
        index = {lid: k for k, lid in enumerate(ids)}
        routes: dict[tuple[int, int], tuple[int, ...]] = {}
        for (a, b), route in self.routes.items():
            if a == b:
                continue
            try:
                routes[(a, b)] = tuple(index[lid] for lid in route)
            except KeyError as err:
                raise ValueError(f"route {a}->{b} names unknown link {err.args[0]}") from None
            if not route:
                raise ValueError(f"route {a}->{b} is empty")
        # one resource per link, shared by all links of a bus
        buses: dict[int, int] = {}
        res = []
        for k, ln in enumerate(self.links):
            if ln.bus_id >= 0:
                res.append(buses.setdefault(ln.bus_id, len(self.links) + len(buses)))
            else:
                res.append(k)
        _, dense = np.unique(np.asarray(res), return_inverse=True)
        object.__setattr__(self, "routes", routes)
        object.__setattr__(self, "resource_of", dense.astype(np.int64))
        object.__setattr__(self, "link_index", index)
        object.__setattr__(self, "_slowest", {})

    @property
    def num_resources(self) -> int:
        """Number of resources transfers contend for: one per link outside a bus, one per bus
        (all its links together); :attr:`resource_of` maps a link index to its resource."""
        return int(self.resource_of.max()) + 1 if self.links else 0

    @cached_property
    def lanes(self) -> IntArray:
        """Transfers each resource carries at once: its link's ``lanes`` (a bus: 1)."""
        out = np.ones(self.num_resources, dtype=np.int64)
        for k, ln in enumerate(self.links):
            out[self.resource_of[k]] = ln.lanes
        return out

    def route(self, a: int, b: int) -> tuple[int, ...]:
        """Link indices from core id ``a`` to core id ``b`` (empty when ``a == b``)."""
        if a == b:
            return ()
        try:
            return self.routes[(a, b)]
        except KeyError:
            raise ValueError(f"no route from core {a} to core {b}") from None

    def cycles(self, data: int, route: tuple[int, ...]) -> int:
        """``hops · hop_latency + ⌈data / min bandwidth on the route⌉``: the shortest time the
        transfer can take (it holds every link of its route meanwhile)."""
        if not route or data <= 0:
            return 0
        bw = self._slowest.get(route)
        if bw is None:  # (the lists ask for the same few routes 10^5 times)
            bw = self._slowest[route] = min(self.links[k].bandwidth for k in route)
        return len(route) * self.hop_latency + math.ceil(data / bw - 1e-9)

    @classmethod
    def from_mesh(
        cls, accelerator: Accelerator, bandwidth: float, hop_latency: int = 0
    ) -> Topology:
        """The directed links of the accelerator's mesh with XY routes between its cores."""
        if accelerator.mesh is None or accelerator.cells() is None:
            raise ValueError("the accelerator has no mesh")
        mesh = Mesh(*accelerator.mesh)
        links = tuple(
            Link(k, a, b, bandwidth, name=f"{a}->{b}") for k, (a, b) in enumerate(mesh.links)
        )
        cells = accelerator.cells()
        assert cells is not None
        ids = [c.id for c in accelerator.cores]
        routes = {
            (ids[i], ids[j]): tuple(mesh.route(cells[i], cells[j]))
            for i in range(len(ids))
            for j in range(len(ids))
            if i != j
        }
        return cls(links, routes, None, hop_latency)


@dataclass(frozen=True)
class DramTensor:
    """A constant operand in DRAM: ``data`` units read by ``consumers`` (μop indices)."""

    name: str
    data: int
    consumers: IntArray

    def __post_init__(self) -> None:
        if self.data < 0:
            raise ValueError(f"DRAM tensor {self.name}: negative size {self.data}")
        object.__setattr__(self, "consumers", np.unique(np.asarray(self.consumers, np.int64)))


@dataclass(frozen=True, eq=False)
class RoutedInstance:
    """A scheduling instance whose transfers travel over a :class:`Topology`."""

    base: SchedulingInstance
    topology: Topology
    allowed: BoolArray | None = None
    dram: tuple[DramTensor, ...] = ()
    data_unit: str = "bits"
    preferred: IntArray | None = None
    capacity: IntArray | None = None
    layer: IntArray | None = None
    streamed: BoolArray | None = None
    output: IntArray | None = None
    forward: bool = False

    def __post_init__(self) -> None:
        n, m = self.base.n, self.base.m
        if self.output is not None:
            out = np.asarray(self.output)
            if out.shape != (n,):
                raise ValueError(f"output needs one integer per μop ({n}), got shape {out.shape}")
            if out.size and not np.issubdtype(out.dtype, np.integer):
                raise ValueError(f"output needs one integer per μop, got {out.dtype} values")
            out = out.astype(np.int64)
            if out.size and out.min() < 0:
                i = int(np.argmax(out < 0))
                raise ValueError(f"μop {self.base.graph.ids[i]}: negative output {int(out[i])}")
            e = over_output(self.base.graph, out)
            if e is not None:
                g = self.base.graph
                raise ValueError(
                    f"μop {g.ids[g.src[e]]}: its edge to μop {g.ids[g.dst[e]]} carries "
                    f"{int(g.bytes[e])}, more than its output {int(out[g.src[e]])} (an edge "
                    "carries what its consumer reads of the output)"
                )
            out.setflags(write=False)
            object.__setattr__(self, "output", out)
        allowed = (
            np.ones((n, m), dtype=bool)
            if self.allowed is None
            else np.asarray(self.allowed, dtype=bool)
        )
        if allowed.shape != (n, m):
            raise ValueError(f"allowed has shape {allowed.shape}, expected ({n}, {m})")
        none = np.flatnonzero(~allowed.any(axis=1))
        if none.size:
            raise ValueError(f"μop {self.base.graph.ids[none[0]]} may run on no core")
        allowed.setflags(write=False)
        object.__setattr__(self, "allowed", allowed)
        core_ids = [c.id for c in self.base.accelerator.cores]
        targets = core_ids + ([self.topology.dram] if self.topology.dram is not None else [])
        for a in targets:
            for b in core_ids:
                self.topology.route(a, b)  # raises when a route is missing
        for t in self.dram:
            if t.consumers.size and (t.consumers[0] < 0 or t.consumers[-1] >= n):
                raise ValueError(f"DRAM tensor {t.name} names a μop outside 0..{n - 1}")
        if self.dram and self.topology.dram is None:
            raise ValueError("DRAM tensors need a DRAM core in the topology")
        if self.preferred is not None:
            pref = np.asarray(self.preferred, dtype=np.int64)
            if pref.shape != (n,) or not allowed[np.arange(n), pref].all():
                raise ValueError("the preferred allocation must give each μop an allowed core")
            object.__setattr__(self, "preferred", pref)
        if self.streamed is not None:
            object.__setattr__(self, "streamed", np.asarray(self.streamed, dtype=bool).reshape(n))
        if self.capacity is not None:
            cap = np.asarray(self.capacity, dtype=np.int64)
            if cap.shape != (m,) or (cap <= 0).any():
                raise ValueError("the memory capacity must give every core a positive size")
            object.__setattr__(self, "capacity", cap)
            self._check_operands_fit()
        if self.layer is not None:
            object.__setattr__(self, "layer", np.asarray(self.layer, dtype=np.int64).reshape(n))

    @classmethod
    def from_mesh(cls, inst: SchedulingInstance) -> RoutedInstance:
        """A mesh instance with link contention: its mesh links (bandwidth and hop latency of
        the accelerator) carry transfers one at a time along XY routes; data in bytes."""
        acc = inst.accelerator
        if acc.link_bandwidth is None:
            raise ValueError("link contention needs a link bandwidth")
        topo = Topology.from_mesh(acc, acc.link_bandwidth, acc.hop_latency)
        return cls(inst, topo, data_unit="bytes")

    @cached_property
    def output_data(self) -> IntArray:
        """The data each μop produces (its own copy, on its core): the instance's ``output``
        when given, else the largest of its out-edges (in Stream's exports every edge carries
        the whole output); 0 without data edges."""
        if self.output is not None:
            return self.output
        g = self.graph
        output = np.zeros(self.n, dtype=np.int64)
        np.maximum.at(output, g.src, g.bytes)
        output.setflags(write=False)
        return output

    @cached_property
    def _outputs(self) -> list[int]:
        """:attr:`output_data` as Python ints (:meth:`copy_data` on scalars)."""
        return list(self.output_data.tolist())

    @cached_property
    def read_data(self) -> IntArray:
        """What each edge's consumer reads of its producer's output: the edge's ``bytes`` when
        the instance gives ``output``, else (Stream's rule: every edge carries the whole
        output) the producer's whole output; 0 on edges that only order μops."""
        g = self.graph
        if self.output is not None:
            read = np.array(g.bytes, dtype=np.int64)
        else:
            read = np.where(g.bytes > 0, self.output_data[g.src], 0).astype(np.int64)
        read.setflags(write=False)
        return read

    @overload
    def copy_data(self, producer: int, read: int) -> int: ...
    @overload
    def copy_data(self, producer: Any, read: Any) -> IntArray: ...

    def copy_data(self, producer: Any, read: Any) -> Any:
        """**The rule** (module docstring): the copy of producer ``p``'s output on a core other
        than its own holds ``min(output[p], read)``, ``read`` = what its readers there read
        of it (the sum of :attr:`read_data` over the data edges from ``p`` to its consumers on
        that core). Transfers, re-fetches, memory records, operand sizes, bounds and models
        all size a copy by this function. On two Python ints, an int (the cost of one
        comparison, for the loops that size copies one at a time)."""
        if type(producer) is int and type(read) is int:
            return min(self._outputs[producer], read)
        return np.minimum(self.output_data[np.asarray(producer, dtype=np.int64)],
                          np.asarray(read, dtype=np.int64))  # fmt: skip

    def held_data(self, core: Any, tensor: Any, at: Any) -> IntArray:
        """The size of the copy of ``tensor[k]`` (a producer's μop index, or ``-1 - j`` for DRAM
        tensor ``j``) held on core index ``at[k]`` when μop ``i`` runs on core index
        ``core[i]``: a DRAM tensor whole; a producer's output whole on the producer's core,
        else :meth:`copy_data` with what its consumers on ``at[k]`` read (0 when none does)."""
        core = np.asarray(core, dtype=np.int64)
        tensor = np.atleast_1d(np.asarray(tensor, dtype=np.int64))
        at = np.broadcast_to(np.asarray(at, dtype=np.int64), tensor.shape)
        g, m = self.graph, self.m
        data = g.bytes > 0
        key = g.src[data] * m + core[g.dst[data]]
        keys, inv = np.unique(key, return_inverse=True)
        total = np.zeros(keys.size, dtype=np.int64)
        np.add.at(total, inv, self.read_data[data])
        p = np.maximum(tensor, 0)
        want = p * m + at
        read = np.zeros(tensor.shape, dtype=np.int64)
        if keys.size:
            pos = np.minimum(np.searchsorted(keys, want), keys.size - 1)
            read = np.where(keys[pos] == want, total[pos], 0).astype(np.int64)
        copy = np.where(core[p] == at, self.output_data[p], self.copy_data(p, read))
        return np.where(tensor >= 0, copy, self.tensor_data(tensor)).astype(np.int64)

    def tensor_data(self, tensor: Any) -> IntArray:
        """The whole size of each tensor: a producer's μop index (its :attr:`output_data`) or
        ``-1 - k`` for DRAM tensor ``k``."""
        tensor = np.asarray(tensor, dtype=np.int64)
        dram = np.array([t.data for t in self.dram] or [0], dtype=np.int64)
        return np.where(tensor >= 0, self.output_data[np.maximum(tensor, 0)],
                        dram[np.maximum(-1 - tensor, 0)])  # fmt: skip

    def operand_data(self, core: Any = None) -> IntArray:
        """Data each μop needs resident on its core while it runs: of each data producer's
        output the copy it reads (:meth:`copy_data` with what it reads itself: alone on its
        core, a μop needs no more), its DRAM tensors and its own output; 0 for streamed μops.

        With an allocation ``core`` (core index per μop) the copies are those the allocation
        makes (:meth:`held_data`): the whole output of a producer on the same core, else what
        all consumers on the core read, so a μop may need more than alone."""
        g = self.graph
        output = self.output_data
        data = g.bytes > 0
        pair, inv = np.unique(g.dst[data] * self.n + g.src[data], return_inverse=True)
        read = np.zeros(pair.size, dtype=np.int64)
        np.add.at(read, inv, self.read_data[data])
        q, p = pair // self.n, pair % self.n
        if core is None:
            copy = self.copy_data(p, read)
        else:
            core = np.asarray(core, dtype=np.int64)
            copy = self.held_data(core, p, core[q])
        need = np.array(output)
        np.add.at(need, q, copy)
        for t in self.dram:
            need[t.consumers] += t.data
        return np.where(self.is_streamed, 0, need)

    def memory_sizes(self) -> list[int | None]:
        """Each core's memory size, in data units: its capacity, else the size a Stream export
        records (``source["memory_bits"]``, not enforced), else ``None``."""
        if self.capacity is not None:
            return [int(v) for v in self.capacity]
        recorded = self.source.get("memory_bits", {})
        return [recorded.get(str(c.id)) for c in self.accelerator.cores]

    @cached_property
    def memory_binds(self) -> bool:
        """Whether some core's capacity is below all the data any schedule could keep there at
        once: every output and every DRAM tensor (each resident at most once per
        core at any instant). Where it is not (or without capacities) the memories never
        constrain a schedule, and no schedule writes data back: an eviction makes room, and
        there is always room (so no copy reaches a core through DRAM)."""
        if self.capacity is None:
            return False
        made = int(self.output_data.sum())  # (a streamed μop's output held by its readers too)
        return bool((self.capacity < made + sum(int(t.data) for t in self.dram)).any())

    def binds_within(self, horizon: int) -> bool:
        """Whether some core's capacity is below what a schedule ending by ``horizon`` could
        hold there at once (:func:`~npusched.problem.scheduling.routed_bounds.live_peak`:
        only the data whose lifetimes can overlap), and :attr:`memory_binds`. Where it is not,
        no schedule of that makespan needs an eviction: keeping every copy from its arrival
        to its last reader fits."""
        if not self.memory_binds:
            return False
        assert self.capacity is not None
        return bool(self.capacity.min() < routed_bounds.live_peak(self, int(horizon)))

    @property
    def is_streamed(self) -> BoolArray:
        """μops whose operands stay in DRAM (no space on their core)."""
        if self.streamed is None:
            return np.zeros(self.n, dtype=bool)
        return self.streamed

    def _check_operands_fit(self) -> None:
        """Every μop's own data fits on one of its cores (else no schedule can exist)."""
        assert self.capacity is not None
        need = self.operand_data()
        room = np.where(self.mask, self.capacity[None, :], 0).max(axis=1)
        bad = np.flatnonzero(need > room)
        if bad.size:
            i = int(bad[0])
            k = int(np.argmax(np.where(self.mask[i], self.capacity, -1)))
            raise ValueError(
                f"core {self.accelerator.cores[k].id}: μop {self.graph.ids[i]} needs "
                f"{int(need[i])} {self.data_unit} resident (inputs, constant operands and "
                f"output) but the core's memory holds {int(self.capacity[k])}"
            )

    def restricted(self, core: IntArray) -> RoutedInstance:
        """The same instance with the allocation fixed to ``core`` (core index per μop, which
        becomes the preferred one too)."""
        mask = np.zeros_like(self.mask)
        mask[np.arange(self.n), np.asarray(core)] = True
        return replace(self, allowed=mask, preferred=np.asarray(core))

    # the scheduling instance's nouns, for code that only needs those
    @property
    def graph(self) -> Any:
        """The μop DAG (:attr:`base`'s :class:`~npusched.problem.scheduling.dag.UopGraph`)."""
        return self.base.graph

    @property
    def accelerator(self) -> Any:
        """The compute cores (:attr:`base`'s
        :class:`~npusched.problem.scheduling.accelerator.Accelerator`); the DRAM core is not one of
        them, only an end of :attr:`topology`'s routes."""
        return self.base.accelerator

    @property
    def duration(self) -> IntArray:
        """``(n, m)`` cycles of μop ``i`` on core index ``k`` (:attr:`base`'s durations), whether or
        not the core is allowed (:attr:`mask`)."""
        return self.base.duration

    @property
    def name(self) -> str:
        """The instance's name (:attr:`base`'s)."""
        return self.base.name

    @property
    def source(self) -> dict[str, Any]:
        """Provenance, free-form and kept in JSON (:attr:`base`'s; a Stream export's memory sizes
        among them)."""
        return self.base.source

    @property
    def reference(self) -> Any:
        """Published optimum or bounds, if any (:attr:`base`'s
        :class:`~npusched.problem.scheduling.instance.Reference`)."""
        return self.base.reference

    @property
    def n(self) -> int:
        """Number of μops."""
        return self.base.n

    @property
    def m(self) -> int:
        """Number of compute cores (the DRAM core not counted)."""
        return self.base.m

    @property
    def mask(self) -> BoolArray:
        """``(n, m)`` booleans: μop ``i`` may run on core index ``k`` (``allowed``, all true when it
        was not given)."""
        assert self.allowed is not None
        return self.allowed

    @property
    def fixed_allocation(self) -> bool:
        """Whether every μop may run on exactly one core (Stream's allocation fixed): only the start
        times and the transfers' windows are left to decide."""
        return bool((self.mask.sum(axis=1) == 1).all())

    @property
    def min_duration(self) -> IntArray:
        """Fastest latency of each μop over its allowed cores."""
        return np.where(self.mask, self.duration, np.iinfo(np.int64).max).min(axis=1)

    def route(self, a: int, b: int) -> tuple[int, ...]:
        """Route between core indices (``-1`` = the DRAM core)."""
        ids = self.accelerator.cores
        sa = self.topology.dram if a < 0 else ids[a].id
        sb = self.topology.dram if b < 0 else ids[b].id
        assert sa is not None and sb is not None
        return self.topology.route(sa, sb)

    @property
    def can_write_back(self) -> bool:
        """Every core has a route to the DRAM core (activations can be evicted to DRAM)."""
        dram = self.topology.dram
        return dram is not None and all(
            (c.id, dram) in self.topology.routes for c in self.accelerator.cores
        )

    @cached_property
    def heads_tails(self) -> tuple[IntArray, IntArray]:
        """Each μop's earliest start and its tail (the longest path from its start to the end,
        its own fastest latency included) over every allowed assignment and transfer timing,
        evicting or not (:func:`~npusched.problem.scheduling.routed_bounds.heads_tails`)."""
        head, tail = routed_bounds.heads_tails(self)
        head.setflags(write=False)
        tail.setflags(write=False)
        return head, tail

    def lower_bound(self) -> int:
        """A makespan bound valid for every allowed assignment and any transfer timing,
        evicting or not (:func:`~npusched.problem.scheduling.routed_bounds.lower_bound`: its
        terms). Computed once per instance (it walks every μop and edge), then kept."""
        kept = self.__dict__.get("_lower_bound")
        if kept is None:
            kept = self.__dict__["_lower_bound"] = routed_bounds.lower_bound(self)
        return int(kept)


@dataclass(frozen=True, eq=False)
class Transfers:
    """The transfers an assignment needs, in a canonical order (see :func:`required_transfers`).

    ``src[t]`` is the producing μop, or ``-1 - k`` for DRAM tensor ``k``; ``dst_core[t]`` the
    receiving core index; ``data`` (the copy it carries: :meth:`RoutedInstance.copy_data`, or
    the DRAM tensor), ``route`` (link indices), ``cycles`` (minimum duration) and ``serves[t]``
    (μops on the destination core that wait for it).
    """

    src: IntArray
    dst_core: IntArray
    data: IntArray
    cycles: IntArray
    route: tuple[tuple[int, ...], ...]
    serves: tuple[IntArray, ...]

    @property
    def size(self) -> int:
        """Number of transfers (the length of every array and tuple here)."""
        return int(self.src.size)

    def key(self, t: int) -> tuple[int, int]:
        """Transfer ``t``'s identity, ``(src[t], dst_core[t])``: its producing μop (or ``-1 - k``
        for DRAM tensor ``k``) and its receiving core index. A producer sends at most once to each
        core, so the key is unique among the transfers of one assignment."""
        return int(self.src[t]), int(self.dst_core[t])


def required_transfers(inst: RoutedInstance, core: IntArray) -> Transfers:
    """Transfers needed when μop ``i`` runs on core index ``core[i]``.

    Producer outputs first (by producer, then destination core), then DRAM tensors (by tensor,
    then core). A producer sends its copy for the destination core
    (:meth:`~RoutedInstance.copy_data` of what the consumers there read; the whole output in
    Stream's exports, where every edge carries it).
    """
    g = inst.graph
    core = np.asarray(core, dtype=np.int64)
    data_edge = g.bytes > 0
    src, dst, read = g.src[data_edge], g.dst[data_edge], inst.read_data[data_edge]
    remote = core[src] != core[dst]
    src, dst, read = src[remote], dst[remote], read[remote]
    key = src * inst.m + core[dst]
    order = np.lexsort((dst, key))
    src, dst, key, read = src[order], dst[order], key[order], read[order]
    rows: list[tuple[int, int, int, tuple[int, ...], IntArray]] = []
    if key.size:
        cut = np.flatnonzero(np.diff(key)) + 1
        lo_all = np.r_[0, cut]
        copy = inst.copy_data(src[lo_all], np.add.reduceat(read, lo_all)).tolist()
        for lo, hi, size in zip(lo_all, np.r_[cut, key.size], copy, strict=True):
            p, c = int(src[lo]), int(core[dst[lo]])
            rows.append((p, c, size, inst.route(int(core[p]), c), dst[lo:hi]))
    for k, tensor in enumerate(inst.dram):
        if tensor.data <= 0 or not tensor.consumers.size:
            continue
        cons = tensor.consumers
        for c in np.unique(core[cons]).tolist():
            rows.append((-1 - k, c, tensor.data, inst.route(-1, c), cons[core[cons] == c]))
    topo = inst.topology
    return Transfers(
        np.array([r[0] for r in rows], dtype=np.int64),
        np.array([r[1] for r in rows], dtype=np.int64),
        np.array([r[2] for r in rows], dtype=np.int64),
        np.array([topo.cycles(r[2], r[3]) for r in rows], dtype=np.int64),
        tuple(r[3] for r in rows),
        tuple(r[4] for r in rows),
    )


def over_output(graph: Any, output: IntArray) -> int | None:
    """The first data edge that carries more than its producer's ``output`` (an edge carries
    what its consumer reads of the output), or ``None``."""
    bad = np.flatnonzero(np.asarray(graph.bytes) > np.asarray(output)[graph.src])
    return int(bad[0]) if bad.size else None
