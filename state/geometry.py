"""Board geometry, computed once per game.

Cells are flat indices ``i = x * size + y`` where ``x`` is the first index of
the wire's ``mapStat[x][y]``; that keeps the wire's x-outer order and the flat
order identical. Directions are the keypad numbers of RULES.md.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

# Keypad direction -> (dx on the first index, dy on the second). Pinned by tests.
DIRECTIONS: dict[int, tuple[int, int]] = {
    1: (-1, -1),
    2: (0, -1),
    3: (1, -1),
    4: (-1, 0),
    6: (1, 0),
    7: (-1, 1),
    8: (0, 1),
    9: (1, 1),
}
DIRECTION_KEYS: tuple[int, ...] = tuple(DIRECTIONS)
NEIGHBOURS_4: tuple[tuple[int, int], ...] = ((-1, 0), (1, 0), (0, -1), (0, 1))

OBSTACLE = -1
FREE = 0


class Geometry:
    """Which cells are playable, which are border cells, and every slide's ray.

    ``rays[cell][k]`` lists the playable cells a slide from ``cell`` in
    direction ``DIRECTION_KEYS[k]`` would cross, nearest first, up to the first
    obstacle or the edge. Occupation changes during a game, so a slide scans
    its ray until the first occupied cell.
    """

    __slots__ = ("border", "border_set", "cells", "neighbours", "playable", "rays", "size")

    def __init__(self, size: int, playable: Sequence[bool]) -> None:
        if size <= 0 or len(playable) != size * size:
            raise ValueError(
                f"playable must have size*size={size * size} entries, not {len(playable)}"
            )
        self.size = size
        self.playable: tuple[bool, ...] = tuple(playable)
        self.cells: tuple[int, ...] = tuple(i for i, p in enumerate(playable) if p)
        neighbours: list[tuple[int, ...]] = []
        rays: list[tuple[tuple[int, ...], ...]] = []
        border: list[int] = []
        for i in range(size * size):
            x, y = divmod(i, size)
            nb = []
            open_side = False
            for dx, dy in NEIGHBOURS_4:
                j = self.index_or_none(x + dx, y + dy)
                if j is None or not playable[j]:
                    open_side = True
                else:
                    nb.append(j)
            neighbours.append(tuple(nb))
            if playable[i] and open_side:
                border.append(i)
            cell_rays = []
            for dx, dy in DIRECTIONS.values():
                ray = []
                cx, cy = x + dx, y + dy
                while 0 <= cx < size and 0 <= cy < size and playable[cx * size + cy]:
                    ray.append(cx * size + cy)
                    cx += dx
                    cy += dy
                cell_rays.append(tuple(ray))
            rays.append(tuple(cell_rays))
        self.neighbours: tuple[tuple[int, ...], ...] = tuple(neighbours)
        self.rays: tuple[tuple[tuple[int, ...], ...], ...] = tuple(rays)
        self.border: tuple[int, ...] = tuple(border)
        self.border_set: frozenset[int] = frozenset(border)

    @classmethod
    def from_map(cls, board: Sequence[Sequence[int]]) -> Geometry:
        """Geometry of a wire map ``board[x][y]``: every non-obstacle cell is playable."""
        size = len(board)
        if any(len(col) != size for col in board):
            raise ValueError(f"map must be square: {size} columns but a column of another length")
        return cls(size, [v != OBSTACLE for col in board for v in col])

    def __reduce__(self) -> tuple[object, tuple[int, tuple[bool, ...]]]:
        """Pickled as its size and playable cells; unpickled boards of one process share
        one object (``shared_geometry``), so per-board caches keyed on it keep working."""
        return shared_geometry, (self.size, self.playable)

    def index_or_none(self, x: int, y: int) -> int | None:
        if 0 <= x < self.size and 0 <= y < self.size:
            return x * self.size + y
        return None

    def index(self, x: int, y: int) -> int:
        i = self.index_or_none(x, y)
        if i is None:
            raise ValueError(f"cell ({x}, {y}) is off the {self.size}x{self.size} board")
        return i

    def xy(self, cell: int) -> tuple[int, int]:
        x, y = divmod(cell, self.size)
        return x, y

    def ray(self, cell: int, direction: int) -> tuple[int, ...]:
        return self.rays[cell][DIRECTION_KEYS.index(direction)]


@functools.lru_cache(maxsize=16)
def shared_geometry(size: int, playable: tuple[bool, ...]) -> Geometry:
    """The one ``Geometry`` of a board in this process (what unpickling returns)."""
    return Geometry(size, playable)


def free_dirs(owner: Sequence[int], cell_rays: Sequence[Sequence[int]]) -> int:
    """Directions in which a stack on a cell of these rays could slide now (the first
    cell of the ray free)."""
    n = 0
    for ray in cell_rays:
        if ray and owner[ray[0]] == FREE:
            n += 1
    return n
