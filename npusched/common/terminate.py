"""SIGTERM ends a run as Ctrl-C does: its temporary files removed, its children stopped.

``timeout`` and job schedulers stop a process with SIGTERM, whose default action ends it at once:
an output being written through a temporary file (:func:`npusched.common.jsonio.replacing`) would
leave that file behind. :func:`handle_sigterm` turns SIGTERM into a :class:`Terminated` exception
in the main thread, so that every ``finally`` and ``except BaseException`` runs (the writers
remove their temporary files, executors shut down, solver processes are stopped), as for
``KeyboardInterrupt``; ``npusched`` then exits with :data:`EXIT_CODE` = 143 (128 + 15, what a
shell reports for a process ended by SIGTERM; Ctrl-C exits with 130).

- **Forked processes** (solvers stopped at their time limit, ZigZag calls, process-pool workers)
  get SIGTERM from the parent's handler and take back its default action as they start
  (``os.register_at_fork``), and die with the parent (``PR_SET_PDEATHSIG``):
  ``Process.terminate()`` sends SIGTERM and must end them at once, even inside a solver's C++
  code, and a child never runs its parent's cleanup. SIGTERM is blocked in the forking thread
  from just before the fork until the child has taken back the default action (a SIGTERM sent
  to a child as it starts then ends it at once, and never reaches the parent's watchdog). Only
  while a child writes a file (``compare --solutions`` in a pool worker) does SIGTERM raise
  :class:`Terminated` there; the temporary file removed, the child then ends by SIGTERM as it
  would have. Programs started with ``exec`` (CBC) get the default action anyway.
- **A watchdog**: Python runs a signal handler between the main thread's bytecodes only, so a
  main thread inside a long C call that releases the GIL, or an interpreter waiting at exit for
  pool workers that did not get the signal, would end late. A thread learns of SIGTERM through
  ``signal.set_wakeup_fd``; if the process still runs :data:`GRACE_S` seconds later (the run not
  over, or the interpreter still ending), it removes the temporary files being written
  (:func:`npusched.common.jsonio.remove_pending`), kills the forked children and exits with 143.
  A C call that holds the GIL the whole time (none of npusched's solvers does) stops it too: then
  only SIGKILL ends the process.
- Further SIGTERMs while the run ends are ignored (the watchdog bounds the wait).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType

from npusched.common.jsonio import guard_writes, remove_pending

EXIT_CODE = 128 + int(signal.SIGTERM)
"""Exit code of a run ended by SIGTERM: 143."""

GRACE_S = 5.0
"""Seconds the run has to end by its own cleanup after SIGTERM before the watchdog ends it."""


class Terminated(SystemExit):
    """Raised in the main thread by SIGTERM. A :class:`SystemExit` (code 143): ``except
    Exception`` does not catch it, and uncaught it ends the interpreter without a traceback."""

    def __init__(self, code: int = EXIT_CODE) -> None:  # one argument: it pickles
        super().__init__(code)


_state = {"installed": False, "terminating": False, "hooked": False, "child": False}
"""``installed``: :func:`handle_sigterm` is active in this process; ``child``: this process was
forked while it was (directly or not)."""
_pipe: list[int] = []  # the watchdog's wakeup pipe (read end, write end), made once per process


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    if _state["terminating"]:  # a second SIGTERM while the first one's cleanup runs
        return
    _state["terminating"] = True
    if _state["installed"]:  # the run's forked processes end too (pool workers, solvers)
        _signal_children()
    raise Terminated


def _signal_children() -> None:
    """SIGTERM to this process's live forked children (they end at once, or once their write
    has cleaned up)."""
    import multiprocessing as mp

    for child in mp.active_children():
        with contextlib.suppress(Exception):
            child.terminate()


_fork = {"parent": 0, "from_main": False, "blocked": False}
"""The forking process, whether its main thread forks and whether SIGTERM is blocked around the
fork (set before each fork)."""


def _before_fork() -> None:
    """SIGTERM is blocked in the forking thread until the child has taken back its default
    action: a SIGTERM sent to the child as it starts (a limit of a millisecond) would otherwise
    run the parent's handler in the child and wake the parent's watchdog through the inherited
    wakeup pipe, ending the parent 5 s later."""
    blocked = _state["installed"] or _state["child"]
    if blocked:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    _fork.update(
        parent=os.getpid(),
        from_main=threading.current_thread() is threading.main_thread(),
        blocked=blocked,
    )


def _after_fork_in_parent() -> None:
    if _fork["blocked"]:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def die_with_parent() -> None:
    """Linux: this process is killed when its parent ends (``PR_SET_PDEATHSIG``): a process
    forked to run a solver, a ZigZag call or one of the list's allocations does not run on when
    the process that started it is stopped. Elsewhere nothing."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG


def _after_fork_in_child() -> None:
    """A forked process takes back SIGTERM's default action and leaves the parent's wakeup pipe
    (the forking thread is the child's main thread, so ``signal`` may be called here). Forked by
    a main thread, it also dies with its parent (Linux ``PR_SET_PDEATHSIG``; a thread's child
    would die with the thread), from its first instruction on: a parent that ends while the child
    starts leaves no orphan (a solver running on to its time limit, holding the output pipes)."""
    if not (_state["installed"] or _state["child"]):
        return
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
    _state.update(installed=False, terminating=False, child=True)
    if _fork["blocked"]:  # a SIGTERM that came meanwhile ends the child now, by default
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    if _fork["from_main"] and sys.platform.startswith("linux"):
        die_with_parent()
        if os.getppid() != _fork["parent"]:  # the parent ended before the line above
            os.kill(os.getpid(), signal.SIGKILL)


@contextlib.contextmanager
def _writing() -> Iterator[None]:
    """Around each file write (:func:`npusched.common.jsonio.guard_writes`): in a forked child
    whose SIGTERM has its default action, SIGTERM raises :class:`Terminated` while the file is
    written, and once the write has cleaned up the child ends by SIGTERM all the same."""
    if (
        not _state["child"]
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL
    ):
        yield
        return
    _state["terminating"] = False
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    except Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)  # the end the signal would have had
        raise  # only if SIGTERM is blocked
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


guard_writes(_writing)


def _force_end() -> None:
    """What the watchdog does once :data:`GRACE_S` has passed: remove the temporary files being
    written, kill the forked children, exit with :data:`EXIT_CODE`."""
    import multiprocessing as mp

    remove_pending()
    with contextlib.suppress(Exception):
        for child in list(mp.process._children):  # type: ignore[attr-defined]
            with contextlib.suppress(Exception):
                child.kill()
    with contextlib.suppress(Exception):
        sys.stderr.write(f"npusched: terminated (forced after {GRACE_S:g} s)\n")
        sys.stderr.flush()
    os._exit(EXIT_CODE)


def _exiting() -> bool:
    """Whether the interpreter is ending (joining threads and children, running atexit)."""
    return bool(getattr(threading, "_SHUTTING_DOWN", False)) or sys.is_finalizing()


def _watch(read_fd: int) -> None:
    """The watchdog: reads the signal numbers Python's C handler writes to the wakeup pipe."""
    while True:
        try:
            data = os.read(read_fd, 64)
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:
            return
        # the handler may have run, and the block ended, before this thread woke up
        if int(signal.SIGTERM) in data and (_state["installed"] or _state["terminating"]):
            time.sleep(GRACE_S)
            if _state["installed"] or _exiting():  # not a caller that went on (a test)
                _force_end()


def _wakeup_fd() -> int:
    """The write end of the watchdog's pipe (the thread started on first use)."""
    if not _pipe:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)  # set_wakeup_fd needs a non-blocking descriptor
        _pipe.extend((read_fd, write_fd))
        watchdog = threading.Thread(
            target=_watch, args=(read_fd,), name="npusched-sigterm-watchdog", daemon=True
        )
        watchdog.start()
    return _pipe[1]


@contextlib.contextmanager
def handle_sigterm() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` in this (main) thread, forked
    processes take back the default action, and the watchdog ends a run that has not ended
    :data:`GRACE_S` after the signal. The previous handler and wakeup descriptor come back
    afterwards. Outside the main thread (where Python cannot set signal handlers), or nested,
    it does nothing."""
    if threading.current_thread() is not threading.main_thread() or _state["installed"]:
        yield
        return
    if not _state["hooked"]:
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                            after_in_child=_after_fork_in_child)  # fmt: skip
        _state["hooked"] = True
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    old_fd = signal.set_wakeup_fd(_wakeup_fd(), warn_on_full_buffer=False)
    _state.update(installed=True, terminating=False)
    try:
        yield
    finally:
        _state["installed"] = False
        signal.signal(signal.SIGTERM, previous)
        signal.set_wakeup_fd(old_fd)
