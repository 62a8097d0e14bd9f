"""One server, one or more games: listen, start the players, seat them, play, stop them.

The server listens before it starts any player. For every game it starts the
four players, waits until all four are seated (or the connect timeout has
passed: missing seats lose their turns), plays the game, sends the game-over
header to everyone, gives the players a moment to exit and stops the rest.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from arena.config import ServerConfig
from arena.listeners import make_listeners
from arena.lobby import Lobby
from arena.players import Player
from arena.referee import GameRecord, Referee
from arena.results import GameResult, result_of
from state.settings import GameSetting, get_setting

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GamePlan:
    """One game: setting, board seed, and who sits where."""

    game: int
    seed: int
    teams: Sequence[int]
    players: Sequence[Player]
    index: int = 0


def make_lobby(teams: Sequence[int] | None, size: int, config: ServerConfig) -> Lobby:
    """A lobby with every listener of the config (not started)."""
    return Lobby(
        teams,
        size,
        config.host,
        config.port,
        config.handshake_timeout,
        listeners=make_listeners(config.listen, config.token),
        tcp=config.tcp,
    )


GameDone = Callable[[GameRecord, GameResult], None]


def game_seeds(seed: int | None, games: int) -> list[int]:
    """Board seeds of a run: ``seed, seed+1, ...``, or random ones when no seed is given."""
    if seed is None:
        rng = random.Random()
        return [rng.randrange(2**31) for _ in range(games)]
    return [seed + k for k in range(games)]


async def _wait_seated(lobby: Lobby, plan: GamePlan, timeout: float) -> bool:
    """Until all four seats are connected, the timeout, or every missing seat's player ended."""
    deadline = time.monotonic() + timeout
    while not lobby.all_seated():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        missing = [seat for seat in range(1, 5) if lobby.connection(seat) is None]
        if len(plan.players) >= 4 and all(plan.players[s - 1].finished for s in missing):
            return False
        await lobby.wait_seated(min(0.1, remaining))
    return True


async def _referee(
    lobby: Lobby,
    setting: GameSetting,
    seed: int,
    teams: Sequence[int],
    config: ServerConfig,
    index: int,
    seated: bool,
) -> GameRecord:
    """Play one game between the lobby's seats (those missing lose their turns)."""
    if not seated:
        missing = [seat for seat in range(1, 5) if lobby.connection(seat) is None]
        logger.warning("game %s: seats %s did not connect; playing without them", index, missing)
    referee = Referee(
        lobby, setting, seed, config.time_limit, list(teams), listener=config.listener
    )
    return await referee.play()


def _done(
    record: GameRecord, index: int, results: list[GameResult], on_game: GameDone | None
) -> None:
    result = result_of(record, index)
    results.append(result)
    if on_game is not None:
        on_game(record, result)


async def play_one(lobby: Lobby, plan: GamePlan, config: ServerConfig) -> GameRecord:
    """Start the plan's players against an already listening lobby and play the game."""
    setting = get_setting(plan.game)
    lobby.new_game()
    grace = config.exit_grace
    try:
        for player in plan.players:
            await player.start(config.host, lobby.port)
        seated = await _wait_seated(lobby, plan, config.connect_timeout)
        return await _referee(lobby, setting, plan.seed, plan.teams, config, plan.index, seated)
    except asyncio.CancelledError:
        grace = 0.0  # stopped from outside (a signal): no game over is coming, end them now
        raise
    finally:
        lobby.accepting = False
        await asyncio.gather(*(p.stop(grace) for p in plan.players))
        await lobby.drop_all()


async def serve_games(
    teams: Sequence[int],
    plans: Sequence[GamePlan],
    config: ServerConfig,
    on_game: GameDone | None = None,
    on_listening: Callable[[Lobby], None] | None = None,
) -> list[GameResult]:
    """Play the plans one after the other on one listening socket; returns the results."""
    size = get_setting(plans[0].game).size if plans else 12
    lobby = make_lobby(teams, size, config)
    await lobby.start()
    if on_listening is not None:
        on_listening(lobby)
    results: list[GameResult] = []
    try:
        for plan in plans:
            _done(await play_one(lobby, plan, config), plan.index, results, on_game)
    finally:
        await lobby.close()
    return results


async def play_single(plan: GamePlan, config: ServerConfig) -> tuple[GameRecord, GameResult]:
    """One game on its own server (its own port when ``config.port`` is 0)."""
    lobby = make_lobby(plan.teams, get_setting(plan.game).size, config)
    await lobby.start()
    try:
        record = await play_one(lobby, plan, config)
    finally:
        await lobby.close()
    return record, result_of(record, plan.index)


async def serve_open(
    game: int,
    seeds: Sequence[int],
    config: ServerConfig,
    on_game: GameDone | None = None,
    on_listening: Callable[[Lobby], None] | None = None,
) -> list[GameResult]:
    """Games between players started elsewhere: no programs are started.

    The first four distinct team ids to connect (over any listener) are seated
    in ascending order of team id; every game then waits for those four, the
    first without a time limit, later ones for ``config.connect_timeout``.
    """
    setting = get_setting(game)
    lobby = make_lobby(None, setting.size, config)
    await lobby.start()
    if on_listening is not None:
        on_listening(lobby)
    results: list[GameResult] = []
    try:
        for index, seed in enumerate(seeds):
            lobby.new_game()
            teams = await lobby.wait_teams()
            try:
                seated = await lobby.wait_seated(config.connect_timeout)
                record = await _referee(lobby, setting, seed, teams, config, index, seated)
            finally:
                lobby.accepting = False
                await lobby.drop_all()
            _done(record, index, results, on_game)
    finally:
        await lobby.close()
    return results
