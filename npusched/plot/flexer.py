"""Plots of Flexer schedules (Min, Kwon, Egger, CGO 2023): the global buffer over time and in
snapshots (Fig. 5), transferred data per data type and reload count (Fig. 10), spatial data reuse
between NPUs (Fig. 11) and the priority / memory-policy ablation (Fig. 12).

The data behind each plot comes from a small pure helper (:func:`residency_blocks`,
:func:`snapshot`, :func:`reload_histogram`, :func:`sharing_profile`, :func:`sharing_counts`,
:func:`normalise`), so it can be checked without looking at pixels.

Colours are shared by all plots: input blue, weight green, partial sum orange, output red. An
output tile holds a *partial sum* (``psum``) until the last operation of its chain ends and the
final *output* afterwards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.collections import PolyCollection
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from numpy.typing import NDArray

from npusched.plot._figure import finish
from npusched.problem.flexer.layer import OT, TRANSFER_TYPES, TYPE_NAMES, FlexerSchedule, TiledConv

#: Categories of buffer contents and transfers, in stacking order (= ``TRANSFER_TYPES``).
CATEGORIES = TRANSFER_TYPES
COLORS = {"input": "tab:blue", "weight": "tab:green", "psum": "tab:orange", "output": "tab:red"}
CMAPS = {"input": "Blues", "weight": "Greens", "psum": "Oranges", "output": "Reds"}
LABELS = {"input": "IN", "weight": "WT", "psum": "OT (partial)", "output": "OT"}
_MIB = float(1 << 20)
_KIB = 1024.0


def _axes(ax: plt.Axes | None, figsize: tuple[float, float]) -> tuple[plt.Figure, plt.Axes]:
    """A new figure and axes, or the figure of the caller's ``ax``."""
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize)
        return fig, ax
    root = ax.get_figure(root=True)
    assert isinstance(root, plt.Figure)
    return root, ax


def tile_label(problem: TiledConv, d: int) -> str:
    """Name of data tile ``d`` within its type: ``IN0``, ``WT3``, ``OT1``…"""
    t = int(problem.data_type[d])
    first = int(np.argmax(problem.data_type == t))
    return f"{TYPE_NAMES[t]}{d - first}"


def _final_time(schedule: FlexerSchedule) -> NDArray[np.float64]:
    """Per data tile, the cycle from which an output tile holds its final value (the end of the
    last operation of its chain); ``inf`` for inputs, weights and unfinished chains."""
    p = schedule.problem
    final = np.full(p.n_data, np.inf)
    last = np.flatnonzero(p.op_c == p.counts[3] - 1)
    final[p.op_ot[last]] = schedule.end[last]
    return final


# ---- Fig. 5: the global buffer ------------------------------------------------------------


def residency_blocks(schedule: FlexerSchedule) -> dict[str, NDArray[np.int64]]:
    """Residencies as rectangles of the memory map, one row per block: arrays ``start``,
    ``end``, ``addr``, ``size``, ``data`` and ``cat`` (index into :data:`CATEGORIES`).

    Input and weight residencies are one block each; an output tile's residency is cut at the
    end of its chain into a partial-sum part and a final-output part (either may be empty).
    """
    p = schedule.problem
    r = schedule.residencies
    cols = np.array([(x.data, x.addr, x.size, x.start, x.end) for x in r], np.int64).reshape(-1, 5)
    data, addr, size, start, end = cols.T
    dtype = p.data_type[data]
    final = _final_time(schedule)[data]
    ot = dtype == OT
    # inputs and weights: one block, category = type; output tiles: partial then final part
    keep = ~ot
    parts = [(start[keep], end[keep], addr[keep], size[keep], data[keep], dtype[keep])]
    cut = np.clip(final[ot], start[ot], end[ot]).astype(np.int64)
    for lo, hi, cat in (
        (start[ot], cut, CATEGORIES.index("psum")),
        (cut, end[ot], CATEGORIES.index("output")),
    ):
        nz = hi > lo
        parts.append(
            (lo[nz], hi[nz], addr[ot][nz], size[ot][nz], data[ot][nz], np.full(nz.sum(), cat))
        )
    names = ("start", "end", "addr", "size", "data", "cat")
    return {n: np.concatenate([q[i] for q in parts]).astype(np.int64) for i, n in enumerate(names)}


def snapshot(schedule: FlexerSchedule, t: float) -> list[tuple[int, int, str, int]]:
    """Buffer contents at cycle ``t``: ``(addr, size, category, data)`` of every residency with
    ``start <= t < end``, by address."""
    final = _final_time(schedule)
    p = schedule.problem
    out = []
    for r in schedule.residencies:
        if r.start <= t < r.end:
            ty = int(p.data_type[r.data])
            cat = CATEGORIES[ty] if ty != OT else ("psum" if t < final[r.data] else "output")
            out.append((r.addr, r.size, cat, r.data))
    return sorted(out)


def _legend(ax: plt.Axes) -> None:
    """Legend of the buffer categories, outside the axes on the right."""
    handles = [Patch(facecolor=COLORS[c], edgecolor="black", label=LABELS[c]) for c in CATEGORIES]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def memory_map(
    schedule: FlexerSchedule,
    times: Sequence[float] | None = None,
    ax: plt.Axes | None = None,
    path: str | Path | None = None,
    title: str = "",
) -> plt.Figure:
    """The global buffer over time: every residency is a rectangle ``[start, end) × [addr, addr
    + size)`` (x = cycle, y = address in KiB) coloured by what it holds (IN, WT, OT partial,
    OT final). Dashed vertical lines mark the snapshot ``times`` (see :func:`memory_snapshots`)
    and a horizontal line the capacity.

    One :class:`~matplotlib.collections.PolyCollection` per category, so thousands of
    residencies draw in well under a second; block edges are drawn only up to 500 blocks."""
    fig, ax = _axes(ax, (11, 4.5))
    b = residency_blocks(schedule)
    edge = len(b["start"]) <= 500
    for k, cat in enumerate(CATEGORIES):
        m = b["cat"] == k
        if not m.any():
            continue
        x0, x1 = b["start"][m].astype(float), b["end"][m].astype(float)
        y0 = b["addr"][m] / _KIB
        y1 = y0 + b["size"][m] / _KIB
        verts = np.stack([np.c_[x0, y0], np.c_[x1, y0], np.c_[x1, y1], np.c_[x0, y1]], axis=1)
        ax.add_collection(
            PolyCollection(
                list(verts),
                facecolors=COLORS[cat],
                edgecolors="black" if edge else "none",
                linewidths=0.3 if edge else 0.0,
                alpha=0.85,
                label=LABELS[cat],
            )
        )
    cap = schedule.capacity / _KIB
    ax.axhline(cap, color="black", lw=0.8, ls=":")
    for t in times or ():
        ax.axvline(t, color="black", lw=0.8, ls="--")
    ax.set_xlim(0, max(1, schedule.latency))
    ax.set_ylim(0, cap * 1.02)
    ax.set_xlabel("cycle")
    ax.set_ylabel("address (KiB)")
    ax.set_title(title or f"{schedule.problem.name}: global buffer ({cap:g} KiB)")
    _legend(ax)
    return finish(fig, path)


def memory_snapshots(
    schedule: FlexerSchedule,
    times: Sequence[float],
    ax: plt.Axes | None = None,
    path: str | Path | None = None,
    title: str = "",
    label_limit: int = 60,
) -> plt.Figure:
    """The buffer at each cycle of ``times`` as in Fig. 5: one horizontal bar per time (x =
    address in KiB, white = free), blocks coloured by data type and named (``IN0``, ``WT3``…)
    when a row holds at most ``label_limit`` blocks and the block is wide enough."""
    times = list(times)
    fig, ax = _axes(ax, (10, 0.8 + 0.55 * max(1, len(times))))
    p = schedule.problem
    cap = schedule.capacity / _KIB
    for row, t in enumerate(times):
        ax.broken_barh([(0, cap)], (row - 0.4, 0.8), facecolors="white", edgecolors="black")
        blocks = snapshot(schedule, t)
        for cat in CATEGORIES:
            spans = [(a / _KIB, s / _KIB) for a, s, c, _ in blocks if c == cat]
            if spans:
                ax.broken_barh(
                    spans,
                    (row - 0.4, 0.8),
                    facecolors=COLORS[cat],
                    edgecolors="black",
                    linewidth=0.4,
                )
        if len(blocks) <= label_limit:
            for a, s, _, d in blocks:
                if s >= 0.03 * schedule.capacity:
                    ax.text(
                        (a + s / 2) / _KIB,
                        row,
                        tile_label(p, d),
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white",
                    )
    ax.set_yticks(np.arange(len(times)), [f"t = {t:,.0f}" for t in times])
    ax.set_ylim(len(times) - 0.5, -0.5)
    ax.set_xlim(0, cap)
    ax.set_xlabel("address (KiB)")
    ax.set_title(title or f"{p.name}: buffer snapshots")
    _legend(ax)
    return finish(fig, path)


# ---- Fig. 10: transferred data and reload count ---------------------------------------------


def reload_histogram(x: FlexerSchedule | TiledConv) -> dict[str, dict[int, int]]:
    """Bytes moved per category, split by how often each tile was moved in that category:
    ``{dtype: {moves: bytes}}`` for ``dtype`` in :data:`CATEGORIES`.

    A tile loaded three times contributes three times its size to ``moves = 3``; a partial sum
    spilled once and reloaded once counts two ``psum`` moves. Per category the bytes sum to
    :meth:`FlexerSchedule.bytes_by_type`. A :class:`TiledConv` stands for the *on-chip* bar
    (unlimited buffer): every input and weight loaded once and every output written once
    (:meth:`TiledConv.onchip_bytes`)."""
    out: dict[str, dict[int, int]] = {c: {} for c in CATEGORIES}
    if isinstance(x, TiledConv):
        for c, b in x.onchip_bytes().items():
            if b:
                out[c][1] = b
        return out
    moves: dict[tuple[str, int], list[int]] = {}
    for t in x.transfers:
        moves.setdefault((t.dtype, t.data), []).append(t.nbytes)
    for (c, _), sizes in moves.items():
        h = out[c]
        h[len(sizes)] = h.get(len(sizes), 0) + sum(sizes)
    return {c: dict(sorted(h.items())) for c, h in out.items()}


def _shade(k: int, top: int) -> float:
    """Colour-map position of ``k`` moves when the most-moved tile has ``top``."""
    return 0.3 + 0.65 * (k - 1) / max(1, top - 1)


def transfer_breakdown(
    bars: dict[str, FlexerSchedule | TiledConv],
    ax: plt.Axes | None = None,
    path: str | Path | None = None,
    title: str = "",
) -> plt.Figure:
    """Fig. 10: one stacked bar per entry of ``bars`` (e.g. ``{"on-chip": problem, "Flexer":
    s1, "static": s2}``), MiB transferred per category (input, weight, partial sum, output from
    the bottom), each category split by moves per tile (:func:`reload_histogram`). The colour
    saturation is the move count — light: moved once, dark: the most-moved tile in the figure —
    and the grey colour bar gives its scale; bar totals are written on top."""
    hists = {name: reload_histogram(x) for name, x in bars.items()}
    top = max((k for h in hists.values() for hc in h.values() for k in hc), default=1)
    fig, ax = _axes(ax, (3 + 1.2 * len(bars), 4.5))
    for i, h in enumerate(hists.values()):
        bottom = 0.0
        for c in CATEGORIES:
            cmap = plt.get_cmap(CMAPS[c])
            for k, b in h[c].items():
                ax.bar(
                    i,
                    b / _MIB,
                    0.6,
                    bottom=bottom,
                    color=cmap(_shade(k, top)),
                    edgecolor="black",
                    linewidth=0.3,
                )
                bottom += b / _MIB
        ax.text(i, bottom, f"{bottom:.3g}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(bars)), list(bars))
    ax.set_xlim(-0.6, len(bars) - 0.4)
    ax.set_ylabel("transferred data (MiB)")
    ax.margins(y=0.1)
    handles = [
        Patch(facecolor=plt.get_cmap(CMAPS[c])(0.6), edgecolor="black", label=c)
        for c in reversed(CATEGORIES)
    ]
    ax.legend(handles=handles, fontsize=7, loc="upper left")
    greys = plt.get_cmap("Greys")
    levels = ListedColormap([greys(_shade(k, top)) for k in range(1, top + 1)])
    norm = BoundaryNorm(np.arange(0.5, top + 1.5), top)
    cb = fig.colorbar(ScalarMappable(norm, levels), ax=ax, pad=0.02)
    cb.set_label("moves per tile")
    ticks = MaxNLocator(nbins=8, integer=True).tick_values(1, top)
    cb.set_ticks([int(k) for k in ticks if 1 <= k <= top])
    ax.set_title(title or "transferred data per type and reload count")
    return finish(fig, path)


# ---- Fig. 11: spatial data reuse --------------------------------------------------------------


def _tile_npu_intervals(
    schedule: FlexerSchedule,
) -> tuple[NDArray[np.int64], dict[str, tuple[NDArray[np.int64], NDArray[np.int64]]]]:
    """Breakpoints ``bp`` of the operations' ``[start, end)`` and, per data type, for every
    (elementary interval, tile) in use: the interval index and how many distinct NPUs use it."""
    p = schedule.problem
    start = np.asarray(schedule.start, np.int64)
    end = np.asarray(schedule.end, np.int64)
    bp = np.unique(np.r_[start, end]).astype(np.int64)
    i0 = np.searchsorted(bp, start)
    n_int = np.searchsorted(bp, end) - i0
    total = int(n_int.sum())
    ops = np.repeat(np.arange(p.n_ops), n_int)
    seg = np.repeat(i0 - (np.cumsum(n_int) - n_int), n_int) + np.arange(total)
    npu = np.asarray(schedule.npu, np.int64)[ops]
    n_npus = max(1, schedule.n_npus, int(npu.max(initial=0)) + 1)
    out = {}
    for name, opd in zip(TYPE_NAMES, (p.op_in, p.op_wt, p.op_ot), strict=True):
        key = np.unique((seg * p.n_data + opd[ops]) * n_npus + npu)
        pair, degree = np.unique(key // n_npus, return_counts=True)
        out[name] = (pair // p.n_data, degree.astype(np.int64))
    return bp, out


def sharing_profile(
    schedule: FlexerSchedule,
) -> tuple[NDArray[np.int64], dict[str, NDArray[np.int64]]]:
    """NPUs engaged in spatial reuse over time: breakpoints ``bp`` (the sorted distinct start
    and end cycles of the operations) and, per data type (``IN``, ``WT``, ``OT``), for every
    interval ``[bp[i], bp[i + 1])`` the number of NPUs whose operand tile of that type is used
    by at least one *other* NPU at the same time."""
    bp, per = _tile_npu_intervals(schedule)
    m = max(0, bp.size - 1)
    prof = {}
    for name, (seg, degree) in per.items():
        shared = degree >= 2
        prof[name] = np.bincount(seg[shared], weights=degree[shared], minlength=m).astype(np.int64)[
            :m
        ]
    return bp, prof


def sharing_counts(schedule: FlexerSchedule) -> dict[str, dict[int, int]]:
    """Per data type, tile-cycles by sharing degree: ``{type: {k: cycles}}`` sums, over the
    tiles of that type, the cycles during which exactly ``k`` NPUs use the tile at once
    (``k = 1``: used by one NPU, no spatial reuse). ``Σ k · cycles`` is the busy time of all
    operations, since every operation reads one tile of each type."""
    bp, per = _tile_npu_intervals(schedule)
    dur = np.diff(bp)
    out: dict[str, dict[int, int]] = {}
    for name, (seg, degree) in per.items():
        cyc = np.bincount(degree, weights=dur[seg]) if degree.size else np.zeros(0)
        out[name] = {k: int(c) for k, c in enumerate(cyc.tolist()) if c > 0}
    return out


def spatial_reuse(
    schedule: FlexerSchedule,
    ax: plt.Axes | None = None,
    path: str | Path | None = None,
    title: str = "",
) -> plt.Figure:
    """Fig. 11: spatial data reuse between NPUs over time, one band per data type (IN, WT, OT
    from the top).

    Within its band, the filled step curve of a type is the number of NPUs whose operand tile of
    that type is used by another NPU at the same time (:func:`sharing_profile`), from 0 (band
    floor) to all ``n_npus`` (dotted band ceiling); the right margin gives the share of
    operation time spent reusing that type. A step plot on one time axis was chosen over a heat
    map because the NPU count can be read off directly and the bands line up with
    :func:`memory_map` and a Gantt chart of the same schedule; a stationary loop-order schedule
    shows one filled band (e.g. WT), an out-of-order schedule patches in several."""
    fig, ax = _axes(ax, (10, 3.2))
    bp, prof = sharing_profile(schedule)
    counts = sharing_counts(schedule)
    n = max(1, schedule.n_npus)
    h = 0.85
    types = list(TYPE_NAMES)
    colors = {"IN": COLORS["input"], "WT": COLORS["weight"], "OT": COLORS["psum"]}
    for i, name in enumerate(types):
        base = len(types) - 1 - i
        ax.axhline(base, color="grey", lw=0.5)
        ax.axhline(base + h, color="grey", lw=0.5, ls=":")
        if bp.size >= 2:
            y = base + h * np.r_[prof[name], prof[name][-1]] / n
            ax.fill_between(bp, base, y, step="post", color=colors[name], alpha=0.85, lw=0)
        busy = sum(k * c for k, c in counts[name].items())
        shared = sum(k * c for k, c in counts[name].items() if k >= 2)
        frac = shared / busy if busy else 0.0
        ax.annotate(
            f"{frac:.0%} shared",
            (1.0, base + h / 2),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    ax.set_yticks(
        [len(types) - 1 - i + h / 2 for i in range(len(types))],
        [f"{t} (0–{n} NPUs)" for t in types],
    )
    ax.set_ylim(-0.1, len(types))
    ax.set_xlim(0, max(1, schedule.latency))  # the time axis of memory_map
    ax.set_xlabel("cycle")
    ax.set_title(title or f"{schedule.problem.name}: spatial data reuse on {n} NPUs")
    return finish(fig, path)


# ---- Fig. 12: policy ablation -----------------------------------------------------------------


def normalise(
    table: dict[str, dict[str, float]], default: str = "default"
) -> dict[str, dict[str, float]]:
    """``table[group][policy] / table[group][default]`` for every group (network / arch).

    Raises
    ------
    ValueError
        When a group lacks ``default`` or its value is not positive.
    """
    out = {}
    for g, row in table.items():
        ref = row.get(default)
        if ref is None or not ref > 0:
            raise ValueError(f"group {g!r}: needs a positive {default!r} value, got {ref}")
        out[g] = {k: float(v) / float(ref) for k, v in row.items()}
    return out


def ablation(
    table: dict[str, dict[str, float]],
    default: str = "default",
    ax: plt.Axes | None = None,
    path: str | Path | None = None,
    title: str = "",
    metric: str = "latency × transferred data",
    geomean: bool = True,
) -> plt.Figure:
    """Fig. 12: grouped bars of ``metric`` per group (``table[group][policy]``, e.g. group
    ``"VGG16/arch6"``, policies ``default``, ``Priority1``, ``MemPolicy2``…) normalised to the
    ``default`` policy of the group (:func:`normalise`; lower is better, the dashed line is 1).
    With ``geomean`` a last group gives each policy's geometric mean over the groups that have
    it. A policy missing from a group leaves a gap."""
    norm = normalise(table, default)
    policies = [default, *dict.fromkeys(k for row in norm.values() for k in row if k != default)]
    if geomean and norm:
        gm = {}
        for k in policies:
            vals = [r[k] for r in norm.values() if k in r and r[k] > 0]
            if vals:
                gm[k] = math.exp(float(np.mean(np.log(vals))))
        norm["geomean"] = gm
    groups = list(norm)
    width = 0.8 / max(1, len(policies))
    fig, ax = _axes(ax, (min(18, 3 + 0.25 * len(groups) * len(policies) + len(groups)), 4))
    for j, pol in enumerate(policies):
        xs = np.arange(len(groups)) + (j - (len(policies) - 1) / 2) * width
        ys = np.array([norm[g].get(pol, np.nan) for g in groups])
        ax.bar(xs, ys, width, color=f"C{j}", edgecolor="black", linewidth=0.3, label=pol)
        if len(groups) * len(policies) <= 48:
            for x, y in zip(xs, ys, strict=True):
                if np.isfinite(y):
                    ax.text(x, y, f"{y:.2f}", ha="center", va="bottom", fontsize=6)
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(groups)), groups, rotation=30 if len(groups) > 4 else 0)
    ax.set_ylabel(f"{metric}\n(normalised to {default})")
    ax.margins(y=0.12)
    ax.legend(fontsize=7, ncol=min(len(policies), 5))
    ax.set_title(title or "priority and memory-policy ablation (lower is better)")
    return finish(fig, path)


__all__ = [
    "ablation",
    "memory_map",
    "memory_snapshots",
    "normalise",
    "reload_histogram",
    "residency_blocks",
    "sharing_counts",
    "sharing_profile",
    "snapshot",
    "spatial_reuse",
    "tile_label",
    "transfer_breakdown",
]


def schedule_gantt(
    schedules: Sequence[FlexerSchedule],
    titles: Sequence[str],
    path: str | Path | None = None,
) -> plt.Figure:
    """One panel per schedule on a common time axis: a row per NPU with its operations (grey;
    an operation's loads before it on its NPU show as the gap they fill) and a row for the DRAM
    channel with its transfers coloured by data type (:data:`COLORS`). Returns the figure;
    saves a PNG at ``path``; a ValueError for no schedules or a title per schedule missing."""
    if not schedules or len(titles) != len(schedules):
        raise ValueError("one title per schedule, at least one schedule")
    top = max(s.latency for s in schedules)
    fig, axes = plt.subplots(len(schedules), 1, figsize=(9, 1.1 + 0.45 * sum(
        s.n_npus + 1 for s in schedules)), sharex=True, squeeze=False)  # fmt: skip
    for ax, s, title in zip(axes[:, 0], schedules, titles, strict=True):
        ops = [[(int(a), int(b - a)) for a, b, k in zip(s.start, s.end, s.npu, strict=True)
                if k == npu] for npu in range(s.n_npus)]  # fmt: skip
        for npu, bars in enumerate(ops):
            ax.broken_barh(bars, (npu + 0.1, 0.8), facecolors="0.55", edgecolor="white", lw=0.3)
        for kind in CATEGORIES:
            bars = [(t.start, t.end - t.start) for t in s.transfers if t.dtype == kind]
            ax.broken_barh(bars, (s.n_npus + 0.1, 0.8), facecolors=COLORS[kind])
        ax.set_yticks([k + 0.5 for k in range(s.n_npus + 1)],
                      [f"NPU {k}" for k in range(s.n_npus)] + ["DRAM"], fontsize=7)  # fmt: skip
        ax.set_ylim(0, s.n_npus + 1)
        ax.axvline(s.latency, color="k", lw=0.8)
        ax.set_title(f"{title}: latency {s.latency:,} cycles, {s.transfer_bytes / _KIB:,.0f} KiB",
                     fontsize=8, loc="left")  # fmt: skip
    axes[-1, 0].set_xlim(0, top * 1.01)
    axes[-1, 0].set_xlabel("cycle")
    handles = [Patch(color="0.55", label="operation")]
    handles += [Patch(color=COLORS[c], label=LABELS[c]) for c in CATEGORIES]
    fig.legend(handles=handles, loc="upper right", fontsize=7, ncol=5)
    return finish(fig, path)
