"""Cores of a multi-core accelerator.

The spine needs only core ids and relative speeds; mesh coordinates are carried for the NoC mapping
models that build on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    """A set of cores, optionally laid out on a ``rows × cols`` mesh."""

    cores: tuple[Core, ...]
    mesh: tuple[int, int] | None = None
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
        object.__setattr__(self, "index_of", {cid: k for k, cid in enumerate(ids)})

    @classmethod
    def identical(cls, m: int) -> Accelerator:
        """``m`` identical cores with ids ``0..m-1``."""
        if m < 1:
            raise ValueError(f"number of cores must be at least 1, got {m}")
        return cls(tuple(Core(k, f"core{k}") for k in range(m)))

    @classmethod
    def mesh_grid(cls, rows: int, cols: int) -> Accelerator:
        """``rows × cols`` identical cores on a mesh; core ``k`` at ``(k // cols, k % cols)``."""
        cores = tuple(Core(k, f"core{k}", coord=divmod(k, cols)) for k in range(rows * cols))
        return cls(cores, (rows, cols))

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
