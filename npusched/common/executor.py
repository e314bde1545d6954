"""Where independent jobs run (``orchestrate``'s evaluations, ``compare``'s instances): a
``concurrent.futures`` executor, a local process pool by default or a Dask distributed cluster
(``dask://HOST:PORT``: ``Client(address).get_executor()``), closed on every exit path, Ctrl-C
included."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor


def share_memory(parts: int) -> None:
    """In a worker of a local pool: its share of the address-space limit in force (``npusched
    --memory-limit``, inherited from the parent), so that ``parts`` workers together stay
    within it. A forked worker starts with the parent's address space (shared until written),
    so it gets what it holds now plus its share of the room left: a share of the whole limit
    could be less than it already holds, and then no allocation would succeed."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and parts > 1:
        held = address_space()
        resource.setrlimit(resource.RLIMIT_AS, (held + max(soft - held, 0) // parts, hard))


def address_space() -> int:
    """This process's address space now, bytes (Linux ``/proc/self/statm``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def local_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """A process pool of ``workers`` (default: all cores), each with its
    :func:`share_memory` of the memory limit."""
    n = workers or os.cpu_count() or 1
    return ProcessPoolExecutor(max_workers=n, initializer=share_memory, initargs=(n,))


@contextlib.contextmanager
def open_executor(
    spec: str | None = "local", workers: int | None = None
) -> Iterator[Executor | None]:
    """``None``/``"serial"``: no executor (evaluate in this process); ``"local"``: a process pool of
    ``workers`` (default: all cores); ``"dask://HOST:PORT"``: that Dask scheduler's executor (TCP;
    ``dask://inproc://…`` and other Dask addresses are passed on as they are). Every Dask task
    runs, as in a process pool (``pure=False``: no merging of equal calls into one)."""
    if spec in (None, "serial"):
        yield None
        return
    if spec == "local":
        pool = local_pool(workers)
        try:
            yield pool
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return
    if spec.startswith("dask://"):
        from distributed import Client

        address = spec.removeprefix("dask://")
        client = Client(address if "://" in address else f"tcp://{address}", timeout=10)
        try:
            yield client.get_executor(pure=False)
        finally:
            client.close()
        return
    raise ValueError(f"unknown executor {spec!r}; use local, serial or dask://HOST:PORT")
