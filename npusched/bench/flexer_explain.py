"""``python -m npusched.bench.flexer explain`` (:mod:`npusched.bench.flexer`): where each
layer's time goes under the OoO and static schedules (:func:`bench_explain`), why OoO loses
where it does (:func:`loss_cause`), printed and drawn."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tabulate import tabulate

from npusched.arch import flexer_arch_name, load_arch
from npusched.heuristics.flexer.explain import CATEGORIES, time_split
from npusched.heuristics.flexer.ooo import DATAFLOWS, NoFit
from npusched.heuristics.flexer.search import layer_problem, run
from npusched.methods.flexer import (
    figures,
    search_network,
)
from npusched.plot.flexer_explain import time_split_bars
from npusched.problem.flexer.layer import FlexerSchedule
from npusched.workload.network import Network
from npusched.workload.zoo import load_network

#: Settings options every mode passes to the search (``max_ops``, ``fill_drain``, ``cost``,
#: ``beam_width``, ``beam_depth``)
Options = dict[str, Any]
#: the searches of ``search``, ``explain`` and ``speed``: ``--scheduler`` (ooo or beam), static
Kinds = tuple[str, ...]
OOO_STATIC: Kinds = ("ooo", "static")


def _split_of(r: Any) -> tuple[FlexerSchedule, dict[str, int]] | None:
    """A layer search's best schedule and its time split (``None`` without a schedule)."""
    if r is None or not isinstance(r.solution, FlexerSchedule):
        return None
    return r.solution, time_split(r.solution)


def _pct(split: dict[str, int], total: int) -> dict[str, float]:
    return {c: round(100 * split[c] / total, 1) if total else 0.0 for c in CATEGORIES}


def loss_cause(o: FlexerSchedule, so: dict[str, int], st: FlexerSchedule, ss: dict[str, int]):
    """Why OoO's schedule ``o`` (split ``so``) is worse than the static ``st`` (``ss``) by
    latency × bytes: ``(group, text)``. The group is the larger factor of the metric — latency
    with the category that grew most, or bytes with the data type moved most in excess. The text
    gives both ratios, the two categories that grew most (NPU cycles / NPUs, in % of the static
    latency) and the data type moved most in excess."""
    n = o.n_npus
    lat, nb = o.latency / st.latency, o.transfer_bytes / st.transfer_bytes
    grew = sorted(((so[c] - ss[c]) / n, c) for c in CATEGORIES)[::-1]
    bo, bs = o.bytes_by_type(), st.bytes_by_type()
    extra = max(bo, key=lambda k: bo[k] - bs[k])
    parts = [f"{c} {d / st.latency:+.1%}" for d, c in grew[:2] if d > 0]
    text = f"latency x{lat:.3f} ({', '.join(parts) or 'no category grew'}); bytes x{nb:.3f}"
    if bo[extra] > bs[extra]:
        text += f" ({extra} +{(bo[extra] - bs[extra]) / 1024:.0f} KiB)"
    if lat >= nb and grew[0][0] > 0:
        return f"latency: {grew[0][1]}", text
    return (f"bytes: {extra}" if nb > 1 else f"latency: {grew[0][1]}"), text


def _explain_row(name: str, a: str, layer: str, kind: str, r: Any, got: Any) -> dict:
    """One row of the ``explain`` table: a layer's schedule, its figures and its split in %."""
    sched, split = got
    f = figures(r)
    assert f is not None
    return {
        "network": name,
        "arch": a,
        "layer": layer,
        "scheduler": kind,
        "tiling": "x".join(map(str, f["tiling"])),
        "latency": sched.latency,
        "KiB": round(sched.transfer_bytes / 1024),
        **_pct(split, sched.latency * sched.n_npus),
        "cycles": split,
    }


def _same_tiling(net: Network, layer_name: str, s: Any, st: FlexerSchedule, ss: dict[str, int]):
    """OoO (the best of its dataflows by the metric) on the static schedule's tiling, against
    that static schedule: ``(metric ratio, cause text)``, or ``None`` when nothing fits."""
    layer = next(ly for ly in net.layers if ly.name == layer_name)
    p = layer_problem(net, layer, st.problem.tiles, s)
    best: FlexerSchedule | None = None
    for df in DATAFLOWS:
        try:
            o = run(p, s, "ooo", df)
        except NoFit:
            continue
        if best is None or o.metric() < best.metric():
            best = o
    if best is None:
        return None
    return best.metric() / st.metric(), loss_cause(best, time_split(best), st, ss)[1]


def bench_explain(
    nets: list[str],
    archs: list[str],
    workers: int,
    opts: dict[str, Any],
    plot: str | None,
    kinds: tuple[str, ...] = OOO_STATIC,
) -> list[dict]:
    """The ``explain`` mode (module notes): prints the per-layer and total tables and the
    causes; returns one row per layer × scheduler (an OoO row that loses carries its cause,
    and OoO's metric ratio and cause on the static schedule's tiling)."""
    rows: list[dict] = []
    for name, a in itertools.product(nets, archs):
        net = load_network(name)
        arch = load_arch(flexer_arch_name(a))
        res = search_network(net, arch, kinds=kinds, workers=workers, **opts)
        layers, causes, seen = [], [], {}
        tot = {k: dict.fromkeys(CATEGORIES, 0) for k in ("ooo", "static")}
        for r in res.layers:
            got = {"ooo": _split_of(r.ooo), "static": _split_of(r.static)}
            for kind, g in got.items():
                if g is not None:
                    rows.append(_explain_row(name, a, r.name, kind, getattr(r, kind), g))
            if got["ooo"] is None or got["static"] is None:
                continue
            (o, so), (st, ss) = got["ooo"], got["static"]
            for kind, sp in (("ooo", so), ("static", ss)):
                for c in CATEGORIES:
                    tot[kind][c] += sp[c]
            lose = o.metric() > st.metric()
            layers.append((r.name, so, ss, lose))
            if lose:
                group, text = loss_cause(o, so, st, ss)
                key = (st.problem.name, st.problem.tiles, st.latency, st.transfer_bytes)
                if key not in seen:
                    seen[key] = _same_tiling(net, r.name, res.settings, st, ss)
                same = seen[key]
                cause = {
                    "layer": r.name,
                    "metric_ratio": round(o.metric() / st.metric(), 3),
                    "group": group,
                    "cause": text,
                    "same_tiling_ratio": None if same is None else round(same[0], 3),
                    "same_tiling_cause": None if same is None else same[1],
                }
                causes.append(cause)
                rows[-2] |= {k: v for k, v in cause.items() if k != "layer"}
        _print_explain(name, a, rows, tot, causes, len(layers))
        if plot and layers:
            _draw(plot, name, a, layers, res.settings.n_npus, len(nets) * len(archs) > 1)
    return rows


def _print_explain(
    name: str,
    arch: str,
    rows: list[dict],
    tot: dict[str, dict[str, int]],
    causes: list[dict],
    compared: int,
) -> None:
    """The per-layer table, the totals and the layers where OoO loses, with their causes."""
    hide = {"network", "arch", "cycles", "metric_ratio", "group", "cause"}
    hide |= {"same_tiling_ratio", "same_tiling_cause"}
    mine = [r for r in rows if (r["network"], r["arch"]) == (name, arch)]
    print(f"{name} on {arch}: % of latency x NPUs per layer and scheduler")
    table = [{k: v for k, v in r.items() if k not in hide} for r in mine]
    print(tabulate(table, headers="keys", tablefmt="github"))
    total = [
        {"scheduler": k, "NPU cycles": sum(v.values()), **_pct(v, sum(v.values()))}
        for k, v in tot.items()
    ]
    print(f"\ntotal over the {compared} layers both schedulers scheduled (% of NPU cycles)")
    print(tabulate(total, headers="keys", tablefmt="github"))
    groups: dict[str, int] = {}
    for c in causes:
        groups[c["group"]] = groups.get(c["group"], 0) + 1
    ranked = sorted(groups.items(), key=lambda x: -x[1])
    summary = ", ".join(f"{g} {k}" for g, k in ranked)
    print(f"\nOoO loses by latency x bytes on {len(causes)} of {compared} layers: {summary}")
    if causes:
        print(tabulate(causes, headers="keys", tablefmt="github"))
    print(flush=True)


def _draw(plot: str, name: str, arch: str, layers: list[Any], n: int, many: bool) -> None:
    """The stacked bars of :func:`~npusched.plot.flexer_explain.time_split_bars`."""
    path = Path(plot)
    if many:
        path = path.with_name(f"{path.stem}-{name}-{arch}{path.suffix or '.png'}")
    labels, ooo, static, losing = zip(*layers, strict=True)
    title = f"{name} on {arch}: OoO (left) and best static order (right, hatched)"
    time_split_bars(labels, ooo, static, n, path, title=title, losing=losing)
    print(f"wrote {path}")
