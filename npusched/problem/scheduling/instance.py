"""A scheduling instance: μop DAG + accelerator (+ optional per-core latency table)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npusched.common.limits import MAX_VALUE
from npusched.problem.scheduling.accelerator import Accelerator
from npusched.problem.scheduling.dag import IntArray, UopGraph, release_load_bound


@dataclass(frozen=True)
class Reference:
    """What the literature knows about an instance: a proven optimum or an open ``[lb, ub]``."""

    optimum: int | None = None
    lower_bound: int | None = None
    upper_bound: int | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.optimum is not None and (
            self.lower_bound is not None or self.upper_bound is not None
        ):
            raise ValueError("a reference has either an optimum or an open [lower, upper] pair")
        if (
            self.lower_bound is not None
            and self.upper_bound is not None
            and self.lower_bound > self.upper_bound
        ):
            raise ValueError(
                f"reference lower bound {self.lower_bound} > upper bound {self.upper_bound}"
            )

    @property
    def is_open(self) -> bool:
        """Whether the instance is open: no proven optimum, but a known lower bound, upper bound or
        both (the best the literature has)."""
        return self.optimum is None and (
            self.lower_bound is not None or self.upper_bound is not None
        )


@dataclass(frozen=True, eq=False)
class SchedulingInstance:
    """P|prec|Cmax (identical cores) or R|prec|Cmax (per-core latencies): Klotski Problem 2.

    Parameters
    ----------
    graph
        The μop DAG.
    accelerator
        The cores.
    latency_table
        Optional ``(n, m)`` integer matrix: latency of μop ``i`` on core ``k``. Without it the
        latency on core ``k`` is ``ceil(graph.latency[i] / speed_k)``.
    name
        Instance name.
    reference
        Published optimum or bounds, if any.
    source
        Provenance (free-form, kept in JSON).
    """

    graph: UopGraph
    accelerator: Accelerator
    latency_table: IntArray | None = None
    name: str = "instance"
    reference: Reference = field(default_factory=Reference)
    source: dict[str, Any] = field(default_factory=dict)
    duration: IntArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n, m = self.graph.n, self.accelerator.m
        if self.latency_table is not None:
            table = np.asarray(self.latency_table, dtype=np.int64)
            if table.shape != (n, m):
                raise ValueError(f"latency_table has shape {table.shape}, expected ({n}, {m})")
            if (table < 0).any():
                raise ValueError("latency_table entries must be non-negative")
            object.__setattr__(self, "latency_table", table)
        else:
            speeds = np.asarray(self.accelerator.speeds, dtype=float)
            exact = self.graph.latency[:, None] / speeds[None, :]
            if not exact.max() <= MAX_VALUE:  # before the cast: no silent wrap-around
                i, k = np.unravel_index(int(np.argmax(exact)), exact.shape)
                raise ValueError(
                    f"μop {self.graph.ids[i]!r} would take {exact[i, k]:.3g} cycles on core "
                    f"{self.accelerator.cores[k].id} (latency / speed), more than 2^40: the "
                    "core's speed is too small"
                )
            table = np.ceil(exact - 1e-9).astype(np.int64)
        table.setflags(write=False)
        object.__setattr__(self, "duration", table)
        bandwidth = self.accelerator.link_bandwidth
        if bandwidth is not None and self.graph.num_edges:
            most = int(self.graph.bytes.max())
            if not most / bandwidth <= MAX_VALUE:
                raise ValueError(
                    f"an edge of {most} bytes takes {most / bandwidth:.3g} cycles at "
                    f"link_bandwidth {bandwidth:g}, more than 2^40: the link bandwidth is too small"
                )

    @property
    def n(self) -> int:
        """Number of μops (nodes of :attr:`graph`)."""
        return self.graph.n

    @property
    def m(self) -> int:
        """Number of cores of :attr:`accelerator`."""
        return self.accelerator.m

    @property
    def identical_cores(self) -> bool:
        """True when every μop takes the same time on every core (P|prec|Cmax)."""
        return bool((self.duration == self.duration[:, :1]).all())

    @property
    def min_duration(self) -> IntArray:
        """Fastest latency of each μop over the cores."""
        return self.duration.min(axis=1)

    def lower_bound(self) -> int:
        """Makespan lower bound: the critical path, and the load after each head and before
        each tail (:func:`~npusched.problem.scheduling.dag.release_load_bound`; with a zero
        threshold, ``⌈Σ fastest latencies / m⌉``).

        Every term is valid for any core assignment, so the bound is valid for R|prec|Cmax too.
        """
        d = self.min_duration
        head, tail = self.graph.heads(d), self.graph.tails(d)
        cp = int((head + d).max())
        return max(cp, release_load_bound(head, d, self.m), release_load_bound(tail - d, d, self.m))
