"""Games for the benches, played by the one game loop, and their replay.

Four ``random`` strategies play a game in-process (``arena.local``); a listener
keeps what the benches need: the boards one seat is sent, and the true
positions before each move. ``seat_players`` makes the strategies of seat specs,
``rotated_games`` plays games of them with the seats rotated (``add_seat_games``: its
command-line options), ``replay_turn`` plays a recorded turn on the true state again.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from arena.local import play_local
from arena.referee import Event, GameListener, GameRecord
from state.game import GameState, Move
from strategies.base import ConfigError, Strategy
from strategies.registry import make_strategy, parse_seat

Board = list[list[int]]


@dataclass
class SeatBoards:
    """Watches a game (``arena.referee.GameListener``) for ``seat``: the boards it was sent
    (map and its view of the counts) and the true positions where a seat had to move."""

    seat: int
    boards: list[tuple[Board, Board]] = field(default_factory=list)
    positions: list[GameState] = field(default_factory=list)

    def game_started(
        self, state: GameState, seed: int, teams: Sequence[int], time_limit: float
    ) -> None:
        pass

    def turn_played(self, event: Event, state: GameState) -> None:
        if state.placing or not state.has_moves(state.to_move):
            return
        self.positions.append(state.copy())
        if state.to_move == self.seat:
            self.boards.append((state.wire_map(), state.wire_sheep(self.seat)))

    def game_over(self, record: GameRecord) -> None:
        pass


def random_game(game: int, seed: int, seat: int = 1, time_limit: float = 1.0) -> SeatBoards:
    """A game of four seeded ``random`` players on the board of ``seed``."""
    watcher = SeatBoards(seat)
    players = [make_strategy("random", {"seed": seed * 4 + k}) for k in range(4)]
    play_local(game, seed, players, time_limit, listener=watcher)
    return watcher


def seat_players(specs: Sequence[str], seed: int) -> list[Strategy]:
    """The strategies of seat specs (``name:key=value``), seat ``k``'s seeded
    ``seed * 4 + k``."""
    players = []
    for k, spec in enumerate(specs):
        name, params = parse_seat(spec)
        players.append(make_strategy(name, {"seed": seed * 4 + k, **params}))
    return players


Listener = TypeVar("Listener", bound=GameListener | None)


def rotated_games(
    game: int,
    seats: Sequence[str],
    games: int,
    time_limit: float,
    seed: int,
    listener: Callable[[], Listener],
) -> Iterator[tuple[list[str], GameRecord, Listener]]:
    """Games of four seat specs in-process (``arena.local``), the seats rotated a place
    each game, game ``g`` on the board of ``seed + g``: each game's lineup, record and
    listener (a new one a game, from ``listener``; it may make None) as it ends."""
    if len(seats) != 4:
        raise ConfigError(f"need four seat specs, not {len(seats)}")
    for g in range(games):
        lineup = [seats[(k + g) % 4] for k in range(4)]
        players = seat_players(lineup, seed + g)
        watcher = listener()
        try:
            record = play_local(game, seed + g, players, time_limit, listener=watcher).record
        finally:
            for player in players:
                player.close()
        yield lineup, record, watcher


def add_seat_games(p: argparse.ArgumentParser, game: int, time_limit: float) -> None:
    """The options of a bench that plays ``rotated_games`` of visible counts: the game
    (1, 2 or 4), the seats, how many games, the clock and the first board."""
    p.add_argument(
        "--game",
        type=int,
        choices=(1, 2, 4),
        default=game,
        help="game setting (not 3: it hides the counts the figures read)",
    )
    p.add_argument(
        "--seats",
        default="hybrid,flatmc,flatmc,flatmc",
        help="four comma-separated strategies (name:key=value), rotated a place each game",
    )
    p.add_argument("--games", type=int, default=4, help="games to play")
    p.add_argument("--time-limit", type=float, default=time_limit, help="seconds per move")
    p.add_argument("--seed", type=int, default=1, help="the first game's board")


def replay_turn(truth: GameState, kind: str, cell: int, split: int, direction: int) -> None:
    """One recorded turn (``arena.referee.Event``'s kinds) played on ``truth`` again."""
    if kind == "place":
        truth.place(cell)
    elif kind == "move":
        truth.apply(Move(cell, split, direction))
    elif kind == "pass":
        truth.apply_pass()
    else:
        truth.skip_turn()
