"""Argument types shared by every verb: each rejects bad text with argparse's one-line error."""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npusched.common.limits import MAX_BETA

if TYPE_CHECKING:
    from npusched.problem import SchedulingInstance
    from npusched.problem.placement import PlacementInstance
    from npusched.problem.scheduling.routed import RoutedInstance


def positive_int(text: str) -> int:
    """A whole number of at least 1 (``--cores``, ``--threads``, ``--workers``, ...)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def finite_float(text: str) -> float:
    """A real number; NaN and ±infinity are refused (JSON has no such values)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return v


def positive_float(text: str) -> float:
    """A finite number above 0 (``--time-limit``, ``--link-bandwidth``, ...)."""
    v = finite_float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return v


def share(text: str) -> float:
    """A share of a time limit: a finite number in ``[0, 1)``."""
    v = finite_float(text)
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, got {text}")
    return v


def beta(text: str) -> float:
    """``joint``'s weight of the NoC cost: a finite number in ``[0, MAX_BETA]``."""
    v = finite_float(text)
    if not 0 <= v <= MAX_BETA:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_BETA:g}, got {text}")
    return v


MEMORY_HELP = (
    "address space of this run and of its solver processes, in MB (default: 3/4 of the "
    "machine's memory); past it a solver's result is its warm start, marked so, and any other "
    "step a one-line error (exit 2)"
)


def memory_mb(text: str) -> int:
    """``--memory-limit``: whole MB from 1 to 2^42 (an address space of 2^62 bytes)."""
    v = positive_int(text)
    if v > 2**42:
        raise argparse.ArgumentTypeError(f"must be at most {2**42} MB, got {v}")
    return v


def memory_limit(parser: argparse.ArgumentParser) -> None:
    """``--memory-limit MB`` after a verb as well as before it (``npusched --memory-limit MB
    VERB``); given neither place, the default stands."""
    parser.add_argument(
        "--memory-limit", type=memory_mb, metavar="MB", default=argparse.SUPPRESS,
        help=MEMORY_HELP,
    )  # fmt: skip


def mesh(text: str) -> tuple[int, int]:
    """A mesh ``ROWSxCOLS`` (``4x4``, ``3X5``) as ``(rows, cols)``, each at least 1."""
    try:
        rows, cols = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ROWSxCOLS, e.g. 3x3, got {text!r}") from None
    if rows < 1 or cols < 1:
        raise argparse.ArgumentTypeError(f"mesh must be at least 1x1, got {text!r}")
    return rows, cols


def int_list(text: str) -> list[int]:
    """Comma-separated whole numbers, each at least 1 (``50,100,200``); empty items, as in a
    trailing comma, are skipped."""
    try:
        return [positive_int(t) for t in text.split(",") if t]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def executor_spec(text: str) -> str:
    """Where jobs run: ``local`` (a process pool here) or ``dask://HOST:PORT`` (a Dask distributed
    scheduler; see ``npusched.common.executor.open_executor``)."""
    if text != "local" and not (text.startswith("dask://") and text.removeprefix("dask://")):
        raise argparse.ArgumentTypeError(f"expected local or dask://HOST:PORT, got {text!r}")
    return text


CONTENTION = "transfers hold the links of their XY route, one at a time per link (routed)"
FREE = "Stream export: any core in each CN's possible_cores (default: Stream's allocation)"
NO_MEMORY = (
    "Stream export: give cores no memory capacity (by default each compute core's top memory is a "
    "hard capacity at every instant, and list scheduling takes Stream's latency or memory "
    "priority)"
)


def flag(parser: argparse.ArgumentParser, name: str, text: str) -> None:
    """A boolean ``--name`` switch."""
    parser.add_argument(name, action="store_true", help=text)


def given(args: argparse.Namespace, **defaults: Any) -> dict[str, Any]:
    """The method options the user set: flags whose value differs from its default (a method
    rejects options it does not have)."""
    return {k: getattr(args, k) for k, v in defaults.items() if getattr(args, k) != v}


def _writable_folder(path: Path, text: str) -> None:
    """``path`` (a folder to be, or one that exists) can be created and written: its nearest
    existing ancestor is a folder in which a file can be made (probed with a temporary file)."""
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {probe} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as err:
        raise argparse.ArgumentTypeError(
            f"{text}: cannot write in {probe}: {err.strerror}"
        ) from None


def output_file(text: str) -> str:
    """A file to write: not a folder, and in a folder that exists or can be made and written
    (checked before any work, so that nothing is computed for an output that cannot be kept)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    _writable_folder(path.parent if str(path.parent) else Path("."), text)
    return text


def output_dir(text: str) -> str:
    """A folder to write into: not a file, and one that exists or can be made and written."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    _writable_folder(path, text)
    return text


BIG_FILE = 20_000_000
"""Reading a file above this many bytes prints a progress line first."""


def load(
    path: str, cores: int | None = None, free_allocation: bool = False, no_memory: bool = False
) -> SchedulingInstance | PlacementInstance | RoutedInstance:
    """:func:`npusched.io.load_instance`, announced on stderr for a big file (reading and
    validating 10⁸ bytes takes seconds; the row form minutes, the columnar form far less)."""
    from npusched.io import load_instance

    size = os.path.getsize(path) if os.path.isfile(path) else 0
    if size > BIG_FILE:
        print(f"npusched: reading {path} ({size / 1e6:.0f} MB) ...", file=sys.stderr, flush=True)
    return load_instance(path, cores, free_allocation, False if no_memory else None)


def machine_options(parser: argparse.ArgumentParser) -> None:
    """``--machine`` and ``--cost``: the machine model of a partition
    (:func:`npusched.partition.api.partition_network`)."""
    parser.add_argument(
        "--machine",
        choices=["routed", "compute-only"],
        default="routed",
        help="routed (default): links with contention, DRAM behind memory controllers, each "
        "core's SRAM as its capacity; compute-only: the μop DAG with compute latencies and "
        "hop delays (the model before)",
    )
    parser.add_argument(
        "--cost",
        choices=["analytic", "zigzag", "compute"],
        default=None,
        help="intra-core latency: analytic (default: a roofline per memory level), zigzag "
        "(ZigZag's temporal-mapping search, cached on disk) or "
        "compute (PE-array steps only; the compute-only machine's default)",
    )
    parser.add_argument(
        "--zigzag-time-limit",
        type=positive_float,
        default=120.0,
        help="seconds per ZigZag call (default 120); a tile past it takes the analytic latency, "
        "and the instance's source says which (cost_fallbacks)",
    )


def cost_name(args: argparse.Namespace) -> str:
    """The cost model ``--cost`` asks for, else the ``--machine``'s default."""
    if args.cost is not None:
        return str(args.cost)
    return "analytic" if args.machine == "routed" else "compute"


def cost_model_of(args: argparse.Namespace, arch: Any) -> Any:
    """The cost model of ``--cost`` (and ``--zigzag-time-limit``) for ``arch``: ZigZag's falls
    back where a tile is too large for a core kind's SRAM, as a partition's does
    (:meth:`~npusched.problem.scheduling.machine_view.MachineView.cost_model`)."""
    from npusched.costmodel import cost_model

    name = cost_name(args)
    if name == "zigzag":
        return cost_model(name, arch, time_limit=args.zigzag_time_limit, too_large="fallback")
    return cost_model(name, arch)


def dim_pair(text: str) -> tuple[str, int]:
    """``NAME=N`` of ``--dim``: a symbolic dimension and its size (a positive integer)."""
    name, eq, value = text.partition("=")
    if not eq or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=N, got {text!r}")
    return name.strip(), positive_int(value)


def dims_option(parser: argparse.ArgumentParser) -> None:
    """``--dim NAME=N`` (repeatable): the size of an ONNX input's symbolic dimension."""
    parser.add_argument("--dim", action="append", default=[], type=dim_pair, metavar="NAME=N",
                        help="size of an ONNX input's symbolic dimension, e.g. --dim seq=256 "
                             "(repeatable)")  # fmt: skip


def dims_of(args: argparse.Namespace) -> dict[str, int]:
    """The ``--dim`` values as a dict (the last of a repeated name wins)."""
    return dict(getattr(args, "dim", None) or [])


def each_network(net: Any, run_one: Any, args: argparse.Namespace) -> int:
    """``run_one(args, net)`` on a CNN, or on each GEMM and matmul of a tensor program
    (:meth:`~npusched.workload.tensor.TensorProgram.gemm_networks`); the worst exit code."""
    nets = net.gemm_networks() if hasattr(net, "gemm_networks") else [net]
    return max(run_one(args, one) for one in nets)
