"""Notebooks are committed without outputs and executed here.

Each executed notebook, outputs and figures included, is written to ``build/notebooks/`` (not
committed), stamped with the SHA-256 of the source it ran from. The documentation site shows
those copies without executing the notebooks again (``docs/conf.py`` refuses a missing or stale
copy, and a copy with an error in it).
"""

import hashlib
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXECUTED = ROOT / "build" / "notebooks"
"""Where the executed copies go; ``docs/conf.py`` reads them from here."""


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_is_committed_without_outputs(path):
    source = path.read_bytes()
    nb = nbformat.reads(source.decode(), as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    out = EXECUTED / path.name
    out.unlink(missing_ok=True)  # a failed run leaves no copy behind for the site to show
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors
    nb.metadata["npusched"] = {"source_sha256": hashlib.sha256(source).hexdigest()}
    EXECUTED.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(out)
