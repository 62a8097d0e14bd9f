"""The client against a scripted referee over real TCP on 127.0.0.1: full games, games 1-4."""

from __future__ import annotations

import asyncio
import random

import pytest

from client.clock import TimeLimits
from client.session import GameSession, GameSummary
from client.tcp import ConnectOptions, play_tcp
from state.game import UNKNOWN, GameState, Move
from state.settings import get_setting
from strategies.base import Budget, Strategy
from strategies.registry import make_strategy
from tests.referee import Referee, RefereeResult

LIMIT = 0.5
MARGIN = 0.1
SLACK = 0.15  # scheduling noise on a shared 2-core machine
TEAMS = (11, 12, 13, 14)


def options(
    port: int, team: int, connect_for: float = 20.0, reconnect_for: float = 5.0
) -> ConnectOptions:
    return ConnectOptions(
        port=port,
        team=team,
        connect_for=connect_for,
        reconnect_for=reconnect_for,
        backoff_first=0.02,
        backoff_max=0.2,
    )


def session(game: int, strategy: Strategy | str = "greedy", seed: int = 0) -> GameSession:
    if isinstance(strategy, str):
        strategy = make_strategy(strategy, {"seed": seed})
    return GameSession(get_setting(game), strategy, TimeLimits(LIMIT, MARGIN))


async def run_game(
    referee: Referee,
    sessions: list[GameSession],
    port: int | None = None,
    start_referee_after: float = 0.0,
    reconnect_for: float = 5.0,
) -> tuple[RefereeResult, list[GameSummary]]:
    """Four clients against ``referee``; the referee may start listening late."""
    if port is None:
        port = await referee.start()
    clients = [
        asyncio.create_task(
            play_tcp(s, options(port, team, reconnect_for=reconnect_for), random.Random(team))
        )
        for s, team in zip(sessions, TEAMS, strict=True)
    ]
    try:
        if start_referee_after:
            await asyncio.sleep(start_referee_after)
            await referee.start(port)
        result = await asyncio.wait_for(referee.play(), timeout=60)
        summaries = await asyncio.wait_for(asyncio.gather(*clients), timeout=10)
    finally:
        for task in clients:
            task.cancel()
        await referee.close()
    return result, summaries


def assert_clean(result: RefereeResult, seats: tuple[int, ...] = (1, 2, 3, 4)) -> None:
    assert not result.errors
    for seat in seats:
        replies = result.replies(seat)
        assert replies, f"seat {seat} was never asked"
        for r in replies:
            assert r.values is not None, f"seat {seat}: no reply to {r.id_package}"
            assert r.legal, f"seat {seat}: illegal reply {r.values}"
            assert r.elapsed <= LIMIT + SLACK, f"seat {seat}: reply after {r.elapsed:.3f} s"


@pytest.mark.parametrize("game", [1, 2, 3, 4])
async def test_full_game(game: int) -> None:
    referee = Referee(game, seed=game, time_limit=LIMIT)
    sessions = [session(game, "greedy" if s % 2 else "random", seed=s) for s in range(1, 5)]
    result, summaries = await run_game(referee, sessions)
    assert_clean(result)
    moves = [sum(1 for r in result.replies(s) if r.kind == "move") for s in range(1, 5)]
    assert sum(moves) > 20
    for seat, (summary, s) in enumerate(zip(summaries, sessions, strict=True), start=1):
        assert summary.seat == seat
        assert s.finished
        assert summary.moves == moves[seat - 1]
        assert summary.placements == 1
        assert summary.fallbacks == 0
        assert summary.score == result.scores[seat - 1]
        if game == 4:
            partner = (seat + 1) % 4 + 1
            # The partner's moves after this seat's last board are not known to it,
            # and scores never shrink.
            assert summary.team_score is not None
            assert (
                summary.team_score <= (result.scores[seat - 1] + result.scores[partner - 1]) / 2 + 1
            )
            assert summary.team_score >= result.scores[seat - 1] / 2
        assert f"seat {seat}" in summary.line()


class SpyGreedy(Strategy):
    """Greedy, recording every count of other seats it was shown."""

    name = "spy"

    def __init__(self) -> None:
        super().__init__({"seed": 1})
        self.inner = make_strategy("greedy", {"seed": 1})
        self.seen_other_counts: list[int] = []
        self.turns = 0

    def new_game(self, setting, seat) -> None:  # type: ignore[no-untyped-def]
        super().new_game(setting, seat)
        self.inner.new_game(setting, seat)

    def _look(self, state: GameState) -> None:
        for p in (1, 2, 3, 4):
            if p != self.seat:
                self.seen_other_counts.extend(state.sheep[c] for c in state.stacks[p])

    def place(self, state: GameState, budget: Budget) -> int:
        self._look(state)
        return self.inner.place(state, budget)

    def move(self, state: GameState, budget: Budget) -> Move | None:
        self._look(state)
        self.turns += 1
        return self.inner.move(state, budget)


async def test_game3_hides_other_counts_even_when_the_server_sends_them() -> None:
    referee = Referee(3, seed=7, time_limit=LIMIT, leak_counts=True)
    spies = [SpyGreedy() for _ in range(4)]
    result, _ = await run_game(referee, [session(3, spy) for spy in spies])
    assert_clean(result)
    for spy in spies:
        assert spy.turns > 3
        assert spy.seen_other_counts
        assert set(spy.seen_other_counts) == {UNKNOWN}
