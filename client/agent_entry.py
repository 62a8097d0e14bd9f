"""The entry point of a built course agent: ``battlesheep play`` with baked-in defaults.

A built agent (``make agent1``, ``make exe``) holds a parameter set as
``play`` options (``--game``, ``--team``, ``--strategy``, ``--param`` ...).
The command line is appended after them, so any option given there wins
(argparse keeps the last value; a later ``--param key=value`` overrides the
baked one). Only the client's packages are imported: no arena, no tournament.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence


def run(defaults: Sequence[str], argv: Sequence[str] | None = None, prog: str = "agent") -> int:
    from client.cli import Parser, register
    from client.errors import run_command

    parser = Parser(
        prog=prog, description=f"Battle Sheep agent; built-in options: {' '.join(defaults)}"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    register(sub)
    rest = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(["play", *defaults, *rest])
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        filename=args.log_file,
    )
    try:
        code = run_command(args.func, args, prog)
    except KeyboardInterrupt:
        return 130
    return code
