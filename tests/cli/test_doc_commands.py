"""The commands that the instances' README tells a user to run work as written."""

from __future__ import annotations

import re
import shlex

from conftest import ROOT, needs_shared, run_cli


@needs_shared
def test_instances_readme_verify_example_runs_from_the_repository_root():
    text = (ROOT / "instances" / "README.md").read_text()
    commands = re.findall(r"`npusched (verify [^`]+)`", text)
    assert commands, "instances/README.md shows no verify command"
    for command in commands:
        proc = run_cli(*shlex.split(command), cwd=ROOT)
        assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
        assert "feasible" in proc.stdout
