"""The client's expected faults, each with the exit code the command line returns."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from enum import IntEnum

from strategies.base import ConfigError


class ExitCode(IntEnum):
    OK = 0
    USAGE = 2  # a bad option or strategy parameter (argparse uses 2 as well)
    SERVER_DATA = 3  # the server sent bytes or a board that cannot be of this game
    CONNECTION = 4  # no server within the connect window, or lost and not back in time


class ClientError(Exception):
    """An expected fault that ends the game for this client; ``str`` is the one log line."""

    exit_code: ExitCode = ExitCode.SERVER_DATA


class ServerDataError(ClientError):
    """Malformed frames, or a board that is no board of this game."""

    exit_code = ExitCode.SERVER_DATA


class ConnectionFailed(ClientError):
    """No connection within the retry window."""

    exit_code = ExitCode.CONNECTION


def report(prog: str, message: str) -> int:
    """The one style of a command's error: one line on stderr; the usage exit code."""
    print(f"{prog}: error: {message}", file=sys.stderr)  # noqa: T201
    return ExitCode.USAGE


def run_command(
    func: Callable[[argparse.Namespace], int], args: argparse.Namespace, prog: str
) -> int:
    """Run a subcommand; bad configuration (an option, a file, a seat, a strategy parameter)
    ends it with one line and exit 2 wherever it is found: the one place that says so, for
    ``battlesheep`` and for the built agents."""
    try:
        return func(args)
    except ConfigError as exc:
        return report(prog, str(exc))
