"""The examples the documentation shows still run.

- Every ``>>>`` example in a docstring of the package runs as a doctest (the API reference shows
  these docstrings; a broken one fails this test, and ``.ci/run`` runs the tests before it builds
  the site).
- Every ``python`` code block of the README and the site's hand-written pages runs, from the
  repository's root (a block that reads ``../shared/benchmarks`` is skipped when that folder is
  absent; a block that only shows a signature is written ``{code-block} python`` instead).
"""

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import npusched

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "benchmarks"


def _modules_with_examples() -> list[str]:
    names = ["npusched"] + [
        m.name for m in pkgutil.walk_packages(npusched.__path__, "npusched.")
        if not m.name.endswith("__main__")
    ]  # fmt: skip
    found = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec and spec.origin and ">>>" in Path(spec.origin).read_text():
            found.append(name)
    return found


MODULES = _modules_with_examples()


def test_some_docstrings_have_examples():
    assert MODULES, "no docstring example found: the collection is broken"


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name) if t.examples]
    assert tests, f"{name} has '>>>' in its source but no example doctest finds"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"


PAGES = [ROOT / "README.md", ROOT / "docs" / "getting-started.md", ROOT / "docs" / "concepts.md"]
PAGES += sorted((ROOT / "docs" / "guides").glob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks() -> list:
    cases = []
    for page in PAGES:
        for i, code in enumerate(BLOCK.findall(page.read_text())):
            cases.append(pytest.param(code, id=f"{page.relative_to(ROOT)}#{i + 1}"))
    return cases


@pytest.mark.parametrize("code", _blocks())
def test_page_code_blocks_run(code, monkeypatch):
    if "../shared/benchmarks" in code and not SHARED.exists():
        pytest.skip(f"needs {SHARED}")
    monkeypatch.chdir(ROOT)
    exec(compile(code, "<page>", "exec"), {"__name__": "__docs__"})
