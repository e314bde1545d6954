"""TSO tiling methods behind ``solve()`` (Sousa et al., seed ``004_442fbcc29e97fffd.txt``).

* ``tso-enum`` -- TSO's exhaustive search of Algorithm 3's tile space (Algorithm 1, lines 7-19;
  :func:`npusched.heuristics.tiling.search.search_tso`), vectorised with numpy.
* ``tso-exact`` -- the exact models: ``cpsat`` (:func:`~npusched.formulations.tiling.layer_cpsat.
  solve_tso_cpsat`, integer tile sizes, warm-started from the enumeration) or ``highs``
  (:func:`~npusched.formulations.tiling.mip.solve_tso_mip`, one binary per enumerated candidate).

Both take a :class:`~npusched.problem.tiling.TsoLayer` and return a
:class:`~npusched.solvers.result.Result` whose objective and bound are in cycles under the
layer's DRAM model and whose solution is a :class:`~npusched.problem.tiling.TileChoice`.
:func:`tile_network` runs ``tso-enum`` on every convolution of a network (one task per distinct
layer, Algorithm 1 lines 2-5) and is what ``npusched tile`` prints.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import Any

from npusched.arch.model import Arch
from npusched.common.parallel import map_layers
from npusched.formulations.tiling.layer_cpsat import solve_tso_cpsat
from npusched.formulations.tiling.mip import solve_tso_mip
from npusched.heuristics.tiling.search import conv_layers, layer_work, search_tso
from npusched.methods.registry import Context, Method, bounded, register, solve
from npusched.problem.tiling import TileChoice, TsoLayer, check_fix, evaluate_geom, model_name
from npusched.solvers.result import Result, Status
from npusched.workload.network import Network


@dataclass(frozen=True)
class TsoEnumParams:
    """Parameters of ``tso-enum``: none (the DRAM model and the fixed slicing/schedule are part
    of the :class:`~npusched.problem.tiling.TsoLayer`)."""


@dataclass(frozen=True)
class TsoExactParams:
    """Parameters of ``tso-exact``.

    Attributes
    ----------
    space
        ``"tso"`` (:math:`T_M` by ``GetFilters``, Algorithm 3's space) or ``"free"`` (any
        fitting :math:`T_M`); ``cpsat`` only.
    use_cutoff
        Tighten every pair by the incumbent (``cpsat``).
    warm_mode
        ``"cutoff"`` or ``"hint"``: how the warm start's pair is solved (``cpsat``).
    warm
        Without a ``warm_start``, start from the enumeration's choice (``cpsat``).
    form
        ``"auto"``, ``"mip"`` or ``"lp"``: the candidate model's form (``highs``).
    """

    space: str = "tso"
    use_cutoff: bool = True
    warm_mode: str = "cutoff"
    warm: bool = True
    form: str = "auto"


def _run_tso_enum(problem: TsoLayer, backend: str, params: TsoEnumParams, ctx: Context) -> Result:
    """``tso-enum``: the exhaustive search; ``optimal`` over the enumerated space."""
    try:
        choice = search_tso(problem)
    except ValueError as err:  # no candidate fits at all
        return Result(Status.INFEASIBLE, "tso-enum", backend, message=str(err))
    bd = evaluate_geom(problem.geom, problem.nmp, *choice.choice, problem.model)
    cycles = int(bd.mac_cycles + bd.dram_cycles)
    fixed = problem.fix_tle is not None or problem.fix_tlt is not None
    space = (
        "the free search (fallback: the fixed strategy fits nothing)"
        if choice.fallback
        else ("the fixed slicing/schedule" if fixed else "all 9 slicing × schedule pairs")
    )
    return Result(
        status=Status.OPTIMAL,
        method="tso-enum",
        backend=backend,
        objective=cycles,
        bound=cycles,
        solution=choice,
        stats={
            "layer": problem.name,
            "model": problem.model,
            "objective_us": choice.objective_us,
            "time_us": choice.time_us,
            "n_candidates": choice.n_candidates,
            "n_feasible": choice.n_feasible,
            "fallback": choice.fallback,
        },
        message=f"exhaustive over Algorithm 3's tile space ({choice.n_feasible} feasible of "
        f"{choice.n_candidates} candidates) of {space}; optimal within that space only",
    )


def _run_tso_exact(problem: TsoLayer, backend: str, params: TsoExactParams, ctx: Context) -> Result:
    """``tso-exact``: CP-SAT over integer tile sizes, or the candidate MIP on HiGHS, within the
    time limit, enumeration and model building included (:func:`bounded`)."""
    return bounded("tso-exact", backend, ctx, lambda c: _tso_exact(problem, backend, params, c))


def _tso_exact(problem: TsoLayer, backend: str, params: TsoExactParams, ctx: Context) -> Result:
    left = ctx.remaining()
    if backend == "highs":
        return solve_tso_mip(problem, left, ctx.threads, ctx.seed, "highs", params.form)
    warm: TileChoice | bool = ctx.warm_start if ctx.warm_start is not None else params.warm
    return solve_tso_cpsat(
        problem,
        warm,
        math.inf if left is None else left,
        ctx.threads,
        ctx.seed,
        params.space,
        params.use_cutoff,
        warm_mode=params.warm_mode,
    )


register(
    Method(
        "tso-enum",
        TsoLayer,
        ("none",),
        _run_tso_enum,
        "TSO's exhaustive numpy search of a layer's tile space (Algorithms 1 and 3)",
        params=TsoEnumParams,
        default_for=(TsoLayer,),
    )
)
register(
    Method(
        "tso-exact",
        TsoLayer,
        ("cpsat", "highs"),
        _run_tso_exact,
        "exact TSO tiling: CP-SAT over integer tile sizes or a MIP over the candidates",
        params=TsoExactParams,
    )
)


# ---- a network: one tso-enum per convolution --------------------------------------------------


@dataclass(frozen=True)
class NetworkTiling:
    """``tso-enum``'s :class:`~npusched.solvers.result.Result` for every ``conv``/``fc`` layer
    of a network (Algorithm 1's ``map``), with the totals ``npusched tile`` prints."""

    network: str
    arch: str
    model: str
    results: tuple[Result, ...]
    search_seconds: float
    fix_tle: str | None = None
    fix_tlt: str | None = None

    @property
    def layers(self) -> tuple[TileChoice, ...]:
        """The layers' choices, in network order."""
        return tuple(r.solution for r in self.results)  # type: ignore[misc]

    @property
    def total_time_us(self) -> float:
        """Sum of the layers' burst-model times (µs)."""
        return math.fsum(lc.time_us for lc in self.layers)

    @property
    def load_us(self) -> float:
        """Sum of the layers' IN and W load times in the burst model (µs)."""
        return math.fsum(lc.time.load_us for lc in self.layers)

    @property
    def store_us(self) -> float:
        """Sum of the layers' OUT store times in the burst model (µs)."""
        return math.fsum(lc.time.store_us for lc in self.layers)

    @property
    def mac_us(self) -> float:
        """Sum of the layers' MAC times (µs)."""
        return math.fsum(lc.time.mac_us for lc in self.layers)

    @property
    def n_fallback(self) -> int:
        """How many layers had no feasible candidate under ``fix_tle``/``fix_tlt`` and took the
        free search's choice instead."""
        return sum(lc.fallback for lc in self.layers)

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` object."""
        keys = ("name", "tle", "tlt", "T_R", "T_C", "T_N", "T_M", "time_us")
        return {
            "network": self.network,
            "arch": self.arch,
            "model": self.model,
            "total_time_us": self.total_time_us,
            "search_seconds": self.search_seconds,
            "layers": [{k: getattr(lc, k) for k in keys} for lc in self.layers],
        }


def enum_layer(problem: TsoLayer) -> Result:
    """``solve(problem, "tso-enum")`` (a top-level function, for process pools)."""
    return solve(problem, "tso-enum")


def _renamed(r: Result, name: str) -> Result:
    """``r`` (a shared search's result) for the layer ``name``: a copy whose choice bears it."""
    if not isinstance(r.solution, TileChoice) or r.solution.name == name:
        return r
    return replace(r, solution=replace(r.solution, name=name), stats=dict(r.stats))


def tile_network(
    net: Network,
    arch: Arch,
    model: str = "burst",
    fix_tle: str | None = None,
    fix_tlt: str | None = None,
    executor: Executor | None = None,
    workers: int | None = None,
) -> NetworkTiling:
    """TSO (Algorithm 1) over every ``conv``/``fc`` layer of ``net``: ``solve(TsoLayer,
    "tso-enum")`` per distinct layer, one task each; layers equal but for their name (ResNet-50:
    54 layers, 24 distinct) share one search, whose choice each takes under its own name.

    Parameters
    ----------
    net, arch
        The network and the NMP.
    model, fix_tle, fix_tlt
        As :class:`~npusched.problem.tiling.TsoLayer`.
    executor
        Any ``concurrent.futures.Executor``; default a process pool with ``workers`` processes
        (all cores when ``None``); ``workers=1`` runs in this process.
    workers
        Pool size when ``executor`` is ``None``.

    Raises
    ------
    ValueError
        Unknown model or fixed strategy, a network without convolutions, or a layer where no
        tiling fits.
    """
    mdl = model_name(model)
    check_fix(fix_tle, fix_tlt)
    layers = conv_layers(net)
    t0 = time.perf_counter()
    problems = [TsoLayer.from_layer(ly, sh, arch, mdl, fix_tle, fix_tlt) for ly, sh in layers]
    keys = [replace(p, geom=replace(p.geom, name="")) for p in problems]
    first: dict[TsoLayer, int] = {}  # each distinct problem: its first layer
    for k, key in enumerate(keys):
        first.setdefault(key, k)
    solved = map_layers(enum_layer, [(problems[k],) for k in first.values()], executor, workers,
                        [layer_work(*layers[k]) for k in first.values()])  # fmt: skip
    by_key = dict(zip(first, solved, strict=True))
    results = [_renamed(by_key[key], p.geom.name) for p, key in zip(problems, keys, strict=True)]
    for r in results:
        if r.solution is None:
            raise ValueError(r.message)
    return NetworkTiling(
        net.name, arch.name, mdl, tuple(results), time.perf_counter() - t0, fix_tle, fix_tlt
    )


__all__ = [
    "NetworkTiling",
    "TsoEnumParams",
    "TsoExactParams",
    "enum_layer",
    "tile_network",
]
