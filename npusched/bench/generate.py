"""Random instances for experiments: layered DAGs of μops on a mesh; MSPCD task graphs with a
known optimum (:func:`known_optimum`)."""

from __future__ import annotations

import numpy as np

from npusched.common.limits import MAX_VALUE
from npusched.io.mspcd import mspcd_accelerator
from npusched.problem import Accelerator, Reference, Schedule, SchedulingInstance, UopGraph


def layered_dag(
    layers: int,
    width: int,
    mesh: tuple[int, int],
    *,
    hop_latency: int = 1,
    link_bandwidth: float | None = 8.0,
    latency: tuple[int, int] = (2, 12),
    nbytes: tuple[int, int] = (8, 64),
    fan_in: int = 3,
    seed: int = 0,
) -> SchedulingInstance:
    """A random layered DAG, the shape of a partitioned DNN: ``layers`` levels of 1..``width``
    μops; each μop after the first level reads from 1..``fan_in`` μops of the previous level (and,
    with probability 0.2, one more from two levels back, a residual connection). Latencies and
    edge bytes are uniform in the given closed ranges. Repeatable for a given ``seed``."""
    if layers < 1 or width < 1 or fan_in < 1:
        raise ValueError("layers, width and fan_in must be at least 1")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, width + 1, size=layers)
    first = np.concatenate([[0], np.cumsum(sizes)])
    src: list[int] = []
    dst: list[int] = []
    for layer in range(1, layers):
        prev = np.arange(first[layer - 1], first[layer])
        for v in range(first[layer], first[layer + 1]):
            k = int(rng.integers(1, min(fan_in, prev.size) + 1))
            for u in rng.choice(prev, size=k, replace=False).tolist():
                src.append(u)
                dst.append(v)
            if layer >= 2 and rng.random() < 0.2:
                src.append(int(rng.integers(first[layer - 2], first[layer - 1])))
                dst.append(v)
    n = int(first[-1])
    graph = UopGraph(
        rng.integers(latency[0], latency[1] + 1, size=n),
        np.array(src, dtype=np.int64),
        np.array(dst, dtype=np.int64),
        rng.integers(nbytes[0], nbytes[1] + 1, size=len(src)),
    )
    rows, cols = mesh
    return SchedulingInstance(
        graph,
        Accelerator.mesh_grid(rows, cols, hop_latency, link_bandwidth),
        name=f"layered_L{layers}_W{width}_{rows}x{cols}_s{seed}",
        source={
            "generator": "npusched.bench.generate.layered_dag",
            "layers": layers,
            "width": width,
            "fan_in": fan_in,
            "latency": list(latency),
            "bytes": list(nbytes),
            "seed": seed,
        },
    )


MAX_EDGES = 2**24
"""Most edges :func:`known_optimum` writes: the largest graph an instance file holds (columnar
form, ``npusched.common.limits``)."""

SPREAD = 0.25
"""Durations on one processor vary by ±25 % around their mean before rounding (the shared
``ogra50_*_4`` files: 46 of 50 tasks within 37–61 around their mean 48)."""


def default_work_per_proc(n: int) -> int:
    """The MSPCD optimum for ``n`` tasks, ``400 + 4n``: 600 at n = 50, 800 at 100, …, 2 400 at
    500 (Davidović–Crainic's table of optimal schedule lengths, the same for every ``p`` and
    density)."""
    return 400 + 4 * n


def _durations(rng: np.random.Generator, k: int, work: int, spread: float) -> np.ndarray:
    """``k`` integers ≥ 1 summing to ``work``: 1 each, then ``work − k`` split in proportion to
    weights uniform in ``[1 − spread, 1 + spread]`` (largest remainders round)."""
    weight = rng.uniform(1 - spread, 1 + spread, size=k)
    share = (work - k) * weight / weight.sum()
    part = np.floor(share).astype(np.int64)
    part[np.argsort(part - share, kind="stable")[: work - k - int(part.sum())]] += 1
    return 1 + part


def _uniform_pairs(
    rng: np.random.Generator, per_row: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """A uniform ``m``-subset of the pairs ``(row, position)`` with ``position < per_row[row]``,
    as two arrays sorted by row, then position. Below 10^9 pairs the count per row is
    multivariate hypergeometric, then a uniform subset within each row (memory O(rows + m));
    above, ``m`` ≤ 2^24 is under 2 % of the pairs and numpy draws them as a set."""
    if m == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    total = int(per_row.sum())
    if total >= 10**9:  # numpy's multivariate hypergeometric takes fewer
        rank = np.sort(rng.choice(total, size=m, replace=False))
        first = np.cumsum(per_row) - per_row
        row = np.searchsorted(first, rank, side="right") - 1
        return row.astype(np.int64), (rank - first[row]).astype(np.int64)
    take = rng.multivariate_hypergeometric(per_row, m, method="marginals")
    rows = np.flatnonzero(take)
    pos = [np.sort(rng.choice(int(per_row[r]), size=int(take[r]), replace=False)) for r in rows]
    return np.repeat(rows, take[rows]).astype(np.int64), np.concatenate(pos).astype(np.int64)


def known_optimum(
    n: int,
    density: float,
    procs: int,
    *,
    work_per_proc: int | None = None,
    seed: int = 0,
    spread: float = SPREAD,
) -> tuple[SchedulingInstance, Schedule]:
    """An MSPCD task graph built around a schedule without idle time, so that its optimum is the
    total work / ``procs`` (Davidović and Crainic, Computers & Operations Research 33(8), 2006:
    the ``ogra`` graphs with known optimal schedule length; ``../shared/benchmarks/README.md``).

    Construction (repeatable for a given ``seed``):

    1. Processors and delays are the benchmark's (:func:`~npusched.io.mspcd.mspcd_accelerator`):
       ``procs`` ∈ {2, 4, 8, 16} hypercubes, {6, 9, 12} meshes 2 × 3, 3 × 3, 3 × 4 row-major;
       ``j`` starts ``c_ij · hops`` after ``i`` ends when they run on different processors.
    2. Each processor gets ``⌊n/p⌋`` or ``⌈n/p⌉`` tasks (the extra ones on random processors),
       whose integer durations sum to ``T = work_per_proc`` (default ``400 + 4n``, the
       benchmark's optimum: 600 at n = 50, 2 400 at n = 500), near-equal within ``± spread``
       (:data:`SPREAD`); they run back to back from 0, so every processor ends at ``T``.
    3. Tasks are numbered by start time (ties in random order): a topological order of every
       edge below, since an edge's source ends before its destination starts.
    4. A pair ``i < j`` is *admissible* when the schedule can honour an edge ``i → j`` of amount
       ``c ≥ 1``: ``s_j − f_i ≥ 0`` on one processor, ``s_j − f_i ≥ hops`` on two.
       ``round(density/100 · A)`` of the ``A`` admissible pairs, chosen uniformly, become edges;
       each carries ``c`` uniform in ``1 .. max(1, ⌊(s_j − f_i) / h⌋)``, ``h`` the hops between the
       two processors (1 on one processor, where any amount is honoured), so the schedule
       satisfies every delay.

    Density is the benchmark's "edge existence density" read as the share of admissible pairs:
    the edge counts of the six shared ``ogra50_{10,50,90}_{4,9}`` files, divided by their
    density, are one share of all ``n(n−1)/2`` pairs per ``p`` (87–88 % for p = 4, 69–70 % for
    p = 9), the share of admissible pairs this construction gives (88 % and 70 % on average).

    Returns
    -------
    instance, schedule
        The instance (μop ids 1..n, ``reference.optimum = T``, ``source`` the parameters) and the
        hidden schedule: makespan ``T``, no idle time, feasible.

    Raises
    ------
    ValueError
        ``procs`` not one of the benchmark's networks, ``n < procs`` (a processor without a task
        idles), ``density`` outside [0, 100], ``work_per_proc < ⌈n / procs⌉`` (a task would take 0)
        or above 2^40, more than :data:`MAX_EDGES` edges.
    """
    work = check_known_optimum(n, density, procs, work_per_proc, spread)
    acc = mspcd_accelerator(procs)
    rng = np.random.default_rng(seed)
    dur, proc, start = _zero_idle(rng, n, procs, work, spread)
    near, hi = _admissible(acc.hops(), proc, start, start + dur)
    per_row = np.array([len(a) for a in near], dtype=np.int64) + (n - hi)
    admissible = int(per_row.sum())
    m = round(density / 100 * admissible)
    if m > MAX_EDGES:
        raise ValueError(
            f"{m} edges (density {density} % of {admissible} admissible pairs) are more than "
            f"{MAX_EDGES} (2^24), the most an instance file holds: lower n or the density"
        )
    src, pos = _uniform_pairs(rng, per_row, m)
    near_ptr = np.concatenate([[0], np.cumsum([len(a) for a in near])])
    near_flat = np.concatenate(near)
    k = near_ptr[src + 1] - near_ptr[src]  # row i's admissible pairs: near[i], then hi[i], …
    inner = pos < k
    dst = np.where(inner, near_flat[np.where(inner, near_ptr[src] + pos, 0)], hi[src] + pos - k)
    gap = start[dst] - (start + dur)[src]
    unit = np.maximum(acc.hops()[proc[src], proc[dst]], 1)
    amount = rng.integers(1, np.maximum(1, gap // unit) + 1, dtype=np.int64)
    graph = UopGraph(dur, src, dst, amount, tuple(range(1, n + 1)))
    name = f"known_n{n}_d{density:g}_p{procs}_s{seed}"
    source = {
        "generator": "npusched.bench.generate.known_optimum",
        "construction": "MSPCD (Davidović–Crainic 2006): zero-idle schedule, then only edges it "
        "honours",
        "n": n,
        "density": density,
        "procs": procs,
        "network": acc.topology,
        "work_per_proc": work,
        "spread": spread,
        "seed": seed,
        "admissible_pairs": admissible,
    }
    ref = Reference(optimum=work, source="known-optimum construction: no idle time, work / p")
    inst = SchedulingInstance(graph, acc, None, name, ref, source)
    return inst, Schedule(start, proc)


def check_known_optimum(
    n: int,
    density: float,
    procs: int,
    work_per_proc: int | None = None,
    spread: float = SPREAD,
) -> int:
    """The argument checks of :func:`known_optimum` (its Raises), without building the graph;
    returns the work per processor.

    Raises
    ------
    ValueError
        As :func:`known_optimum`.
    """
    mspcd_accelerator(procs)  # ValueError naming the networks
    work = default_work_per_proc(n) if work_per_proc is None else work_per_proc
    if n < 1 or n < procs:
        raise ValueError(
            f"n = {n} tasks on {procs} processors: a schedule without idle time needs at least "
            "one task per processor"
        )
    if not 0 <= density <= 100:
        raise ValueError(f"density must be between 0 and 100 (%), got {density}")
    if not -(-n // procs) <= work <= MAX_VALUE:
        raise ValueError(
            f"work per processor {work} must be at least ⌈n / p⌉ = {-(-n // procs)} (every task "
            "takes at least 1) and at most 2^40"
        )
    if not 0 <= spread < 1:
        raise ValueError(f"spread must be in [0, 1), got {spread}")
    return work


def _zero_idle(
    rng: np.random.Generator, n: int, procs: int, work: int, spread: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 2–3 of :func:`known_optimum`: durations, processors and starts of the hidden
    schedule, tasks numbered by start (ties in random order)."""
    count = np.full(procs, n // procs, dtype=np.int64)
    count[rng.choice(procs, n % procs, replace=False)] += 1
    dur = np.concatenate([_durations(rng, int(k), work, spread) for k in count])
    proc = np.repeat(np.arange(procs, dtype=np.int64), count)
    start = np.concatenate([np.cumsum(dur[proc == q]) - dur[proc == q] for q in range(procs)])
    order = np.lexsort((rng.random(n), start))
    return dur[order], proc[order], start[order]


def _admissible(
    hops: np.ndarray, proc: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray]:
    """Step 4 of :func:`known_optimum`: pair ``(i, j)``, ``j > i``, is admissible from
    ``j ≥ lo[i]`` (``s_j ≥ f_i``); from ``hi[i]`` on every pair is (``s_j ≥ f_i`` + the
    network's diameter); in between, the hops decide. Returns, per ``i``, the admissible ``j`` in
    ``[lo[i], hi[i])``, and ``hi``."""
    lo = np.searchsorted(start, end, side="left")
    hi = np.searchsorted(start, end + int(hops.max()), side="left")
    near: list[np.ndarray] = []
    for i in range(start.size):
        j = np.arange(lo[i], hi[i])
        h = hops[proc[i], proc[j]]
        near.append(j[(h == 0) | (start[j] - end[i] >= h)])
    return near, hi
