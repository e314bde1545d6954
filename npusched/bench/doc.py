"""Bench scripts write their tables into a Markdown file between markers, keeping its prose."""

from __future__ import annotations

import re
from pathlib import Path


def write_doc(path: Path, text: str) -> None:
    """Replace the tables between the markers of ``path`` (or write them as the whole file)."""
    block = f"<!-- tables -->\n{text}\n<!-- /tables -->"
    old = path.read_text() if path.exists() else ""
    pattern = re.compile(r"<!-- tables -->.*<!-- /tables -->", re.S)
    new = pattern.sub(lambda _: block, old) if pattern.search(old) else old + block + "\n"
    path.write_text(new)


def publish(text: str, doc: Path | None) -> None:
    """Print ``text`` and, with ``doc``, write it into that file's tables block."""
    print(text)
    if doc:
        write_doc(doc, text)
