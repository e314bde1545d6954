"""Running independent jobs (layers of a network, instances of a sweep) through any
``concurrent.futures`` executor: a local process pool by default, Dask distributed's
``Client.get_executor()`` on a cluster."""

from __future__ import annotations

import sys
from concurrent.futures import Executor, as_completed
from typing import Any

from tqdm import tqdm

from npusched.common.executor import local_pool


def map_layers(
    fn: Any,
    items: list[tuple[Any, ...]],
    executor: Executor | None = None,
    workers: int | None = None,
    weights: list[int] | None = None,
    progress: str | None = None,
) -> list[Any]:
    """``[fn(*it) for it in items]`` through an executor: ``executor`` if given, else a process
    pool of ``workers`` (default: all cores), or in this process when ``workers == 1``. The
    heaviest items (``weights``) are submitted first; results keep ``items``' order. With
    ``progress`` (a label), a bar of finished items is shown on stderr when it is a terminal."""
    off = None if progress else True  # tqdm: None hides the bar when stderr is not a terminal
    with tqdm(total=len(items), desc=progress, unit="layer", file=sys.stderr, disable=off) as bar:
        if executor is None and (workers == 1 or len(items) <= 1):
            out = []
            for it in items:
                out.append(fn(*it))
                bar.update()
            return out
        order = sorted(range(len(items)), key=lambda k: -(weights[k] if weights else 0))
        own = executor is None
        ex = executor or local_pool(workers)
        try:
            futs = {k: ex.submit(fn, *items[k]) for k in order}
            for _ in as_completed(futs.values()):
                bar.update()
            return [futs[k].result() for k in range(len(items))]
        finally:
            if own:
                ex.shutdown()
