"""Games for the benches, played by the one game loop, and their replay.

Four ``random`` strategies play a game in-process (``arena.local``); a listener
keeps what the benches need: the boards one seat is sent, and the true
positions before each move. ``seat_players`` makes the strategies of seat specs,
``replay_turn`` plays a recorded turn on the true state again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from arena.local import play_local
from arena.referee import Event, GameRecord
from state.game import GameState, Move
from strategies.base import Strategy
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
