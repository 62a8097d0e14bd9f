"""Games between strategies in this process: the referee's seats are ``GameSession``s.

An in-process seat is what ``battlesheep play`` runs, minus the bytes: the
referee hands it the same ``InitialMap``/``Turn`` messages it would encode
for a socket, the session ingests the board into its own state (other seats'
counts hidden in game 3), tells its strategy what the board showed, runs the
search in its worker thread under the deadline and answers with the reply it
would send. So self-play, the benches and ``bench strength`` measure the
client's own code path, judged by the one referee.

In-process replies need no network margin: a session's deadline is the time
limit itself, and the referee allows ``grace`` seconds on top for the event
loop before a reply counts as late.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from arena.connections import Reply, SeatStats
from arena.referee import GameListener, GameRecord, Referee
from client.clock import TimeLimits
from client.session import GameSession
from protocol import GameOver, InitialMap, MoveReply, PositionReply, ReplyKind, Turn
from state.settings import PLAYERS, get_setting
from strategies.base import ConfigError, Strategy
from strategies.kernel import wait_warm

log = logging.getLogger(__name__)

GRACE = 0.1
"""Seconds past the time limit before an in-process reply counts as late."""
WARM_TIMEOUT = 600.0
"""Seconds a game waits for the fast kernel and the compiled tree that its strategies
started compiling (or loading from numba's cache) before it starts on what is ready."""

SeatSpec = tuple[str, Mapping[str, Any]]
"""A built-in strategy and its parameters (``strategies.registry``)."""


class SessionLink:
    """One seat of the referee answered by a ``GameSession`` in this process."""

    def __init__(self, session: GameSession, stats: SeatStats) -> None:
        self.session = session
        self.stats = stats
        self._task: asyncio.Task[Reply | None] | None = None

    def request(self, message: InitialMap | Turn, kind: ReplyKind) -> asyncio.Future[Reply | None]:
        self._task = asyncio.ensure_future(self._answer(message))
        return self._task

    async def _answer(self, message: InitialMap | Turn) -> Reply | None:
        reply = await self.session.respond(message, time.monotonic())
        if not isinstance(reply, PositionReply | MoveReply):
            return None  # a session answers boards with these two only
        return Reply(reply, time.monotonic())

    def cancel_request(self) -> None:
        if self._task is not None:
            self._task.cancel()


class SessionSeats:
    """The referee's four seats, each a ``GameSession`` of a strategy."""

    def __init__(self, sessions: Sequence[GameSession]) -> None:
        self.stats: dict[int, SeatStats] = {seat: SeatStats(connects=1) for seat in PLAYERS}
        self.links = {
            seat: SessionLink(session, self.stats[seat])
            for seat, session in zip(PLAYERS, sessions, strict=True)
        }

    def connection(self, seat: int) -> SessionLink | None:
        return self.links[seat]

    async def end_game(self, id_package: int) -> None:
        for link in self.links.values():
            await link.session.respond(GameOver(id_package=id_package), time.monotonic())
            link.session.close()


@dataclass
class LocalGame:
    """An in-process game: the referee's record and each seat's search figures per move."""

    record: GameRecord
    figures: list[list[dict[str, float]]] = field(default_factory=list)


def sessions_for(
    game: int,
    strategies: Sequence[Strategy],
    time_limit: float,
    grace: float = GRACE,
    reveal: Collection[int] = (),
    clocks: Sequence[float] = (),
) -> list[GameSession]:
    """One session per seat whose deadline is ``time_limit`` after each request, or the
    seat's own clock in ``clocks`` (one per seat: a seat that thinks for less time than
    the referee allows); the seats in ``reveal`` play game 3 seeing every count (as in
    game 1)."""
    setting = get_setting(game)
    seen = dataclasses.replace(setting, hidden_counts=False)
    if clocks and len(clocks) != len(strategies):
        raise ConfigError(f"{len(clocks)} clocks for {len(strategies)} seats")
    per_seat = list(clocks) or [time_limit] * len(strategies)
    if any(not 0 < c <= time_limit for c in per_seat):
        raise ConfigError(f"the seats' clocks {per_seat} must be positive and at most {time_limit}")
    return [
        GameSession(
            seen if seat in reveal else setting, strategy, TimeLimits(clock + grace, margin=grace)
        )
        for seat, strategy, clock in zip(PLAYERS, strategies, per_seat, strict=True)
    ]


def play_local(
    game: int,
    seed: int,
    strategies: Sequence[Strategy],
    time_limit: float,
    teams: Sequence[int] = (1, 2, 3, 4),
    listener: GameListener | None = None,
    grace: float = GRACE,
    reveal: Collection[int] = (),
    clocks: Sequence[float] = (),
) -> LocalGame:
    """One game of four strategies on the board of ``seed``, judged by the referee.

    ``reveal``: seats that see every count in game 3, a diagnostic (what the hidden
    counts cost a strategy: ``bench strength --reveal``). ``clocks``: each seat's
    seconds per move when not ``time_limit``, the referee's limit (``sessions_for``).

    The game starts once the compile that its strategies started is done: that is the
    agent's start-up, not part of a game. Without this wait, the first game of a process
    on a machine with no numba cache searched on the Python tree (about 3,000 iterations
    a move at 1 s against 60,000-120,000: stop 59). Strategies that never play on the
    kernel start no compile, and their games do not wait."""
    if not wait_warm(WARM_TIMEOUT, start=False):
        log.warning("the fast kernel is not compiled after %.0f s: playing on", WARM_TIMEOUT)
    sessions = sessions_for(game, strategies, time_limit, grace, reveal, clocks)
    referee = Referee(
        SessionSeats(sessions),
        get_setting(game),
        seed,
        time_limit + grace,
        list(teams),
        listener=listener,
        reveal=reveal,
    )
    record = asyncio.run(referee.play())
    return LocalGame(record, [s.stats.figures for s in sessions])
