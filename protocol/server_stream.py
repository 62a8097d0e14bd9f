"""What a client receives: the server's frames, bytes in, messages out."""

from __future__ import annotations

from protocol.frame_buffer import MAX_BUFFERED_FRAMES, Chunk, FrameBuffer
from protocol.frames import game_over_from_ints, initial_map_from_ints, turn_from_ints
from protocol.layout import (
    GAME_OVER_CODE,
    GAME_OVER_INTS,
    HEADER_INTS,
    INT_BYTES,
    initial_map_ints,
    turn_ints,
)
from protocol.limits import check_board_size
from protocol.messages import GameOver, InitialMap, Turn
from protocol.need_data import NEED_DATA, NeedData

__all__ = ["ServerStreamDecoder"]


class ServerStreamDecoder:
    """Decodes the server -> client stream of one connection (sans-I/O).

    The header ``code, id_package`` does not say which board frame follows, so
    the decoder tracks it: while ``expect_initial_map`` is true a header with a
    non-zero code starts an InitialMap, and decoding one clears the flag; after
    that such headers start Turns. A client that reconnects after placing sets
    ``expect_initial_map = False`` (or passes it to the constructor). Code 0 is
    always a header-only GameOver and does not change the flag.

    ``next_message`` raises ProtocolError for out-of-range values, after
    consuming the offending frame: the stream stays framed, though a client
    should treat it as fatal.
    """

    def __init__(
        self, size: int, expect_initial_map: bool = True, *, max_buffer: int | None = None
    ) -> None:
        self._size = check_board_size(size)
        self.expect_initial_map = expect_initial_map
        self._initial_map_ints = initial_map_ints(size)
        self._turn_ints = turn_ints(size)
        largest = max(self._initial_map_ints, self._turn_ints) * INT_BYTES
        self._buffer = FrameBuffer(
            MAX_BUFFERED_FRAMES * largest if max_buffer is None else max_buffer
        )

    @property
    def size(self) -> int:
        """N, the board side the frames are decoded for."""
        return self._size

    @property
    def pending(self) -> int:
        """Bytes fed but not yet decoded; non-zero at end of stream means a truncated frame."""
        return self._buffer.pending

    def feed(self, data: Chunk) -> None:
        """Append received bytes; ProtocolError if undecoded bytes pile up (see FrameBuffer)."""
        self._buffer.feed(data)

    def next_message(self) -> InitialMap | Turn | GameOver | NeedData:
        """The next whole frame as a message, or NEED_DATA (the partial frame is kept)."""
        buffer = self._buffer
        available = buffer.ints_available()
        if available < HEADER_INTS:
            return NEED_DATA
        if buffer.peek(0) == GAME_OVER_CODE:
            return game_over_from_ints(buffer.take(GAME_OVER_INTS))
        if self.expect_initial_map:
            if available < self._initial_map_ints:
                return NEED_DATA
            initial_map = initial_map_from_ints(buffer.take(self._initial_map_ints), self._size)
            self.expect_initial_map = False
            return initial_map
        if available < self._turn_ints:
            return NEED_DATA
        return turn_from_ints(buffer.take(self._turn_ints), self._size)
