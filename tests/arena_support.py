"""Helpers of the arena tests: template players as real subprocesses, and checks on a game."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from arena.config import ServerConfig
from arena.players import Player, ProcessPlayer
from arena.referee import GameRecord
from arena.replay import final_state, replay_of
from arena.results import GameResult
from arena.server import GamePlan, play_single
from state.scoring import flood_scores, ranked_results, tournament_points
from state.settings import get_setting

TEMPLATE = Path(__file__).parent / "course_template_player.py"
TEAMS = [11, 12, 13, 14]


def template_command(
    team: int, game: int, seed: int, fault: str = "", delay: float = 0.0
) -> list[str]:
    argv = [sys.executable, str(TEMPLATE), str(team), "{port}", "--game", str(game)]
    argv += ["--seed", str(seed)]
    if fault:
        argv += ["--fault", fault]
    if delay:
        argv += ["--delay", str(delay)]
    return argv


def template_players(
    game: int,
    logs: Path,
    faults: dict[int, str] | None = None,
    delay: float = 0.0,
    seed: int = 0,
) -> list[Player]:
    faults = faults or {}
    return [
        ProcessPlayer(
            template_command(team, game, seed * 10 + seat, faults.get(seat, ""), delay),
            team=team,
            game=game,
            log_path=logs / f"seat{seat}.log",
        )
        for seat, team in enumerate(TEAMS, start=1)
    ]


async def play_template_game(
    game: int,
    logs: Path,
    *,
    seed: int = 1,
    faults: dict[int, str] | None = None,
    delay: float = 0.0,
    time_limit: float = 0.3,
    extra: list[Player] | None = None,
) -> tuple[GameRecord, GameResult]:
    players = template_players(game, logs, faults, delay, seed) + (extra or [])
    plan = GamePlan(game=game, seed=seed, teams=TEAMS, players=players)
    config = ServerConfig(
        time_limit=time_limit, connect_timeout=15.0, handshake_timeout=0.5, exit_grace=1.0
    )
    return await play_single(plan, config)


def check_game(record: GameRecord, result: GameResult) -> None:
    """The game ran to its end and is scored by the rules, recomputed from scratch."""
    state = record.state
    assert state.is_terminal() or result.stalled
    owner = [c for row in result.final_map for c in row]
    assert owner == state.owner
    scores = flood_scores(state.geometry, owner)
    assert result.scores == scores
    assert [round(s) for s in result.exact_scores] == scores
    ranked = ranked_results(get_setting(result.game), scores)
    assert result.results == ranked
    assert result.points == tournament_points(ranked)
    # a three-way tie at the top shares 10/3 each, which floats do not sum to exactly 11
    assert sum(result.points) == pytest.approx(11)
    # Every sheep is still on the board: 4 x the setting's sheep.
    assert sum(c for row in result.final_sheep for c in row) == 4 * state.setting.sheep
    # The recorded events replay to the same end.
    assert final_state(replay_of(record, result)).owner == state.owner


def seat_log(logs: Path, seat: int) -> str:
    return (logs / f"seat{seat}.log").read_text()
