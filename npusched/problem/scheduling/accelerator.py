"""Cores of a multi-core accelerator, their network and its transfer-delay model.

The spine needs only core ids and relative speeds. A network places the cores at integer
coordinates whose L1 distance is the hop count: a ``rows × cols`` mesh (coordinates
``(row, col)``) or a hypercube of dimension ``d`` (node ``k`` at the ``d`` bits of ``k``, so hops
are the differing bits, as in the Davidović–Crainic MSPCD benchmark).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from npusched.arch.model import Arch
from npusched.problem.scheduling.noc import Mesh, hypercube_symmetries

DELAY_MODELS = ("bandwidth", "per_hop")
"""Named transfer-delay models (:meth:`Accelerator.delay_terms`)."""
MAX_HYPERCUBE_DIM = 16


@dataclass(frozen=True)
class Core:
    """One compute core.

    Parameters
    ----------
    id
        Core id as written in instance and solution files.
    name
        Human-readable name.
    speed
        Relative speed: a μop of base latency ``l`` takes ``ceil(l / speed)`` cycles here unless the
        instance gives an explicit per-core latency table.
    coord
        ``(row, col)`` position on a mesh, the bits of the node on a hypercube, or ``None``.
    """

    id: int
    name: str = ""
    speed: float = 1.0
    coord: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.speed <= 0:
            raise ValueError(f"core {self.id}: speed must be positive, got {self.speed}")


@dataclass(frozen=True)
class Accelerator:
    """A set of cores, optionally on a ``rows × cols`` mesh or a ``hypercube`` of some dimension.

    Data sent between different cores ``hops`` apart is delayed by :meth:`comm_delay`, under one
    of two named delay models (:data:`DELAY_MODELS`):

    - ``"bandwidth"`` (default; meshes only): ``hops · hop_latency + ⌈bytes / link_bandwidth⌉``;
      with ``hop_latency = 0`` and no bandwidth limit transfers are free and only the NoC cost
      (hops) matters;
    - ``"per_hop"`` (store and forward, MSPCD): ``c · hops``, where the edge's per-edge amount
      ``c`` is carried in its ``bytes`` field.
    """

    cores: tuple[Core, ...]
    mesh: tuple[int, int] | None = None
    hop_latency: int = 0
    link_bandwidth: float | None = None
    hypercube: int | None = None
    delay_model: str = "bandwidth"
    index_of: dict[int, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.cores:
            raise ValueError("an accelerator needs at least one core")
        ids = [c.id for c in self.cores]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate core ids: {sorted(ids)}")
        if self.mesh is not None:
            rows, cols = self.mesh
            for c in self.cores:
                if c.coord is None or not (0 <= c.coord[0] < rows and 0 <= c.coord[1] < cols):
                    raise ValueError(
                        f"core {c.id}: coord {c.coord} is not on the {rows}x{cols} mesh"
                    )
        if self.hypercube is not None:
            self._check_hypercube(self.hypercube)
        if self.hop_latency < 0 or (self.link_bandwidth is not None and self.link_bandwidth <= 0):
            raise ValueError("hop latency must be >= 0 and link bandwidth > 0")
        if (self.hop_latency or self.link_bandwidth) and self.mesh is None:
            raise ValueError("hop latency and link bandwidth need a mesh")
        if self.delay_model not in DELAY_MODELS:
            raise ValueError(
                f"unknown delay model {self.delay_model!r}; choose from {DELAY_MODELS}"
            )
        if self.delay_model == "per_hop" and (
            self.topology is None or self.hop_latency or self.link_bandwidth is not None
        ):
            raise ValueError("the per_hop delay model needs a mesh or hypercube and no bandwidth")
        object.__setattr__(self, "index_of", {cid: k for k, cid in enumerate(ids)})

    def _check_hypercube(self, dim: int) -> None:
        if self.mesh is not None:
            raise ValueError("an accelerator has a mesh or a hypercube, not both")
        if not 1 <= dim <= MAX_HYPERCUBE_DIM:
            raise ValueError(f"hypercube dimension must be 1..{MAX_HYPERCUBE_DIM}, got {dim}")
        for c in self.cores:
            if c.coord is None or len(c.coord) != dim or any(b not in (0, 1) for b in c.coord):
                raise ValueError(f"core {c.id}: coord {c.coord} is not a node of the {dim}-cube")

    @property
    def topology(self) -> str | None:
        """``"mesh"``, ``"hypercube"`` or ``None`` (cores without a network)."""
        return "mesh" if self.mesh is not None else "hypercube" if self.hypercube else None

    @classmethod
    def hypercube_nodes(cls, dim: int, delay_model: str = "per_hop") -> Accelerator:
        """The ``2**dim`` identical cores of a hypercube; core ``k`` is node ``k`` (its
        coordinates are the bits of ``k``, least significant first)."""
        cores = tuple(
            Core(k, f"core{k}", coord=tuple((k >> j) & 1 for j in range(dim)))
            for k in range(2**dim)
        )
        return cls(cores, hypercube=dim, delay_model=delay_model)

    @classmethod
    def identical(cls, m: int) -> Accelerator:
        """``m`` identical cores with ids ``0..m-1``."""
        if m < 1:
            raise ValueError(f"number of cores must be at least 1, got {m}")
        return cls(tuple(Core(k, f"core{k}") for k in range(m)))

    @classmethod
    def mesh_grid(
        cls,
        rows: int,
        cols: int,
        hop_latency: int = 0,
        link_bandwidth: float | None = None,
        delay_model: str = "bandwidth",
    ) -> Accelerator:
        """``rows × cols`` identical cores on a mesh; core ``k`` at ``(k // cols, k % cols)``."""
        cores = tuple(Core(k, f"core{k}", coord=divmod(k, cols)) for k in range(rows * cols))
        return cls(cores, (rows, cols), hop_latency, link_bandwidth, delay_model=delay_model)

    @property
    def has_comm_delays(self) -> bool:
        """Whether a transfer between different cores can delay its consumer: under the
        ``"per_hop"`` model, or with a positive hop latency or a link bandwidth limit. When false,
        :meth:`comm_delay` is 0 everywhere and placement only changes the NoC cost (hops ·
        bytes)."""
        return (
            self.delay_model == "per_hop" or self.hop_latency > 0 or self.link_bandwidth is not None
        )

    def coords(self) -> np.ndarray:
        """``(m, D)`` core coordinates: ``(row, col)`` on a mesh, the ``D`` bits on a hypercube."""
        return np.array([c.coord for c in self.cores], dtype=np.int64)

    def hops(self) -> np.ndarray:
        """``(m, m)`` hops between cores: the L1 distance of their coordinates (Manhattan on a
        mesh, differing bits on a hypercube; requires coordinates)."""
        xy = self.coords()
        return np.abs(xy[:, None, :] - xy[None, :, :]).sum(axis=2)

    def transfer_cycles(self, nbytes: np.ndarray) -> np.ndarray:
        """Serialisation time ``⌈bytes / link_bandwidth⌉`` (0 without a bandwidth limit)."""
        if self.link_bandwidth is None:
            return np.zeros_like(nbytes)
        return np.ceil(np.asarray(nbytes) / self.link_bandwidth - 1e-9).astype(np.int64)

    def delay_terms(self, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The delay of a transfer of ``nbytes`` between different cores, ``per_hop · hops +
        fixed``, as its two coefficients: ``(hop_latency, ⌈bytes / bandwidth⌉)`` under the
        ``"bandwidth"`` model, ``(bytes, 0)`` under ``"per_hop"``. The one statement of both
        delay models: :meth:`comm_delay` and the exact models' linear rows use it."""
        nbytes = np.asarray(nbytes)
        if self.delay_model == "per_hop":
            return nbytes.astype(np.int64), np.zeros(nbytes.shape, dtype=np.int64)
        per_hop = np.full(nbytes.shape, self.hop_latency, dtype=np.int64)
        return per_hop, self.transfer_cycles(nbytes)

    def comm_delay(self, hops: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
        """Cycles between a producer's end and a consumer's start ``hops`` away (0 on one core)."""
        hops = np.asarray(hops)
        per_hop, fixed = self.delay_terms(nbytes)
        return np.where(hops > 0, hops * per_hop + fixed, 0)

    def symmetries(self) -> list[np.ndarray]:
        """Permutations of the cores (indices, identity first) that keep every hop count: the
        mesh's flips and rotations, or the hypercube's bit permutations and flips, restricted to
        maps of the set of cores onto itself; only the identity without a network."""
        if self.mesh is not None:
            return Mesh(*self.mesh).symmetries(np.asarray(self.cells()))
        if self.hypercube is not None:
            nodes = (self.coords() << np.arange(self.hypercube)).sum(axis=1)
            return hypercube_symmetries(nodes, self.hypercube)
        return [np.arange(self.m)]

    def cells(self) -> list[int] | None:
        """Mesh cell (row-major index) of each core, or ``None`` without a mesh."""
        if self.mesh is None:
            return None
        return [c.coord[0] * self.mesh[1] + c.coord[1] for c in self.cores if c.coord is not None]

    @property
    def m(self) -> int:
        """Number of cores."""
        return len(self.cores)

    @property
    def speeds(self) -> list[float]:
        """Each core's relative speed (:attr:`Core.speed`), in the order of :attr:`cores`: a μop of
        base latency ``l`` takes ``ceil(l / speed)`` cycles on that core unless the instance gives a
        per-core latency table."""
        return [c.speed for c in self.cores]

    @classmethod
    def from_arch(cls, arch: Arch, comm_delays: bool = True) -> Accelerator:
        """``arch`` as the scheduling spine's :class:`~npusched.problem.Accelerator`.

        Core ids, names and (on a mesh) coordinates are kept; every core has speed 1 (per-core
        latencies come from :mod:`npusched.costmodel` with the core's ``pe_unroll``). On a mesh
        with ``comm_delays`` the NoC's hop latency and link bandwidth become the accelerator's, so
        :meth:`~npusched.problem.Accelerator.comm_delay` equals
        :func:`npusched.costmodel.noc_cycles`; without a mesh they are dropped (the spine models
        delays on meshes only).
        """
        cores = tuple(
            Core(c.id, c.name, coord=c.coord if arch.mesh is not None else None) for c in arch.cores
        )
        if arch.mesh is None:
            return cls(cores)
        if not comm_delays:
            return cls(cores, arch.mesh)
        return cls(
            cores,
            arch.mesh,
            hop_latency=arch.noc.hop_latency_cycles or 0,
            link_bandwidth=arch.noc.bandwidth_bytes_per_cycle,
        )
