"""Random playing fields like the course's: one 4-connected region of K cells."""

from __future__ import annotations

import random

from state.geometry import NEIGHBOURS_4, Geometry
from state.settings import GameSetting


def random_playable(size: int, cells: int, rng: random.Random) -> list[bool]:
    """Grow one region cell by cell from a cell near the centre (an Eden cluster).

    Growing by a random frontier cell gives the compact, ragged blobs of the
    course's boards, and connectivity holds by construction.
    """
    if not 1 <= cells <= size * size:
        raise ValueError(f"cannot place {cells} playing cells on a {size}x{size} board")
    playable = [False] * (size * size)
    centre = size // 2
    start = (centre + rng.randrange(-1, 2)) * size + centre + rng.randrange(-1, 2)
    playable[start] = True
    frontier: list[int] = []
    in_frontier = [False] * (size * size)

    def push_neighbours(i: int) -> None:
        x, y = divmod(i, size)
        for dx, dy in NEIGHBOURS_4:
            nx, ny = x + dx, y + dy
            if 0 <= nx < size and 0 <= ny < size:
                j = nx * size + ny
                if not playable[j] and not in_frontier[j]:
                    in_frontier[j] = True
                    frontier.append(j)

    push_neighbours(start)
    for _ in range(cells - 1):
        k = rng.randrange(len(frontier))
        frontier[k], frontier[-1] = frontier[-1], frontier[k]
        cell = frontier.pop()
        playable[cell] = True
        push_neighbours(cell)
    return playable


def random_geometry(setting: GameSetting, seed: int | None) -> Geometry:
    """The playing field of one game; the same seed gives the same field."""
    rng = random.Random(seed)
    return Geometry(setting.size, random_playable(setting.size, setting.cells, rng))


def initial_map(geometry: Geometry) -> list[list[int]]:
    """The wire map ``map[x][y]`` of an empty field: -1 obstacle, 0 free."""
    n = geometry.size
    return [[0 if geometry.playable[x * n + y] else -1 for y in range(n)] for x in range(n)]
