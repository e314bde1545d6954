"""Flexer's search over tilings × dataflows (Algorithm 1, lines 1–11), for the OoO scheduler and
for the static loop-order baseline (§5: "exhaustive search among all schedules with different
data stationary models and viable tiling sizes").

Both searches are exact over the same space, but skip what cannot win: tilings are visited in
order of a lower bound on the metric, and the search of a layer stops once the bound reaches the
best metric found (branch and bound); tilings with equal bounds go fewest operations first.
The bound of a tiling uses only what every schedule must do: load every input and weight tile
once and write every output once (:meth:`~npusched.problem.flexer.TiledConv.onchip_bytes`, one
transfer at a time on the DRAM channel, :meth:`~npusched.problem.flexer.TiledConv.once_cycles`),
and run ``Σ latency`` cycles of work on ``n`` NPUs, which without prefetch also wait for those
first loads; so ``latency ≥ max((Σ lat + first loads) / n, max lat, Σ once-transfer cycles)``.
During a schedule the same bound is raised with the time the NPUs and the DRAM channel have
already spent (:meth:`~npusched.heuristics.flexer.ooo.Engine.latency_bound`), times the bytes moved
so
far, and the schedule stops once it reaches the best. Layers with the same
geometry are searched once (memoization, as §3 suggests), and distinct layers run in parallel
through a ``concurrent.futures`` executor.

The tiling space: output and input channel tiles ``32 · 2^i`` below the extent plus the extent
(the NPU's 32 × 32 array), rows and columns ``2^i`` below the extent plus the extent; a tiling
is viable when one operation's tiles fit in the buffer and it has at most ``max_ops``
operations (default 256; ``0`` searches every viable tiling). The paper does not say how it
bounds the space.

Each operation also pays ``fill_drain`` cycles (default: rows + columns of the PE array, 64 on
Flexer's 32 × 32 array, §5): a systolic array fills and drains its pipeline once per operation,
which the cost model's temporal steps (:func:`~npusched.costmodel.compute_cycles`) leave out.
The paper's latencies come from a cycle-accurate simulator (§5), which has this cost. Without
it a tiling of 1 × 1-pixel tiles would cost the same NPU time as a coarse one, and no bound
could set such tilings aside; with it, they are bounded out as on real hardware.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from npusched.arch.model import Arch
from npusched.common.parallel import map_layers
from npusched.heuristics.flexer.ooo import (
    DATAFLOWS,
    MEM_POLICIES,
    PRIORITIES,
    STATIONARITY,
    NoFit,
    Pruned,
    TimeUp,
    ooo_schedule,
    static_schedule,
)
from npusched.partition.flexer import tiled_conv
from npusched.partition.grid import DIMS, Tiling, layer_extents
from npusched.problem.flexer import FlexerSchedule, TiledConv, supports
from npusched.verify.flexer import verify_flexer
from npusched.workload.layers import Layer
from npusched.workload.network import Network

METRICS = ("latency*bytes", "latency", "bytes")
#: every loop permutation × stationarity of the static baseline
STATIC_DATAFLOWS = tuple(
    (",".join(p), s) for p in itertools.permutations(DIMS) for s in STATIONARITY
)


@dataclass(frozen=True)
class Settings:
    """A multi-NPU (Table 1) and the scheduler's options."""

    n_npus: int
    capacity: int
    bandwidth: float
    unroll: tuple[tuple[str, int], ...] = (("K", 32), ("C", 32))
    elem_bytes: float = 1.0
    priority: str = "default"
    mem_policy: str = "flexer"
    metric: str = "latency*bytes"
    max_ops: int = 256
    window: int | None = None
    prefetch: bool = False
    fill_drain: int | None = None  # cycles per operation; None: rows + columns of the array

    @property
    def op_overhead(self) -> int:
        """Fill and drain cycles of the array per operation (module notes)."""
        return sum(u for _, u in self.unroll) if self.fill_drain is None else self.fill_drain

    def __post_init__(self) -> None:
        if self.priority not in PRIORITIES:
            raise ValueError(f"unknown priority {self.priority!r}; choose from {PRIORITIES}")
        if self.mem_policy not in MEM_POLICIES:
            raise ValueError(
                f"unknown memory policy {self.mem_policy!r}; choose from {MEM_POLICIES}"
            )
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; choose from {METRICS}")
        if self.n_npus < 1 or self.capacity < 1 or self.bandwidth <= 0:
            raise ValueError("NPUs, buffer and bandwidth must be positive")
        if self.fill_drain is not None and self.fill_drain < 0:
            raise ValueError(f"fill_drain must be >= 0, got {self.fill_drain}")

    @classmethod
    def from_arch(cls, arch: Arch, **options: Any) -> Settings:
        """Flexer's settings from an architecture with a shared global buffer (flexer-arch1…8).

        Raises
        ------
        ValueError
            The architecture has no shared buffer or no DRAM bandwidth.
        """
        if arch.shared_buffer_bytes is None:
            raise ValueError(f"{arch.name}: Flexer needs a shared global buffer")
        unroll = tuple(sorted(arch.cores[0].pe_unroll.items()))
        return cls(
            n_npus=len(arch.cores),
            capacity=int(arch.shared_buffer_bytes),
            bandwidth=float(arch.dram_bytes_per_cycle()),
            unroll=unroll,
            elem_bytes=arch.element_bytes,
            **options,
        )


@dataclass(frozen=True)
class Choice:
    """The best schedule of one search: its tiling, dataflow and figures."""

    tiles: tuple[int, int, int, int]
    dataflow: str
    latency: int
    transfer_bytes: int
    bytes_by_type: dict[str, int]
    reloads: float  # mean loads per input/weight tile
    metric: float


@dataclass(frozen=True)
class LayerResult:
    """OoO and static results of one layer, and how much of the space was visited."""

    name: str
    ooo: Choice | None
    static: Choice | None
    tilings: int
    ooo_evaluated: int
    static_evaluated: int
    seconds: float
    skipped: str = ""
    complete: bool = True  # False: the time limit cut the search short (the best found so far)


def tiling_space(net: Network, layer: Layer, s: Settings) -> list[tuple[int, int, int, int]]:
    """Candidate tile sizes ``(t_oc, t_oh, t_ow, t_ic)`` of ``layer`` (see the module notes)."""
    ext = layer_extents(layer, net.in_shapes(layer), net.shapes[layer.name])
    u = dict(s.unroll)

    def sizes(extent: int, base: int) -> list[int]:
        out, t = [], base
        while t < extent:
            out.append(t)
            t *= 2
        return [*out, extent]

    k, y, x, c = ext
    if layer.op == "fc":
        return [(a, 1, 1, b) for a in sizes(k, u.get("K", 1)) for b in sizes(c, u.get("C", 1))]
    return [
        (a, b, cc, d)
        for a in sizes(k, u.get("K", 1))
        for b in sizes(y, 1)
        for cc in sizes(x, 1)
        for d in sizes(c, u.get("C", 1))
    ]


def n_ops(net: Network, layer: Layer, tiles: tuple[int, int, int, int]) -> int:
    """Operations of a tiling, without building its DFG."""
    ext = layer_extents(layer, net.in_shapes(layer), net.shapes[layer.name])
    clipped = tuple(min(t, e) for t, e in zip(tiles, ext, strict=True))
    return Tiling.regular(ext, clipped).size  # type: ignore[arg-type]


def layer_problem(net: Network, layer: Layer, tiles: tuple[int, ...], s: Settings) -> TiledConv:
    return tiled_conv(
        net,
        layer,
        tiles,  # type: ignore[arg-type]
        dict(s.unroll),
        s.elem_bytes,
        fill_drain=s.op_overhead,
    )


def lat_bound(p: TiledConv, s: Settings) -> float:
    """A lower bound on the latency of every schedule of ``p`` (module notes)."""
    loads, writes = p.once_cycles(s.bandwidth)
    work = int(p.latency.sum()) + (0 if s.prefetch else loads)
    return max(-(-work // s.n_npus), int(p.latency.max()), loads + writes)


def metric_bound(p: TiledConv, s: Settings) -> float:
    """A lower bound on the metric of every schedule of ``p`` (module notes)."""
    nbytes = sum(p.onchip_bytes().values())
    lat = lat_bound(p, s)
    return {"latency*bytes": lat * nbytes, "latency": lat, "bytes": float(nbytes)}[s.metric]


def summarize(sched: FlexerSchedule, tiles: tuple[int, int, int, int], dataflow: str, metric: str):
    """The :class:`Choice` of one schedule."""
    p = sched.problem
    loads = sched.loads_per_tile()
    inwt = p.data_type < 2
    return Choice(
        tiles=tiles,
        dataflow=dataflow,
        latency=sched.latency,
        transfer_bytes=sched.transfer_bytes,
        bytes_by_type=sched.bytes_by_type(),
        reloads=float(loads[inwt].mean()) if inwt.any() else 0.0,
        metric=sched.metric(metric),
    )


def run(
    p: TiledConv,
    s: Settings,
    kind: str,
    dataflow: str,
    stop_above: tuple[float, float] | None = None,
    deadline: float | None = None,
) -> FlexerSchedule:
    """One schedule: ``kind`` ``ooo`` with an OoO dataflow (``OS``, ``WS``, ``IS``) or
    ``static`` with ``"LOOP,ORDER/STATIONARITY"``."""
    if kind == "ooo":
        return ooo_schedule(
            p,
            s.n_npus,
            s.capacity,
            s.bandwidth,
            dataflow=dataflow,
            priority=s.priority,
            mem_policy=s.mem_policy,
            window=s.window,
            stop_above=stop_above,
            prefetch=s.prefetch,
            deadline=deadline,
        )
    order, stat = dataflow.split("/")
    return static_schedule(
        p,
        s.n_npus,
        s.capacity,
        s.bandwidth,
        loop_order=order,
        stationary=stat,
        stop_above=stop_above,
        prefetch=s.prefetch,
        deadline=deadline,
    )


def _search(
    cands: Sequence[tuple[float, tuple[int, int, int, int], TiledConv]],
    s: Settings,
    kind: str,
    dataflows: Sequence[str],
    deadline: float | None = None,
) -> tuple[Choice | None, int, bool]:
    """Branch and bound over ``cands`` (by bound): the best choice, the tilings evaluated and
    whether the search ran to the end (``False`` when ``deadline`` passed)."""
    best: Choice | None = None
    evaluated = 0
    for bound, tiles, p in cands:
        if best is not None and bound >= best.metric:
            break
        evaluated += 1
        lat = lat_bound(p, s)
        for df in dataflows:
            stop = (lat, best.metric) if best and s.metric == "latency*bytes" else None
            try:
                sched = run(p, s, kind, df, stop, deadline)
            except (NoFit, Pruned):
                continue
            except TimeUp:
                return best, evaluated, False
            ch = summarize(sched, tiles, df, s.metric)
            if best is None or ch.metric < best.metric:
                best = ch
    return best, evaluated, True


def search_layer(
    net: Network,
    layer: Layer,
    s: Settings,
    kinds: Sequence[str] = ("ooo", "static"),
    deadline: float | None = None,
) -> LayerResult:
    """Algorithm 1 for one layer: the best OoO schedule over tilings × dataflows
    (:data:`~npusched.heuristics.flexer.ooo.DATAFLOWS`) and the best static schedule over tilings ×
    loop orders × stationarities (:data:`STATIC_DATAFLOWS`). Past ``deadline`` (a
    ``time.time()``) the searches stop with the best found so far and ``complete=False``."""
    t0 = time.perf_counter()
    if not supports(layer):
        return LayerResult(layer.name, None, None, 0, 0, 0, 0.0, f"{layer.op} is not tiled")
    cands = []
    for tiles in tiling_space(net, layer, s):
        if n_ops(net, layer, tiles) > s.max_ops > 0:
            continue
        p = layer_problem(net, layer, tiles, s)
        if max(p.footprint(o) for o in (0, p.n_ops - 1)) > s.capacity:
            continue
        cands.append((metric_bound(p, s), tiles, p))
    cands.sort(key=lambda c: (c[0], c[2].n_ops))
    ooo = static = None
    n_ooo = n_static = 0
    done = True
    if "ooo" in kinds:
        ooo, n_ooo, done = _search(cands, s, "ooo", list(DATAFLOWS), deadline)
    if "static" in kinds and done:
        dfs = [f"{o}/{st}" for o, st in STATIC_DATAFLOWS]
        static, n_static, done = _search(cands, s, "static", dfs, deadline)
    return LayerResult(
        layer.name,
        ooo,
        static,
        len(cands),
        n_ooo,
        n_static,
        time.perf_counter() - t0,
        complete=done,
    )


def layer_geometry(net: Network, layer: Layer) -> tuple[Any, ...]:
    """What a layer's search depends on (layers with equal keys share one search)."""
    return (
        layer.op,
        layer.out_channels,
        layer.kernel,
        layer.stride,
        layer.pad,
        layer.dilation,
        layer.groups,
        tuple(net.in_shapes(layer)[0]),
    )


@dataclass
class NetworkResult:
    """Per-layer results in network order, the searched layers and the wall-clock time."""

    network: str
    arch: str
    settings: Settings
    layers: list[LayerResult]
    search_seconds: float
    distinct: int = 0
    skipped: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every layer's search ran to the end (no time limit cut it short)."""
        return all(r.complete for r in self.layers)

    def totals(self) -> dict[str, float]:
        """Sums over the layers that have both an OoO and a static schedule."""
        done = [r for r in self.layers if r.ooo and r.static]
        out: dict[str, float] = {
            "ooo_latency": sum(r.ooo.latency for r in done if r.ooo),
            "ooo_transfer_bytes": sum(r.ooo.transfer_bytes for r in done if r.ooo),
            "static_latency": sum(r.static.latency for r in done if r.static),
            "static_transfer_bytes": sum(r.static.transfer_bytes for r in done if r.static),
        }
        out["compared_layers"] = len(done)
        out["speedup"] = out["static_latency"] / max(1.0, out["ooo_latency"])
        out["transfer_reduction"] = out["static_transfer_bytes"] / max(
            1.0, out["ooo_transfer_bytes"]
        )
        return out

    def to_json(self) -> dict[str, Any]:
        rows = []
        for r in self.layers:
            if r.skipped:
                continue
            o, st = r.ooo, r.static
            rows.append(
                {
                    "name": r.name,
                    "ooo_latency": o.latency if o else None,
                    "ooo_transfer_bytes": o.transfer_bytes if o else None,
                    "static_latency": st.latency if st else None,
                    "static_transfer_bytes": st.transfer_bytes if st else None,
                    "tiling": list(o.tiles) if o else None,
                    "dataflow": o.dataflow if o else None,
                    "static_tiling": list(st.tiles) if st else None,
                    "static_dataflow": st.dataflow if st else None,
                    "ooo_bytes_by_type": o.bytes_by_type if o else None,
                    "static_bytes_by_type": st.bytes_by_type if st else None,
                    "tilings": r.tilings,
                    "ooo_evaluated": r.ooo_evaluated,
                    "static_evaluated": r.static_evaluated,
                    "complete": r.complete,
                }
            )
        return {
            "network": self.network,
            "arch": self.arch,
            "search_seconds": round(self.search_seconds, 3),
            "complete": self.complete,
            "settings": {**asdict(self.settings), "fill_drain": self.settings.op_overhead},
            "distinct_layers": self.distinct,
            "skipped": self.skipped,
            "layers": rows,
            "total": self.totals(),
        }


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
) -> NetworkResult:
    """Algorithm 1 over the dense conv and fc layers of ``net`` (or the named ``layers``).

    ``time_limit`` (seconds of wall clock for the whole search) stops every layer's search
    with the best found so far; :attr:`NetworkResult.complete` says whether any was cut.
    ``progress`` shows a bar of searched layers on stderr.

    Raises
    ------
    ValueError
        Unknown layer names, or a network without layers Flexer tiles.
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
    deadline = None if time_limit is None else time.time() + time_limit
    found = map_layers(
        search_layer,
        [(net, ly, s, tuple(kinds), deadline) for ly in reps],
        executor=executor,
        workers=workers,
        weights=work,
        progress=f"flexer {net.name}" if progress else None,
    )
    by_key = {k: r for k, r in zip(groups, found, strict=True)}
    rows = [replace(by_key[layer_geometry(net, ly)], name=ly.name) for ly in tiled]
    name = arch.name if isinstance(arch, Arch) else f"{s.n_npus} NPUs"
    return NetworkResult(net.name, name, s, rows, time.perf_counter() - t0, len(reps), skipped)


def verify_choices(net: Any, result: Any) -> int:
    """Rebuild every chosen schedule and verify it; return how many were checked.

    Raises
    ------
    RuntimeError
        A schedule fails :func:`~npusched.verify.flexer.verify_flexer` or differs from the
        figures the search reported.
    """
    checked = 0
    layers = {ly.name: ly for ly in net.layers}
    seen: set[tuple[Any, ...]] = set()
    for r in result.layers:
        for kind, ch in (("ooo", r.ooo), ("static", r.static)):
            key = (kind, r.name)
            if ch is None or key in seen:
                continue
            seen.add(key)
            p = layer_problem(net, layers[r.name], ch.tiles, result.settings)
            sched = run(p, result.settings, kind, ch.dataflow)
            rep = verify_flexer(sched)
            if not rep.ok:
                raise RuntimeError(f"{r.name} {kind}: {rep.violations[:3]}")
            if (rep.latency, rep.transfer_bytes) != (ch.latency, ch.transfer_bytes):
                raise RuntimeError(f"{r.name} {kind}: verified figures differ from the search")
            checked += 1
    return checked
