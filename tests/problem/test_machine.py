"""The machine model of every accelerator (npusched.problem.scheduling.machine): links, routes,
DRAM controllers and capacities from the arch JSON."""

import dataclasses

import numpy as np
import pytest

from npusched.arch import list_archs, load_arch
from npusched.problem.scheduling.machine import capacities, machine_topology, mesh_routes
from npusched.problem.scheduling.noc import Mesh


@pytest.mark.parametrize("name", list_archs())
def test_every_arch_has_routes_between_all_cores_and_dram(name):
    arch = load_arch(name)
    topo = machine_topology(arch)
    ids = [c.id for c in arch.cores]
    assert topo.dram == max(ids) + 1
    for a in [*ids, topo.dram]:
        for b in ids:
            if a != b:
                route = topo.route(a, b)
                assert route and len(set(route)) == len(route)
        if a != topo.dram:
            assert topo.route(a, topo.dram)
    assert (capacities(arch) > 0).all()


@pytest.mark.parametrize("routing", ["XY", "YX", "XY-YX"])
def test_mesh_routes_are_shortest_and_connected(routing):
    mesh = Mesh(4, 5)
    dist = mesh.distance()
    for (a, b), route in mesh_routes(mesh, routing).items():
        assert len(route) == dist[a, b]
        here = a
        for link in route:  # each link leaves where the last one arrived
            src, dst = mesh.links[link]
            assert src == here
            here = dst
        assert here == b


def test_xy_yx_alternates_turns_by_parity():
    mesh = Mesh(3, 3)
    routes = mesh_routes(mesh, "XY-YX")
    first = {k: mesh.links[routes[k][0]] for k in [(0, 8), (0, 7)]}
    assert first[(0, 8)] == (0, 1)  # even sum: along the row first
    assert first[(0, 7)] == (0, 3)  # odd sum: along the column first
    with pytest.raises(ValueError, match="routing"):
        mesh_routes(mesh, "west-first")


def test_klotski_links_carry_the_payload_rate_and_dram_goes_through_the_nearest_corner():
    arch = load_arch("klotski-4x4")
    topo = machine_topology(arch)
    noc = [ln for ln in topo.links if not ln.offchip]
    assert len(noc) == 2 * (2 * 4 * 3)  # 24 neighbour pairs, both directions
    assert all(ln.bandwidth == pytest.approx(512 * 64 / 192) for ln in noc)
    off = [ln for ln in topo.links if ln.offchip]
    assert arch.dram is not None
    share = arch.dram_bytes_per_cycle() / len(arch.dram.controllers)
    assert len(off) == 8 and all(ln.bandwidth == pytest.approx(share) for ln in off)
    # core 5 (1, 1) is served by the controller at core 0 (2 hops) over the mesh
    route = topo.route(topo.dram, 5)
    assert topo.links[route[0]].receiver == 0 and len(route) == 3
    # both directions of a controller's channel are one resource (a bus)
    back = topo.route(5, topo.dram)
    assert topo.resource_of[route[0]] == topo.resource_of[back[-1]]
    assert topo.cycles(1000, route) == 3 * 1 + int(np.ceil(1000 / share))


def test_links_topology_routes_by_fewest_hops_and_rings_by_cluster():
    topo = machine_topology(load_arch("stream-hetero"))
    assert len(topo.route(0, 2)) == 2 and len(topo.route(4, 5)) == 2
    assert len(topo.route(topo.dram, 3)) == 1
    # one DRAM port: every off-chip link is one resource
    off = [k for k, ln in enumerate(topo.links) if ln.offchip]
    assert len({int(topo.resource_of[k]) for k in off}) == 1
    rings = machine_topology(load_arch("tso-nmp-16"))
    assert len(rings.route(0, 7)) == 1  # one TLE's ring
    assert len(rings.route(0, 8)) == 3  # its ring, the global one, the other's


def test_shared_buffer_is_split_and_a_missing_memory_names_the_field():
    arch = load_arch("flexer-arch5")
    assert capacities(arch).tolist() == [256 * 1024 // 4] * 4
    bare = dataclasses.replace(arch, shared_buffer_bytes=None)
    with pytest.raises(ValueError, match="cores/0/memory_bytes"):
        capacities(bare)
    with pytest.raises(ValueError, match="dram"):
        machine_topology(dataclasses.replace(arch, dram=None))
    noc = dataclasses.replace(arch.noc, bandwidth_bytes_per_cycle=None)
    with pytest.raises(ValueError, match="noc/bandwidth_bytes_per_cycle"):
        machine_topology(dataclasses.replace(arch, noc=noc))
