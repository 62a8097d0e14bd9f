"""Random play to the end of the game, the engine's basic workload."""

from __future__ import annotations

import random

from state.game import GameState


def random_placement(state: GameState, rng: random.Random) -> None:
    """Every seat still to place takes a uniformly random free border cell."""
    while state.placing:
        state.place(rng.choice(state.initial_positions()))


def random_playout(state: GameState, rng: random.Random) -> int:
    """Play uniformly random slides (then a uniform split) until nobody can move.

    Plays in place and returns the number of plies (moves and passes) played,
    so the caller can ``undo`` that many times.
    """
    plies = 0
    idle = 0  # consecutive seats without a move; four in a row ends the game
    sheep = state.sheep
    while idle < 4:
        slides = state.slides()
        if not slides:
            if state.done[state.to_move]:
                state.skip_turn()
            else:
                state.apply_pass()
            idle += 1
        else:
            cell, _direction, dst = slides[rng.randrange(len(slides))]
            state.slide(cell, dst, rng.randint(1, sheep[cell] - 1))
            idle = 0
        plies += 1
    return plies
