"""Draw docs/architecture.png: npusched's layers, as import-linter's contract states them, and the
imports between them, as grimp (import-linter's graph library) finds them in the code.

    python tools/make_architecture.py [-o docs/architecture.png]

Each row is one layer of the ``layers`` contract in ``pyproject.toml`` (bottom: ``common``); each
box a top-level package with its modules and lines; each arrow an import from a package to one in
a lower layer, as thick as the number of importing modules. The script fails if an arrow would
point upwards (which ``lint-imports`` would also report).
"""

from __future__ import annotations

import argparse
import tomllib
from collections import Counter
from pathlib import Path

import grimp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def layers() -> list[list[str]]:
    """The ``layers`` contract, bottom first, as lists of top-level package names."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in conf["contracts"] if c["type"] == "layers")
    rows = [[p.strip().split(".")[1] for p in layer.split("|")] for layer in contract["layers"]]
    return rows[::-1]


def package_imports() -> tuple[Counter[tuple[str, str]], dict[str, tuple[int, int]]]:
    """Importing-module counts between top-level packages, and each package's (modules, lines)."""
    graph = grimp.build_graph("npusched")
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


def draw(out: Path) -> None:
    rows = layers()
    edges, sizes = package_imports()
    level = {p: i for i, row in enumerate(rows) for p in row}
    pos: dict[str, tuple[float, float]] = {}
    for i, row in enumerate(rows):
        for j, p in enumerate(row):
            shift = 0 if len(row) > 1 else (1.6 if i % 2 else -1.6)  # alternate: arrows show
            pos[p] = ((j + 1) / (len(row) + 1) * 10 + shift, i * 1.25)
    fig, ax = plt.subplots(figsize=(10, 0.8 * len(rows) + 1))
    for (a, b), n in sorted(edges.items()):
        if a not in level or b not in level:  # npusched/__init__.py, __main__.py: the entry
            continue
        if level[b] > level[a]:
            raise SystemExit(f"upward import {a} -> {b}: lint-imports should have failed")
        if level[b] == level[a]:
            continue
        arrow = FancyArrowPatch(
            pos[a], pos[b], arrowstyle="-|>", mutation_scale=8, lw=0.4 + 0.25 * n ** 0.5,
            color="0.55", alpha=0.55, connectionstyle="arc3,rad=0.12", shrinkA=14, shrinkB=14,
        )  # fmt: skip
        ax.add_patch(arrow)
    for p, (x, y) in pos.items():
        mods, n_lines = sizes[p]
        box = FancyBboxPatch(
            (x - 1.6, y - 0.38), 3.2, 0.76, boxstyle="round,pad=0.02", fc="#e8f0fb", ec="#35608f"
        )
        ax.add_patch(box)
        ax.text(x, y + 0.15, p, ha="center", va="center", fontsize=10, weight="bold")
        subs = sorted(
            d.name for d in (ROOT / "npusched" / p).iterdir() if (d / "__init__.py").exists()
        )
        note = f"{mods} modules, {n_lines} lines" + (f"\n{' · '.join(subs)}" if subs else "")
        ax.text(x, y - 0.2, note, ha="center", va="center", fontsize=6.5)
    for i in range(len(rows)):
        ax.text(0.9, i * 1.25, f"layer {i}", ha="right", va="center", fontsize=8, color="0.4")
    ax.set_xlim(-1.2, 11.2)
    ax.set_ylim(-0.6, (len(rows) - 1) * 1.25 + 0.6)
    ax.axis("off")
    ax.set_title("npusched layers (imports point down; from pyproject.toml and the code)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}: {len(pos)} packages in {len(rows)} layers, {len(edges)} package imports")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("-o", "--output", default=str(ROOT / "docs" / "architecture.png"))
    draw(Path(p.parse_args().output))


if __name__ == "__main__":
    main()
