"""What a session sends when its strategy gives nothing legal: a legal reply is always ready.

``choose`` takes the strategy's answer if it is legal, else the best choice it
posted, else the fallback computed before the search started: most room for a
placement, half of the largest stack towards the most room for a move.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import TypeVar

from client.runner import Outcome
from state.game import GameState, Move

log = logging.getLogger(__name__)

PASS_DIRECTION = 1
"""The direction of the reply to a board without a legal move (it changes nothing)."""

C = TypeVar("C", int, Move)


def choose(
    name: str, outcome: Outcome[C | None], posted: C | None, fallback: C, legal: Collection[C]
) -> tuple[C, str]:
    """The choice to send and where it came from; never anything outside ``legal``."""

    def ok(choice: object) -> bool:
        try:
            return choice in legal
        except TypeError:  # unhashable junk from a broken strategy
            return False

    if outcome.finished and outcome.error is None:
        if ok(outcome.value):
            assert outcome.value is not None
            return outcome.value, "strategy"
        log.warning("strategy %s returned %r, which is not legal here", name, outcome.value)
    elif outcome.finished:
        log.error("strategy %s failed: %r", name, outcome.error)
        log.debug("strategy failure", exc_info=outcome.error)
    if posted is not None and ok(posted):
        return posted, "best so far" if not outcome.finished else "posted"
    if posted is not None:
        log.warning("strategy %s posted %r, which is not legal here", name, posted)
    return fallback, "fallback"


def fallback_placement(state: GameState, cells: list[int]) -> int:
    """A legal initial position with the most room around it (the first such)."""
    return state.most_room(cells)[0]


def fallback_move(state: GameState, legal: list[Move]) -> Move:
    """A legal move: half of the largest stack, towards the destination with the most room."""
    sheep = state.sheep
    biggest = max(sheep[m.cell] for m in legal)
    best: Move | None = None
    best_room = -1
    for cell, direction, dst in state.slides():
        if sheep[cell] != biggest:
            continue
        room = state.room(dst)
        if room > best_room:
            best, best_room = Move(cell, biggest // 2, direction), room
    assert best is not None and best in legal
    return best
