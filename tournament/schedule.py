"""Which entrants sit where in every game of a tournament, on which board.

A *lineup* is a choice of entrants for the four seats; a round plays every
distinct rotation of every lineup, all on the same board (seed ``seed + round``),
so within a round every entrant meets the same board from every seat it can
take. Game ``k`` is arrangement ``k % A`` of round ``k // A`` (``A`` arrangements
per round), so a game's index alone says who plays it: that is what makes
results resumable and the same whatever order workers finish in.

- Round-robin with four or more entrants: every group of four, rotated.
- Two entrants (and each opponent of a gauntlet): two seats each, in all six
  arrangements (AABB rotated four ways, ABAB and BABA).
- Three entrants: each one doubled in turn (``D x D y``), rotated.
- Gauntlet: the first entrant against each of the others, two seats each.
- Field (``bench strength``): one given lineup, rotated, e.g. ``(0, 1, 1, 1)``: the first
  entrant in every seat against three of the second; ``(0, 1, 0, 1)``: a pair against a pair.

A schedule is played by server and player processes (``battlesheep play``, what a
user runs) or, with ``local``, by client sessions in the worker process
(``arena.local``), which only built-in strategy and parameter-file entrants can do.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strategies.base import ConfigError
from tournament.entrants import Entrant

FIRST_TEAM = 101
FORMATS = ("round-robin", "gauntlet")
"""The formats of ``battlesheep tournament``; ``field`` takes an explicit lineup."""


def rotations(lineup: Sequence[int]) -> list[tuple[int, ...]]:
    """The distinct rotations of a seat order (ABAB has two, ABCD four)."""
    out: list[tuple[int, ...]] = []
    for r in range(4):
        rotated = tuple(lineup[(s - r) % 4] for s in range(4))
        if rotated not in out:
            out.append(rotated)
    return out


def pair_arrangements(a: int, b: int) -> list[tuple[int, ...]]:
    return rotations((a, a, b, b)) + rotations((a, b, a, b))


def arrangements(
    count: int, fmt: str = "round-robin", lineup: Sequence[int] = ()
) -> list[tuple[int, ...]]:
    """Entrant index per seat (seat 1 first) for every game of one round."""
    if count < 2:
        raise ConfigError(f"a tournament needs at least 2 entrants, not {count}")
    if fmt == "field":
        if len(lineup) != 4 or not all(0 <= e < count for e in lineup):
            raise ConfigError(f"a field lineup names an entrant for each of 4 seats: {lineup}")
        return rotations(lineup)
    if fmt == "gauntlet":
        return [arr for j in range(1, count) for arr in pair_arrangements(0, j)]
    if fmt != "round-robin":
        raise ConfigError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    if count == 2:
        return pair_arrangements(0, 1)
    if count == 3:
        out = []
        for d in range(3):
            x, y = (i for i in range(3) if i != d)
            out += rotations((d, x, d, y))
        return out
    return [arr for group in itertools.combinations(range(count), 4) for arr in rotations(group)]


@dataclass(frozen=True)
class GameTask:
    """Everything a worker needs to play one game (picklable, no open resources)."""

    index: int
    game: int
    seed: int
    seats: tuple[int, ...]
    names: tuple[str, ...]
    commands: tuple[str | tuple[str, ...], ...]
    teams: tuple[int, ...]
    time_limit: float
    connect_timeout: float
    log_dir: str
    strategies: tuple[tuple[str, dict[str, Any]], ...] | None = None
    """Set for a game played in-process: each seat's built-in strategy and parameters."""
    record_dir: str = ""
    """Where the game's replay file goes (none when empty)."""
    reveal: tuple[int, ...] = ()
    """Seats (1-4) that see every count in game 3 (in-process games only)."""
    clocks: tuple[float, ...] = ()
    """Each seat's seconds per move in an in-process game, at most ``time_limit`` (the
    referee's); empty: ``time_limit`` for every seat. Player processes take theirs from
    their commands."""


def seat_teams(entrants: Sequence[Entrant], seats: Sequence[int]) -> tuple[int, ...]:
    """Team ids by seat: an entrant's fixed id, else 101..104 by seat."""
    teams = tuple(
        entrants[e].team if entrants[e].team is not None else FIRST_TEAM + s
        for s, e in enumerate(seats)
    )
    if len(set(teams)) != 4:
        names = [entrants[e].name for e in seats]
        raise ConfigError(f"seats {names} would send the same team id: {list(teams)}")
    return teams  # type: ignore[return-value]


@dataclass(frozen=True)
class Schedule:
    entrants: tuple[Entrant, ...]
    game: int
    seed: int
    time_limit: float
    fmt: str = "round-robin"
    connect_timeout: float = 30.0
    log_dir: str = ""
    lineup: tuple[int, ...] = ()
    """The ``field`` format's lineup."""
    local: bool = False
    """Play in this process's client sessions instead of server and player processes."""
    record_dir: str = ""
    """Write a replay file per game here (none when empty)."""
    reveal: tuple[int, ...] = ()
    """Entrants that see every count in game 3, wherever they sit: a diagnostic of the
    hidden counts' cost (``bench strength --reveal``; in-process games only)."""

    @property
    def per_round(self) -> list[tuple[int, ...]]:
        return arrangements(len(self.entrants), self.fmt, self.lineup)

    def check(self) -> None:
        """Fail before any game is played if a lineup cannot be seated."""
        for seats in self.per_round:
            seat_teams(self.entrants, seats)
        if self.local:
            commands = [e.name for e in self.entrants if e.strategy is None]
            if commands:
                raise ConfigError(f"entrants {commands} are programs: they cannot play in-process")
        elif self.reveal:
            raise ConfigError("revealing the hidden counts needs in-process games (local)")
        for e in self.entrants:
            if e.time_limit is not None and e.time_limit > self.time_limit:
                raise ConfigError(
                    f"entrant {e.name!r} thinks for {e.time_limit:g} s a move, longer than "
                    f"the server's limit of {self.time_limit:g} s: every move would be late"
                )

    def task(self, index: int) -> GameTask:
        per_round = self.per_round
        seats = per_round[index % len(per_round)]
        return GameTask(
            index=index,
            game=self.game,
            seed=self.seed + index // len(per_round),
            seats=seats,
            names=tuple(self.entrants[e].name for e in seats),
            commands=tuple(self.entrants[e].command for e in seats),
            teams=seat_teams(self.entrants, seats),
            time_limit=self.time_limit,
            connect_timeout=self.connect_timeout,
            log_dir=str(Path(self.log_dir)),
            strategies=self._strategies(seats) if self.local else None,
            record_dir=self.record_dir,
            reveal=tuple(s for s, e in enumerate(seats, start=1) if e in self.reveal),
            clocks=self._clocks(seats) if self.local else (),
        )

    def _clocks(self, seats: Sequence[int]) -> tuple[float, ...]:
        """Each seat's seconds per move: its entrant's clock, else the server's limit."""
        clocks = (self.entrants[e].time_limit for e in seats)
        return tuple(self.time_limit if c is None else c for c in clocks)

    def _strategies(self, seats: Sequence[int]) -> tuple[tuple[str, dict[str, Any]], ...]:
        out = []
        for e in seats:
            entrant = self.entrants[e]
            assert entrant.strategy is not None  # check() refuses programs
            out.append((entrant.strategy, dict(entrant.params)))
        return tuple(out)
