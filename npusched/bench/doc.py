"""Bench scripts write their tables into a Markdown file between markers, keeping its prose, and
show growth between successive rows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def write_doc(path: Path, text: str, block: str = "tables") -> None:
    """Replace what stands between ``<!-- block -->`` and ``<!-- /block -->`` in ``path`` (or
    append the block to it)."""
    new_block = f"<!-- {block} -->\n{text}\n<!-- /{block} -->"
    old = path.read_text() if path.exists() else ""
    pattern = re.compile(rf"<!-- {re.escape(block)} -->.*<!-- /{re.escape(block)} -->", re.S)
    new = pattern.sub(lambda _: new_block, old) if pattern.search(old) else old + new_block + "\n"
    path.write_text(new)


def publish(text: str, doc: Path | None, block: str = "tables") -> None:
    """Print ``text`` and, with ``doc``, write it into that file's ``block``."""
    print(text)
    if doc:
        write_doc(doc, text, block)


def growth(prev: dict[str, Any] | None, row: dict[str, Any], n: str) -> tuple[str, str]:
    """How much ``row``'s ``seconds`` and size ``n`` grew from ``prev``'s, as ``"x.xx"`` strings
    (``"–"`` for the first row of a series, ``prev`` ``None``): for a linear cost the two are
    about equal."""
    if prev is None:
        return "–", "–"
    return f"{row['seconds'] / prev['seconds']:.2f}", f"{row[n] / prev[n]:.2f}"
