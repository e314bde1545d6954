"""The memory-aware list's pool of candidates: the window is the candidates not parked among the
best of the whole pool, and a parked one comes back when its core's open bits fall to its
threshold, when it is woken (dirty), or, streamed, after an eviction."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from npusched.heuristics.scheduling.candidates import Candidates


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10**6), size=st.integers(1, 6))
@example(seed=1460, size=1)  # parked again with the same threshold on the other core
def test_the_window_is_the_unparked_among_the_best_of_the_pool(seed, size):
    rng = np.random.default_rng(seed)
    mem = [SimpleNamespace(open_bits=int(rng.integers(0, 10))) for _ in range(2)]
    keys = {i: (int(rng.integers(0, 5)), 0, i) for i in range(12)}
    cands = Candidates((keys[i] for i in range(6)), 2)
    pool, parked = set(range(6)), {}  # the shadow: μop -> (core, threshold or None: streamed)
    nxt, evictions, stamp = 6, 0, -1
    for _ in range(40):
        op = int(rng.integers(0, 6))
        window = cands.window(size)
        best = sorted(keys[i] for i in pool)[:size]
        assert window == [k for k in best if k[2] not in parked]
        if op == 0 and nxt < 12:
            cands.add(keys[nxt])
            pool.add(nxt)
            nxt += 1
        elif op == 1 and window:
            key = window[int(rng.integers(0, len(window)))]
            core, threshold = int(rng.integers(0, 2)), int(rng.integers(0, 10))
            streamed = bool(rng.integers(0, 2))
            cands.park(key, core, threshold, streamed)
            parked[key[2]] = (core, None if streamed else threshold)
        elif op == 2 and pool:
            i = sorted(pool)[int(rng.integers(0, len(pool)))]
            cands.take(keys[i])
            pool.discard(i)
            parked.pop(i, None)
        elif op == 3 and parked:
            i = sorted(parked)[0]
            cands.wake([i])
            del parked[i]
        else:  # the memories change, perhaps an eviction, and the list looks again
            for m in mem:
                m.open_bits = int(rng.integers(0, 10))
            evictions += int(rng.integers(0, 2))
            cands.wake_fitting(mem, evictions)
            for i, (core, threshold) in list(parked.items()):
                if (evictions != stamp) if threshold is None else (
                        threshold >= mem[core].open_bits):  # fmt: skip
                    del parked[i]
            stamp = evictions
        assert set(parked) == set(cands.parked)
