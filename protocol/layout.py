"""Frame layouts in ints: what the header says and how long each frame is."""

from __future__ import annotations

from typing import Final

INT_BYTES: Final = 4
"""Every wire value is a little-endian signed 32-bit int (struct '<i')."""

GAME_OVER_CODE: Final = 0
REPLY_CODE: Final = 1
"""Clients start every reply with 1."""

HEADER_INTS: Final = 2
"""code, id_package"""
GAME_OVER_INTS: Final = HEADER_INTS
TEAM_ID_INTS: Final = 1
POSITION_REPLY_INTS: Final = HEADER_INTS + 2
MOVE_REPLY_INTS: Final = HEADER_INTS + 4


def initial_map_ints(size: int) -> int:
    """code, id_package, player_id, then the map."""
    return HEADER_INTS + 1 + size * size


def turn_ints(size: int) -> int:
    """code, id_package, then the map and the sheep."""
    return HEADER_INTS + 2 * size * size
