"""Cores of a multi-core accelerator.

The spine needs only core ids and relative speeds; mesh coordinates are carried for the NoC mapping
models that build on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from npusched.arch.model import Arch


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
        ``(row, col)`` position on a mesh, or ``None``.
    """

    id: int
    name: str = ""
    speed: float = 1.0
    coord: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.speed <= 0:
            raise ValueError(f"core {self.id}: speed must be positive, got {self.speed}")


@dataclass(frozen=True)
class Accelerator:
    """A set of cores, optionally laid out on a ``rows × cols`` mesh.

    On a mesh, data sent between different cores takes
    ``hops · hop_latency + ⌈bytes / link_bandwidth⌉`` cycles (:meth:`comm_delay`); with the
    defaults (``hop_latency = 0``, no bandwidth limit) transfers are free and only the NoC cost
    (hops) matters.
    """

    cores: tuple[Core, ...]
    mesh: tuple[int, int] | None = None
    hop_latency: int = 0
    link_bandwidth: float | None = None
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
        if self.hop_latency < 0 or (self.link_bandwidth is not None and self.link_bandwidth <= 0):
            raise ValueError("hop latency must be >= 0 and link bandwidth > 0")
        if (self.hop_latency or self.link_bandwidth) and self.mesh is None:
            raise ValueError("hop latency and link bandwidth need a mesh")
        object.__setattr__(self, "index_of", {cid: k for k, cid in enumerate(ids)})

    @classmethod
    def identical(cls, m: int) -> Accelerator:
        """``m`` identical cores with ids ``0..m-1``."""
        if m < 1:
            raise ValueError(f"number of cores must be at least 1, got {m}")
        return cls(tuple(Core(k, f"core{k}") for k in range(m)))

    @classmethod
    def mesh_grid(
        cls, rows: int, cols: int, hop_latency: int = 0, link_bandwidth: float | None = None
    ) -> Accelerator:
        """``rows × cols`` identical cores on a mesh; core ``k`` at ``(k // cols, k % cols)``."""
        cores = tuple(Core(k, f"core{k}", coord=divmod(k, cols)) for k in range(rows * cols))
        return cls(cores, (rows, cols), hop_latency, link_bandwidth)

    @property
    def has_comm_delays(self) -> bool:
        return self.hop_latency > 0 or self.link_bandwidth is not None

    def hops(self) -> np.ndarray:
        """``(m, m)`` Manhattan hops between cores (requires coordinates)."""
        xy = np.array([c.coord for c in self.cores], dtype=np.int64)
        return np.abs(xy[:, None, :] - xy[None, :, :]).sum(axis=2)

    def transfer_cycles(self, nbytes: np.ndarray) -> np.ndarray:
        """Serialisation time ``⌈bytes / link_bandwidth⌉`` (0 without a bandwidth limit)."""
        if self.link_bandwidth is None:
            return np.zeros_like(nbytes)
        return np.ceil(np.asarray(nbytes) / self.link_bandwidth - 1e-9).astype(np.int64)

    def comm_delay(self, hops: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
        """Cycles between a producer's end and a consumer's start ``hops`` away (0 on one core)."""
        hops = np.asarray(hops)
        delay = hops * self.hop_latency + self.transfer_cycles(nbytes)
        return np.where(hops > 0, delay, 0)

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
