"""The course wire protocol, sans-I/O: bytes in, typed messages out, and back.

No sockets, no clock, no game rules. The board side N (12 or 15) is never on the
wire, so every encoder and decoder takes it from the caller.

- ``encode(message, size) -> bytes`` for every message.
- ``ServerStreamDecoder(size)``: a client's view of the server's frames.
- ``PlayerStreamDecoder(size)``: the server's view of one player's frames.
- Decoders return ``NEED_DATA`` for an incomplete frame and raise
  ``ProtocolError`` (a ValueError naming ``field`` and ``value``) for bad input.
"""

from protocol.encode import encode
from protocol.errors import ProtocolError
from protocol.limits import BOARD_SIZES, DIRECTIONS
from protocol.messages import (
    Board,
    ClientMessage,
    GameOver,
    InitialMap,
    Message,
    MoveReply,
    PositionReply,
    ServerMessage,
    TeamId,
    Turn,
    WireMessage,
)
from protocol.need_data import NEED_DATA, NeedData
from protocol.player_stream import InvalidReply, PlayerStreamDecoder, ReplyKind
from protocol.server_stream import ServerStreamDecoder

__all__ = [
    "BOARD_SIZES",
    "DIRECTIONS",
    "NEED_DATA",
    "Board",
    "ClientMessage",
    "GameOver",
    "InitialMap",
    "InvalidReply",
    "Message",
    "MoveReply",
    "NeedData",
    "PlayerStreamDecoder",
    "PositionReply",
    "ProtocolError",
    "ReplyKind",
    "ServerMessage",
    "ServerStreamDecoder",
    "TeamId",
    "Turn",
    "WireMessage",
    "encode",
]
