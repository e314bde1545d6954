"""``python -m npusched.bench.delays``: the gap tables on tiny generated graphs, the shared MSPCD
rows, the growth columns of ``scaling`` and the exact search's tables and goal lines (every
schedule is verified inside the bench)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SHARED, needs_shared

from npusched.bench.delays import goal_table, main, oracles
from npusched.bench.generate import known_optimum
from npusched.verify import check

METHODS = ("etf", "priority", "dls-append", "dls-1", "dls")


def rows(out: str, first: str) -> list[list[str]]:
    """The cells of the table rows of ``out`` whose first cell is ``first``."""
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in out.splitlines()]
    return [c for c in cells if c and c[0] == first]


def test_gaps_prints_a_row_per_size_processor_count_density_and_overall(capsys):
    args = ["gaps", "--sizes", "50", "--procs", "4", "--densities", "50", "--restarts", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    header = "| n | graphs | " + " | ".join(f"{m} gap %" for m in METHODS) + " |"
    assert header in out and "| density | graphs |" in out
    for first in ("50", "4"):  # the n table's row and the p table's row (both one graph)
        assert any(r[1] == "1" for r in rows(out, first))
    overall = rows(out, "all")
    assert len(overall) == 3  # by n, by p, by density
    for r in overall:
        assert r[1] == "1" and len(r) == 2 + len(METHODS)
        assert all(float(g) >= 0 for g in r[2:])  # no schedule beats the known optimum
    times = rows(out, "50")[-1]  # the time table: n, mean edges, seconds per method
    assert len(times) == 2 + len(METHODS) and int(times[1]) > 0


def test_oracles_keep_half_of_the_hidden_schedule_and_verify():
    inst, hidden = known_optimum(40, 90, 4, seed=3)
    given = oracles(hidden)
    order = given["order*"][0](inst)
    cores = given["cores*"][0](inst)
    assert check(inst, order).ok and check(inst, cores).ok
    assert (cores.core == hidden.core).all()  # the hidden cores, kept
    # the hidden order, kept: each core runs its μops in the order of their hidden starts
    for k in range(inst.m):
        mine = order.core == k
        assert (np.diff(hidden.start[mine][np.argsort(order.start[mine])]) > 0).all()
    # on a dense graph the decoder on the hidden cores finds the hidden schedule's makespan
    assert cores.makespan(inst) == hidden.makespan(inst) == inst.reference.optimum


def test_gaps_with_oracles_adds_their_columns(capsys):
    args = ["gaps", "--sizes", "30", "--procs", "4", "--densities", "50", "--restarts", "0",
            "--oracles"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "| order* gap % | cores* gap % |" in out
    assert all(len(r) == 2 + len(METHODS) + 2 for r in rows(out, "all"))


@needs_shared
@pytest.mark.skipif(not (SHARED / "mspcd").is_dir(), reason="no shared MSPCD files")
def test_shared_prints_one_row_per_file(capsys):
    assert main(["shared", "--restarts", "0"]) == 0
    out = capsys.readouterr().out
    files = sorted((SHARED / "mspcd").glob("ogra*.td"))
    assert sum(line.startswith("| ogra") for line in out.splitlines()) == len(files)
    gaps = rows(out, "mean gap %")[0][3:]
    assert len(gaps) == len(METHODS) and all(float(g) >= 0 for g in gaps)


def test_scaling_prints_growth_ratios(capsys):
    assert main(["scaling", "--sizes", "200,400", "--mesh", "2x2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4  # header, rule, two sizes
    cells = [c.strip() for c in lines[3].strip("|").split("|")]
    assert float(cells[6]) > 0 and float(cells[7]) > 1  # time ratio, n ratio
    assert float(cells[12]) > 0  # DLS / list makespan


def test_exact_prints_per_graph_rows_groups_and_nonnegative_gaps(capsys):
    args = ["exact", "--sizes", "20", "--procs", "2,4", "--densities", "50", "--time-limit", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    per_graph = [line for line in out.splitlines() if line.startswith("| known_n20_d50_p")]
    assert len(per_graph) == 2
    for line in per_graph:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert int(cells[6]) >= int(cells[4])  # the lns makespan is no less than the optimum
        assert cells[7] in ("optimal", "feasible")
    header = "| n | graphs | lns gap % | lns at optimum % | lns s | lns to best s |"
    assert header in out and "| p | graphs |" in out and "| density | graphs |" in out
    assert [r[1] for r in rows(out, "20")] == ["2"] and len(rows(out, "all")) == 3
    for r in rows(out, "all"):
        gap, at_opt, secs, to_best = (float(c) for c in r[2:])
        assert gap >= 0 and 0 <= at_opt <= 100 and 0 <= to_best <= secs <= 2 + 1
    assert "No goal covers these sizes." in out


def test_goal_table_judges_each_goal_where_it_has_graphs():
    def row(n: int, gap: float, limit: float = 60.0) -> dict[str, object]:
        return {"n": n, "limit": limit, "lns_gap": gap, "lns_opt": float(gap == 0)}

    table = goal_table([row(50, 0.0)] * 19 + [row(50, 0.1), row(100, 0.03), row(200, 0.0)], ["lns"])
    lines = [r for r in table.splitlines() if r.startswith("| n = ")]
    assert len(lines) == 2  # n = 50 and n = 100–250; no graph of 300–500
    assert "95.0 % (19 of 20)" in lines[0] and lines[0].endswith("| met |")
    assert "1.5 %" in lines[1] and lines[1].endswith("| met |")
    missed = goal_table([row(300, 0.2, 120.0)], ["lns"])
    assert "20.0 %" in missed and missed.endswith("| not met |")
    assert "not judged" in goal_table([row(50, 0.0, 90.0)], ["lns"])


def test_exact_marks_a_warm_start_returned_in_place_of_the_search(monkeypatch):
    from npusched.bench import delays
    from npusched.bench.generate import known_optimum
    from npusched.solvers.result import Result, Status

    inst, sched = known_optimum(20, 50, 4, seed=3)

    def late(instance, method, **kw):  # what solve() returns when the search overran its limit
        ms = sched.makespan(instance)
        return Result(Status.OPTIMAL, method, "cpsat", ms, ms, 5.0, sched,
                      stats={"fallback": "warm_start"})  # fmt: skip

    monkeypatch.setattr(delays, "solve", late)
    row = delays.run_exact(inst, ["lns"], 5.0, 2, 0)
    assert row["lns_status"] == "optimal, warm start" and row["lns_gap"] == 0
    assert "lns_best_s" not in row and row["lns_opt"] == 1.0


@pytest.mark.parametrize(
    "argv",
    [
        ["gaps", "--sizes", "0"],
        ["gaps", "--procs", "5"],
        ["gaps", "--densities", "150"],
        ["gaps", "--sizes", "x"],
        ["gaps", "--seeds", "0"],
        ["exact", "--time-limit", "-1", "--sizes", "20", "--procs", "4"],
        ["exact", "--threads", "0"],
        ["scaling", "--sizes", "1,x"],
    ],
)
def test_bad_arguments_are_one_line_errors_exit_2(argv, capsys):
    """Out-of-range graph arguments (those known_optimum refuses) and malformed numbers end in
    argparse's usage error before anything runs: exit 2, the reason on one line, no traceback."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("python -m npusched.bench.delays") and "error:" in err[-1]
    assert "Traceback" not in "\n".join(err)
