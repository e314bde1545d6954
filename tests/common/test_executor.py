"""A pool worker's share of the memory limit (``npusched --memory-limit``)."""

from __future__ import annotations

import multiprocessing as mp
import resource
import sys

import pytest

from npusched.common.executor import address_space, share_memory


def _share(limit: int, out) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    held = address_space()
    share_memory(2)
    out.put((held, resource.getrlimit(resource.RLIMIT_AS)[0]))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_a_forked_worker_gets_what_it_holds_and_its_share_of_the_room_left():
    """A forked worker already holds the parent's address space: two workers under a limit
    each get that plus half the room left, never less than they hold (a half of the whole
    limit can be below it, and then nothing could be allocated)."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    held_now = address_space()
    assert held_now > 0
    limit = held_now * 3 // 2
    proc = ctx.Process(target=_share, args=(limit, out))
    proc.start()
    held, soft = out.get(timeout=60)
    proc.join(timeout=10)
    assert held > limit // 2  # a share of the whole limit would be less than it holds
    assert held <= soft <= held + (limit - held) // 2 + 4096
    assert soft >= held + (limit - held) // 2 - 2**20  # (the child's own pages since)
