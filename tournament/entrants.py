"""Tournament entrants: built-in strategies, parameter files, or commands.

An entrant spec is one of

- ``NAME`` or ``NAME:key=value:key=value``: a built-in strategy;
- a path ending in ``.toml``, ``.yaml`` or ``.yml`` (or ``file:PATH``): a
  parameter file (``strategies.params``);
- ``cmd:<command line>``, with ``{port}``, ``{host}``, ``{team}``, ``{game}``;
  ``cmd:team=N:<command line>`` for a program that always sends team id N.

``label=SPEC`` names an entrant in the tables (default: the spec itself, or
the file's stem). Built-in and file entrants are played by ``battlesheep play``
subprocesses, exactly as a user runs them.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client.clock import TimeLimits
from strategies.base import ConfigError, ParameterError
from strategies.params import AgentParams, load_agent_params
from strategies.registry import check_params, parse_seat

_FILE_SUFFIXES = (".toml", ".yaml", ".yml")


@dataclass(frozen=True)
class Entrant:
    name: str
    command: str | tuple[str, ...]
    team: int | None = None
    """A fixed team id the program always sends (None: it sends ``{team}``)."""
    strategy: str | None = None
    """The built-in strategy of a strategy or parameter-file entrant (None for ``cmd:``):
    such an entrant can also play in-process (``bench strength``)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    time_limit: float | None = None
    """The seconds per move a built-in or parameter-file entrant thinks by (its command's
    ``--time-limit``), which may be shorter than the server's limit (``bench strength
    --field-time-limit``); None for ``cmd:``: the program keeps its own clock."""


def play_command(
    strategy: str, params: Mapping[str, Any], time_limit: float, margin: float | None = None
) -> tuple[str, ...]:
    """The ``battlesheep play`` command line of a built-in strategy; ``margin`` is the one
    its parameter file wants (``TimeLimits.for_limit`` fits it to ``time_limit``)."""
    agent = AgentParams(strategy=strategy, params=dict(params))
    fitted = TimeLimits.for_limit(time_limit, wanted=margin).margin
    argv = [sys.executable, "-m", "battlesheep", "play", "--game", "{game}", "--host", "{host}"]
    argv += ["--port", "{port}", "--team", "{team}", *agent.play_args()]
    return (*argv, "--margin", repr(fitted), "--time-limit", f"{time_limit:g}")


def builtin_entrant(
    name: str,
    strategy: str,
    params: Mapping[str, Any],
    time_limit: float,
    margin: float | None = None,
) -> Entrant:
    try:
        check_params(strategy, params)  # a bad name or value fails here, not in a player log
    except ParameterError as exc:
        raise ConfigError(f"entrant {name!r}: {exc}") from None
    return Entrant(
        name,
        play_command(strategy, params, time_limit, margin),
        None,
        strategy,
        dict(params),
        time_limit,
    )


def file_entrant(path: Path, time_limit: float, name: str | None = None) -> Entrant:
    agent = load_agent_params(path)
    return Entrant(
        name or path.stem,
        play_command(agent.strategy, agent.params, time_limit, agent.margin),
        None,
        agent.strategy,
        dict(agent.params),
        time_limit,
    )


def parse_entrant(spec: str, time_limit: float) -> Entrant:
    spec = spec.strip()
    label: str | None = None
    head, sep, rest = spec.partition("=")
    if sep and head and ":" not in head and not head.startswith(("cmd", "file")):
        label, spec = head.strip(), rest.strip()
    if spec.startswith("cmd:"):
        command = spec[4:].strip()
        team = None
        if command.startswith("team="):
            team_text, _, command = command[5:].partition(":")
            try:
                team = int(team_text)
            except ValueError:
                raise ConfigError(
                    f"entrant {spec!r}: team={team_text!r} is not an integer"
                ) from None
        if not command.strip():
            raise ConfigError(f"entrant {spec!r} has no command line")
        return Entrant(label or spec, command, team)
    if spec.startswith("file:") or spec.lower().endswith(_FILE_SUFFIXES):
        return file_entrant(Path(spec.removeprefix("file:")), time_limit, label)
    try:
        strategy, params = parse_seat(spec)
    except ParameterError as exc:
        raise ConfigError(f"entrant {spec!r}: {exc}") from None
    return builtin_entrant(label or spec, strategy, params, time_limit)


def parse_entrants(specs: Sequence[str], time_limit: float) -> list[Entrant]:
    entrants = [parse_entrant(s, time_limit) for s in specs]
    names = [e.name for e in entrants]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(
            f"entrants must have distinct names, these repeat: {duplicates}; "
            "name them with label=SPEC"
        )
    if len(entrants) < 2:
        raise ConfigError(f"a tournament needs at least 2 entrants, not {len(entrants)}")
    return entrants
