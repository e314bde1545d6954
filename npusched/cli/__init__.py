"""The command line: one module per verb, shared argument types in :mod:`npusched.cli.args`."""

from npusched.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
