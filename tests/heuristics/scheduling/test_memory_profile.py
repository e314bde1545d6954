"""A core's resident data as a step function (:class:`Profile`): the earliest time a new
lifetime fits, against the definition checked instant by instant."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from npusched.heuristics.scheduling.memory_profile import Profile


def _level_at(p: Profile, t: int) -> int:
    """The bits resident at instant ``t`` (0 before the first breakpoint)."""
    before = [lv for tt, lv in zip(p.time.tolist(), p.level.tolist(), strict=True) if tt <= t]
    return before[-1] if before else 0


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 40), st.integers(1, 6)), max_size=30),
       st.integers(0, 50), st.integers(0, 12))  # fmt: skip
def test_earliest_fit_is_the_first_instant_from_which_the_bits_always_fit(ops, r, b):
    """Open lifetimes (and close some) at random times; ``earliest_fit(r, b)`` is the least
    ``t ≥ r`` with the level plus ``b`` within the capacity at every instant from ``t`` on
    (``None`` when the open lifetimes leave too little room for ever)."""
    p, cap, key = Profile(12), 12, 0
    for close, t, bits in ops:
        if close and p.held:
            p.close(next(iter(p.held)), t)
        elif p.open_bits + bits <= cap:
            p.add(key, t, bits)
            key += 1
    horizon = max([r, *p.time.tolist()]) + 1
    fits = [t for t in range(r, horizon + 1)
            if all(_level_at(p, u) + b <= cap for u in range(t, horizon + 1))]  # fmt: skip
    assert p.earliest_fit(r, b) == (fits[0] if fits else None)
