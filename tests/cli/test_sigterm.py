"""SIGTERM (what ``timeout`` and job schedulers send) ends a verb as Ctrl-C does: exit code 143,
one line ``npusched: terminated``, no temporary output left, an earlier output untouched, and no
worker process left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT

from npusched.io import write_instance

SLOW_WRITER = """
    import gzip, sys, time
    write = gzip.GzipFile.write

    def slow(self, data):  # every piece of a .json.gz output takes a moment
        time.sleep(0.2)
        return write(self, data)

    gzip.GzipFile.write = slow
    from npusched.cli.main import main
    sys.exit(main(sys.argv[1:]))
"""


def npusched(tmp_path: Path, *args: object, script: str | None = None) -> subprocess.Popen[str]:
    """``npusched ARGS`` in a subprocess (through ``script`` when given)."""
    if script is None:
        cmd = [sys.executable, "-m", "npusched"]
    else:
        path = tmp_path / "npusched_slow.py"
        path.write_text(textwrap.dedent(script))
        cmd = [sys.executable, str(path)]
    return subprocess.Popen(
        [*cmd, *map(str, args)], cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return False


@pytest.mark.parametrize("earlier", [False, True])
def test_solve_stopped_while_writing_leaves_no_temporary_file(tmp_path, diamond, earlier):
    inst = tmp_path / "diamond.json"
    write_instance(diamond, inst)
    out = tmp_path / "sol.json.gz"
    if earlier:
        out.write_bytes(b"the complete earlier output")
    proc = npusched(tmp_path, "solve", inst, "--method", "list", "--out", out, script=SLOW_WRITER)
    assert wait_for(lambda: list(tmp_path.glob(".sol.json.gz.*.tmp")) or proc.poll() is not None)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "npusched: terminated" and "Traceback" not in err
    assert not list(tmp_path.glob(".sol*"))
    if earlier:
        assert out.read_bytes() == b"the complete earlier output"
    else:
        assert not out.exists()


def test_compare_stopped_ends_its_workers(tmp_path):
    """A process pool of two workers, each running a solver process: all end with the run."""
    from npusched.bench.generate import known_optimum

    paths = []
    for seed in (1, 2):
        path = tmp_path / f"k{seed}.json"
        write_instance(known_optimum(60, 10, 9, seed=seed)[0], path)
        paths.append(path)
    proc = npusched(tmp_path, "compare", *paths, "--methods", "joint", "--time-limit", 60,
                    "--threads", 1, "--workers", 2, "--solutions", tmp_path / "sols")  # fmt: skip

    def descendants() -> set[int]:
        found, todo = set(), [proc.pid]
        while todo:
            parent = todo.pop()
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        with open(f"/proc/{entry}/stat") as f:
                            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    except OSError:
                        continue
                    if ppid == parent and int(entry) not in found:
                        found.add(int(entry))
                        todo.append(int(entry))
        return found

    kids: set[int] = set()

    def solving() -> bool:  # two workers, each with its solver process
        kids.update(descendants())
        return len(kids) >= 4 or proc.poll() is not None

    assert wait_for(solving, 60) and proc.poll() is None, proc.communicate()
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert time.perf_counter() - t0 < 4  # no wait for the jobs (time limit 60 s)

    def ended(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    assert wait_for(lambda: all(ended(pid) for pid in kids), 10), kids
