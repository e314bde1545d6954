"""``npusched --version`` prints the one version the package, its metadata and the site carry."""

import subprocess
import sys
from importlib.metadata import version

import pytest

import npusched
from npusched.cli.main import main


def test_version_flag_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"npusched {npusched.__version__}\n"


def test_version_agrees_with_the_installed_metadata():
    assert version("npusched") == npusched.__version__


def test_version_from_the_installed_program():
    run = subprocess.run(
        [sys.executable, "-m", "npusched", "--version"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0
    assert run.stdout.strip() == f"npusched {npusched.__version__}"
