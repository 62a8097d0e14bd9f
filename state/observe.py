"""Observations from the server: validate them, explain them by moves, or rebuild.

A player sees the board only when it is asked to move, so between two
observations each other seat placed, moved, or made no move. ``ingest``
replays those actions on the state in seat order (so each slide is checked on
the board as it was when it was played) and reports them; when the change
cannot be explained by legal actions it rebuilds the state from the
observation and says so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from state.game import UNKNOWN, GameState
from state.geometry import FREE, OBSTACLE, Geometry
from state.settings import MAX_SHEEP, PLAYERS, GameSetting

log = logging.getLogger(__name__)


class ObservationError(ValueError):
    """An observation that cannot be a board of this game (wrong size, values out of range)."""


class Action(NamedTuple):
    """What one seat did between two observations, as far as the board shows it."""

    seat: int
    kind: Literal["place", "move", "skip"]
    cell: int = -1  # placement cell or the source stack of a move
    dst: int = -1  # destination of a move
    split: int = UNKNOWN  # sheep moved (UNKNOWN where hidden)
    # A move: every stack whose slide ends on ``dst`` (with hidden counts the
    # board alone may not tell which one moved). A skip: the seat's stacks that
    # had an open direction, which all hold one sheep if the seat had no move.
    cells: tuple[int, ...] = ()


@dataclass
class IngestReport:
    actions: list[Action] = field(default_factory=list)
    new_cells: list[int] = field(default_factory=list)
    # The position before each move off a stack of hidden count, by the move's index in
    # ``actions``: the mover to move, for models of which stack it chose where the board
    # leaves that in doubt and of how many sheep it moved (``Belief.update``'s ``odds``
    # and ``shares``).
    positions: dict[int, GameState] = field(default_factory=dict)
    resynced: bool = False
    reason: str = ""


def _flatten(geometry_size: int, board: Sequence[Sequence[int]], what: str) -> list[int]:
    if len(board) != geometry_size or any(len(col) != geometry_size for col in board):
        shape = f"{len(board)}x{len(board[0]) if len(board) else 0}"
        raise ObservationError(f"{what} must be {geometry_size}x{geometry_size}, not {shape}")
    return [v for col in board for v in col]


def read_observation(
    setting: GameSetting,
    board: Sequence[Sequence[int]],
    sheep: Sequence[Sequence[int]] | None,
    viewer: int | None,
    geometry: Geometry | None = None,
) -> tuple[list[int], list[int]]:
    """Owners and counts as flat lists, checked; hidden counts become ``UNKNOWN``.

    In game 3 the counts of other seats' cells are masked for ``viewer``
    whatever the server sent, as the course's client template does.
    """
    n = setting.size
    owner = _flatten(n, board, "map")
    counts = _flatten(n, sheep, "sheep") if sheep is not None else [0] * (n * n)
    for i, (o, c) in enumerate(zip(owner, counts, strict=True)):
        x, y = divmod(i, n)
        if not OBSTACLE <= o <= 4:
            raise ObservationError(f"map[{x}][{y}] = {o} is outside -1..4")
        if geometry is not None and (o == OBSTACLE) == geometry.playable[i]:
            raise ObservationError(
                f"map[{x}][{y}] = {o} does not match the playing field of this game"
            )
        if c < 0 or c > MAX_SHEEP:
            raise ObservationError(f"sheep[{x}][{y}] = {c} is outside 0..{MAX_SHEEP}")
        if o <= FREE and c != 0:
            raise ObservationError(f"sheep[{x}][{y}] = {c} on a cell nobody owns")
        hidden = not setting.shows_count(o, viewer)
        if o > FREE and sheep is not None and hidden:
            counts[i] = UNKNOWN
        elif o > FREE and sheep is not None and c == 0:
            raise ObservationError(f"sheep[{x}][{y}] = 0 on a cell of seat {o}")
        elif o > FREE and sheep is None:
            counts[i] = UNKNOWN if hidden else setting.sheep
    return owner, counts


def mask_counts(
    setting: GameSetting,
    board: Sequence[Sequence[int]],
    sheep: Sequence[Sequence[int]],
    viewer: int,
) -> tuple[tuple[int, ...], ...]:
    """A wire sheep board as ``viewer`` may see it: the counts it is not shown (game 3)
    read 0, as the course's client template makes them, whatever the server sent."""
    if not setting.hidden_counts:
        return tuple(tuple(col) for col in sheep)
    shows = setting.shows_count
    return tuple(
        tuple(c if shows(o, viewer) else 0 for o, c in zip(owners, counts, strict=True))
        for owners, counts in zip(board, sheep, strict=True)
    )


def state_from_observation(
    setting: GameSetting,
    board: Sequence[Sequence[int]],
    sheep: Sequence[Sequence[int]] | None,
    viewer: int | None = None,
    to_move: int | None = None,
    geometry: Geometry | None = None,
) -> GameState:
    """Rebuild a state from one observation (no history: regions grown cell by cell).

    ``sheep`` may be None for the initial map, where every taken cell still
    holds all of its seat's sheep. ``geometry``, when given, is the board's
    (the map is checked against it), and saves computing it again.
    """
    owner, counts = read_observation(setting, board, sheep, viewer, geometry)
    if geometry is None:
        geometry = Geometry(setting.size, [o != OBSTACLE for o in owner])
    state = GameState(setting, geometry)
    seats_with_cells = {o for o in owner if o > FREE}
    state.placed = 4 if seats_with_cells - {1, 2, 3} else max(seats_with_cells, default=0)
    for cell, o in enumerate(owner):
        if o > FREE:
            state.owner[cell] = o
            state.sheep[cell] = counts[cell]
            state.stacks[o].append(cell)
            state.regions.add(cell, o, state.owner)
    if to_move is not None:
        state.to_move = to_move
    elif state.placing:
        state.to_move = state.placed + 1
    state.hash = state.hash_from_scratch()
    return state


def placement_report(state: GameState) -> IngestReport:
    """The placements an initial map shows, as ``ingest`` would report them."""
    report = IngestReport()
    for seat in PLAYERS:
        for cell in state.stacks[seat]:
            report.actions.append(Action(seat, "place", cell))
            report.new_cells.append(cell)
    return report


def _explain_slide(
    state: GameState, seat: int, pending: list[int], counts: Sequence[int]
) -> tuple[int, int, int, tuple[int, ...]] | None:
    """(source, destination, split, all candidate sources) of a slide of ``seat``
    onto one of its new cells."""
    best: tuple[int, int, int] | None = None
    sheep = state.sheep
    slides = state.slides(seat)
    for src, _direction, dst in slides:
        if dst not in pending:
            continue
        split = counts[dst]
        if split == UNKNOWN or sheep[src] == UNKNOWN or sheep[src] - split == counts[src]:
            best = (src, dst, split)
            break
        if best is None and sheep[src] - split >= max(1, counts[src]):
            best = (src, dst, split)  # the source may have moved again since
    if best is None:
        return None
    sources = tuple(src for src, _d, dst in slides if dst == best[1])
    return (*best, sources)


def open_stacks(state: GameState, seat: int) -> tuple[int, ...]:
    """The seat's stacks that are not known to hold one sheep and have a free neighbour
    in some direction."""
    owner, sheep, rays = state.owner, state.sheep, state.geometry.rays
    return tuple(
        cell
        for cell in state.stacks[seat]
        if sheep[cell] != 1 and any(ray and owner[ray[0]] == FREE for ray in rays[cell])
    )


def ingest(
    state: GameState,
    board: Sequence[Sequence[int]],
    sheep: Sequence[Sequence[int]] | None,
    viewer: int,
) -> IngestReport:
    """Bring ``state`` (as of the viewer's previous turn) up to the observation, in place.

    On return it is ``viewer``'s turn and the undo history is empty.
    """
    owner_obs, counts = read_observation(state.setting, board, sheep, viewer, state.geometry)
    while state.ply:
        state.undo()
    report = IngestReport()
    try:
        _replay(state, owner_obs, counts, viewer, report)
    except _Unexplained as exc:
        log.warning("resynchronising seat %s from the board: %s", viewer, exc)
        state.assign(state_from_observation(state.setting, board, sheep, viewer, to_move=viewer))
        report.resynced = True
        report.reason = str(exc)
    return report


class _Unexplained(Exception):
    """The change since the last observation is no sequence of legal actions."""


def _replay(
    state: GameState,
    owner_obs: Sequence[int],
    counts: Sequence[int],
    viewer: int,
    report: IngestReport,
) -> None:
    """Apply the actions that explain the observation, reporting them, in seat order."""
    pending: dict[int, list[int]] = {p: [] for p in PLAYERS}
    for cell in state.geometry.cells:
        before, now = state.owner[cell], owner_obs[cell]
        if before == now:
            continue
        if before != FREE:
            x, y = state.geometry.xy(cell)
            raise _Unexplained(f"cell ({x}, {y}) changed owner from seat {before} to {now}")
        pending[now].append(cell)
        report.new_cells.append(cell)

    # Each step explains one new cell or skips one seat; more steps than this
    # means the change is no sequence of legal actions.
    for _ in range(5 * (len(report.new_cells) + 1)):
        if not any(pending.values()):
            break
        p = state.to_move
        mine = pending[p]
        if state.placing:
            border = [c for c in mine if c in state.geometry.border_set]
            if not border:
                raise _Unexplained(f"seat {p} placed no sheep")
            cell = max(border, key=lambda c: counts[c])
            state.place(cell)
            state.sheep[cell] = counts[cell] if counts[cell] == UNKNOWN else state.setting.sheep
            state.hash = state.hash_from_scratch()
            mine.remove(cell)
            report.actions.append(Action(p, "place", cell))
        elif not mine:
            report.actions.append(Action(p, "skip", cells=open_stacks(state, p)))
            state.skip_turn()
        else:
            found = _explain_slide(state, p, mine, counts)
            if found is None:
                raise _Unexplained(f"no slide of seat {p} explains its new cell")
            src, dst, split, sources = found
            if state.sheep[src] == UNKNOWN:
                report.positions[len(report.actions)] = state.copy()
            state.slide(src, dst, split)
            mine.remove(dst)
            report.actions.append(Action(p, "move", src, dst, split, sources))
    else:
        raise _Unexplained("more new cells than turns could make")

    if not state.placing:
        while state.to_move != viewer:
            report.actions.append(
                Action(state.to_move, "skip", cells=open_stacks(state, state.to_move))
            )
            state.skip_turn()
    if state.sheep != counts:
        raise _Unexplained("sheep counts differ from the moves that explain the new cells")
    state.to_move = viewer
    state.hash = state.hash_from_scratch()
    state.clear_history()
