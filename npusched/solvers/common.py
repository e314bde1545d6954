"""What a backend returns, before the method decodes it into a
:class:`~npusched.solvers.result.Result`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from npusched.common.terminate import die_with_parent
from npusched.solvers.result import Status, TracePoint


@dataclass
class RawOutput:
    """Backend outcome for a :class:`~npusched.solvers.linear.LinearModel`."""

    status: Status
    x: NDArray[np.float64] | None = None
    objective: float | None = None
    bound: float | None = None
    trace: list[TracePoint] = field(default_factory=list)
    message: str = ""


class TraceRecorder:
    """Collects (time, incumbent, bound) points from solver callbacks, dropping repeats."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.points: list[TracePoint] = []
        self.incumbent: float | None = None
        self.bound: float | None = None

    def update(
        self, incumbent: float | None = None, bound: float | None = None, at: float | None = None
    ) -> None:
        """Record the solver's current incumbent and bound; a point is added to :attr:`points` only
        when one of them changed (values that are ``None``, infinite or NaN are ignored).

        Parameters
        ----------
        incumbent
            Objective of the best solution found so far.
        bound
            Best proven bound on the objective.
        at
            Seconds since the solve started, as the solver reports them; default the wall time since
            this recorder was created.
        """
        changed = False
        if incumbent is not None and np.isfinite(incumbent) and incumbent != self.incumbent:
            self.incumbent, changed = float(incumbent), True
        if bound is not None and np.isfinite(bound) and bound != self.bound:
            self.bound, changed = float(bound), True
        if changed:
            t = time.perf_counter() - self.t0 if at is None else at
            self.points.append(TracePoint(t, self.incumbent, self.bound))


def _send(conn: Any, fn: Callable[[], Any]) -> None:
    die_with_parent()
    highspy = sys.modules.get("highspy")
    if highspy is not None:  # the parent's HiGHS thread pool, inherited without its threads,
        highspy.Highs.resetGlobalScheduler(True)  # hangs any solve (PuLP's too): a fresh one
    try:
        conn.send(fn())
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        conn.send(err)
    finally:
        conn.close()


def run_within(fn: Callable[[], Any], time_limit: float) -> tuple[str, Any]:
    """``fn()`` in a forked process stopped at ``time_limit`` seconds: ``("done", its value)``,
    ``("time", None)`` when it had to be stopped, or ``("died", None)`` when the process ended
    without an answer (out of the memory limit — ``npusched --memory-limit`` — or a crash in the
    solver). For solvers that overrun their own limit while loading or presolving large models
    (CP-SAT loading 10⁵ intervals, HiGHS presolving 10⁶ columns); the child inherits the built
    model, nothing is pickled but the answer. An exception in the child is raised here. In a
    daemonic process (a Dask worker, by Dask's default ``distributed.worker.daemon``), which may
    not start processes, ``fn`` runs in place and the limit is the solver's own. The process
    started here is not daemonic, so ``fn`` may stop its own solvers the same way (a final stage
    of ``orchestrate`` and the solver inside it); it dies with its parent."""
    import multiprocessing as mp

    if mp.current_process().daemon:  # a Dask worker (daemonic) may not fork: run here
        return "done", fn()
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_send, args=(child, fn))  # not daemonic: it may fork in turn
    proc.start()
    child.close()
    try:
        if not parent.poll(max(0.0, time_limit)):
            return "time", None
        out = parent.recv()
    except EOFError:
        return "died", None
    finally:
        _stop(proc)
    if isinstance(out, MemoryError):
        return "died", None
    if isinstance(out, BaseException):
        raise out
    return "done", out


def _stop(proc: Any) -> None:
    """Kill ``proc`` (its own solver processes die with it: ``PR_SET_PDEATHSIG``) without
    waiting for the kernel to take back its memory: a forked CP-SAT holding a large model took
    0.1–0.3 s to be reaped, past the time limit. ``multiprocessing`` reaps it when it next
    starts a process or at exit."""
    proc.kill()
    proc.join(0.01)


STOPPED = {
    "time": "was stopped at the time limit while building, loading or solving the model",
    "died": "ran out of memory or crashed",
}
"""Why :func:`run_within` has no answer, for messages (:func:`why_stopped` adds the limit)."""


def why_stopped(how: str) -> str:
    """:data:`STOPPED` ``[how]``, naming the address-space limit in force (``npusched
    --memory-limit``) when the process died."""
    import resource

    text = STOPPED[how]
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if how == "died" and soft != resource.RLIM_INFINITY:
        text += f" (memory limit {soft // 2**20} MB: npusched --memory-limit)"
    return text
