"""Text pictures of a position, for terminals and logs (row = y, column = x)."""

from __future__ import annotations

from state.game import UNKNOWN, GameState
from state.geometry import FREE, OBSTACLE

SEAT_MARKS = {1: "O", 2: "G", 3: "P", 4: "B"}


def render(state: GameState) -> str:
    """One line per y: ``##`` obstacle, ``..`` free, ``O5`` seat 1 with 5 sheep, ``G?`` hidden."""
    n = state.geometry.size
    lines = []
    for y in range(n):
        cells = []
        for x in range(n):
            i = x * n + y
            o = state.owner[i]
            if o == OBSTACLE:
                cells.append("  ")
            elif o == FREE:
                cells.append(" .")
            else:
                c = state.sheep[i]
                count = "?" if c == UNKNOWN else (str(c) if c < 10 else "+")
                cells.append(SEAT_MARKS[o] + count)
        lines.append(" ".join(cells).rstrip())
    return "\n".join(lines)


def score_line(state: GameState) -> str:
    parts = [
        f"seat {p} ({SEAT_MARKS[p]}): {state.score(p)} {state.region_sizes(p)}" for p in range(1, 5)
    ]
    return " | ".join(parts)
