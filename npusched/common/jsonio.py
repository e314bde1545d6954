"""JSON files: read with errors that name the file, written whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from npusched.common.errors import InputError


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


@cache
def load_schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped in ``npusched/common/schema/``."""
    return json.loads(resources.files("npusched.common").joinpath(f"schema/{name}").read_text())


def validate(data: Any, schema_name: str, path: str | Path) -> None:
    """Validate ``data`` against a shipped schema; the first error (in document order) raises
    :class:`InputError` naming its field."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        e = errors[0]
        raise InputError(path, "/".join(map(str, e.absolute_path)) or "(top level)", e.message)
