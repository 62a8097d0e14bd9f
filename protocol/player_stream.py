"""What the server receives from one player: bytes in, replies out."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, TypeAlias, get_args

from protocol.errors import ProtocolError
from protocol.frame_buffer import MAX_BUFFERED_FRAMES, Chunk, FrameBuffer
from protocol.frames import move_reply_from_ints, position_reply_from_ints, team_id_from_ints
from protocol.layout import (
    HEADER_INTS,
    INT_BYTES,
    MOVE_REPLY_INTS,
    POSITION_REPLY_INTS,
    REPLY_CODE,
    TEAM_ID_INTS,
)
from protocol.limits import check_board_size, check_int32
from protocol.messages import MoveReply, PositionReply, TeamId
from protocol.need_data import NEED_DATA, NeedData

__all__ = ["InvalidReply", "PlayerStreamDecoder", "ReplyKind"]

logger = logging.getLogger(__name__)

ReplyKind: TypeAlias = Literal["position", "move"]
"""What a request asked for: an initial position (x, y) or a move (x, y, m, dir)."""

_REPLY_INTS: Mapping[ReplyKind, int] = {
    "position": POSITION_REPLY_INTS,
    "move": MOVE_REPLY_INTS,
}


@dataclass(frozen=True, slots=True)
class InvalidReply:
    """A well-framed reply with out-of-range values (direction 5, x off the board, split 0).

    Not fatal: its frame is consumed and the stream goes on; the server counts it
    as an illegal move. ``values`` is the whole frame as received, for logs.
    """

    id_package: int
    kind: ReplyKind
    values: tuple[int, ...]
    error: ProtocolError


class PlayerStreamDecoder:
    """Decodes the client -> server stream of one player's connection (sans-I/O).

    The first frame is the TeamId. Every later frame is a reply ``1, id_package,
    ...`` whose length only the request knows, so the server registers each
    request with ``expect(id_package, kind)`` before sending it. An id stays
    registered until ``forget``: a reply that arrives late must still be framed
    (the server then discards it as stale); forget an id only once its reply is
    in or the connection is being dropped anyway.

    Unframeable input raises ProtocolError and the stream cannot go on: a reply
    whose first int is not 1, or whose id_package is not registered.
    """

    def __init__(self, size: int, *, max_buffer: int | None = None) -> None:
        self._size = check_board_size(size)
        self._expected: dict[int, ReplyKind] = {}
        self._team_id_seen = False
        self._buffer = FrameBuffer(
            MAX_BUFFERED_FRAMES * MOVE_REPLY_INTS * INT_BYTES if max_buffer is None else max_buffer
        )

    @property
    def size(self) -> int:
        """N, the board side coordinates are checked against."""
        return self._size

    @property
    def pending(self) -> int:
        """Bytes fed but not yet decoded; non-zero at end of stream means a truncated frame."""
        return self._buffer.pending

    @property
    def expected(self) -> Mapping[int, ReplyKind]:
        """Registered id_package -> kind, read-only."""
        return MappingProxyType(self._expected)

    def expect(self, id_package: int, kind: ReplyKind) -> None:
        """Register a request sent (or about to be sent) with this id_package."""
        if kind not in _REPLY_INTS:
            raise ValueError(f"reply kind {kind!r} is not one of {get_args(ReplyKind)}")
        check_int32("id_package", id_package)
        registered = self._expected.setdefault(id_package, kind)
        if registered != kind:
            # Two requests in flight with one id: the server's bug, and replies would be ambiguous.
            raise ValueError(f"id_package {id_package} is already expected as a {registered}")

    def forget(self, id_package: int) -> None:
        """Unregister an id_package (unknown ids are ignored); its replies become unframeable."""
        self._expected.pop(id_package, None)

    def feed(self, data: Chunk) -> None:
        """Append received bytes; ProtocolError if undecoded bytes pile up (see FrameBuffer)."""
        self._buffer.feed(data)

    def next_message(self) -> TeamId | PositionReply | MoveReply | InvalidReply | NeedData:
        """The next whole frame, or NEED_DATA (the partial frame is kept)."""
        buffer = self._buffer
        available = buffer.ints_available()
        if not self._team_id_seen:
            if available < TEAM_ID_INTS:
                return NEED_DATA
            self._team_id_seen = True
            return team_id_from_ints(buffer.take(TEAM_ID_INTS))
        # Check each header int as soon as it is in, so junk fails without waiting for more.
        if available < 1:
            return NEED_DATA
        code = buffer.peek(0)
        if code != REPLY_CODE:
            raise ProtocolError("code", code, f"is not {REPLY_CODE}, which starts every reply")
        if available < HEADER_INTS:
            return NEED_DATA
        id_package = buffer.peek(1)
        kind = self._expected.get(id_package)
        if kind is None:
            raise ProtocolError(
                "id_package", id_package, "was not asked for, so the reply's length is unknown"
            )
        length = _REPLY_INTS[kind]
        if available < length:
            return NEED_DATA
        ints = buffer.take(length)
        try:
            if kind == "position":
                return position_reply_from_ints(ints, self._size)
            return move_reply_from_ints(ints, self._size)
        except ProtocolError as error:
            logger.debug("invalid %s reply %s: %s", kind, ints, error)
            return InvalidReply(id_package=id_package, kind=kind, values=ints, error=error)
