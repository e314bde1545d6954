"""Davidović–Crainic MSPCD task graphs (``.td``): multiprocessor scheduling with communication
delays on a hypercube or a mesh (T. Davidović and T. G. Crainic, Computers & Operations Research
33(8), 2006; format and model in ``../shared/benchmarks/README.md``).

Format: whitespace-separated integers; first ``n``; then one line per task
``i t_i k s_1 c_1 … s_k c_k`` (index ``1..n`` in topological order, processing time, number of
successors, then successor index and communication amount pairs).

Model: if ``i`` precedes ``j`` and they run on processors ``a ≠ b``, ``j`` starts at least
``c_ij · d(a, b)`` after ``i`` ends (store and forward; no link contention): the accelerator's
``"per_hop"`` delay model (:meth:`~npusched.problem.Accelerator.delay_terms`) with ``c_ij`` in the
edge's ``bytes``. The network comes from the processor count ``p``: 2, 4, 8, 16 are hypercubes of
dimension 1–4 (processor ``k`` is node ``k``), 6, 9, 12 are 2 × 3, 3 × 3, 3 × 4 meshes numbered
row-major. Processor ``k`` is core ``k``; task ``i`` is μop id ``i``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

from npusched.common.errors import InputError
from npusched.common.jsonio import read_text
from npusched.common.limits import MAX_VALUE
from npusched.problem.scheduling.accelerator import Accelerator
from npusched.problem.scheduling.dag import UopGraph
from npusched.problem.scheduling.instance import Reference, SchedulingInstance

HYPERCUBES = {2: 1, 4: 2, 8: 3, 16: 4}
"""Processor count → hypercube dimension (2 processors: two linked ones, the 1-cube)."""
MESHES = {6: (2, 3), 9: (3, 3), 12: (3, 4)}
"""Processor count → mesh ``rows × cols``."""
NAME = re.compile(r"ogra(\d+)_(\d+)_(\d+)$")


def mspcd_accelerator(p: int) -> Accelerator:
    """The benchmark's network of ``p`` processors with store-and-forward delays."""
    if p in HYPERCUBES:
        return Accelerator.hypercube_nodes(HYPERCUBES[p], delay_model="per_hop")
    if p in MESHES:
        return Accelerator.mesh_grid(*MESHES[p], delay_model="per_hop")
    known = ", ".join(str(k) for k in sorted({**HYPERCUBES, **MESHES}))
    raise ValueError(f"MSPCD defines no network of {p} processors; choose from {known}")


def _tokens(path: Path) -> list[tuple[int, list[int]]]:
    """Non-empty lines as ``(line number, integers)``; a non-numeric token is an error."""
    text = read_text(path)
    rows = []
    for no, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        try:
            rows.append((no, [int(w) for w in words]))
        except ValueError:
            bad = next((w for w in words if not re.fullmatch(r"[+-]?\d+", w)), None)
            reason = (
                f"{bad!r} is not an integer"
                if bad is not None
                else f"an integer of more than {sys.get_int_max_str_digits()} digits"
            )
            raise InputError(path, f"line {no}", reason) from None
    return rows


def _task(path: Path, no: int, row: list[int], i: int, n: int) -> tuple[int, list[int], list[int]]:
    """Time, successors and amounts of task ``i`` from its line, checked."""
    where = f"line {no}"
    if len(row) < 3 or row[0] != i:
        raise InputError(path, where, f"expected 'task time #successors ...' for task {i}")
    time, k, pairs = row[1], row[2], row[3:]
    if not 0 <= time <= MAX_VALUE:
        raise InputError(path, where, f"task {i} has time {time}, outside 0..2^40")
    if k < 0 or len(pairs) != 2 * k:
        raise InputError(path, where, f"task {i} lists {len(pairs) // 2} successor pairs, not {k}")
    succ, amount = pairs[0::2], pairs[1::2]
    for s, c in zip(succ, amount, strict=True):
        if not i < s <= n:
            raise InputError(path, where, f"successor {s} of task {i} is not in {i + 1}..{n}")
        if not 0 <= c <= MAX_VALUE:
            raise InputError(
                path, where, f"communication amount {c} to task {s} is outside 0..2^40"
            )
    return time, succ, amount


def read_mspcd(path: str | Path, procs: int | None = None) -> SchedulingInstance:
    """Read a ``.td`` file as an instance on its network (module docstring).

    ``procs`` defaults to the ``p`` of the file name ``ogra<n>_<density>_<p>.td``. When it is the
    file's own ``p``, the reference optimum is the total work divided by ``p``: the benchmark's
    graphs are built to have a schedule without idle time.

    Raises
    ------
    InputError
        Unreadable file; a wrong task count; a successor out of range or not after its task; a
        negative time; a non-numeric token: ``FILE: line N: reason``. No ``p`` known.
    """
    path = Path(path)
    named = NAME.match(path.stem)
    p = procs if procs is not None else int(named.group(3)) if named else None
    if p is None:
        raise InputError(path, "--procs", "the file name gives no processor count")
    rows = _tokens(path)
    if not rows or len(rows[0][1]) != 1 or rows[0][1][0] < 1:
        raise InputError(path, f"line {rows[0][0] if rows else 1}", "expected the task count n")
    n = rows[0][1][0]
    if len(rows) - 1 != n:
        raise InputError(
            path, f"line {rows[0][0]}", f"n = {n} but the file has {len(rows) - 1} task lines"
        )
    latency = np.zeros(n, dtype=np.int64)
    src: list[int] = []
    dst: list[int] = []
    amount: list[int] = []
    for i, (no, row) in enumerate(rows[1:], 1):
        latency[i - 1], succ, amt = _task(path, no, row, i, n)
        src += [i - 1] * len(succ)
        dst += [s - 1 for s in succ]
        amount += amt
    graph = UopGraph(
        latency, np.array(src), np.array(dst), np.array(amount), tuple(range(1, n + 1))
    )
    try:
        acc = mspcd_accelerator(p)
    except ValueError as err:
        raise InputError(path, "--procs", str(err)) from None
    work = int(latency.sum())
    ref = Reference()
    if named and int(named.group(3)) == p and work % p == 0:
        ref = Reference(optimum=work // p, source="MSPCD construction: no idle time, work / p")
    source = {"format": "mspcd", "file": path.name, "procs": p, "network": acc.topology}
    return SchedulingInstance(graph, acc, None, f"{path.stem}_p{p}", ref, source)
