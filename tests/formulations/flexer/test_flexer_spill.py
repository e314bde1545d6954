"""Flexer's spill policies (Algorithm 2, Table 2) and the exact spill model."""

from __future__ import annotations

import re

import numpy as np
import pytest

from npusched.bench.flexer_spill import KIB, compare, main, random_map
from npusched.formulations.flexer.spill import BACKENDS, SpillModel, solve_spill_exact
from npusched.heuristics.flexer.spill import (
    first_fit_victims,
    flexer_victims,
    small_victims,
    spill_key,
)
from npusched.solvers.result import Status

K = KIB


def seg(spec: str) -> tuple[list[int], list[int], list[bool], list[bool]]:
    """A memory map from ``"4f 6l5 1p2"``: size in KiB, kind (free, live, pinned), uses."""
    parts = [re.fullmatch(r"(\d+)([flp])(\d*)", t) for t in spec.split()]
    size = [K * int(m[1]) for m in parts if m]
    kinds = [m[2] for m in parts if m]
    uses = [int(m[3] or 0) for m in parts if m]
    return (
        size,
        uses,
        [k != "p" for k in kinds],
        [k != "f" for k in kinds],
    )


# memory map, required KiB, Algorithm 2's run, its key
HAND = {
    # a run of one 6 KiB block with many uses beats a 10 KiB run: fragmentation comes first
    "fragmentation": ("4f 6l5", 6, [1], (0, 30 * K, 1)),
    # three exact fits: the least Σ size × uses wins
    "disadvantage": ("4l3 4l1 4p2 4l2", 4, [1], (0, 4 * K, 1)),
    # same fragmentation and disadvantage: one live block beats two
    "blocks": ("2l0 2l0 1p1 4l0", 4, [3], (0, 0, 1)),
    # a pinned block splits 6 KiB of free space into two 3 KiB runs
    "pinned split": ("3f 1p2 3f", 4, None, None),
    # both halves fit: equal keys, the lowest address wins
    "pinned tie": ("3f 1p2 3f", 3, [0], (0, 0, 0)),
    "too large": ("1l1 2f", 4, None, None),
}


@pytest.mark.parametrize("case", list(HAND))
def test_flexer_victims_hand(case: str) -> None:
    spec, req, run, key = HAND[case]
    (sizes, uses, movable, live), required = seg(spec), req * K
    assert flexer_victims(sizes, uses, movable, live, required) == run
    if run is not None:
        assert spill_key(sizes, uses, live, run, required) == key


@pytest.mark.parametrize("case", list(HAND))
def test_exact_hand(case: str) -> None:
    spec, req, run, key = HAND[case]
    (sizes, uses, movable, live), required = seg(spec), req * K
    ex = solve_spill_exact(sizes, uses, movable, live, required)
    assert ex.stats["key"] == key
    if run is None:
        assert ex.solution is None and ex.status == Status.INFEASIBLE
    else:
        assert ex.status == Status.OPTIMAL and ex.stats["levels"] == (Status.OPTIMAL,) * 3
        if case != "pinned tie":
            assert ex.solution == run  # unique optimum


def test_first_fit_and_small_spill_hand() -> None:
    sizes, uses, movable, live = seg(HAND["blocks"][0])
    assert first_fit_victims(sizes, uses, movable, live, 4 * K) == [0, 1]
    # small spill frees block 3 (1 KiB), then block 1 (2 KiB): [1, 2] is a 4 KiB hole, and the
    # block 3 it spilled on the way is returned too; Algorithm 2 frees [1, 2] only
    sizes, uses, movable, live = seg("4l3 2l1 2f 1l5 1p1")
    assert small_victims(sizes, uses, movable, live, 4 * K) == [1, 2, 3]
    assert flexer_victims(sizes, uses, movable, live, 4 * K) == [1, 2]
    assert first_fit_victims(sizes, uses, movable, live, 4 * K) == [0]
    assert small_victims(sizes, uses, movable, live, 9 * K) == [0, 1, 2, 3]
    assert first_fit_victims(sizes, uses, movable, live, 9 * K) == [0, 1, 2, 3]
    for policy in (small_victims, first_fit_victims, flexer_victims):  # block 4 is pinned
        assert policy(sizes, uses, movable, live, 10 * K) is None


def test_model_checks_input() -> None:
    with pytest.raises(ValueError, match="length"):
        SpillModel([K], [0, 1], [True], [False], K)
    with pytest.raises(ValueError, match="non-negative"):
        SpillModel([-K], [0], [True], [False], K)
    with pytest.raises(ValueError, match="backend"):
        solve_spill_exact([K], [0], [True], [False], K, backend="glpk")
    assert solve_spill_exact([], [], [], [], K).status == Status.INFEASIBLE


def _best_over_all_runs(sizes, uses, movable, live, required):
    """Brute force: the least key over every contiguous run of movable segments."""
    keys = [
        spill_key(sizes, uses, live, range(a, b + 1), required)
        for a in range(len(sizes))
        for b in range(a, len(sizes))
        if all(movable[a : b + 1]) and sum(sizes[a : b + 1]) >= required
    ]
    return min(keys, default=None)


def test_random_maps_cpsat() -> None:
    """1000 random maps: Algorithm 2's key equals the exact optimum over all runs (CP-SAT and
    brute force); runs may differ only by ties, and every optimal run is minimal on both ends."""
    rng = np.random.default_rng(20240601)
    maps = [random_map(rng) for _ in range(1000)]
    out = compare(maps, "cpsat")
    assert out["bad"] == [], out
    assert out["exact better"] == out["heuristic better"] == 0
    assert out["same key"] == out["feasible"] > 500
    assert out["maps"] - out["feasible"] > 50  # infeasible requests are exercised
    print(f"\n{out['feasible'] - out['same run']} of {out['feasible']} runs differ (ties)")
    for m in maps:
        run = flexer_victims(*m)
        key = None if run is None else spill_key(m[0], m[1], m[3], run, m[4])
        assert _best_over_all_runs(*m) == key
        if run is not None:  # positive sizes: a shorter run from either end is too small
            assert sum(m[0][i] for i in run[1:]) < m[4] and sum(m[0][i] for i in run[:-1]) < m[4]


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_agree(backend: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        sizes, uses, movable, live, required = random_map(rng, 12)
        run = flexer_victims(sizes, uses, movable, live, required)
        ex = solve_spill_exact(sizes, uses, movable, live, required, backend=backend)
        if run is None:
            assert ex.solution is None and ex.status == Status.INFEASIBLE
        else:
            assert ex.status == Status.OPTIMAL
            assert ex.stats["key"] == spill_key(sizes, uses, live, run, required)


def test_bench_main(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--maps", "20", "--seed", "3"]) == 0
    assert "heuristic better" in capsys.readouterr().out


def test_hint_is_feasible_and_decodes_back() -> None:
    """The heuristic's run, as a model vector, satisfies every row and decodes to itself."""
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(200):
        m = random_map(rng, 10)
        run = flexer_victims(*m)
        if run is None:
            continue
        model = SpillModel(*m)
        x = model.hint(run)
        assert model.model.satisfies(x)
        assert model.decode(x) == list(run)
        x[model.s[run[0]]] = 0.0  # no start: the one-run row fails
        assert not model.model.satisfies(x)
        checked += 1
    assert checked > 50
