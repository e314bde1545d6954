"""SIGTERM handling (``npusched.common.terminate``), each case in its own Python process: forked
children end at once and never run the parent's cleanup, a child stopped while it writes removes
its temporary file first, and the watchdog ends a run stuck in a C call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from npusched.common.jsonio import remove_pending, replacing, write_json

SOLVER_CHILD = """
        import os
        from npusched.common.terminate import handle_sigterm
        from npusched.solvers.common import run_within

        def spin():
            print(os.getpid(), flush=True)
            while True:
                pass

        with handle_sigterm():
            run_within(spin, 60)
    """

WRITING_CHILD = """
        import multiprocessing as mp, sys, time
        from npusched.common import jsonio
        from npusched.common.terminate import handle_sigterm

        def write():
            with jsonio.replacing("out.txt") as tmp:
                tmp.write_text("partial")
                time.sleep(30)

        with handle_sigterm():
            child = mp.get_context("fork").Process(target=write)
            child.start()
            print(child.pid, flush=True)
            child.join()
            print(child.exitcode, flush=True)
    """

STUCK_IN_C = """
        import hashlib
        from npusched.common import jsonio, terminate

        terminate.GRACE_S = 0.5
        with terminate.handle_sigterm(), jsonio.replacing("out.json") as tmp:
            tmp.write_text("partial")
            print("writing", flush=True)
            hashlib.pbkdf2_hmac("sha256", b"x", b"y", 10**9)
    """

STUCK_AT_EXIT = """
        import threading, time
        from npusched.common import terminate

        terminate.GRACE_S = 0.5
        with terminate.handle_sigterm():
            threading.Thread(target=time.sleep, args=(60,)).start()
            print("ready", flush=True)
            time.sleep(60)
    """

CHILDREN_STOPPED_AS_THEY_START = """
        import multiprocessing as mp, time
        from npusched.common import terminate

        terminate.GRACE_S = 0.5
        ctx = mp.get_context("fork")
        with terminate.handle_sigterm():
            for _ in range(40):  # a solver given a limit of a millisecond, stopped at once
                p = ctx.Process(target=time.sleep, args=(30,))
                p.start()
                p.terminate()
                p.join(5)
                assert p.exitcode == -15, p.exitcode
            time.sleep(1.5)  # past the watchdog's grace
        print("alive", flush=True)
    """


def start(tmp_path: Path, code: str) -> subprocess.Popen[str]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.Popen(
        [sys.executable, str(script)], cwd=tmp_path, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:  # a zombie has ended
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_forked_solver_process_ends_with_its_parent(tmp_path):
    proc = start(tmp_path, SOLVER_CHILD)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    time.sleep(0.2)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 143, err  # Terminated is a SystemExit(143)
    assert time.perf_counter() - t0 < 5
    deadline = time.perf_counter() + 5
    while alive(child) and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def test_a_child_stopped_while_writing_removes_its_temporary_file(tmp_path):
    proc = start(tmp_path, WRITING_CHILD)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    deadline = time.perf_counter() + 20
    while not list(tmp_path.glob(".out.txt.*.tmp")) and time.perf_counter() < deadline:
        time.sleep(0.01)
    assert list(tmp_path.glob(".out.txt.*.tmp"))
    os.kill(child, signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out.split()[-1] == str(-signal.SIGTERM)  # ended by SIGTERM, as without the guard
    assert not list(tmp_path.glob(".out.txt.*")) and not (tmp_path / "out.txt").exists()


def test_the_watchdog_ends_a_run_stuck_in_a_c_call(tmp_path):
    """pbkdf2_hmac releases the GIL and never returns to Python: the handler cannot run, the
    watchdog removes the pending temporary file and exits with 143 after the grace period."""
    proc = start(tmp_path, STUCK_IN_C)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    time.sleep(0.2)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 143 and "forced after 0.5 s" in err
    assert time.perf_counter() - t0 < 5
    assert not list(tmp_path.glob(".out.json.*")) and not (tmp_path / "out.json").exists()


def test_the_watchdog_ends_an_exit_stuck_on_a_thread(tmp_path):
    """After the cleanup, the interpreter waits for a thread that does not end: forced."""
    proc = start(tmp_path, STUCK_AT_EXIT)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 143 and "forced" in err
    assert time.perf_counter() - t0 < 5


def test_children_stopped_as_they_start_leave_their_parent_running(tmp_path):
    """A child stopped before it has taken back SIGTERM's default action would run the
    parent's handler and, through the inherited wakeup pipe, wake the parent's watchdog, which
    then ended the parent (the flaky ``--zigzag-time-limit 0.001`` CLI test)."""
    proc = start(tmp_path, CHILDREN_STOPPED_AS_THEY_START)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.strip() == "alive", err
    assert "Terminated" not in err and "forced" not in err


def test_handler_is_restored_and_nothing_forced_in_process():
    """In this process (as a test calling ``main()`` would): the previous handler comes back,
    and a Terminated caught by the caller does not end the process later."""
    from npusched.common import terminate

    before = signal.getsignal(signal.SIGTERM)
    old, terminate.GRACE_S = terminate.GRACE_S, 0.2
    try:
        with pytest.raises(terminate.Terminated) as info, terminate.handle_sigterm():
            assert signal.getsignal(signal.SIGTERM) is not before
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted by the handler
        assert info.value.code == 143
        time.sleep(0.5)  # past the grace period: the watchdog leaves this process alone
    finally:
        terminate.GRACE_S = old
    assert signal.getsignal(signal.SIGTERM) is before


def test_replacing_writes_whole_or_not_at_all(tmp_path):
    path = tmp_path / "sub" / "a.csv"
    with replacing(path) as tmp:
        tmp.write_text("x,y\n")
        assert tmp.name.startswith(".a.csv.") and tmp.suffix == ".tmp"
    assert path.read_text() == "x,y\n"
    with pytest.raises(KeyboardInterrupt), replacing(path) as tmp:
        tmp.write_text("half")
        raise KeyboardInterrupt
    assert path.read_text() == "x,y\n" and sorted(p.name for p in path.parent.iterdir()) == [
        "a.csv"
    ]
    write_json(path.with_suffix(".json"), {"a": 1})
    with replacing(path) as tmp:  # a forced end's cleanup removes what is being written
        tmp.write_text("half")
        remove_pending()
        assert not tmp.exists()
        tmp.write_text("again")  # (a write that goes on after it still lands whole)
    assert path.read_text() == "again"
