"""``python -m npusched.bench.flexer_scaling``: both series run, every schedule verifies, and
bad options are a one-line error with exit 2."""

import pytest

from npusched.bench.flexer_scaling import conv_network, main


def test_both_series_schedule_and_verify(capsys):
    assert main(["--sizes", "14,28", "--tile", "7", "--tiles", "14,7", "--tile-layer", "28"]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| size") or
            ln.startswith("| tile")]  # fmt: skip
    assert len(rows) == 4 and all("| ok |" in r for r in rows)
    ops = [int(r.split("|")[4]) for r in rows]
    # 28×28 at 7×7 tiles: 16 positions × 2 output × 2 input channel tiles; 14×14: a quarter
    assert ops == [16, 64, 16, 64]


def test_the_layer_keeps_its_size():
    net = conv_network(20)
    assert net.shapes["conv"] == (64, 20, 20)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sizes", "0,28"], "--sizes values must be >= 1, got '0,28'"),
        (["--tiles", "a"], "--tiles takes integers separated by commas, got 'a'"),
        (["--tile", "0"], "--tile values must be >= 1, got '0'"),
        (["--tile-layer", "-3"], "--tile-layer values must be >= 1, got '-3'"),
    ],
)
def test_bad_options_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: {message}" and "Traceback" not in err


def test_peak_resident_counts_the_most_tiles_held_at_once():
    """Against a count at each residency's start (the peak is reached at one of them)."""
    from npusched.arch import load_arch
    from npusched.bench.flexer_scaling import peak_resident
    from npusched.heuristics.flexer.ooo import ooo_schedule
    from npusched.heuristics.flexer.search import layer_problem
    from npusched.problem.flexer.settings import Settings

    s = Settings.from_arch(load_arch("flexer-arch5"), max_ops=0)
    net = conv_network(28)
    sched = ooo_schedule(layer_problem(net, net.layers[0], (32, 7, 7, 32), s), s.n_npus,
                         s.capacity, s.bandwidth)  # fmt: skip
    held = [r for r in sched.residencies if r.end > r.start]
    brute = max(sum(q.start <= r.start < q.end for q in held) for r in held)
    assert peak_resident(sched) == brute >= 3


def test_a_tile_that_does_not_fit_is_a_one_line_error(capsys):
    import re

    assert main(["--sizes", "14", "--tiles", "224"]) == 2
    out = capsys.readouterr()
    assert out.out == ""  # no table half-written
    m = re.fullmatch(r"error: tile series: 224x224 tiles of the 224x224 layer need (\d+) "
                     r"bytes for one operation; the buffer has (\d+)\n", out.err)  # fmt: skip
    assert m is not None and int(m[1]) > int(m[2])
