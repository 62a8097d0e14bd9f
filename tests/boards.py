"""Helpers shared by tests: the course's figure vectors and text boards."""

from __future__ import annotations

import random
from pathlib import Path

from arena.replay import Replay, positions
from state.game import GameState

VECTORS = Path(__file__).parent / "vectors"
SHARED_VECTORS = Path(__file__).resolve().parents[2] / "shared" / "vectors"

OWNER_CHARS = {"#": -1, ".": 0, "O": 1, "G": 2, "P": 3, "B": 4, "Y": 0, "W": 0}


def read_vector(name: str) -> tuple[list[str], list[str]]:
    """(comment lines, board rows) of a vector file; row = y, character = x."""
    comments, rows = [], []
    for line in (VECTORS / name).read_text().splitlines():
        if line.startswith(";"):
            comments.append(line[1:].strip())
        elif line.strip():
            rows.append(line.strip())
    return comments, rows


def rows_to_map(rows: list[str]) -> list[list[int]]:
    """Text rows (row = y, column = x) to the wire layout ``map[x][y]``."""
    n = len(rows)
    return [[OWNER_CHARS[rows[y][x]] for y in range(n)] for x in range(n)]


def random_play(state: GameState, rng: random.Random, plies: int) -> GameState:
    """``plies`` uniformly random slides (a skip where the seat to move has none), then
    the undo history forgotten: a position of a random game."""
    for _ in range(plies):
        slides = state.slides()
        if slides:
            cell, _d, dst = rng.choice(slides)
            state.slide(cell, dst, rng.randint(1, state.sheep[cell] - 1))
        else:
            state.skip_turn()
    state.clear_history()
    return state


def shut_in_before_first_turn(replay: Replay, seat: int) -> bool:
    """Whether ``seat`` had no legal move when its first turn came: after every seat
    placed and the seats before it made their first moves (a random placement, or the
    slides of the seats before it, can box a stack in for the whole game)."""
    boxed = False
    # A replay has an event for every turn (skips and passes too), so the position
    # before the seat's first event after placement is the one its first turn saw.
    for event, state in positions(replay):
        if event.seat == seat and event.kind != "place":
            break
        boxed = not state.placing and not state.has_moves(seat)
    return boxed
