"""JSON files: read with errors that name the file, written whole or not at all."""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np

from npusched.common.errors import InputError


def _is_gzip(path: Path) -> bool:
    return path.suffix == ".gz"


def _decode(path: Path, raw: bytes) -> str:
    """``raw`` as UTF-8 text (a UTF-8 byte-order mark is dropped); other bytes raise
    :class:`InputError` naming the file and what it looks like."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
            reason = "UTF-16 text by its byte-order mark; npusched reads UTF-8"
        elif raw.count(0) > len(raw) // 4:  # UTF-16 without a mark: every other byte zero
            reason = f"not UTF-8 text (byte {err.start}: UTF-16, or a binary file?)"
        else:
            reason = f"not UTF-8 text (byte {err.start}: a binary file?)"
        raise InputError(path, "(file)", reason) from None


def read_text(path: str | Path) -> str:
    """A text file's contents (UTF-8); an unreadable, binary or otherwise encoded file raises
    :class:`InputError` naming it."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(path, "(file)", err.strerror or str(err)) from None
    return _decode(path, raw)


def read_json(path: str | Path) -> Any:
    """Parse a JSON file (``.json.gz``: gzip-compressed, read transparently); an unreadable file
    or invalid JSON raises :class:`InputError`."""
    path = Path(path)
    try:
        raw = gzip.decompress(path.read_bytes()) if _is_gzip(path) else path.read_bytes()
    except OSError as err:  # also gzip.BadGzipFile
        raise InputError(path, "(file)", getattr(err, "strerror", None) or str(err)) from None
    except (EOFError, zlib.error):
        raise InputError(path, "(file)", "a truncated or corrupt gzip file") from None
    text = _decode(path, raw)
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except _NotJson as err:
        raise InputError(path, "(file)", str(err)) from None
    except RecursionError:
        raise InputError(path, "(file)", "nested too deeply to read") from None
    except json.JSONDecodeError as err:
        raise InputError(
            path, f"(line {err.lineno}, column {err.colno})", f"not valid JSON: {err.msg}"
        ) from None
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() digits
        digits = sys.get_int_max_str_digits()
        raise InputError(path, "(file)", f"an integer of more than {digits} digits") from None


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number (NaN and infinities are refused)")


def _finite(text: str) -> float:
    """A JSON float; one that overflows to an infinity (``1e999``) is refused like ``Infinity``."""
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"{text} is out of the range of a float (infinities are refused)")
    return value


def write_json(path: str | Path, data: Any, indent: int | None = 1) -> None:
    """Write ``data`` as JSON through a temporary file renamed into place (:func:`replacing`):
    never half-written, and no temporary file left when the write is stopped.

    ``.json.gz`` is gzip-compressed. ``indent=None`` writes one line with C-speed encoding, for
    large documents (Python's encoder is pure Python when it indents). Integer numpy arrays in
    ``data`` (values of dictionaries) are written as JSON arrays in chunks, without building
    Python lists of their elements, so that large graphs take little extra memory."""
    path = Path(path)
    arrays: list[Any] = []
    text = json.dumps(_mark_arrays(data, arrays), indent=indent, allow_nan=False) + "\n"
    with replacing(path) as tmp, open(tmp, "wb") as raw:
        out = (
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=5, mtime=0)
            if _is_gzip(path)
            else raw
        )
        with out if out is not raw else contextlib.nullcontext():
            pieces = text.split(_MARK)
            out.write(pieces[0].encode())
            for piece in pieces[1:]:
                index, rest = piece.split('"', 1)
                _write_array(out, arrays[int(index)])
                out.write(rest.encode())


_PENDING: set[str] = set()
"""Temporary files being written now (:func:`replacing`): what a run ended by force
(``npusched.common.terminate``) removes."""

_write_guard: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext
"""Wraps each write by :func:`replacing` (set by :func:`guard_writes`)."""


def guard_writes(guard: Callable[[], AbstractContextManager[object]]) -> None:
    """Wrap every later write by :func:`replacing` in ``guard()``:
    :mod:`npusched.common.terminate` makes a forked process that writes end on SIGTERM only once
    its temporary file is removed."""
    global _write_guard
    _write_guard = guard


def remove_pending() -> None:
    """Remove the temporary files being written now (a forced end's cleanup; thread-safe)."""
    for tmp in list(_PENDING):
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary file beside ``path`` (``.NAME.XXXX.tmp``) to write, renamed to ``path`` when
    the block ends, removed when it raises (Ctrl-C and SIGTERM included) or the run is ended by
    force: ``path`` is written whole or not at all. Its folder is made if missing; the file
    follows the umask. For :func:`write_json` and writers that take a file name (figures, CSV)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _write_guard():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            _PENDING.add(tmp)
            os.close(fd)
            yield Path(tmp)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600
            os.replace(tmp, path)
        except BaseException:  # also KeyboardInterrupt and SIGTERM (npusched.common.terminate)
            with contextlib.suppress(FileNotFoundError):  # gone when it came after the rename
                os.unlink(tmp)
            raise
        finally:
            _PENDING.discard(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_MARK = '"\\u0000array:'
"""How :func:`json.dumps` writes the placeholder string ``"\\x00array:K"`` of array ``K``."""


class JsonRows:
    """A list of JSON objects kept as columns, written row by row in chunks by
    :func:`write_json` (no Python object per row). Each column is an integer array or a
    sequence of already JSON-encoded texts (``json.dumps`` of each value)."""

    def __init__(self, columns: dict[str, Any]) -> None:
        self.columns = columns
        sizes = {len(v) for v in columns.values()}
        if len(sizes) > 1:
            raise ValueError(f"columns differ in length: {sorted(sizes)}")
        self.n = sizes.pop() if sizes else 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> dict[str, Any]:
        return {key: _value(col[k]) for key, col in self.columns.items()}

    def texts(self, start: int, stop: int) -> list[str]:
        """Rows ``start .. stop − 1`` as JSON texts."""
        keys = [json.dumps(k) for k in self.columns]
        cols = [
            map(str, c[start:stop].tolist()) if isinstance(c, np.ndarray) else c[start:stop]
            for c in self.columns.values()
        ]
        return ["{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, row, strict=True)) + "}"
                for row in zip(*cols, strict=True)]  # fmt: skip


def _value(v: Any) -> Any:
    return json.loads(v) if isinstance(v, str) else int(v)


def _mark_arrays(data: Any, arrays: list[Any]) -> Any:
    """``data`` with every integer numpy array and :class:`JsonRows` replaced by a placeholder
    string (collected)."""
    if isinstance(data, JsonRows):
        arrays.append(data)
        return f"\x00array:{len(arrays) - 1}"
    if isinstance(data, dict):
        return {k: _mark_arrays(v, arrays) for k, v in data.items()}
    if isinstance(data, list):
        return [_mark_arrays(v, arrays) for v in data]
    if isinstance(data, np.ndarray):
        if data.dtype.kind not in "iu":
            return data.tolist()
        arrays.append(data)
        return f"\x00array:{len(arrays) - 1}"
    return data


def _write_array(out: Any, arr: np.ndarray | JsonRows, chunk: int = 1 << 16) -> None:
    """``arr`` (1-D or 2-D integers, or rows) as a JSON array, ``chunk`` rows at a time."""
    out.write(b"[")
    for start in range(0, len(arr), chunk):
        if isinstance(arr, JsonRows):
            text = ", ".join(arr.texts(start, start + chunk))
            out.write((b", " if start else b"") + text.encode())
            continue
        part = arr[start : start + chunk].tolist()
        text = (
            ",".join(map(str, part))
            if arr.ndim == 1
            else ",".join("[" + ",".join(map(str, row)) + "]" for row in part)
        )
        out.write((b"," if start else b"") + text.encode())
    out.write(b"]")


@cache
def load_schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped in ``npusched/common/schema/``."""
    return json.loads(resources.files("npusched.common").joinpath(f"schema/{name}").read_text())


def _is_integer(checker: Any, instance: Any) -> bool:
    """JSON Schema's ``integer``, without the floats it also admits (``3.0``, ``1e20``): the
    readers build int64 arrays from these fields, and a float there is a wrong type, not a
    number to round."""
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)


def validate(data: Any, schema_name: str, path: str | Path) -> None:
    """Validate ``data`` against a shipped schema (``integer``: a JSON number written without a
    fraction or exponent); the first error (in document order) raises :class:`InputError`
    naming its field."""
    validator = _Validator(load_schema(schema_name))
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        e = errors[0]
        raise InputError(path, "/".join(map(str, e.absolute_path)) or "(top level)", e.message)
