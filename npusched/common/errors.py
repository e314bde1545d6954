"""The one error type for bad input files."""

from __future__ import annotations

import os


class InputError(ValueError):
    """A file could not be read as the format it claims: names the file, the field and
    the reason."""

    def __init__(self, path: str | os.PathLike[str], field: str, reason: str) -> None:
        self.path, self.field, self.reason = str(path), field, reason
        super().__init__(f"{path}: {field}: {reason}")

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str, str]]:
        """Rebuild from the three parts, so the error crosses process pools (``compare``)."""
        return (InputError, (self.path, self.field, self.reason))
