"""The client's expected faults, each with the exit code the command line returns."""

from __future__ import annotations

from enum import IntEnum


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
