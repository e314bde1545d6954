"""``npusched flexer``'s out-of-order search: ``flexer-lns`` by default, ``flexer-beam`` by
``--scheduler beam``, the paper's greedy (``flexer-ooo``) by ``--scheduler ooo`` (issue 25,
item 3)."""

import json

import pytest

from npusched.cli.main import main

#: Two SqueezeNet layers on which the beam beats the greedy (7322 against 7371 cycles, 8464
#: against 8823, the same bytes), in about 2 s.
SMALL = ["flexer", "--network", "squeezenet", "--arch", "arch5", "--max-ops", "16",
         "--layers", "fire2.expand1x1,fire5.expand3x3", "--workers", "1"]  # fmt: skip


def _run(capsys, *extra: str) -> dict:
    assert main([*SMALL, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _metric(row: dict) -> int:
    return row["ooo_latency"] * row["ooo_transfer_bytes"]


def test_lns_is_the_default_and_no_worse_than_the_beam(capsys):
    """The default re-times the beam's schedules: never longer, the same bytes, verified."""
    lns, beam = _run(capsys, "--lns-seconds", "0.5"), _run(capsys, "--scheduler", "beam")
    assert lns["scheduler"] == "lns" and lns["settings"]["lns_seconds"] == 0.5
    assert lns["verified_schedules"] == 4 and lns["complete"] is True
    for a, b in zip(lns["layers"], beam["layers"], strict=True):
        assert a["ooo_latency"] <= b["ooo_latency"]
        assert a["ooo_transfer_bytes"] == b["ooo_transfer_bytes"]
        assert a["tiling"] == b["tiling"] and a["static_latency"] == b["static_latency"]


def test_beam_is_no_worse_than_the_greedy(capsys):
    beam, greedy = _run(capsys, "--scheduler", "beam"), _run(capsys, "--scheduler", "ooo")
    assert beam["scheduler"] == "beam" and greedy["scheduler"] == "ooo"
    assert beam["settings"]["beam_width"] == 8 and beam["settings"]["beam_depth"] == 3
    for out in (beam, greedy):  # every schedule (OoO and static, both layers) verified
        assert out["verified_schedules"] == 4 and out["complete"] is True
    assert [r["name"] for r in beam["layers"]] == [r["name"] for r in greedy["layers"]]
    for b, g in zip(beam["layers"], greedy["layers"], strict=True):
        assert _metric(b) <= _metric(g)  # the paper's metric, per layer
        assert b["static_latency"] == g["static_latency"]  # the same static baseline
    assert beam["total"]["ooo_latency"] < greedy["total"]["ooo_latency"]
    assert beam["total"]["ooo_transfer_bytes"] <= greedy["total"]["ooo_transfer_bytes"]
    assert beam["total"]["speedup"] > greedy["total"]["speedup"]


def test_beam_options_reach_the_search(capsys):
    """A beam of width 1 and depth 1 is the greedy's schedule."""
    one = _run(capsys, "--scheduler", "beam", "--beam-width", "1", "--beam-depth", "1",
               "--beam-top", "0")  # fmt: skip
    greedy = _run(capsys, "--scheduler", "ooo")
    assert one["scheduler"] == "beam" and one["settings"]["beam_width"] == 1
    assert one["settings"]["beam_top"] == 0
    assert one["total"]["ooo_latency"] == greedy["total"]["ooo_latency"]
    assert one["total"]["ooo_transfer_bytes"] == greedy["total"]["ooo_transfer_bytes"]


def test_table_names_the_scheduler(capsys):
    assert main([*SMALL, "--scheduler", "ooo"]) == 0
    assert "(OoO: flexer-ooo)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "msg"),
    [
        (["--beam-width", "0"], "--beam-width and --beam-depth must be >= 1, got 0 and 3"),
        (["--beam-depth", "-2"], "--beam-width and --beam-depth must be >= 1, got 8 and -2"),
        (["--beam-top", "-1"], "--beam-top must be >= 0"),
        (["--scheduler", "ooo", "--beam-width", "0"], "--beam-width"),
        (["--lns-seconds", "-1"], "--lns-seconds must be finite and >= 0, got -1"),
        (["--lns-seconds", "inf"], "--lns-seconds must be finite and >= 0, got inf"),
        (["--lns-seconds", "nan"], "--lns-seconds must be finite and >= 0, got nan"),
    ],
)
def test_bad_beam_exits_2_in_one_line(argv, msg, capsys):
    assert main([*SMALL, *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("npusched: error: ") and msg in lines[0]
