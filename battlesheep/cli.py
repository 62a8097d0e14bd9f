"""The ``battlesheep`` command. Each package adds its own subcommands.

A module listed in ``COMMAND_MODULES`` exposes ``register(subparsers)``
(top-level subcommands); one listed in ``BENCH_MODULES`` exposes
``register_bench(subparsers)`` (targets of ``battlesheep bench``). Each
subcommand sets ``func(args) -> int`` as its parser default.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from client.cli import Parser
from client.errors import run_command

COMMAND_MODULES = [
    "battlesheep.demo",
    "client.cli",
    "arena.cli",
    "battlesheep.schema",
    "tournament.cli",
    "tournament.build_cli",
]
BENCH_MODULES = [
    "bench.engine",
    "bench.belief",
    "bench.priors",
    "bench.value",
    "bench.strength",
    "bench.client",
    "bench.arena",
    "bench.tournament",
]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="battlesheep", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    bench = sub.add_parser("bench", help="benchmarks: print name=value figures")
    bench_sub = bench.add_subparsers(
        dest="target", required=True, metavar="TARGET", parser_class=Parser
    )
    for name in BENCH_MODULES:
        importlib.import_module(name).register_bench(bench_sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    level = logging.DEBUG if getattr(args, "verbose", 0) else logging.INFO
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        filename=getattr(args, "log_file", None),
    )
    try:
        result = run_command(args.func, args, "battlesheep")
        sys.stdout.flush()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``). As the Python docs advise: point stdout at
        # devnull so the flush at exit cannot fail again, and end as SIGPIPE would.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return result
