"""One machine model for every accelerator (``../shared/DESIGN.md``, *Machine model*): the
architecture's NoC, off-chip memory and SRAMs as the :class:`~.routed.Topology` and the memory
capacities of a :class:`~.routed.RoutedInstance`, the model Stream's exports already carry
(Stream §III-D/E: links one transfer at a time, a DRAM core behind an off-chip port, each core's
memory a capacity).

Links by the NoC's ``topology`` (:class:`~npusched.arch.NocSpec`):

- ``mesh``: one directed link per pair of neighbouring routers, each carrying the NoC's payload
  rate (:meth:`~npusched.arch.NocSpec.payload_bytes_per_cycle`: packets and flits), routed by
  the arch's ``routing`` (:func:`mesh_routes`: XY, YX, or XY-YX alternating by the parity of the
  two ends, all deterministic);
- ``links``: the listed directed links, each at its own bandwidth where the arch gives one,
  and the buses (a bus is one resource: every ordered pair of its members a link of it); a
  route is the one with the fewest cycles per byte on idle links (the sum of ``1 / bandwidth``,
  Stream's unloaded routing cost; with one bandwidth: the fewest hops), ties to lower link
  indices, and it may pass through routers that are not cores (Stream's memory cores);
- ``ring``: one ring bus per ``cluster`` and one global ring between them (TSO's ring buses); a
  transfer within a cluster takes its ring, between clusters its ring, the global one and the
  other's;
- ``bus`` and ``shared_memory``: one bus every transfer between cores takes (Flexer's cores
  copying through their global buffer).

Off-chip memory (:class:`~npusched.arch.DramSpec`): with ``controllers``, a memory controller at
each listed core's router, its channel a bus of ``bandwidth / len(controllers)`` used in both
directions, and every core served by the nearest controller (fewest hops, then the lower index)
over the NoC; with a ``node`` (Stream's off-chip core), a DRAM port of the whole bandwidth
(one link every DRAM transfer holds) and then the NoC's links and buses to and from that node,
which relays nothing else; the port carries ``⌊bandwidth / r⌋`` transfers at once, ``r`` the
fastest rate of a route through it (:attr:`~.routed.Link.lanes`: each then moves at its route's
rate, and together they stay within the port's; Stream 2.1.1 times a transfer by its links
alone, so its links into the off-chip core run side by side); without either, one DRAM port of
the whole bandwidth that every core reaches directly (Stream's off-chip link, "Any"). The DRAM
core's id is the node's, or one above the largest core id.

A route holds every link on it for the whole transfer, which takes
``hops · hop_latency + ⌈bytes / slowest payload rate⌉`` (:meth:`Topology.cycles`), as in Stream.

Memory capacity: each core's ``memory_bytes``; on a shared buffer (Flexer) the buffer split
evenly among the cores (an assumption: Flexer's memory manager shares it freely, see
:func:`capacities`).
"""

from __future__ import annotations

import heapq

import numpy as np

from npusched.arch.model import Arch
from npusched.problem.scheduling.noc import Mesh
from npusched.problem.scheduling.routed import Link, Topology


def mesh_routes(mesh: Mesh, routing: str) -> dict[tuple[int, int], list[int]]:
    """Link ids between every pair of cells of ``mesh``: ``XY`` goes along the row first, ``YX``
    along the column first, ``XY-YX`` takes XY when the sum of the two cells is even and YX when
    it is odd (deterministic; the two directions of a pair use different turns, which spreads
    traffic as Klotski's XY-YX routing does, §III-C Fig. 6)."""
    if routing not in ("XY", "YX", "XY-YX"):
        raise ValueError(f"unknown mesh routing {routing!r}; choose XY, YX or XY-YX")
    out: dict[tuple[int, int], list[int]] = {}
    for a in range(mesh.size):
        for b in range(mesh.size):
            if a == b:
                continue
            yx = routing == "YX" or (routing == "XY-YX" and (a + b) % 2 == 1)
            out[(a, b)] = _walk(mesh, a, b, yx)
    return out


def _walk(mesh: Mesh, a: int, b: int, yx: bool) -> list[int]:
    (r, c), (r1, c1) = divmod(a, mesh.cols), divmod(b, mesh.cols)
    path: list[int] = []
    for axis in (1, 0) if yx else (0, 1):
        while (c, r)[axis] != (c1, r1)[axis]:
            if axis == 0:
                nr, nc = r, c + (1 if c1 > c else -1)
            else:
                nr, nc = r + (1 if r1 > r else -1), c
            path.append(mesh.link_id[(r * mesh.cols + c, nr * mesh.cols + nc)])
            r, c = nr, nc
    return path


def noc_bandwidth(arch: Arch) -> float:
    """The payload rate of one NoC link, bytes per cycle (``noc/bandwidth_bytes_per_cycle``
    with packets and flits); a ``ValueError`` naming the field when the arch has none."""
    bw = arch.noc.payload_bytes_per_cycle()
    if bw is None or bw <= 0:
        raise ValueError(
            f"{arch.name}: noc/bandwidth_bytes_per_cycle: the machine model needs the NoC's "
            "link bandwidth"
        )
    return float(bw)


def dram_bandwidth(arch: Arch) -> float:
    """The whole off-chip bandwidth in bytes per cycle; a ``ValueError`` naming the field when
    the arch has no DRAM."""
    if arch.dram is None:
        raise ValueError(f"{arch.name}: dram: the machine model needs an off-chip memory")
    return float(arch.dram_bytes_per_cycle())


def machine_topology(arch: Arch) -> Topology:
    """The links and routes of ``arch`` (module docstring), the DRAM core included."""
    ids = [c.id for c in arch.cores]
    links: list[Link] = []
    routes: dict[tuple[int, int], tuple[int, ...]] = {}
    builders = {
        "mesh": _mesh,
        "links": _links,
        "ring": _rings,
        "bus": _bus,
        "shared_memory": _bus,
    }
    builders[arch.noc.topology](arch, links, routes)
    node = arch.dram.node if arch.dram is not None else None
    dram = max(ids) + 1 if node is None else node
    _offchip(arch, dram, links, routes)
    return Topology(tuple(links), routes, dram, arch.noc.hop_latency_cycles or 0)


def _add(links: list[Link], sender: int, receiver: int | None, bw: float, bus: int = -1,
         offchip: bool = False, name: str = "") -> int:  # fmt: skip
    links.append(Link(len(links), sender, receiver, bw, bus, offchip, name))
    return len(links) - 1


def _mesh(arch: Arch, links: list[Link], routes: dict[tuple[int, int], tuple[int, ...]]) -> None:
    assert arch.mesh is not None
    mesh = Mesh(*arch.mesh)
    bw = noc_bandwidth(arch)
    cell = {c.id: c.coord[0] * mesh.cols + c.coord[1] for c in arch.cores if c.coord}
    at = {v: k for k, v in cell.items()}
    for a, b in mesh.links:
        _add(links, at.get(a, -1 - a), at.get(b, -1 - b), bw, name=f"r{a}->r{b}")
    cells = mesh_routes(mesh, arch.noc.routing or "XY")
    for a, ca in cell.items():
        for b, cb in cell.items():
            if a != b:
                routes[(a, b)] = tuple(cells[(ca, cb)])


def _links(arch: Arch, links: list[Link], routes: dict[tuple[int, int], tuple[int, ...]]) -> None:
    noc = arch.noc
    if not noc.links and not noc.buses:
        raise ValueError(f"{arch.name}: noc/links: a 'links' topology lists its links or buses")
    nodes = [c.id for c in arch.cores] + list(noc.routers)
    out: dict[int, list[tuple[int, int]]] = {v: [] for v in nodes}
    for k, (a, b) in enumerate(noc.links):
        bw = noc.bandwidths[k] if noc.bandwidths else noc_bandwidth(arch)
        out[a].append((b, _add(links, a, b, bw, name=f"{a}->{b}")))
    for k, bus in enumerate(noc.buses):
        for a in bus.cores:
            for b in bus.cores:
                if a != b:
                    bw = bus.bandwidth_bytes_per_cycle
                    out[a].append((b, _add(links, a, b, bw, k, name=f"bus{k}:{a}->{b}")))
    dram = arch.dram.node if arch.dram is not None else None
    ends = [c.id for c in arch.cores] + ([dram] if dram is not None else [])
    for a in ends:
        path = _cheapest(a, out, links, dram)
        for b in ends:
            if b != a:
                if b not in path:
                    raise ValueError(f"{arch.name}: noc/links: no path from node {a} to {b}")
                routes[(a, b)] = path[b]


def _cheapest(a: int, out: dict[int, list[tuple[int, int]]], links: list[Link],
              dram: int | None) -> dict[int, tuple[int, ...]]:  # fmt: skip
    """Routes from ``a``: least cycles per byte on idle links (the sum of ``1 / bandwidth``
    along the route, Stream's unloaded routing cost), ties to the route found first with links
    taken in index order (with one bandwidth: the fewest hops, breadth first); the DRAM's node
    ends routes and relays none."""
    best: dict[int, float] = {a: 0.0}
    path: dict[int, tuple[int, ...]] = {a: ()}
    heap, count = [(0.0, 0, a)], 1
    while heap:
        cost, _, u = heapq.heappop(heap)
        if cost > best[u] or (u == dram and u != a):
            continue
        for v, k in out[u]:
            c = cost + 1.0 / links[k].bandwidth
            if c < best.get(v, float("inf")) - 1e-12:
                best[v], path[v] = c, (*path[u], k)
                heapq.heappush(heap, (c, count, v))
                count += 1
    return path


def _rings(arch: Arch, links: list[Link], routes: dict[tuple[int, int], tuple[int, ...]]) -> None:
    bw = noc_bandwidth(arch)
    cluster = {c.id: (c.cluster or 0) for c in arch.cores}
    ring = {k: _add(links, -1, None, bw, name=f"ring{k}") for k in sorted(set(cluster.values()))}
    world = _add(links, -1, None, bw, name="global ring")
    for a, ka in cluster.items():
        for b, kb in cluster.items():
            if a != b:
                routes[(a, b)] = (ring[ka],) if ka == kb else (ring[ka], world, ring[kb])


def _bus(arch: Arch, links: list[Link], routes: dict[tuple[int, int], tuple[int, ...]]) -> None:
    bus = _add(links, -1, None, noc_bandwidth(arch), name=arch.noc.topology)
    for a in (c.id for c in arch.cores):
        for b in (c.id for c in arch.cores):
            if a != b:
                routes[(a, b)] = (bus,)


def _offchip(
    arch: Arch, dram: int, links: list[Link], routes: dict[tuple[int, int], tuple[int, ...]]
) -> None:
    """Links between the DRAM core and the cores (module docstring)."""
    bw = dram_bandwidth(arch)
    assert arch.dram is not None
    if arch.dram.node is not None:  # its port, then the NoC to and from its node
        ways = [routes[(dram, c.id)] for c in arch.cores] + [routes[(c.id, dram)]
                                                             for c in arch.cores]
        fastest = max(min(links[k].bandwidth for k in r) for r in ways)
        links.append(Link(len(links), dram, None, bw, offchip=True, name="dram port",
                          lanes=max(1, int(bw // fastest + 1e-9))))
        port = len(links) - 1
        for c in (c.id for c in arch.cores):
            routes[(dram, c)] = (port, *routes[(dram, c)])
            routes[(c, dram)] = (*routes[(c, dram)], port)
        return
    ctrl = arch.dram.controllers
    ids = [c.id for c in arch.cores]
    if not ctrl:  # one port, reached from every core directly
        bus = max((ln.bus_id for ln in links), default=-1) + 1
        for c in ids:
            routes[(dram, c)] = (_add(links, dram, c, bw, bus, True, f"dram->{c}"),)
            routes[(c, dram)] = (_add(links, c, dram, bw, bus, True, f"{c}->dram"),)
        return
    hops = {(a, b): len(r) for (a, b), r in routes.items()}
    first = max((ln.bus_id for ln in links), default=-1) + 1
    into, back = [], []
    for k, a in enumerate(ctrl):
        share = bw / len(ctrl)
        into.append(_add(links, dram, a, share, first + k, True, f"mc{k}->{a}"))
        back.append(_add(links, a, dram, share, first + k, True, f"{a}->mc{k}"))
    for c in ids:
        k = int(np.argmin([hops.get((a, c), 0) for a in ctrl]))
        a = ctrl[k]
        routes[(dram, c)] = (into[k], *routes.get((a, c), ()))
        routes[(c, dram)] = (*routes.get((c, a), ()), back[k])


def capacities(arch: Arch) -> np.ndarray:
    """Each core's memory in bytes: its ``memory_bytes``, or on a shared buffer
    (``shared_buffer_bytes``) an even share of it (Flexer's cores have no memory of their own;
    the routed model gives each core its share, where Flexer's memory manager lets one core use
    more)."""
    out = []
    for k, c in enumerate(arch.cores):
        if c.memory_bytes:
            out.append(c.memory_bytes)
        elif arch.shared_buffer_bytes:
            out.append(arch.shared_buffer_bytes // arch.m)
        else:
            raise ValueError(
                f"{arch.name}: cores/{k}/memory_bytes: the machine model needs each core's "
                "memory (or a shared_buffer_bytes to split)"
            )
    return np.array(out, dtype=np.int64)
