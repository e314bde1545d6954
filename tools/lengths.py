"""Module and function lengths of the package: the longest first.

``python tools/lengths.py [--top N] [--max-module 600] [--max-function 80] [PATH ...]`` prints
the longest modules and functions (lines from ``def`` to the last line of the body, docstring
included) and exits 1 when any exceeds its limit.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path


def lengths(paths: list[Path]) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(lines, module) and (lines, module:function) for every ``.py`` file under ``paths``."""
    modules, functions = [], []
    for root in paths:
        for p in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            text = p.read_text()
            modules.append((len(text.splitlines()), str(p)))
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    n = (node.end_lineno or node.lineno) - node.lineno + 1
                    functions.append((n, f"{p}:{node.lineno} {node.name}"))
    return sorted(modules, reverse=True), sorted(functions, reverse=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, default=[Path("npusched")])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--max-module", type=int, default=600)
    ap.add_argument("--max-function", type=int, default=80)
    args = ap.parse_args(argv)
    modules, functions = lengths(args.paths)
    print(f"modules: {len(modules)}, functions: {len(functions)}")
    for title, rows, cap in (
        ("longest modules", modules, args.max_module),
        ("longest functions", functions, args.max_function),
    ):
        print(f"{title} (limit {cap}):")
        for n, name in rows[: args.top]:
            print(f"  {n:5d}  {name}{'  OVER' if n > cap else ''}")
    over = [r for r in modules if r[0] > args.max_module]
    over += [r for r in functions if r[0] > args.max_function]
    print(f"over the limits: {len(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
