"""npusched: schedule tiled deep-learning workloads on multi-core NPUs with exact models."""

from __future__ import annotations

import argparse
import os
import sys

from npusched.cli import (
    allocate,
    compare,
    convert,
    flexer,
    generate,
    info,
    orchestrate,
    partition,
    solve,
    tile,
    verify,
)
from npusched.cli.args import MEMORY_HELP, memory_limit, memory_mb
from npusched.common.errors import InputError
from npusched.common.terminate import EXIT_CODE, Terminated, handle_sigterm

VERBS = (
    convert, generate, solve, compare, partition, orchestrate, allocate, tile, flexer, info, verify,
)  # fmt: skip
"""Each verb's module has ``add_parser(sub)``; its parser's ``func`` runs it."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of the whole command line: ``--version``, ``--memory-limit`` and one
    subparser per verb of :data:`VERBS`."""
    from npusched import __version__

    p = argparse.ArgumentParser(prog="npusched", description=__doc__)
    p.add_argument("--version", action="version", version=f"npusched {__version__}")
    p.add_argument("--memory-limit", type=memory_mb, metavar="MB", help=MEMORY_HELP)
    sub = p.add_subparsers(dest="command", required=True)
    for verb in VERBS:
        verb.add_parser(sub)
    for verb_parser in sub.choices.values():  # also after the verb: npusched VERB --memory-limit
        memory_limit(verb_parser)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command line; bad input ends with one ``npusched: error:`` line and exit code 2.
    Ctrl-C ends it with 130, SIGTERM (``timeout``, job schedulers) with 143, each after the
    cleanup of every exit path: no temporary output is left (:mod:`npusched.common.terminate`)."""
    with handle_sigterm():
        try:
            return _main(argv)
        except Terminated:  # anywhere in _main, its handlers of other errors included
            print("npusched: terminated", file=sys.stderr)
            return EXIT_CODE


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    cap = limit_memory(args.memory_limit)
    out_of_memory = (
        f"npusched: error: out of memory at the memory limit of {cap // 2**20} MB "
        "(--memory-limit): the input or its model is too large"
    )
    try:
        return int(args.func(args))
    except (InputError, ValueError) as err:
        print(f"npusched: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of our output went away (e.g. `| head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as err:  # an output that could not be written after all (disk full, ...)
        where = f"{err.filename}: " if err.filename else ""
        print(f"npusched: error: {where}{err.strerror or err}", file=sys.stderr)
        return 2
    except MemoryError:
        print(out_of_memory, file=sys.stderr)
        return 2
    except ImportError as err:  # a library that cannot be mapped (memory limit), or is missing
        mapping = "failed to map segment" in str(err) or "allocate memory" in str(err)
        print(out_of_memory if mapping else f"npusched: error: {err}", file=sys.stderr)
        return 2
    except RecursionError:
        print("npusched: error: input nested too deeply to process", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("npusched: interrupted", file=sys.stderr)
        return 130


def limit_memory(mb: int | None) -> int:
    """Cap the address space (``RLIMIT_AS``) at ``mb`` MB, by default 3/4 of the physical memory,
    so that an oversized model ends in a MemoryError (or a solver process that dies and leaves
    the warm start) instead of the machine swapping or being killed. Returns the cap in bytes.
    A forked solver process inherits the cap and the parent's mappings, so parent and child
    together stay within it."""
    import resource

    if mb is None:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        cap = total * 3 // 4
    else:
        cap = mb * 2**20
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or cap < soft or mb is not None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        return cap
    return soft


if __name__ == "__main__":
    sys.exit(main())
