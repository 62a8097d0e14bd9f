"""The value ranges of the wire format and the checks that enforce them.

The checks are plain Python instead of pydantic constraints for two reasons:
decoding a 15x15 turn (450 board ints) must stay far below a millisecond, and
every failure must be a ProtocolError naming the field and the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from protocol.errors import ProtocolError

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1

BOARD_SIZES: Final = (12, 15)
"""Board sides of the four game settings (games 1, 3, 4: 12; game 2: 15)."""

CELL_MIN: Final = -1
"""map values: -1 obstacle, 0 free playing cell, 1..4 the owner's seat."""
CELL_MAX: Final = 4
SHEEP_MIN: Final = 0
SHEEP_MAX: Final = 64
"""Generous bound: a player has at most 32 sheep (game 2); anything above is garbage."""
SEAT_MIN: Final = 1
SEAT_MAX: Final = 4
DIRECTIONS: Final = (1, 2, 3, 4, 6, 7, 8, 9)
"""Keypad directions; 5 (the keypad's centre) is not a direction."""
SPLIT_MIN: Final = 1

_DIRECTION_SET: Final = frozenset(DIRECTIONS)
_DIRECTION_TEXT: Final = ",".join(map(str, DIRECTIONS))


def check_board_size(size: int) -> int:
    """Return ``size`` if it is a board side of the game; the caller's mistake otherwise."""
    # Plain ValueError, not ProtocolError: a wrong N is the caller's bug, not the peer's.
    if type(size) is not int or size not in BOARD_SIZES:
        raise ValueError(f"board size {size!r} is not one of {', '.join(map(str, BOARD_SIZES))}")
    return size


def check_int32(field: str, value: int) -> None:
    if not INT32_MIN <= value <= INT32_MAX:
        raise ProtocolError(field, value, "does not fit a signed 32-bit int")


def check_range(field: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ProtocolError(field, value, f"is not in {low}..{high}")


def check_at_least(field: str, value: int, low: int) -> None:
    if not low <= value <= INT32_MAX:
        raise ProtocolError(field, value, f"is not in {low}..{INT32_MAX}")


def check_direction(field: str, value: int) -> None:
    if value not in _DIRECTION_SET:
        raise ProtocolError(field, value, f"is not one of {_DIRECTION_TEXT}")


def check_board_code(field: str, value: int) -> None:
    check_int32(field, value)
    if value == 0:
        raise ProtocolError(field, value, "means game over and cannot head a board frame")


def check_coordinate(field: str, value: int, size: int | None) -> None:
    # Without a known N, no board of the game is larger than the largest setting.
    side = max(BOARD_SIZES) if size is None else size
    check_range(field, value, 0, side - 1)


def board_side(field: str, board: Sequence[Sequence[int]], size: int | None) -> int:
    """Check that ``board`` is square with side ``size`` (any game side if None); return it."""
    side = len(board)
    if size is None:
        if side not in BOARD_SIZES:
            raise ProtocolError(
                field, side, f"rows is not one of {', '.join(map(str, BOARD_SIZES))}"
            )
    elif side != size:
        raise ProtocolError(field, side, f"rows is not {size}")
    for x, row in enumerate(board):
        if len(row) != side:
            raise ProtocolError(field, len(row), f"cells in row x={x} is not {side}")
    return side


def check_board_values(field: str, board: Sequence[Sequence[int]], low: int, high: int) -> None:
    """Check every cell of a (square, already measured) board against low..high."""
    # The set of distinct values is built in C and has a handful of members, so
    # the common case costs a few microseconds; only a failure pays for the loop.
    values = set().union(*board)
    if values and low <= min(values) and max(values) <= high:
        return
    for x, row in enumerate(board):
        for y, value in enumerate(row):
            if not low <= value <= high:
                raise ProtocolError(field, value, f"is not in {low}..{high} (at x={x}, y={y})")
