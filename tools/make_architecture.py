"""Draw npusched's architecture: the layers of import-linter's contract grouped into the four tiers
a reader thinks in, each layer with its per-decision sub-folders and modules, and the imports
between tiers as grimp (import-linter's graph library) finds them in the code.

    python tools/make_architecture.py [-o architecture.png]

The documentation build (``docs/conf.py``) calls :func:`draw` before it reads a page, so the
picture is never committed and cannot go stale. Everything in it but the tiers' names and each
layer's few words is read from ``pyproject.toml`` and the code, and the script fails when the
two disagree: a layer of the contract missing from :data:`TIERS` (or a package missing from the
contract), tiers out of the contract's order, or an import pointing upwards (which
``lint-imports`` would also report).
"""

from __future__ import annotations

import argparse
import textwrap
import tomllib
from collections import Counter
from pathlib import Path

import grimp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "npusched"

TIERS: list[tuple[str, str, list[str]]] = [
    ("front ends", "what a user runs", ["plot", "bench", "cli"]),
    ("solving", "from a problem to a verified answer",
     ["solvers", "partition", "heuristics", "formulations", "methods", "search"]),
    ("checking and I/O", "files in, files out, every answer re-checked", ["verify", "io"]),
    ("model", "the data every decision is about", ["workload", "arch", "costmodel", "problem"]),
]  # fmt: skip
"""Top tier first; inside a tier, layers from the bottom of the contract (left) upwards.
``common`` lies under all four (errors, JSON writing, schemas), drawn as the ground."""

ROLE = {
    "common": "InputError, atomic JSON writing, schemas, limits, process pools, SIGTERM",
    "workload": "layers, networks, the zoo",
    "arch": "accelerators as JSON",
    "costmodel": "a μop's cycles: roofline, ZigZag, DRAM, NoC",
    "problem": "every decision's data, self-checking",
    "verify": "independent checkers, exact integers",
    "io": "readers and writers of every format",
    "solvers": "CP-SAT, HiGHS, PuLP; the one Result",
    "partition": "layers → μops, CNs, tiles; dependencies",
    "heuristics": "list scheduling, placement, TSO search, Flexer OoO",
    "formulations": "exact models, one method per constraint family",
    "methods": "the registry and solve()",
    "search": "Klotski's BO, Stream's allocation GA, LNS",
    "plot": "PNG figures",
    "bench": "the papers' tables, reproduced",
    "cli": "one module per verb",
}
"""A few words per layer (the rest of each box is read from the code)."""


def layers() -> list[list[str]]:
    """The ``layers`` contract, bottom first, as lists of top-level package names."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in conf["contracts"] if c["type"] == "layers")
    rows = [[p.strip().split(".")[1] for p in layer.split("|")] for layer in contract["layers"]]
    return rows[::-1]


def check_tiers(rows: list[list[str]]) -> dict[str, int]:
    """Each package's layer index; fails unless the tiers hold every layer, in the contract's
    order, and every package of the code is in the contract."""
    level = {p: i for i, row in enumerate(rows) for p in row}
    tiered = [p for _, _, pkgs in TIERS for p in pkgs] + ["common"]
    packages = sorted(d.name for d in PACKAGE.iterdir() if (d / "__init__.py").exists())
    if sorted(tiered) != sorted(level) or sorted(level) != packages:
        raise SystemExit(
            f"tiers {sorted(tiered)}, contract {sorted(level)} and packages {packages} differ: "
            "update TIERS in tools/make_architecture.py or the contract in pyproject.toml"
        )
    floor = max(level.values()) + 1
    for name, _, pkgs in TIERS:  # top tier first: each lies wholly above the next
        lo, hi = min(level[p] for p in pkgs), max(level[p] for p in pkgs)
        if hi >= floor or [level[p] for p in pkgs] != sorted(level[p] for p in pkgs):
            raise SystemExit(f"tier {name!r} is out of the contract's layer order")
        floor = lo
    return level


def scan() -> tuple[Counter[tuple[str, str]], dict[str, tuple[int, int]]]:
    """Importing-module counts between top-level packages, and each package's (modules, lines)."""
    graph = grimp.build_graph("npusched", cache_dir=None)  # no cache files in the tree
    edges: Counter[tuple[str, str]] = Counter()
    size: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    for mod in graph.modules:
        parts = mod.split(".")
        if len(parts) < 2:
            continue
        pkg = parts[1]
        size[pkg] += 1
        path = ROOT.joinpath(*parts).with_suffix(".py")
        if not path.exists():
            path = ROOT.joinpath(*parts, "__init__.py")
        lines[pkg] += len(path.read_text().splitlines())
        seen = set()
        for dep in graph.find_modules_directly_imported_by(mod):
            dp = dep.split(".")
            if len(dp) > 1 and dp[0] == "npusched" and dp[1] != pkg and dp[1] not in seen:
                seen.add(dp[1])
                edges[(pkg, dp[1])] += 1
    return edges, {p: (size[p], lines[p]) for p in size}


def contents(pkg: str) -> tuple[list[str], list[str]]:
    """A package's sub-folders (``name/ (modules)``) and its other modules, by name."""
    base = PACKAGE / pkg
    subs = [
        f"{d.name}/ ({sum(1 for f in d.glob('*.py') if f.name != '__init__.py')})"
        for d in sorted(base.iterdir())
        if (d / "__init__.py").exists()
    ]
    mods = [f.stem for f in sorted(base.glob("*.py")) if not f.name.startswith("_")]
    return subs, mods


def draw(out: Path, quiet: bool = False) -> None:
    """Draw the picture into ``out`` (PNG)."""
    rows = layers()
    level = check_tiers(rows)
    edges, sizes = scan()
    for (a, b), _ in edges.items():
        if a in level and b in level and level[b] > level[a]:
            raise SystemExit(f"upward import {a} -> {b}: lint-imports should have failed")
    tier_of = {p: t for t, (_, _, pkgs) in enumerate(TIERS) for p in pkgs}
    tier_of["common"] = len(TIERS)

    width, gap, left, right = 18.0, 0.18, 2.2, 1.2
    most = max(len(pkgs) for _, _, pkgs in TIERS)
    box_w = (width - left - right - (most - 1) * gap) / most
    wrap = int(box_w / 0.062)  # characters of the small monospace font per line
    band_h, box_h = 2.5, 2.2
    fig, ax = plt.subplots(figsize=(width, band_h * len(TIERS) + 1.6))
    colours = ["#fbeee6", "#e8f0fb", "#eef7e8", "#f4eefa"]
    edge_colours = ["#a0522d", "#35608f", "#3f7f3f", "#6a4c93"]
    top = band_h * len(TIERS)
    for t, (name, what, pkgs) in enumerate(TIERS):
        y0 = top - (t + 1) * band_h
        ax.add_patch(FancyBboxPatch((0.05, y0 + 0.08), width - 0.1, band_h - 0.16,
                                    boxstyle="round,pad=0.02", fc=colours[t],
                                    ec="none"))  # fmt: skip
        ax.text(0.2, y0 + band_h / 2 + 0.25, textwrap.fill(name, 12), fontsize=12,
                weight="bold", va="center", color=edge_colours[t])  # fmt: skip
        ax.text(0.2, y0 + band_h / 2 - 0.2, textwrap.fill(what, 22), fontsize=7.5, va="top",
                color="0.3")  # fmt: skip
        for j, pkg in enumerate(pkgs):
            x = left + j * (box_w + gap)
            yb = y0 + (band_h - box_h) / 2
            ax.add_patch(FancyBboxPatch((x, yb), box_w, box_h, boxstyle="round,pad=0.02",
                                        fc="white", ec=edge_colours[t], lw=1.1))  # fmt: skip
            mods, n_lines = sizes[pkg]
            ax.text(x + 0.1, yb + box_h - 0.12, pkg, fontsize=10.5, weight="bold", va="top")
            ax.text(x + box_w - 0.08, yb + box_h - 0.14, f"layer {level[pkg]}", fontsize=6.5,
                    va="top", ha="right", color="0.45")  # fmt: skip
            ax.text(x + 0.1, yb + box_h - 0.45, textwrap.fill(ROLE[pkg], int(wrap * 0.95)),
                    fontsize=6.8, va="top", style="italic", color="0.25")  # fmt: skip
            subs, names = contents(pkg)
            body = ""
            if subs:
                body += "\n".join(subs) + "\n"
            if names:
                body += textwrap.fill(" · ".join(names), wrap)
            ax.text(x + 0.1, yb + box_h - 0.85, body, fontsize=6.6, va="top", family="monospace",
                    color=edge_colours[t], linespacing=1.25)  # fmt: skip
            ax.text(x + 0.1, yb + 0.08, f"{mods} modules, {n_lines:,} lines", fontsize=6.3,
                    color="0.45")  # fmt: skip
    # the ground: common, imported by every tier
    mods, n_lines = sizes["common"]
    subs, names = contents("common")
    ax.add_patch(FancyBboxPatch((0.05, -0.85), width - 0.1, 0.7, boxstyle="round,pad=0.02",
                                fc="#f0f0f0", ec="0.5"))  # fmt: skip
    ax.text(0.2, -0.5, "common", fontsize=11, weight="bold", va="center")
    ground = f"layer 0, under every tier: {ROLE['common']}   —   " + " · ".join(
        subs + names
    ) + f"   ({mods} modules, {n_lines:,} lines)"  # fmt: skip
    ax.text(left, -0.5, ground, fontsize=7, va="center", family="monospace", color="0.25")
    # imports between tiers, counted by importing module, all pointing down
    between: Counter[tuple[int, int]] = Counter()
    for (a, b), n in edges.items():
        if a in tier_of and b in tier_of and tier_of[a] != tier_of[b]:
            between[(tier_of[a], tier_of[b])] += n
    xr = width - 0.45
    for t in range(len(TIERS)):
        down = sum(n for (a, b), n in between.items() if a == t)
        if not down:
            continue
        y_from = top - t * band_h - band_h / 2
        y_to = top - (t + 1) * band_h - band_h / 2 + 0.3 if t + 1 < len(TIERS) else -0.15
        ax.add_patch(FancyArrowPatch((xr, y_from), (xr, y_to), arrowstyle="-|>",
                                     mutation_scale=14, lw=1.6, color="0.45"))  # fmt: skip
        ax.text(xr + 0.08, y_from + 0.1, f"{down} imports", fontsize=6.5, ha="center",
                va="bottom", color="0.35")  # fmt: skip
    ax.set_xlim(0, width)
    ax.set_ylim(-0.95, top + 0.05)
    ax.axis("off")
    ax.set_title(
        "npusched: four tiers over common. A package imports only from its left and from below "
        "(the layers of pyproject.toml's contract);\nper-decision sub-folders (their modules) "
        "and modules as the code has them; arrows: importing modules into the tiers below",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    if not quiet:
        print(f"wrote {out}: {len(level)} packages in {len(rows)} layers, {len(TIERS)} tiers")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("-o", "--output", default="architecture.png")
    draw(Path(p.parse_args().output))


if __name__ == "__main__":
    main()
