"""Flexer's search over tilings × dataflows (Algorithm 1, lines 1–11), for the OoO scheduler and
for the static loop-order baseline (§5: "exhaustive search among all schedules with different
data stationary models and viable tiling sizes").

Both searches are exact over the same space, but skip what cannot win: tilings are visited in
order of a lower bound on the metric, and the search of a layer stops once the bound reaches the
best metric found (branch and bound); tilings with equal bounds go fewest operations first.
The bound of a tiling uses only what every schedule must do: load every input and weight tile
once and write every output once (:meth:`~npusched.problem.flexer.layer.TiledConv.onchip_bytes`,
one transfer at a time on the DRAM channel,
:meth:`~npusched.problem.flexer.layer.TiledConv.once_cycles`),
and run ``Σ latency`` cycles of work on ``n`` NPUs, which without prefetch also wait for those
first loads; so ``latency ≥ max((Σ lat + first loads) / n, max lat, Σ once-transfer cycles)``.
During a schedule the same bound is raised with the time the NPUs and the DRAM channel have
already spent (:meth:`~npusched.heuristics.flexer.engine.Engine.latency_bound`), times the
bytes moved so far, and the schedule stops once it reaches the best. Layers with the same
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

import functools
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from npusched.arch.model import Arch
from npusched.costmodel import CostModel, TileShape, cost_model
from npusched.heuristics.flexer.beam import beam_schedule
from npusched.heuristics.flexer.ooo import (
    DATAFLOWS,
    NoFit,
    Pruned,
    TimeUp,
    ooo_schedule,
)
from npusched.heuristics.flexer.static import static_bytes, static_schedule
from npusched.partition.flexer import tiled_conv
from npusched.partition.grid import DIMS, Tiling, layer_extents
from npusched.problem.flexer.layer import FlexerSchedule, TiledConv, supports
from npusched.problem.flexer.settings import STATIONARITY, Settings
from npusched.solvers.result import Result, Status
from npusched.workload.layers import Layer
from npusched.workload.network import Network

#: the layer searches: the OoO greedy, its beam search, the static baseline
KINDS = ("ooo", "beam", "static")
#: every loop permutation × stationarity of the static baseline
STATIC_DATAFLOWS = tuple(
    (",".join(p), s) for p in itertools.permutations(DIMS) for s in STATIONARITY
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
    """The layer's DFG for ``tiles``; operations cost what the settings' cost model says."""
    latency_of = None
    if s.cost != "compute":
        assert s.arch is not None
        model, core = _cost(s.cost, s.arch, s.lpf_limit), s.arch.cores[0]

        def latency_of(shape: TileShape) -> int:
            return model.latency(shape, core)

    return tiled_conv(
        net,
        layer,
        tiles,  # type: ignore[arg-type]
        dict(s.unroll),
        s.elem_bytes,
        fill_drain=s.op_overhead,
        latency_of=latency_of,
    )


@functools.lru_cache(maxsize=8)
def _cost(name: str, arch: Arch, lpf_limit: int) -> CostModel:
    """One cost model per process, architecture and LOMA limit (its cache serves every
    tiling); ``lpf_limit`` matters to ZigZag only."""
    if name == "zigzag":
        return cost_model(name, arch, lpf_limit=lpf_limit)
    return cost_model(name, arch)


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
    """One schedule: ``kind`` ``ooo`` (the greedy) or ``beam``
    (:func:`~npusched.heuristics.flexer.beam.beam_schedule`, ``s.beam_width`` ×
    ``s.beam_depth``) with an OoO dataflow (``OS``, ``WS``, ``IS``), or ``static`` with
    ``"LOOP,ORDER/STATIONARITY"``."""
    if kind == "beam":
        return beam_schedule(
            p, s.n_npus, s.capacity, s.bandwidth, width=s.beam_width, depth=s.beam_depth,
            dataflow=dataflow, priority=s.priority, mem_policy=s.mem_policy, window=s.window,
            metric=s.metric, stop_above=stop_above, prefetch=s.prefetch, deadline=deadline,
        )  # fmt: skip
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


def distinct_dataflows(p: TiledConv, dataflows: Sequence[str]) -> list[str]:
    """The first of each class of ``dataflows`` that schedule ``p`` alike. A schedule depends
    on its loop order only through the order of the dimensions with more than one tile (a
    loop of one iteration does not change the order operations come in: ``"K,OY,OX,C"`` and
    ``"OY,K,OX,C"`` are one order when ``K`` has one tile), and a static schedule also on its
    stationarity; the search skips the rest, which would only repeat a schedule (about half
    of the static searches' schedules on ResNet-50, ``docs/results_flexer.md``)."""
    counts = dict(zip(DIMS, p.counts, strict=True))
    seen: set[tuple[tuple[str, ...], str]] = set()
    out = []
    for df in dataflows:
        order, _, stationary = df.partition("/")
        loops = DATAFLOWS.get(order, order).split(",")
        key = (tuple(d for d in loops if counts[d.strip().upper()] > 1), stationary)
        if key not in seen:
            seen.add(key)
            out.append(df)
    return out


def _search(
    cands: Sequence[tuple[float, tuple[int, int, int, int], TiledConv]],
    s: Settings,
    kind: str,
    dataflows: Sequence[str],
    deadline: float | None = None,
    incumbent: tuple[Choice | None, FlexerSchedule | None] = (None, None),
    finished: list[tuple[float, int, str, TiledConv]] | None = None,
) -> tuple[Choice | None, FlexerSchedule | None, int, bool]:
    """Branch and bound over ``cands`` (by bound) from ``incumbent`` (a best choice and its
    schedule already known): the best choice and its schedule, the tilings evaluated and
    whether the search ran to the end (``False`` when ``deadline`` passed). ``finished``
    collects ``(metric, tiling's rank, dataflow, DFG)`` of every schedule that ran to its end."""
    best, best_sched = incumbent
    evaluated = 0
    for bound, tiles, p in cands:
        if best is not None and bound >= best.metric:
            break
        evaluated += 1
        lat = lat_bound(p, s)
        for df in distinct_dataflows(p, dataflows):
            stop = (lat, best.metric) if best and s.metric == "latency*bytes" else None
            try:
                if deadline is not None and time.time() > deadline:
                    raise TimeUp("time limit reached")
                if kind == "static" and best and not _static_may_win(p, s, df, lat, best):
                    continue  # its bytes alone rule it out: not timed
                sched = run(p, s, kind, df, stop, deadline)
            except (NoFit, Pruned):
                continue
            except TimeUp:
                return best, best_sched, evaluated, False
            ch = summarize(sched, tiles, df, s.metric)
            if finished is not None:
                finished.append((ch.metric, evaluated, df, p))
            if best is None or ch.metric < best.metric:
                best, best_sched = ch, sched
    return best, best_sched, evaluated, True


def _static_may_win(p: TiledConv, s: Settings, dataflow: str, lat: float, best: Choice) -> bool:
    """Whether the static schedule of ``p`` in ``dataflow`` could beat ``best``: its exact bytes
    (:func:`~npusched.heuristics.flexer.static.static_bytes`, no timing) and ``lat``
    (:func:`lat_bound`, below its latency) bound its metric. Raises
    :class:`~npusched.heuristics.flexer.memory.NoFit` as the schedule would."""
    if s.metric == "latency":
        return True
    order, stat = dataflow.split("/")
    stop = (lat if s.metric == "latency*bytes" else 1.0, best.metric)
    try:
        nbytes = static_bytes(p, s.n_npus, s.capacity, s.bandwidth, loop_order=order,
                              stationary=stat, stop_above=stop)  # fmt: skip
    except Pruned:
        return False
    return stop[0] * nbytes < best.metric


def _beam_search(
    cands: Sequence[tuple[float, tuple[int, int, int, int], TiledConv]],
    s: Settings,
    dataflows: Sequence[str],
    deadline: float | None,
) -> tuple[Choice | None, FlexerSchedule | None, int, bool]:
    """``flexer-beam``'s search (see :func:`search_layer`): the greedy's branch and bound,
    then the beam on the ``s.beam_top`` best (tiling, dataflow) pairs of the greedy (``0``:
    branch and bound over every tiling × dataflow), each pruned by the best so far."""
    finished: list[tuple[float, int, str, TiledConv]] = []
    best, sched, evaluated, done = _search(
        cands, s, "ooo", dataflows, deadline, (None, None), finished
    )
    if not done:
        return best, sched, evaluated, False
    if not s.beam_top:
        best, sched, more, done = _search(cands, s, "beam", dataflows, deadline, (best, sched))
        return best, sched, evaluated + more, done
    for _, _, df, p in sorted(finished, key=lambda f: f[:3])[: s.beam_top]:
        assert best is not None
        stop = (lat_bound(p, s), best.metric) if s.metric == "latency*bytes" else None
        try:
            got = run(p, s, "beam", df, stop, deadline)
        except (NoFit, Pruned):
            continue
        except TimeUp:
            return best, sched, evaluated, False
        ch = summarize(got, p.tiles, df, s.metric)
        if ch.metric < best.metric:
            best, sched = ch, got
    return best, sched, evaluated, True


def candidates(
    net: Network, layer: Layer, s: Settings
) -> list[tuple[float, tuple[int, int, int, int], TiledConv]]:
    """The viable tilings of ``layer`` with their :func:`metric_bound`, best bound first (ties:
    fewest operations). A tiling is viable when it has at most ``max_ops`` operations, one
    operation's tiles fit in the buffer (checked before ZigZag runs) and the cost
    model can map its tiles on the NPU (ZigZag rejects a tile whose operands exceed the
    NPU's share of the buffer, :func:`~npusched.costmodel.zigzag_input.sram_bits`, with a
    ``ValueError``)."""
    steps = replace(s, cost="compute", arch=None)
    cands = []
    for tiles in tiling_space(net, layer, s):
        if n_ops(net, layer, tiles) > s.max_ops > 0:
            continue
        # ZigZag may reject a tile: the buffer fit first, on the array's steps (cheap)
        p = layer_problem(net, layer, tiles, steps if s.cost == "zigzag" else s)
        if max(p.footprint(o) for o in (0, p.n_ops - 1)) > s.capacity:
            continue
        if s.cost == "zigzag":
            try:
                p = layer_problem(net, layer, tiles, s)
            except ValueError:
                continue
        cands.append((metric_bound(p, s), tiles, p))
    cands.sort(key=lambda c: (c[0], c[2].n_ops))
    return cands


def search_layer(
    net: Network, layer: Layer, s: Settings, kind: str, deadline: float | None = None
) -> Result:
    """Algorithm 1 for one layer: the best OoO schedule (``kind="ooo"``, or ``"beam"`` for
    :func:`~npusched.heuristics.flexer.beam.beam_schedule`) over tilings × dataflows
    (:data:`~npusched.heuristics.flexer.ooo.DATAFLOWS`), or the best static schedule
    (``"static"``) over tilings × loop orders × stationarities (:data:`STATIC_DATAFLOWS`). Past
    ``deadline`` (a ``time.time()``) the search stops with the best found so far.

    ``"beam"`` first runs the greedy's search; its best is the incumbent the beam must beat
    (branches that cannot are pruned), so the result is never worse than the ``ooo`` search's.
    The beam then refines the ``s.beam_top`` (tiling, dataflow) pairs whose greedy schedules
    are best, or with ``beam_top = 0`` every tiling × dataflow by branch and bound (far slower:
    the metric's lower bound prunes few tilings). ``evaluated`` counts the greedy's tilings
    (plus the beam's with ``beam_top = 0``).

    Returns
    -------
    Result
        ``feasible`` with the best schedule as ``solution`` and its metric as ``objective``
        (a heuristic: nothing is proven optimal); ``time_limit_no_solution`` when the deadline
        passed first, ``error`` when no tiling × dataflow fits. ``bound``: the least
        :func:`metric_bound` of the viable tilings. ``stats``: ``latency_bound`` (the least
        :func:`lat_bound` of the viable tilings: no schedule of the layer in this tiling space,
        OoO or static, is shorter), ``tiling``, ``dataflow``,
        ``latency``, ``transfer_bytes``, ``bytes_by_type``, ``reloads`` of the best, and
        ``tilings`` (viable), ``evaluated`` and ``complete`` (the search ran to its end).

    Raises
    ------
    ValueError
        Unknown ``kind``, or a layer Flexer does not tile.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown search {kind!r}; choose from {KINDS}")
    if not supports(layer):
        raise ValueError(f"{layer.name}: {layer.op} is not tiled")
    t0 = time.perf_counter()
    late = deadline is not None and time.time() > deadline  # then not even the tilings
    cands = [] if late else candidates(net, layer, s)
    dfs = list(DATAFLOWS) if kind != "static" else [f"{o}/{st}" for o, st in STATIC_DATAFLOWS]
    if kind == "beam":
        best, sched, evaluated, done = _beam_search(cands, s, dfs, deadline)
    else:
        best, sched, evaluated, done = _search(cands, s, kind, dfs, deadline)
    done = done and not late
    out = Result(Status.FEASIBLE, f"flexer-{kind}", "none", solution=sched)
    out.bound = cands[0][0] if cands else None
    out.stats = {"tilings": len(cands), "evaluated": evaluated, "complete": done}
    out.stats["latency_bound"] = min((lat_bound(p, s) for _, _, p in cands), default=None)
    if best is None:
        out.status = Status.ERROR if done else Status.TIME_LIMIT_NO_SOLUTION
        out.message = "no tiling x dataflow fits" if done else "time limit before a schedule"
    else:
        out.objective = best.metric
        out.stats |= {"tiling": best.tiles, "dataflow": best.dataflow, "latency": best.latency}
        out.stats |= {"transfer_bytes": best.transfer_bytes, "reloads": best.reloads}
        out.stats["bytes_by_type"] = best.bytes_by_type
    out.runtime_s = time.perf_counter() - t0
    return out


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
