"""The course's ``input.txt``, the server's configuration, and player command lines.

``input.txt`` (RULES.md section 5): four pairs of lines, a team id then the
command that starts that team's player, for seats 1 to 4, then the game
setting 1..4 on a ninth line (optional when ``--game`` is given). Blank lines
are ignored. A command may use the placeholders ``{port}``, ``{host}``,
``{team}`` and ``{game}``, replaced before it is started; a command whose
program ends in ``.py`` is run with the current Python interpreter; a relative
program path is taken relative to the directory of ``input.txt``, which is
also the players' working directory. A program path written on Windows
(``.\\sample\\Sample_1.exe``, or a bare ``Sample_1.exe`` next to input.txt) is
resolved the same way, backslashes as separators; Windows executables are
started through Wine off Windows (``arena.wine``).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SkipValidation,
    ValidationError,
    field_validator,
)

from arena.referee import GameListener
from state.settings import PLAYERS
from strategies.base import ConfigError

INT32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
PLACEHOLDERS = ("port", "host", "team", "game", "time_limit")


class PlayerEntry(BaseModel):
    """One seat of input.txt: the team id the player sends and how to start it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    team: INT32
    command: str = Field(min_length=1)


class InputFile(BaseModel):
    """input.txt, validated: four seats with distinct team ids, and the setting if given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    players: tuple[PlayerEntry, ...] = Field(min_length=4, max_length=4)
    game: int | None = Field(default=None, ge=1, le=4)
    base_dir: Path = Path(".")

    @field_validator("players")
    @classmethod
    def _distinct_teams(cls, players: tuple[PlayerEntry, ...]) -> tuple[PlayerEntry, ...]:
        teams = [p.team for p in players]
        for seat, team in enumerate(teams, start=1):
            if teams.index(team) + 1 != seat:
                raise ValueError(
                    f"team id {team} is given for seat {teams.index(team) + 1} and seat {seat}; "
                    "the server seats players by team id, so they must differ"
                )
        return players

    @property
    def teams(self) -> list[int]:
        return [p.team for p in self.players]


class ServerConfig(BaseModel):
    """How the server runs its games: where it listens, the clock, the viewer.

    ``battlesheep serve`` builds it from the command line (``ServeOptions.server``);
    match, tournament and bench build it directly.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)
    time_limit: float = Field(default=3.0, gt=0, le=3600)
    connect_timeout: float = Field(default=20.0, gt=0)
    handshake_timeout: float = Field(default=2.0, gt=0)
    exit_grace: float = Field(default=2.0, ge=0)
    """Seconds a player has to exit after the game-over header."""
    listener: SkipValidation[GameListener | None] = None
    """Watches every game (the viewer of ``--http``)."""
    listen: tuple[str, ...] = ()
    """ws:// and mqtt:// URLs the players may also come in by (``arena.listeners``)."""
    token: str | None = None
    """The shared secret WebSocket and MQTT players must present."""
    tcp: bool = True
    """Whether the course's TCP socket (host, port) listens."""


class ServeOptions(BaseModel):
    """What ``battlesheep serve`` was asked to do, validated: which games, on which server."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    game: int = Field(ge=1, le=4)
    games: int = Field(default=1, ge=1)
    seed: int | None = None
    server: ServerConfig = ServerConfig()


def parse_input_text(
    text: str, source: str = "input.txt", base_dir: Path | None = None
) -> InputFile:
    """Parse the course's input.txt; ConfigError names the file and the line at fault."""
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1)]
    lines = [(n, line) for n, line in lines if line]
    if len(lines) < 8:
        raise ConfigError(
            f"{source}: {len(lines)} non-blank lines; expected 8 (team id and command for "
            "each of the 4 seats) and a 9th with the game setting 1..4"
        )
    if len(lines) > 9:
        n, line = lines[9]
        raise ConfigError(f"{source}, line {n}: unexpected extra line {line!r} after the setting")
    players = []
    for seat in PLAYERS:
        (n_team, team_text), (n_cmd, command) = lines[2 * seat - 2], lines[2 * seat - 1]
        try:
            team = int(team_text)
        except ValueError:
            raise ConfigError(
                f"{source}, line {n_team}: team id of seat {seat} must be an integer, "
                f"not {team_text!r}"
            ) from None
        try:
            players.append(PlayerEntry(team=team, command=command))
        except ValidationError as exc:
            raise ConfigError(
                f"{source}, lines {n_team}-{n_cmd}: seat {seat}: {_first_error(exc)}"
            ) from None
    game: int | None = None
    if len(lines) == 9:
        n, text9 = lines[8]
        if text9 not in {"1", "2", "3", "4"}:
            raise ConfigError(
                f"{source}, line {n}: game setting must be 1, 2, 3 or 4, not {text9!r}"
            )
        game = int(text9)
    try:
        return InputFile(players=tuple(players), game=game, base_dir=base_dir or Path("."))
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_first_error(exc)}") from None


def default_input() -> InputFile:
    """The embedded local match: the default agent in seat 1 against three sample players."""
    battlesheep = f"{shlex.quote(sys.executable)} -m battlesheep"
    # The agents must plan for the server's limit, not their 3 s default.
    common = "--game {game} --host {host} --port {port} --team {team} --time-limit {time_limit}"
    commands = ["play", "sample random", "sample greedy", "sample random"]
    text = "".join(f"{seat}\n{battlesheep} {c} {common}\n" for seat, c in enumerate(commands, 1))
    return parse_input_text(text + "1\n", "the embedded default config")


def read_input_file(path: str | os.PathLike[str]) -> InputFile:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"cannot read {p}: {exc.strerror or exc}") from None
    return parse_input_text(text, str(p), p.resolve().parent)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(part) for part in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def fill_placeholders(command: str, values: dict[str, object]) -> str:
    """Replace ``{port}`` etc.; other braces are left alone."""
    for name in PLACEHOLDERS:
        if name in values:
            command = command.replace("{" + name + "}", str(values[name]))
    return command


def command_argv(
    command: str | Sequence[str], values: dict[str, object], base_dir: Path | None = None
) -> list[str]:
    """The argv that starts a player: placeholders filled, ``.py`` run by this Python."""
    if isinstance(command, str):
        argv = split_command(fill_placeholders(command, values))
    else:
        argv = [fill_placeholders(part, values) for part in command]
    if not argv:
        raise ConfigError(f"empty player command {command!r}")
    program = argv[0]
    if os.name != "nt" and _windows_path(program):
        program = argv[0] = program.replace("\\", "/")
    # A bare Sample_1.exe next to input.txt is found there, as Windows finds it.
    bare_exe = os.sep not in program and program.lower().endswith(".exe")
    if base_dir is not None and not os.path.isabs(program) and (os.sep in program or bare_exe):
        candidate = base_dir / program
        if candidate.exists():
            argv[0] = str(candidate)
    if argv[0].endswith(".py"):
        argv.insert(0, sys.executable)
    return argv


def _windows_path(word: str) -> bool:
    """A program path written on Windows (``.\\sample\\Sample_1.exe``), not a POSIX escape."""
    return "\\" in word and not word.endswith("\\")


def split_command(command: str) -> list[str]:
    """Split a player command into words.

    A command whose program is written the Windows way (course input.txt files:
    ``.\\sample\\Sample_1.exe``) keeps its backslashes (they are separators,
    not escapes); any other command is split as a POSIX shell would.
    """
    if os.name == "nt":
        return shlex.split(command, posix=False)
    words = command.split(maxsplit=1)
    if words and _windows_path(words[0]):
        lexer = shlex.shlex(command, posix=True)
        lexer.whitespace_split = True
        lexer.escape = ""
        return list(lexer)
    return shlex.split(command)
