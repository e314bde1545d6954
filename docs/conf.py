"""Sphinx configuration of npusched's documentation site.

Build it (after the tests, which execute the notebooks and write ``build/notebooks/``)::

    .venv/bin/python -m pytest tests/test_notebooks.py
    .venv/bin/sphinx-build -W --keep-going -n -b html docs docs/_build/html

Before Sphinx reads a page, this file makes what the pages show from the code as it is now, so
none of it can go stale: the architecture picture (``tools/make_architecture.py``), the command
line reference (every verb's ``--help``), the first schedule of *Getting started* (the README's
command, run), and the executed notebooks (copied from ``build/notebooks/``, refused when
missing, older than their source or holding an error). Everything it makes is in
``docs/_generated/``, ``docs/notebooks/`` and ``docs/api/generated/``, none of it committed.

Warnings are errors (``-W``): an unresolved cross-reference (``-n``), a public name without a
docstring (numpydoc's GL08), reStructuredText that does not parse. None is tolerated.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import types
import typing
import warnings
from pathlib import Path
from typing import Any

from sphinx.errors import ConfigError

import npusched

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
GENERATED = DOCS / "_generated"
GENERATED.mkdir(exist_ok=True)

project = "npusched"
author = "the npusched developers"
copyright = "2026, the npusched developers"  # noqa: A001 (Sphinx's name)
version = release = npusched.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
]
exclude_patterns = ["_build", "_generated", "README.md", "**.ipynb_checkpoints"]
suppress_warnings: list[str] = []

# --- pages: MyST Markdown and notebooks --------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"  # the tests executed them (tests/test_notebooks.py): see below
nb_merge_streams = True

# --- API reference ----------------------------------------------------------------------------
autodoc_default_options = {
    "members": True,
    "undoc-members": True,  # so that a public name without a docstring is seen (GL08 below)
    "show-inheritance": True,
    "ignore-module-all": True,
    "private-members": True,  # those with a docstring: the constraint families and their math
}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_type_aliases = {  # numpy's aliases, not their expansion into private unions
    "ArrayLike": "numpy.typing.ArrayLike",
    "npt.ArrayLike": "numpy.typing.ArrayLike",
    "NDArray": "numpy.typing.NDArray",
    "npt.NDArray": "numpy.typing.NDArray",
    "DTypeLike": "numpy.typing.DTypeLike",
}
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = {"GL08"}  # a public name without a docstring is a warning
numpydoc_validation_exclude = {
    r"\.__\w+__$",  # dunder methods document themselves by their protocol
    r"\._[A-Za-z]\w*\.",  # members of a private class or module
}
# Names a module imports (``Callable``, ``positive_int`` from ``cli.args``, pymoo's ``NSGA2``)
# are documented where they are defined, not where they are imported; Sphinx 9 hands their
# docstrings to numpydoc before it drops them, so ``_api_pages`` adds each one here.

# Cross-references: every one must resolve (-n -W). Names of other libraries have no inventory
# here (intersphinx needs a network these machines do not have), so they are left as text.
nitpicky = True
_EXTERNAL = (
    "numpy", "np", "npt", "scipy", "networkx", "nx", "onnx", "ortools", "cp_model", "highspy",
    "pulp", "matplotlib", "torch", "botorch", "gpytorch", "distributed", "dask", "pymoo",
    "jsonschema", "zigzag", "pandas", "tqdm", "sortedcontainers",
    # the standard library
    "collections", "pathlib", "argparse", "concurrent", "os", "typing", "enum", "dataclasses",
    "fractions", "io", "subprocess", "multiprocessing", "threading", "types", "tracemalloc",
    "signal", "contextlib", "itertools", "functools", "random", "json", "gzip", "abc", "re",
    "logging", "datetime", "decimal", "numbers", "queue", "socket", "tempfile", "weakref",
)  # fmt: skip
nitpick_ignore_regex = [
    (r"py:.*", rf"({'|'.join(_EXTERNAL)})(\..*)?"),
    # builtins and typing's names as annotations print them
    (r"py:.*", r"(int|float|str|bytes|bool|complex|object|None|list|dict|set|frozenset|tuple|"
               r"type|range|slice|Ellipsis|NotImplemented|Exception|ValueError|TypeError|"
               r"KeyError|RuntimeError|OSError|MemoryError|TimeoutError|BaseException|"
               r"Any|Callable|Iterable|Iterator|Sequence|Mapping|Generator|Literal|Self|"
               r"NDArray|ArrayLike|DTypeLike|Protocol|TypeVar|NamedTuple|ClassVar|Final)"),
]  # fmt: skip

# numpydoc parses the docstring of ``tabulate`` (imported by ``npusched.bench``; not documented
# here) while Sphinx decides to leave it out, and warns of its sections on stderr: not ours.
warnings.filterwarnings("ignore", r"Unknown section .* of tabulate in ", UserWarning)

# --- theme ------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"npusched {release}"
html_static_path: list[str] = []
html_theme_options = {"navigation_with_keys": True}


# --- made before reading: the picture, the CLI reference, the first schedule, the notebooks ---


def _architecture() -> None:
    """Draw the tiers, layers and per-decision folders from pyproject.toml and the code."""
    spec = importlib.util.spec_from_file_location("make_architecture", ROOT / "tools" /
                                                  "make_architecture.py")  # fmt: skip
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.draw(GENERATED / "architecture.png", quiet=True)


def _cli_reference() -> None:
    """Every verb's ``--help``, as ``npusched VERB --help`` prints it, and that of each verb's
    own sub-commands (``npusched convert stg --help``, ``npusched generate known-optimum``)."""
    import argparse

    os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal's width
    from npusched.cli.main import build_parser

    def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                return dict(action.choices)
        return {}

    def text(parser: argparse.ArgumentParser) -> list[str]:
        return ["```text", parser.format_help().rstrip(), "```", ""]

    top = build_parser()
    parts = text(top)
    for name, verb in subcommands(top).items():
        parts += [f"## `npusched {name}`", ""] + text(verb)
        for sub_name, sub in subcommands(verb).items():
            parts += [f"### `npusched {name} {sub_name}`", ""] + text(sub)
    _write(GENERATED / "cli.md", "\n".join(parts))


def _first_schedule() -> None:
    """Run the README's first command; keep what it prints, its Gantt chart and a solution
    excerpt for *Getting started*."""
    instance = "instances/stg/rand0001_m4.json"
    solution, gantt = GENERATED / "solution.json", GENERATED / "gantt.png"
    cmd = [sys.executable, "-m", "npusched", "solve", instance, "--method", "cpsat",
           "--threads", "2", "--out", str(solution), "--gantt", str(gantt)]  # fmt: skip
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise ConfigError(f"Getting started's command failed ({' '.join(cmd)}):\n{run.stderr}")
    _write(GENERATED / "solve.txt", run.stdout)
    data = json.loads(solution.read_text())
    head = {k: v for k, v in data.items() if not isinstance(v, list | dict)}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    lines += [' "ops": ['] + [f"  {json.dumps(op)}," for op in data["ops"][:4]]
    lines += [
        f"  ... {len(data['ops']) - 4} more ops",
        " ],",
        f' "transfers": {json.dumps(data.get("transfers", [])[:2])},',
        " ...",
        "}",
    ]
    _write(GENERATED / "solution-excerpt.json", "\n".join(lines) + "\n")


EXECUTED = ROOT / "build" / "notebooks"
"""Where ``tests/test_notebooks.py`` writes each executed notebook."""


def _notebooks() -> None:
    """Copy the executed notebooks into ``docs/notebooks/``; refuse any that is missing, older
    than its source, or holds an error (the site shows outputs without executing anything)."""
    sources = sorted((ROOT / "notebooks").glob("*.ipynb"))
    problems = []
    target = DOCS / "notebooks"
    target.mkdir(exist_ok=True)
    for src in sources:
        run = EXECUTED / src.name
        if not run.exists():
            problems.append(f"{src.name}: no executed copy in build/notebooks/")
            continue
        nb = json.loads(run.read_text())
        stamp = nb.get("metadata", {}).get("npusched", {}).get("source_sha256")
        if stamp != hashlib.sha256(src.read_bytes()).hexdigest():
            problems.append(f"{src.name}: changed since build/notebooks/{src.name} was executed")
        elif any(o.get("output_type") == "error"
                 for c in nb["cells"] for o in c.get("outputs", [])):  # fmt: skip
            problems.append(f"{src.name}: its executed copy holds an error")
        else:
            _write(target / src.name, run.read_text())
    for old in target.glob("*.ipynb"):
        if not (ROOT / "notebooks" / old.name).exists():
            old.unlink()
    if problems:
        raise ConfigError(
            "the site shows the notebooks as the tests executed them, and these are not there:\n  "
            + "\n  ".join(problems)
            + "\nrun the tests first: .venv/bin/python -m pytest tests/test_notebooks.py"
        )


API = DOCS / "api" / "generated"


def _api_pages() -> None:
    """One page per module of the package: its docstring and members (autodoc), and for a
    package its modules, each with its docstring's first line, and the names it re-exports,
    linked to where they are documented."""
    import pkgutil

    API.mkdir(parents=True, exist_ok=True)
    names = ["npusched"] + [
        m.name for m in pkgutil.walk_packages(npusched.__path__, "npusched.")
        if not m.name.endswith("__main__")
    ]  # fmt: skip
    keep = set()
    for name in names:
        module = importlib.import_module(name)
        for alias, value in vars(module).items():  # IntArray = NDArray[np.int64] and the like
            if _is_alias(value):
                nitpick_ignore.extend([("py:class", alias), ("py:class", f"{name}.{alias}")])
        for alias, value in vars(module).items():  # imported here, documented where defined
            home = getattr(value, "__module__", None) if _defines(value) else None
            if home and home != name and not alias.startswith("_"):
                numpydoc_validation_exclude.add(rf"^{re.escape(name)}\.{re.escape(alias)}(\.|$)")
        lines = [name, "=" * len(name), "", f".. automodule:: {name}", ""]
        constants = _undocumented_constants(module)
        if constants:  # autodoc leaves out module data without a docstring; cross-references
            lines += [".. rubric:: Constants", ""]  # to them need a target
            lines += [f".. autodata:: {name}.{c}\n" for c in constants]
        exported = [n for n in getattr(module, "__all__", []) if not n.startswith("_")]
        exported = [(n, getattr(module, n)) for n in exported if hasattr(module, n)]
        exported = [(n, o) for n, o in exported if getattr(o, "__module__", name) != name]
        if exported:
            lines += [".. rubric:: Re-exported here", "", f"``from {name} import ...``", ""]
            for n, obj in exported:
                where = f"{obj.__module__}.{getattr(obj, '__qualname__', n)}"
                role = "class" if isinstance(obj, type) else "func" if callable(obj) else "obj"
                lines.append(f"- ``{n}``: :py:{role}:`{where}`")
            lines.append("")
        children = [c for c in names if c.rpartition(".")[0] == name]
        if children:
            lines += [".. rubric:: Modules", ""]
            for child in children:
                doc = (importlib.import_module(child).__doc__ or "").strip().split("\n\n")[0]
                lines.append(f"- :mod:`{child}`: {_plain_roles(' '.join(doc.split()))}")
            lines += ["", ".. toctree::", "   :hidden:", ""] + [f"   {c}" for c in children]
        keep.add(f"{name}.rst")
        _write(API / f"{name}.rst", "\n".join(lines) + "\n")
    for old in API.glob("*.rst"):
        if old.name not in keep:
            old.unlink()


def _defines(value: Any) -> bool:
    """A function, class or module: something with a ``__module__`` of its own."""
    return (
        inspect.isclass(value)
        or inspect.isroutine(value)
        or _is_alias(value)
        or (getattr(type(value), "__module__", "") == "typing")
    )


def _undocumented_constants(module: types.ModuleType) -> list[str]:
    """Public upper-case names a module assigns at its top level (``MAX_VALUE = 2**40``,
    ``EVICT, REFETCH = 0, 1``) with no docstring or ``#:`` comment of their own, which autodoc
    therefore leaves out; classes and type aliases among them excluded."""
    import ast

    from sphinx.pycode import ModuleAnalyzer

    if not getattr(module, "__file__", None):
        return []
    documented = {attr for _, attr in ModuleAnalyzer.for_module(module.__name__).find_attr_docs()}
    found = []
    for stmt in ast.parse(Path(module.__file__).read_text()).body:  # type: ignore[arg-type]
        targets = (
            stmt.targets
            if isinstance(stmt, ast.Assign)
            else ([stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
        )
        for node in (n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)):
            value = getattr(module, node.id, None)
            if (re.fullmatch(r"[A-Z][A-Z0-9_]*", node.id) and node.id not in documented
                    and not _defines(value)):  # fmt: skip
                found.append(node.id)
    return list(dict.fromkeys(found))


def _is_alias(value: Any) -> bool:
    """A type alias (``dict[str, Any]``, ``NDArray[np.int64]``, ``int | None``)."""
    return isinstance(value, types.GenericAlias | types.UnionType | typing._GenericAlias)  # type: ignore[attr-defined]


nitpick_ignore: list[tuple[str, str]] = []


def _skip_member(app: Any, what: str, name: str, obj: Any, skip: bool, options: Any) -> Any:
    """Type aliases are shown in the signatures that use them, not documented as classes; a
    private name is documented only when it has a docstring of its own (a formulation's
    constraint family does: its equation)."""
    if _is_alias(obj):
        return True
    if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
        if isinstance(obj, property):
            obj = obj.fget
        if not (inspect.isfunction(obj) or inspect.isclass(obj)) or not obj.__doc__:
            return True
        if inspect.isclass(obj) and obj.__doc__ == type.__doc__:
            return True
    return None


def _plain_roles(text: str) -> str:
    """A docstring's cross-references as literals, for lines quoted out of their module."""

    def literal(m: re.Match[str]) -> str:
        target = m.group(2)
        return f"``{target.rpartition('.')[2] if target.startswith('~') else target}``"

    return re.sub(r":(func|class|mod|meth|attr|data|obj|exc):`([^`]+)`", literal, text)


def _write(path: Path, text: str) -> None:
    """Write only what changed, so that Sphinx's incremental build rereads only that."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


_api_pages()  # here: it adds to numpydoc_validation_exclude and nitpick_ignore


def _make_pages(app: Any) -> None:
    """Before Sphinx reads a page; a ``ConfigError`` raised here ends the build with its
    message alone (raised while this file runs, it would come wrapped in a traceback)."""
    _architecture()
    _cli_reference()
    _first_schedule()
    _notebooks()


# --- cross-references to names a package re-exports -------------------------------------------

_canonical: dict[int, str] | None = None


def _lookup(dotted: str) -> Any:
    """The object a dotted name denotes (module, then attributes), or None."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _resolve_reexport(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """Resolve ``npusched.problem.RoutedInstance`` (a re-export) or a name imported into the
    current module to the one place the object is documented."""
    global _canonical
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    if _canonical is None:
        _canonical = {}
        for name, entry in domain.objects.items():
            if entry.aliased or not name.startswith("npusched"):
                continue
            obj = _lookup(name)
            if obj is not None and not isinstance(obj, int | float | str | bool | tuple):
                _canonical.setdefault(id(obj), name)
    target = node["reftarget"]
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [target]
    if module:
        candidates += [f"{module}.{cls}.{target}"] if cls else []
        candidates += [f"{module}.{target}"]
    for candidate in candidates:  # the object itself, found by importing
        obj = _lookup(candidate) if candidate.startswith("npusched") else None
        if obj is None:
            continue
        name = _canonical.get(id(obj))
        if name is None and isinstance(obj, property | staticmethod | classmethod):
            continue
        if name is None:  # a constant: documented under the module that defines it
            head, _, last = candidate.rpartition(".")
            name = next((n for n in domain.objects if n.endswith("." + last)
                         and _lookup(n) is obj), None)  # fmt: skip
        if name and name != target:
            return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], name,
                                       node, contnode)  # fmt: skip
    # a name the module imports only for type checking, or a field without a class attribute:
    # the one documented object whose name ends so (several: no guess, the warning stands)
    tail = target.removeprefix("npusched.")
    tail = ".".join(tail.split(".")[-2:]) if target.startswith("npusched.") else tail
    if tail in _NOT_OURS or not tail.replace(".", "").replace("_", "").isalnum():
        return None
    found = {n for n, e in domain.objects.items() if n.endswith("." + tail) and not e.aliased}
    if len(found) == 1:
        return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"],
                                   found.pop(), node, contnode)  # fmt: skip
    return None


_NOT_OURS = set(dir(builtins)) | set(dir(typing))


def _exact_annotations(app: Any, doctree: Any) -> None:
    """Sphinx 9 searches the targets of annotations fuzzily (any attribute named ``bytes``
    matches the builtin ``bytes``); search them exactly, as their ``refspecific=False`` says."""
    from sphinx.addnodes import pending_xref

    for node in doctree.findall(pending_xref):
        if node.get("refdomain") == "py" and node.get("refspecific") is False:
            del node["refspecific"]


def _factory_defaults(app: Any, what: str, name: str, obj: Any, options: Any, signature: Any,
                      return_annotation: Any) -> Any:  # fmt: skip
    """A dataclass field's ``default_factory`` shows as ``=<factory>``, which the signature
    parser cannot read (it then cuts annotations at commas): show ``=...``."""
    if signature and "<factory>" in signature:
        return signature.replace("<factory>", "..."), return_annotation
    return None


# --- docstrings as their authors wrap them ------------------------------------------------------

_WRAPPED_TARGET = re.compile(r"(:[a-z]+:`~?[\w.]+\.)[ \t]*\n[ \t]*([\w.]+`)")


def _prepare_docstring(app: Any, what: str, name: str, obj: Any, options: Any,
                       lines: list[str]) -> None:  # fmt: skip
    """Before numpydoc parses a docstring: drop that of an object another library defines (a
    module's import, which Sphinx 9 hands over before it leaves it out; ``tabulate``'s would
    warn of its sections), and join a role's target wrapped at a dot to keep within 100 columns
    (``:class:`~npusched.costmodel.roofline.`` then ``Roofline``` on the next line), which
    reStructuredText would read up to the break only."""
    home = getattr(obj, "__module__", None) if _defines(obj) else None
    if isinstance(home, str) and home.split(".")[0] != "npusched":
        lines[:] = []
        return
    text = "\n".join(lines)
    joined = _WRAPPED_TARGET.sub(r"\1\2", text)
    if joined != text:
        lines[:] = joined.split("\n")


def setup(app: Any) -> None:
    app.connect("builder-inited", _make_pages)
    app.connect("autodoc-process-docstring", _prepare_docstring, priority=400)
    app.connect("missing-reference", _resolve_reexport)
    app.connect("doctree-read", _exact_annotations)
    app.connect("autodoc-process-signature", _factory_defaults)
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("source-read", _outside_links)


def _outside_links(app: Any, docname: str, source: list[str]) -> None:
    """A Markdown link to a file of the repository outside ``docs/`` (``../instances/...``)
    names the path instead: the site has no copy of it."""
    if app.env.doc2path(docname).suffix == ".md":
        source[0] = re.sub(r"\[([^\]]+)\]\(\.\./([^)#\s]+)\)", r"\1 (``\2`` in the repository)",
                           source[0])  # fmt: skip
