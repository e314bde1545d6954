"""JSON files: read with errors that name the file, written whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from npusched.io.errors import InputError


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; an unreadable file or invalid JSON raises :class:`InputError`."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise InputError(path, "(file)", err.strerror or str(err)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            path, f"(line {err.lineno}, column {err.colno})", f"not valid JSON: {err.msg}"
        ) from None


def write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as JSON through a temporary file renamed into place: never half-written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
