"""``npusched generate known-optimum``: the instance written, solved against its optimum, and bad
options refused with one error line naming the option, exit 2 and nothing written."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from npusched.io import read_instance


def test_writes_an_instance_with_its_optimum(tmp_path):
    out = tmp_path / "k.json"
    args = ("generate", "known-optimum", "--n", 50, "--density", 50, "--procs", 9, "--seed", 3)
    proc = run_cli(*args, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "50 tasks" in proc.stdout and "optimum 600" in proc.stdout
    data = json.loads(out.read_text())
    assert data["reference"]["optimum"] == 600
    assert data["source"]["seed"] == 3 and data["source"]["density"] == 50
    inst = read_instance(out)
    assert inst.n == 50 and inst.m == 9 and inst.accelerator.mesh == (3, 3)
    again = tmp_path / "again.json"
    assert run_cli(*args, "-o", again).returncode == 0
    assert again.read_text() == out.read_text()  # repeatable for a seed
    proc = run_cli("solve", out, "--method", "list")
    assert proc.returncode == 0, proc.stderr
    assert "reference=600" in proc.stdout and "verify=ok" in proc.stdout


def test_work_per_proc_sets_the_optimum(tmp_path):
    out = tmp_path / "k.json"
    proc = run_cli("generate", "known-optimum", "--n", 8, "--density", 100, "--procs", 4,
                   "--work-per-proc", 10, "-o", out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    inst = read_instance(out)
    assert inst.reference.optimum == 10 and int(inst.graph.latency.sum()) == 40
    assert inst.accelerator.hypercube == 2


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--density", "120", "between 0 and 100"),
        ("--density", "-0.5", "between 0 and 100"),
        ("--density", "nan", "finite"),
        ("--procs", "5", "choose from 2, 4, 6, 8, 9, 12, 16"),
        ("--procs", "32", "choose from"),
        ("--procs", "four", "integer"),
        ("--n", "0", "at least 1"),
        ("--n", "3", "less than --procs 4"),
        ("--work-per-proc", "2", "at least ⌈n / procs⌉"),
        ("--seed", "-1", "at least 0"),
    ],
)
def test_bad_options_exit_2_naming_the_option(tmp_path, option, value, words):
    out = tmp_path / "k.json"
    opts = {"--n": "10", "--density": "50", "--procs": "4", option: value}
    proc = run_cli("generate", "known-optimum", *[x for kv in opts.items() for x in kv], "-o", out)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    error = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(error) == 1 and option in error[0] and words in error[0], proc.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


def test_procs_are_the_mspcd_networks():
    from npusched.cli.generate import PROCS
    from npusched.io.mspcd import HYPERCUBES, MESHES

    assert tuple(sorted({**HYPERCUBES, **MESHES})) == PROCS
