"""The incremental game state: rules, make/unmake, scores without flood fills.

A ``GameState`` is changed in place. ``place``, ``apply`` and ``apply_pass``
push an undo record; ``undo`` pops it and restores the state exactly (owners,
counts, stacks, regions, scores, hash, turn). Search uses make/unmake; a
``copy`` exists for the few that need a second state.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from state.geometry import DIRECTION_KEYS, FREE, OBSTACLE, Geometry
from state.regions import Regions
from state.settings import MAX_SHEEP, PLAYERS, GameSetting

UNKNOWN = -1
"""Sheep count of a cell whose count this player is not shown (game 3)."""

DIRECTION_INDEX: dict[int, int] = {d: k for k, d in enumerate(DIRECTION_KEYS)}

_KEY_STRIDE = MAX_SHEEP + 2  # counts 0..MAX_SHEEP and UNKNOWN

_MOVE, _PLACE, _PASS = 0, 1, 2


SearchMove = tuple[int, int, int, int]
"""A move on a search's hot path: (cell, direction, destination, split), plain ints."""


class Move(NamedTuple):
    """Move ``split`` sheep off the stack on ``cell`` (flat index) in keypad ``direction``:
    the one move type above the searches' hot paths (see ``from_search``)."""

    cell: int
    split: int
    direction: int

    @classmethod
    def from_search(cls, move: SearchMove) -> Move:
        """A search's tuple as a move (the inverse of ``GameState.search_move``)."""
        return cls(move[0], move[3], move[1])


class IllegalMoveError(ValueError):
    """A move, placement or pass that the rules do not allow in this state."""


@functools.cache
def _zobrist_keys(cells: int) -> tuple[list[int], list[int], list[int]]:
    rng = random.Random(0x5EE9)  # fixed: hashes must agree across processes and runs
    cell_keys = [rng.getrandbits(64) for _ in range(cells * 5 * _KEY_STRIDE)]
    turn_keys = [rng.getrandbits(64) for _ in range(5)]
    done_keys = [rng.getrandbits(64) for _ in range(5)]
    return cell_keys, turn_keys, done_keys


PickledState = tuple[
    GameSetting,
    Geometry,
    list[int],
    list[int],
    list[list[int]],
    int,
    int,
    list[bool],
    int,
    tuple[list[int], list[int], list[float]],
]
"""What a ``GameState`` pickles to (see ``GameState.__getstate__``)."""


class GameState:
    __slots__ = (
        "_cell_keys",
        "_done_keys",
        "_history",
        "_rays",
        "_score_log",
        "_turn_keys",
        "done",
        "geometry",
        "hash",
        "owner",
        "placed",
        "regions",
        "setting",
        "sheep",
        "stacks",
        "to_move",
    )

    def __init__(self, setting: GameSetting, geometry: Geometry) -> None:
        if geometry.size != setting.size:
            raise ValueError(
                f"game {setting.game} is played on {setting.size}x{setting.size}, "
                f"not on a {geometry.size}x{geometry.size} board"
            )
        self.setting = setting
        self.geometry = geometry
        self._rays = geometry.rays
        self.owner: list[int] = [FREE if p else OBSTACLE for p in geometry.playable]
        self.sheep: list[int] = [0] * len(self.owner)
        # stacks[p]: every cell of seat p in the order taken (cells are never lost).
        self.stacks: list[list[int]] = [[] for _ in range(5)]
        self.to_move = 1
        self.placed = 0
        # done[p]: p was found to have no legal move; that never changes again,
        # since free cells and own counts only ever shrink.
        self.done: list[bool] = [False] * 5
        self.regions = Regions(geometry.neighbours)
        self._cell_keys, self._turn_keys, self._done_keys = _zobrist_keys(len(self.owner))
        self.hash = self._turn_keys[1]
        self._history: list[tuple[int, ...]] = []
        self._score_log: list[float] = []

    # ----------------------------------------------------------------- queries
    @property
    def placing(self) -> bool:
        return self.placed < 4

    @property
    def ply(self) -> int:
        """Number of records on the undo stack (search depth from the last reset)."""
        return len(self._history)

    def initial_positions(self) -> list[int]:
        """Free border cells: where the player to move may put its sheep."""
        owner = self.owner
        return [c for c in self.geometry.border if owner[c] == FREE]

    def room(self, cell: int) -> int:
        """Free cells next to ``cell`` (4-neighbourhood): the room a placement grows into."""
        owner = self.owner
        return sum(1 for nb in self.geometry.neighbours[cell] if owner[nb] == FREE)

    def most_room(self, cells: Sequence[int]) -> list[int]:
        """The ``cells`` with the most room, in their given order."""
        room = [self.room(c) for c in cells]
        best = max(room, default=0)
        return [c for c, r in zip(cells, room, strict=True) if r == best]

    def destination(self, cell: int, direction: int) -> int:
        """Where a slide from ``cell`` in keypad ``direction`` stops, or -1 if it cannot move."""
        owner = self.owner
        dst = -1
        for c in self._rays[cell][DIRECTION_INDEX[direction]]:
            if owner[c] != FREE:
                break
            dst = c
        return dst

    def slides(self, player: int | None = None) -> list[tuple[int, int, int]]:
        """Every (cell, direction, destination) the player could slide, ignoring the split.

        A stack of unknown count (game 3) is included: it may hold two or more.
        """
        p = self.to_move if player is None else player
        if self.placing:
            return []
        owner, sheep, rays = self.owner, self.sheep, self._rays
        out: list[tuple[int, int, int]] = []
        for cell in self.stacks[p]:
            count = sheep[cell]
            if count == 1:
                continue
            for k, ray in enumerate(rays[cell]):
                dst = -1
                for c in ray:
                    if owner[c] != FREE:
                        break
                    dst = c
                if dst >= 0:
                    out.append((cell, DIRECTION_KEYS[k], dst))
        return out

    def has_moves(self, player: int | None = None) -> bool:
        p = self.to_move if player is None else player
        if self.placing:
            return self.to_move == p and bool(self.initial_positions())
        owner, sheep, rays = self.owner, self.sheep, self._rays
        for cell in self.stacks[p]:
            if sheep[cell] != 1:
                for ray in rays[cell]:
                    if ray and owner[ray[0]] == FREE:
                        return True
        return False

    def spare_sheep(self, walled_in: bool = True) -> int:
        """Every seat's sheep beyond one per stack, on stacks of two or more; without
        ``walled_in``, only on the stacks with a free neighbour, the ones that can still
        move (a walled-in stack never moves again: cells are never freed)."""
        owner, sheep, rays = self.owner, self.sheep, self._rays
        total = 0
        for p in PLAYERS:
            for cell in self.stacks[p]:
                if sheep[cell] > 1 and (
                    walled_in or any(ray and owner[ray[0]] == FREE for ray in rays[cell])
                ):
                    total += sheep[cell] - 1
        return total

    def legal_moves(self, player: int | None = None) -> list[Move]:
        """Every legal move of the player: all slides with every split size."""
        p = self.to_move if player is None else player
        sheep = self.sheep
        moves: list[Move] = []
        for cell, direction, _ in self.slides(p):
            count = sheep[cell]
            if count == UNKNOWN:
                raise ValueError(
                    f"seat {p}'s count on cell {self.geometry.xy(cell)} is hidden; "
                    "determinize the state before generating its moves"
                )
            moves.extend(Move(cell, m, direction) for m in range(1, count))
        return moves

    def is_terminal(self) -> bool:
        """No seat can move (placement finished)."""
        return not self.placing and not any(self.has_moves(p) for p in PLAYERS)

    def score(self, player: int) -> int:
        return round(self.regions.score[player])

    def exact_score(self, player: int) -> float:
        return self.regions.score[player]

    def scores(self) -> list[int]:
        return [round(self.regions.score[p]) for p in PLAYERS]

    def exact_scores(self) -> list[float]:
        return [self.regions.score[p] for p in PLAYERS]

    def region_sizes(self, player: int) -> list[int]:
        return self.regions.region_sizes(self.stacks[player])

    # ---------------------------------------------------------------- mutation
    def _next_turn(self) -> None:
        turn_keys = self._turn_keys
        self.hash ^= turn_keys[self.to_move]
        self.to_move = self.to_move % 4 + 1
        self.hash ^= turn_keys[self.to_move]

    def _key(self, cell: int, player: int, count: int) -> int:
        return self._cell_keys[(cell * 5 + player) * _KEY_STRIDE + count + 1]

    def place(self, cell: int) -> None:
        """The player to move puts all its sheep on a free border cell."""
        if not self.placing:
            raise IllegalMoveError("initial positions are over: all four seats have placed")
        if not 0 <= cell < len(self.owner) or cell not in self.geometry.border_set:
            raise IllegalMoveError(f"cell {cell} is not a border cell of the playing field")
        if self.owner[cell] != FREE:
            raise IllegalMoveError(
                f"border cell {self.geometry.xy(cell)} is already taken by seat {self.owner[cell]}"
            )
        self._take(self.to_move, cell, self.setting.sheep, _PLACE, self.hash)
        self.placed += 1

    def _take(
        self, player: int, cell: int, count: int, kind: int, old_hash: int, *extra: int
    ) -> None:
        old_turn = self.to_move
        self.owner[cell] = player
        self.sheep[cell] = count
        self.stacks[player].append(cell)
        old_score, absorbed = self.regions.add(cell, player, self.owner)
        self.hash ^= self._key(cell, player, count)
        self._history.append(
            (kind, player, cell, count, old_hash, old_turn, *extra, len(absorbed), *absorbed)
        )
        self._score_log.append(old_score)
        self._next_turn()

    def apply(self, move: Move) -> None:
        """Play ``move`` for the player to move, after checking that it is legal."""
        p = self.to_move
        cell, split, direction = move
        if self.placing:
            raise IllegalMoveError("the initial positions are not all placed yet")
        if not 0 <= cell < len(self.owner) or self.owner[cell] != p:
            raise IllegalMoveError(f"cell {cell} is not a stack of seat {p}")
        count = self.sheep[cell]
        if direction not in DIRECTION_INDEX:
            raise IllegalMoveError(f"direction {direction} is not one of {DIRECTION_KEYS}")
        if count != UNKNOWN and not 1 <= split < count:
            raise IllegalMoveError(
                f"cannot move {split} of the {count} sheep on {self.geometry.xy(cell)}: "
                "the split must leave at least one behind and move at least one"
            )
        if split < 1:
            raise IllegalMoveError(f"split {split} must be at least 1")
        dst = self.destination(cell, direction)
        if dst < 0:
            raise IllegalMoveError(
                f"the stack on {self.geometry.xy(cell)} cannot slide in direction {direction}"
            )
        self.slide(cell, dst, split)

    def slide(self, cell: int, dst: int, split: int) -> None:
        """Play a slide already known to be legal (the search's hot path)."""
        p = self.to_move
        sheep = self.sheep
        old = sheep[cell]
        left = old if old == UNKNOWN else old - split
        sheep[cell] = left
        old_hash = self.hash
        self.hash ^= self._key(cell, p, old) ^ self._key(cell, p, left)
        self._take(p, dst, split, _MOVE, old_hash, cell, old)

    def apply_pass(self) -> None:
        """The player to move has no legal move and passes."""
        p = self.to_move
        if self.placing:
            raise IllegalMoveError("no seat may pass its initial position")
        if self.has_moves(p):
            raise IllegalMoveError(f"seat {p} has a legal move and may not pass")
        self._history.append((_PASS, p, int(self.done[p]), self.hash, p))
        if not self.done[p]:
            self.done[p] = True
            self.hash ^= self._done_keys[p]
        self._next_turn()

    def skip_turn(self) -> None:
        """The seat to move made no move this turn (it passed, was late, or was illegal).

        Unlike ``apply_pass`` nothing is concluded about its moves.
        """
        p = self.to_move
        self._history.append((_PASS, p, int(self.done[p]), self.hash, p))
        self._next_turn()

    def undo(self) -> None:
        """Take back the last placement, move or pass exactly."""
        if not self._history:
            raise IndexError("nothing to undo")
        rec = self._history.pop()
        kind = rec[0]
        if kind == _PASS:
            _, p, was_done, old_hash, old_turn = rec
            self.done[p] = bool(was_done)
            self.hash, self.to_move = old_hash, old_turn
            return
        p, cell, old_hash, old_turn = rec[1], rec[2], rec[4], rec[5]
        if kind == _MOVE:
            src, old_src = rec[6], rec[7]
            self.sheep[src] = old_src
            n = rec[8]
            absorbed = rec[9 : 9 + n]
        else:
            self.placed -= 1
            n = rec[6]
            absorbed = rec[7 : 7 + n]
        self.regions.undo(cell, p, (self._score_log.pop(), absorbed))
        self.owner[cell] = FREE
        self.sheep[cell] = 0
        self.stacks[p].pop()
        self.hash, self.to_move = old_hash, old_turn

    def clear_history(self) -> None:
        """Forget the undo records (after real moves, which are never taken back)."""
        self._history.clear()
        self._score_log.clear()

    def copy(self) -> GameState:
        """An independent state with the same position (undo history not copied)."""
        other = GameState.__new__(GameState)
        other.setting = self.setting
        other.geometry = self.geometry
        other._rays = self._rays
        other.owner = self.owner[:]
        other.sheep = self.sheep[:]
        other.stacks = [s[:] for s in self.stacks]
        other.to_move = self.to_move
        other.placed = self.placed
        other.done = self.done[:]
        other.regions = self.regions.copy()
        other._cell_keys, other._turn_keys = self._cell_keys, self._turn_keys
        other._done_keys = self._done_keys
        other.hash = self.hash
        other._history = []
        other._score_log = []
        return other

    def with_counts(self, counts: Mapping[int, int]) -> GameState:
        """A copy with the sheep counts of ``counts`` (cell: count) put in and the hash
        made again: game 3's hidden counts filled in, a world to search."""
        world = self.copy()
        for cell, count in counts.items():
            world.sheep[cell] = count
        world.hash = world.hash_from_scratch()
        return world

    def __getstate__(self) -> PickledState:
        """The position without the undo history, the hash keys or the rays (rebuilt
        from the board on unpickling): a few kilobytes, what another process needs."""
        r = self.regions
        return (
            self.setting,
            self.geometry,
            self.owner,
            self.sheep,
            self.stacks,
            self.to_move,
            self.placed,
            self.done,
            self.hash,
            (r.parent, r.size, r.score),
        )

    def __setstate__(self, data: PickledState) -> None:
        setting, geometry, owner, sheep, stacks, to_move, placed, done, hash_, regions = data
        self.setting = setting
        self.geometry = geometry
        self._rays = geometry.rays
        self.owner = owner
        self.sheep = sheep
        self.stacks = stacks
        self.to_move = to_move
        self.placed = placed
        self.done = done
        self.hash = hash_
        self.regions = Regions(geometry.neighbours)
        self.regions.parent, self.regions.size, self.regions.score = regions
        self._cell_keys, self._turn_keys, self._done_keys = _zobrist_keys(len(owner))
        self._history = []
        self._score_log = []

    def assign(self, other: GameState) -> None:
        """Become ``other`` in place, so that holders of this object see the new position."""
        for name in GameState.__slots__:
            setattr(self, name, getattr(other, name))

    # ------------------------------------------------------------ conversions
    def canonical(self) -> tuple[object, ...]:
        """The position as a comparable value (stack order and history ignored)."""
        return (
            self.setting.game,
            tuple(self.owner),
            tuple(self.sheep),
            tuple(tuple(sorted(s)) for s in self.stacks),
            self.to_move,
            self.placed,
            tuple(self.scores()),
        )

    def wire_map(self) -> list[list[int]]:
        n = self.geometry.size
        return [self.owner[x * n : (x + 1) * n] for x in range(n)]

    def wire_sheep(self, viewer: int | None = None) -> list[list[int]]:
        """Counts as the wire sends them; counts ``viewer`` is not shown (game 3) read 0."""
        n = self.geometry.size
        counts = [max(c, 0) for c in self.sheep]
        if viewer is not None and self.setting.hidden_counts:
            owner, shows = self.owner, self.setting.shows_count
            counts = [c if shows(owner[i], viewer) else 0 for i, c in enumerate(counts)]
        return [counts[x * n : (x + 1) * n] for x in range(n)]

    def hash_from_scratch(self) -> int:
        h = self._turn_keys[self.to_move]
        for p in PLAYERS:
            if self.done[p]:
                h ^= self._done_keys[p]
            for c in self.stacks[p]:
                h ^= self._key(c, p, self.sheep[c])
        return h

    def search_move(self, move: Move) -> SearchMove:
        """``move`` as a search's tuple (the inverse of ``Move.from_search``)."""
        return move.cell, move.direction, self.destination(move.cell, move.direction), move.split

    def move_to_wire(self, move: Move) -> tuple[int, int, int, int]:
        """(x, y, split, direction) as the protocol sends them."""
        x, y = self.geometry.xy(move.cell)
        return x, y, move.split, move.direction
