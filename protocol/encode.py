"""Messages to bytes."""

from __future__ import annotations

import struct
from itertools import chain

from protocol.errors import ProtocolError
from protocol.layout import GAME_OVER_CODE, REPLY_CODE
from protocol.limits import check_board_size
from protocol.messages import (
    GameOver,
    InitialMap,
    Message,
    MoveReply,
    PositionReply,
    TeamId,
    Turn,
)

__all__ = ["encode"]


def _ints(message: Message) -> tuple[int, ...]:
    match message:
        case TeamId():
            return (message.team_id,)
        case InitialMap():
            return (
                message.code,
                message.id_package,
                message.player_id,
                *chain.from_iterable(message.map),
            )
        case PositionReply():
            return (REPLY_CODE, message.id_package, message.x, message.y)
        case Turn():
            return (
                message.code,
                message.id_package,
                *chain.from_iterable(message.map),
                *chain.from_iterable(message.sheep),
            )
        case MoveReply():
            return (
                REPLY_CODE,
                message.id_package,
                message.x,
                message.y,
                message.split,
                message.direction,
            )
        case GameOver():
            return (GAME_OVER_CODE, message.id_package)
    raise TypeError(f"not a wire message: {type(message).__name__}")


def encode(message: Message, size: int) -> bytes:
    """The frame for ``message`` on a ``size`` x ``size`` board.

    Values are checked again against ``size`` (boards exactly N x N, coordinates
    below N), so a message built with ``model_construct`` cannot put bytes on the
    wire that the other side would have to reject. Raises ProtocolError.
    """
    check_board_size(size)
    message.check_values(size)
    ints = _ints(message)
    try:
        return struct.pack(f"<{len(ints)}i", *ints)
    except struct.error as exc:  # only reachable through model_construct with non-ints
        raise ProtocolError(type(message).__name__, ints, f"does not pack: {exc}") from None
