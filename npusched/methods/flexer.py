"""Flexer's methods (Min, Kwon, Egger, CGO 2023, seed ``000_4482881724fd7be8.txt``):
``flexer-ooo``, ``flexer-beam``, ``flexer-static``, ``flexer-cpsat``, ``flexer-spill`` and
``flexer-offline``.

- ``flexer-ooo`` / ``flexer-static`` take a
  :class:`~npusched.problem.flexer.settings.FlexerLayer` and run Algorithm 1's search of that
  layer over tilings × dataflows (OoO, §3–§4) or tilings × loop orders × stationarities (the
  static baseline, §5); the solution is the best schedule. A layer search (not the scheduling
  of one given tiling) is what ``npusched flexer`` and the benches run per layer, so it is the
  unit here; :func:`search_network` runs it over a network's layers in parallel.
- ``flexer-beam`` is ``flexer-ooo`` with the greedy's choice of the next operation set replaced
  by a beam search of width × depth over sets
  (:func:`~npusched.heuristics.flexer.beam.beam_schedule`; issue 25, not in the paper).
- ``flexer-cpsat`` takes a :class:`~npusched.problem.flexer.layer.FlexerInstance` (one tiled layer
  on the NPUs) and finds its least-latency once-per-tile schedule
  (:func:`~npusched.formulations.flexer.schedule.schedule_exact`); the warm start is a schedule.
- ``flexer-spill`` takes a :class:`~npusched.problem.flexer.layer.SpillRequest` and selects the
  spill victims exactly (:func:`~npusched.formulations.flexer.spill.solve_spill_exact`).
- ``flexer-offline`` takes a :class:`~npusched.problem.flexer.residency.ResidencyProblem` and
  bounds the DRAM bytes of a fixed issue order
  (:func:`~npusched.formulations.flexer.offline.offline_bound`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from tqdm import tqdm

from npusched.arch.model import Arch
from npusched.common.parallel import map_layers
from npusched.formulations.flexer.offline import offline_bound
from npusched.formulations.flexer.retime import retime_lns
from npusched.formulations.flexer.schedule import schedule_exact
from npusched.formulations.flexer.spill import solve_spill
from npusched.heuristics.flexer.ooo import ooo_schedule
from npusched.heuristics.flexer.search import lat_bound, layer_geometry, search_layer
from npusched.methods.registry import Context, Method, NoParams, bounded, register, solve
from npusched.problem.flexer.layer import FlexerInstance, FlexerSchedule, SpillRequest, supports
from npusched.problem.flexer.residency import ResidencyProblem
from npusched.problem.flexer.settings import MEM_POLICIES, PRIORITIES, FlexerLayer, Settings
from npusched.solvers.result import Result, Status
from npusched.verify.flexer import verify_flexer
from npusched.workload.layers import Layer
from npusched.workload.network import Network

#: The out-of-order searches, weakest first: the paper's greedy, its beam, the beam re-timed.
OOO_KINDS = ("ooo", "beam", "lns")


@dataclass(frozen=True)
class FlexerOooParams:
    """``flexer-ooo``: the set priority (§4.3 or Table 2's), the memory policy (Algorithm 2 or
    Table 2's) and the scheduling window; ``None`` takes the problem's settings."""

    priority: str | None = None
    mem_policy: str | None = None
    window: int | None = None

    def __post_init__(self) -> None:
        if self.priority is not None and self.priority not in PRIORITIES:
            raise ValueError(f"unknown priority {self.priority!r}; choose from {PRIORITIES}")
        if self.mem_policy is not None and self.mem_policy not in MEM_POLICIES:
            raise ValueError(f"unknown memory policy {self.mem_policy!r}; choose {MEM_POLICIES}")


@dataclass(frozen=True)
class FlexerBeamParams(FlexerOooParams):
    """``flexer-beam``: as ``flexer-ooo``, with the beam's ``width`` (branches kept per step),
    ``depth`` (sets looked ahead) and ``top`` (the greedy's best tiling × dataflow pairs it
    refines, 0: all); ``None`` takes the problem's settings."""

    width: int | None = None
    depth: int | None = None
    top: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("width", "depth"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"beam {name} must be >= 1, got {v}")
        if self.top is not None and self.top < 0:
            raise ValueError(f"beam top must be >= 0 (0: every tiling), got {self.top}")


@dataclass(frozen=True)
class FlexerLnsParams(FlexerBeamParams):
    """``flexer-lns``: the start (``beam``, the default, or ``ooo``: the greedy), the beam's
    options as ``flexer-beam``, and the re-timing search's: ``seconds`` of it per layer
    (``None`` takes the problem's settings; on a :class:`FlexerInstance` the call's time
    limit), ``rounds`` at most, the first ``lns_window`` of operation sets, and ``round_limit``
    seconds per round (:func:`~npusched.formulations.flexer.retime.retime_lns`)."""

    start: str = "beam"
    seconds: float | None = None
    rounds: int = 200
    lns_window: int = 16
    round_limit: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.start not in ("beam", "ooo"):
            raise ValueError(f"flexer-lns starts from beam or ooo, not {self.start!r}")
        if self.seconds is not None and not 0 <= self.seconds < float("inf"):
            raise ValueError(f"lns seconds must be finite and >= 0, got {self.seconds}")
        if self.rounds < 1 or self.lns_window < 1 or not self.round_limit > 0:
            raise ValueError("lns rounds, window and round_limit must be positive")


@dataclass(frozen=True)
class FlexerOfflineParams:
    """``flexer-offline``: the contiguous model (CP-SAT only) and the greedy warm start."""

    contiguous: bool = False
    warm: bool = True


def _wall_deadline(ctx: Context) -> float | None:
    """The context's deadline as a ``time.time()`` value (the search's clock)."""
    left = ctx.remaining()
    return None if left is None else time.time() + left


def _layer_applies(problem: FlexerLayer) -> str | None:
    return None if supports(problem.layer) else f"{problem.layer.op} is not tiled by Flexer"


def _run_ooo(problem: FlexerLayer, backend: str, params: FlexerOooParams, ctx: Context) -> Result:
    s = problem.settings
    changes = {k: v for k, v in dataclasses.asdict(params).items() if v is not None}
    s = replace(s, **changes) if changes else s
    return search_layer(problem.net, problem.layer, s, "ooo", _wall_deadline(ctx))


def _run_beam(problem: FlexerLayer, backend: str, params: FlexerBeamParams, ctx: Context) -> Result:
    """The beam search over the layer's tilings × dataflows; stopped by the time limit, the
    best verified-so-far schedule with ``stats["complete"] = False``."""
    changes = {k: v for k, v in dataclasses.asdict(params).items() if v is not None}
    renamed = {
        ("beam_" + k if k in ("width", "depth", "top") else k): v for k, v in changes.items()
    }
    s = replace(problem.settings, **renamed) if renamed else problem.settings
    return search_layer(problem.net, problem.layer, s, "beam", _wall_deadline(ctx))


def refine(
    sched: FlexerSchedule, prefetch: bool, params: FlexerLnsParams, seconds: float | None,
    threads: int, seed: int,
) -> tuple[FlexerSchedule, dict[str, Any]]:  # fmt: skip
    """``sched`` re-timed by :func:`~npusched.formulations.flexer.retime.retime_lns` for at
    most ``seconds`` (unless it is proven the shortest re-timing sooner), and what it did
    (``lns_rounds``, ``lns_improved``, ``lns_proved``, ``lns_start_latency``)."""
    out = retime_lns(
        sched, prefetch, time_limit=seconds, rounds=params.rounds, window=params.lns_window,
        round_limit=params.round_limit, threads=threads, seed=seed,
    )  # fmt: skip
    return out.schedule, {
        "lns_rounds": out.rounds, "lns_improved": out.improved, "lns_proved": out.proved,
        "lns_start_latency": sched.latency,
    }  # fmt: skip


def _run_lns(
    problem: FlexerLayer | FlexerInstance, backend: str, params: FlexerLnsParams, ctx: Context
) -> Result:
    """A layer: the beam's (or the greedy's) search over tilings × dataflows, then its best
    schedule re-timed (:func:`refine`) for ``params.seconds`` (default the settings'
    ``lns_seconds``) or what is left of the time limit. One tiled layer: its warm start (a
    :class:`FlexerSchedule`; default the greedy's OS schedule) re-timed within the limit; the
    bound is :func:`~npusched.heuristics.flexer.search.lat_bound`, which holds for every
    schedule (the re-timing's own floor does not: other transfers could do better)."""
    if isinstance(problem, FlexerInstance):
        return _lns_instance(problem, params, ctx)
    beam = FlexerBeamParams(**{f.name: getattr(params, f.name)
                               for f in dataclasses.fields(FlexerBeamParams)})  # fmt: skip
    first = (_run_beam if params.start == "beam" else _run_ooo)(problem, backend, beam, ctx)
    sched = first.solution
    if not isinstance(sched, FlexerSchedule):
        first.method = "flexer-lns"
        return first
    s = problem.settings
    seconds = s.lns_seconds if params.seconds is None else params.seconds
    left = ctx.remaining()
    seconds = seconds if left is None else min(seconds, max(0.0, left - 0.05))
    first.method, first.backend = "flexer-lns", "cpsat"
    if seconds > 0:
        retimed(first, s, params, seconds, ctx.threads, ctx.seed)
    return first


def retimed(
    r: Result, s: Settings, params: FlexerLnsParams, seconds: float, threads: int, seed: int
) -> Result:
    """A layer search's Result ``r`` with its schedule re-timed by :func:`refine` (at most
    ``seconds``): the solution, the metric and the ``latency`` replaced, what the search did
    added to the stats; unchanged without a schedule."""
    if isinstance(r.solution, FlexerSchedule):
        t0 = time.perf_counter()
        sched, stats = refine(r.solution, s.prefetch, params, seconds, threads, seed)
        r.solution, r.objective = sched, sched.metric(s.metric)
        r.stats |= stats | {"latency": sched.latency, "transfer_bytes": sched.transfer_bytes}
        r.runtime_s += time.perf_counter() - t0
    return r


def _lns_instance(problem: FlexerInstance, params: FlexerLnsParams, ctx: Context) -> Result:
    p = problem
    start = ctx.warm_start
    if start is not None and not isinstance(start, FlexerSchedule):
        raise ValueError("a flexer-lns warm start must be a FlexerSchedule")
    if start is None:
        start = ooo_schedule(p.problem, p.n_npus, p.capacity, p.bandwidth, prefetch=p.prefetch)
    left = ctx.remaining()
    seconds = params.seconds if left is None else min(params.seconds or left, left)
    sched, stats = refine(start, p.prefetch, params, seconds, ctx.threads, ctx.seed)
    settings = Settings(p.n_npus, p.capacity, p.bandwidth, prefetch=p.prefetch)
    out = Result(Status.FEASIBLE, "flexer-lns", "cpsat", objective=sched.latency,
                 bound=lat_bound(p.problem, settings), solution=sched, stats=stats)  # fmt: skip
    out.stats |= {"latency": sched.latency, "transfer_bytes": sched.transfer_bytes}
    return out


def _run_static(problem: FlexerLayer, backend: str, params: NoParams, ctx: Context) -> Result:
    return search_layer(problem.net, problem.layer, problem.settings, "static", _wall_deadline(ctx))


def _run_cpsat(problem: FlexerInstance, backend: str, params: NoParams, ctx: Context) -> Result:
    """The once-per-tile schedule model within the time limit, model building and CP-SAT's
    loading included (:func:`bounded`)."""
    p = problem
    hint = ctx.warm_start
    if hint is not None and not isinstance(hint, FlexerSchedule):
        raise ValueError("a flexer-cpsat warm start must be a FlexerSchedule")
    return bounded("flexer-cpsat", "cpsat", ctx, lambda c: schedule_exact(
        p.problem, p.n_npus, p.capacity, p.bandwidth, prefetch=p.prefetch,
        time_limit=c.remaining(), threads=c.threads, seed=c.seed, hint=hint,
    ))  # fmt: skip


def _run_spill(problem: SpillRequest, backend: str, params: NoParams, ctx: Context) -> Result:
    left = ctx.remaining()
    return solve_spill(
        problem, backend=backend, time_limit=10.0 if left is None else left,
        threads=ctx.threads, seed=ctx.seed,
    )  # fmt: skip


def _run_offline(
    problem: ResidencyProblem, backend: str, params: FlexerOfflineParams, ctx: Context
) -> Result:
    """The residency model within the time limit, model building included (:func:`bounded`)."""
    return bounded("flexer-offline", backend, ctx, lambda c: offline_bound(
        problem.problem, problem.order, problem.capacity, contiguous=params.contiguous,
        backend=backend, time_limit=c.remaining(), threads=c.threads, seed=c.seed,
        warm=params.warm, log=c.log,
    ))  # fmt: skip


register(
    Method("flexer-ooo", FlexerLayer, ("none",), _run_ooo,
           "Flexer's OoO scheduler searched over a layer's tilings x dataflows (Algorithm 1)",
           params=FlexerOooParams, applies=_layer_applies)
)  # fmt: skip
register(
    Method("flexer-beam", FlexerLayer, ("none",), _run_beam,
           "Flexer's OoO with a beam of width x depth lookahead over operation sets, searched "
           "over a layer's tilings x dataflows (never worse than flexer-ooo per tiling)",
           params=FlexerBeamParams, applies=_layer_applies)
)  # fmt: skip
register(
    Method("flexer-lns", (FlexerLayer, FlexerInstance), ("cpsat",), _run_lns,
           "flexer-beam's (or flexer-ooo's) best schedule re-timed by CP-SAT large-neighbourhood "
           "search over windows of operation sets (never worse than its start)",
           params=FlexerLnsParams,
           applies=lambda p: _layer_applies(p) if isinstance(p, FlexerLayer) else None)
)  # fmt: skip
register(
    Method("flexer-static", FlexerLayer, ("none",), _run_static,
           "best static loop-order schedule of a layer over tilings x loop orders (Flexer §5)",
           applies=_layer_applies)
)  # fmt: skip
register(
    Method("flexer-cpsat", FlexerInstance, ("cpsat",), _run_cpsat,
           "least-latency once-per-tile schedule of a small tiled layer (CP-SAT)")
)  # fmt: skip
register(
    Method("flexer-spill", SpillRequest, ("cpsat", "cbc", "highs"), _run_spill,
           "exact spill-victim selection (Flexer Algorithm 2's lexicographic key)")
)  # fmt: skip
register(
    Method("flexer-offline", ResidencyProblem, ("highs", "cpsat", "cbc"), _run_offline,
           "offline lower bound on the DRAM bytes of a fixed Flexer issue order",
           params=FlexerOfflineParams)
)  # fmt: skip


# ---- a network: per-layer Results and totals -------------------------------------------------


class LayerRuns(NamedTuple):
    """The OoO and static Results of one layer (``None``: not run)."""

    name: str
    ooo: Result | None
    static: Result | None

    @property
    def complete(self) -> bool:
        """Whether a search ran and every search that ran went to its end (none runs on a
        layer reached past the deadline)."""
        ran = [r for r in (self.ooo, self.static) if r is not None]
        return bool(ran) and all(r.stats["complete"] for r in ran)

    @property
    def tilings(self) -> int:
        """Viable tilings of the layer (0 when no search ran)."""
        ran = self.ooo or self.static
        return 0 if ran is None else int(ran.stats["tilings"])

    @property
    def ooo_evaluated(self) -> int:
        """Tilings the OoO search evaluated: those its branch and bound did not prune by
        :func:`~npusched.heuristics.flexer.search.metric_bound`, each scheduled in every
        dataflow (0 when it did not run)."""
        return 0 if self.ooo is None else int(self.ooo.stats["evaluated"])

    @property
    def static_evaluated(self) -> int:
        """Tilings the static search evaluated: those its branch and bound did not prune,
        each scheduled in every loop order × stationarity (0 when it did not run)."""
        return 0 if self.static is None else int(self.static.stats["evaluated"])

    @property
    def seconds(self) -> float:
        """Wall seconds of the searches that ran."""
        return sum(r.runtime_s for r in (self.ooo, self.static) if r is not None)


def figures(r: Result | None) -> dict[str, Any] | None:
    """The best schedule's figures of a layer search (its ``stats``: ``tiling``, ``dataflow``,
    ``latency``, ``transfer_bytes``, ``bytes_by_type``, …), or ``None`` without a schedule."""
    return None if r is None or r.solution is None else r.stats


@dataclass
class NetworkSearch:
    """Per-layer Results of :func:`search_network` in network order, the settings, and totals."""

    network: str
    arch: str
    settings: Settings
    layers: list[LayerRuns]
    search_seconds: float
    distinct: int = 0
    skipped: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every layer's search ran to the end (no time limit cut it short)."""
        return all(r.complete for r in self.layers)

    def totals(self) -> dict[str, float]:
        """Sums over the layers that have both an OoO and a static schedule, and
        ``speedup_bound``: the static latency over the sum of the layers' ``latency_bound``
        (no schedule of a layer, over the tilings searched, is shorter), which no OoO search
        over those tilings can exceed."""
        both = [(figures(r.ooo), figures(r.static)) for r in self.layers]
        done = [(o, s) for o, s in both if o and s]
        out: dict[str, float] = {
            "ooo_latency": sum(o["latency"] for o, _ in done),
            "ooo_transfer_bytes": sum(o["transfer_bytes"] for o, _ in done),
            "static_latency": sum(s["latency"] for _, s in done),
            "static_transfer_bytes": sum(s["transfer_bytes"] for _, s in done),
        }
        out["compared_layers"] = len(done)
        out["speedup"] = out["static_latency"] / max(1.0, out["ooo_latency"])
        out["latency_bound"] = sum(o["latency_bound"] for o, _ in done)
        out["speedup_bound"] = out["static_latency"] / max(1.0, out["latency_bound"])
        out["transfer_reduction"] = out["static_transfer_bytes"] / max(
            1.0, out["ooo_transfer_bytes"]
        )
        return out

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``npusched flexer --json`` prints."""
        return {
            "network": self.network,
            "arch": self.arch,
            "search_seconds": round(self.search_seconds, 3),
            "complete": self.complete,
            "settings": {
                **{
                    f.name: getattr(self.settings, f.name)
                    for f in dataclasses.fields(self.settings)
                    if f.name != "arch"
                },
                "unroll": [list(u) for u in self.settings.unroll],
                "fill_drain": self.settings.op_overhead,
            },
            "distinct_layers": self.distinct,
            "skipped": self.skipped,
            "layers": [_layer_json(r) for r in self.layers],
            "total": self.totals(),
        }


def _layer_json(r: LayerRuns) -> dict[str, Any]:
    o, st = figures(r.ooo), figures(r.static)

    def get(f: dict[str, Any] | None, key: str) -> Any:
        return None if f is None else f[key]

    return {
        "name": r.name,
        "ooo_latency": get(o, "latency"),
        "ooo_transfer_bytes": get(o, "transfer_bytes"),
        "static_latency": get(st, "latency"),
        "static_transfer_bytes": get(st, "transfer_bytes"),
        "tiling": None if o is None else list(o["tiling"]),
        "dataflow": get(o, "dataflow"),
        "static_tiling": None if st is None else list(st["tiling"]),
        "static_dataflow": get(st, "dataflow"),
        "ooo_bytes_by_type": get(o, "bytes_by_type"),
        "static_bytes_by_type": get(st, "bytes_by_type"),
        "tilings": r.tilings,
        "latency_bound": get(o or st, "latency_bound"),
        "ooo_evaluated": r.ooo_evaluated,
        "static_evaluated": r.static_evaluated,
        "complete": r.complete,
    }


def _search_one(
    net: Network, layer: Layer, s: Settings, kind: str, deadline: float | None
) -> Result | None:
    """``solve()`` of one layer with ``flexer-{kind}`` (``None`` when ``deadline``, a
    ``time.time()``, has passed before it began: no tilings built). ``lns`` runs here without
    its re-timing (``seconds=0``), which :func:`search_network` adds with every thread."""
    left = None if deadline is None else deadline - time.time()
    if left is not None and left <= 0:
        return None
    options: dict[str, Any] = {"seconds": 0.0} if kind == "lns" else {}
    return solve(FlexerLayer(net, layer, s), f"flexer-{kind}", time_limit=left, **options)


def _retime_all(
    runs: list[Result | None], s: Settings, threads: int, deadline: float | None, bar: bool
) -> None:
    """``flexer-lns``'s re-timing of each layer's schedule (:func:`retimed`), one layer after
    the other on ``threads`` CP-SAT workers (one worker finds almost nothing), each for at
    most ``s.lns_seconds`` and never past ``deadline``; a layer reached after it stays
    incomplete."""
    params = FlexerLnsParams()
    for r in tqdm(runs, desc="flexer lns", unit="layer", file=sys.stderr,
                  disable=None if bar else True):  # fmt: skip
        if r is None or r.solution is None:
            continue
        left = None if deadline is None else deadline - time.time()
        if left is not None and left <= 0.05:
            r.stats["complete"] = False
            continue
        retimed(r, s, params, s.lns_seconds if left is None else min(s.lns_seconds, left),
                threads, seed=0)  # fmt: skip


def search_network(
    net: Network,
    arch: Arch | Settings,
    *,
    layers: Sequence[str] | None = None,
    kinds: Sequence[str] = ("ooo", "static"),
    executor: Executor | None = None,
    workers: int | None = None,
    time_limit: float | None = None,
    progress: bool = False,
    **options: Any,
) -> NetworkSearch:
    """Algorithm 1 over the dense conv and fc layers of ``net`` (or the named ``layers``):
    ``solve(…, "flexer-ooo")`` and ``"flexer-static"`` per distinct layer geometry (layers with
    equal :func:`~npusched.heuristics.flexer.search.layer_geometry` share one search), in
    parallel through :func:`~npusched.common.parallel.map_layers`.

    ``kinds``: the OoO search (``ooo``, ``beam`` for ``flexer-beam`` or ``lns`` for
    ``flexer-lns``, whose re-timing runs after every layer's beam, one layer at a time on every
    worker's thread; its Results are the rows' ``ooo``) and/or ``static``.
    ``time_limit`` (seconds of wall clock for the whole search) stops every layer's search
    with the best found so far; :attr:`NetworkSearch.complete` says whether any was cut.
    ``progress`` shows a bar of searched layers on stderr. ``options`` are :class:`Settings`
    fields.

    Raises
    ------
    ValueError
        Unknown layer names or kinds, or a network without layers Flexer tiles.
    """
    s = arch if isinstance(arch, Settings) else Settings.from_arch(arch, **options)
    if isinstance(arch, Settings) and options:
        s = replace(s, **options)
    names = {ly.name for ly in net.layers}
    if layers:
        bad = [x for x in layers if x not in names]
        if bad:
            raise ValueError(f"--layers: {net.name} has no layer {', '.join(bad)}")
    chosen = [ly for ly in net.layers if (not layers or ly.name in layers)]
    tiled = [ly for ly in chosen if supports(ly)]
    skipped = [ly.name for ly in chosen if not supports(ly) and ly.op in ("conv", "fc")]
    if not tiled:
        raise ValueError(f"{net.name}: no dense conv or fc layer to schedule")
    t0 = time.perf_counter()
    groups: dict[tuple[Any, ...], list[Layer]] = {}
    for ly in tiled:
        groups.setdefault(layer_geometry(net, ly), []).append(ly)
    reps = [v[0] for v in groups.values()]
    work = [int(ly.macs(net.in_shapes(ly)) // 1000) for ly in reps]
    if time_limit is not None and time_limit <= 0:
        raise ValueError(f"time limit must be positive, got {time_limit}")
    if set(kinds) - {*OOO_KINDS, "static"} or len(set(kinds) & set(OOO_KINDS)) > 1:
        raise ValueError(f"kinds {tuple(kinds)}: one of {', '.join(OOO_KINDS)}, and/or static")
    deadline = None if time_limit is None else time.time() + time_limit
    tasks = [(ly, kind) for ly in reps for kind in kinds]  # OoO and static run side by side
    found = map_layers(
        _search_one,
        [(net, ly, s, kind, deadline) for ly, kind in tasks],
        executor=executor,
        workers=workers,
        weights=[work[reps.index(ly)] for ly, _ in tasks],
        progress=f"flexer {net.name}" if progress else None,
    )
    runs: dict[tuple[str, str], Result | None] = {
        (ly.name, "static" if kind == "static" else "ooo"): r
        for (ly, kind), r in zip(tasks, found, strict=True)
    }
    if "lns" in kinds and s.lns_seconds > 0:
        threads = workers or os.cpu_count() or 1
        _retime_all([runs[ly.name, "ooo"] for ly in reps], s, threads, deadline, progress)
    by_key = {
        k: LayerRuns(ly.name, runs.get((ly.name, "ooo")), runs.get((ly.name, "static")))
        for k, ly in zip(groups, reps, strict=True)
    }
    rows = [by_key[layer_geometry(net, ly)]._replace(name=ly.name) for ly in tiled]
    name = arch.name if isinstance(arch, Arch) else f"{s.n_npus} NPUs"
    return NetworkSearch(net.name, name, s, rows, time.perf_counter() - t0, len(reps), skipped)


def verify_choices(result: NetworkSearch) -> int:
    """Verify every chosen schedule; return how many were checked.

    Raises
    ------
    RuntimeError
        A schedule fails :func:`~npusched.verify.flexer.verify_flexer` or differs from the
        figures the search reported.
    """
    checked = 0
    for r in result.layers:
        for kind, res in (("ooo", r.ooo), ("static", r.static)):
            if res is None or res.solution is None:
                continue
            assert isinstance(res.solution, FlexerSchedule)
            rep = verify_flexer(res.solution)
            if not rep.ok:
                raise RuntimeError(f"{r.name} {kind}: {rep.violations[:3]}")
            if (rep.latency, rep.transfer_bytes) != (
                res.stats["latency"],
                res.stats["transfer_bytes"],
            ):
                raise RuntimeError(f"{r.name} {kind}: verified figures differ from the search")
            checked += 1
    return checked
