"""The byte buffer both stream decoders share: feed bytes, take whole ints."""

from __future__ import annotations

import struct
from typing import Final

from protocol.errors import ProtocolError
from protocol.layout import INT_BYTES

MAX_BUFFERED_FRAMES: Final = 4
"""Default bound on undecoded bytes, in largest frames of the stream (see FrameBuffer.feed)."""

_INT: Final = struct.Struct("<i")

Chunk = bytes | bytearray | memoryview


class FrameBuffer:
    """Undecoded bytes, with a bound on how many may wait.

    Every frame of both streams has a length known from its first ints, so a
    peer's junk can never be buffered silently: it fails as soon as one frame's
    worth is in and ``next_message`` is asked. What can grow without bound is a
    caller that feeds and never drains, so ``feed`` refuses more once over
    ``max_buffer`` bytes are already waiting. A caller that calls
    ``next_message`` until NEED_DATA after each feed keeps less than one frame
    waiting and never meets the bound, whatever its read size.
    """

    __slots__ = ("_data", "max_buffer")

    def __init__(self, max_buffer: int) -> None:
        if max_buffer < 1:
            raise ValueError(f"max_buffer {max_buffer} is not positive")
        self.max_buffer = max_buffer
        self._data = bytearray()

    def feed(self, data: Chunk) -> None:
        if len(self._data) > self.max_buffer:
            raise ProtocolError(
                "buffer",
                len(self._data),
                f"bytes wait undecoded, more than the bound of {self.max_buffer};"
                " call next_message() until NEED_DATA between feeds",
            )
        self._data += data

    @property
    def pending(self) -> int:
        """Bytes fed and not yet decoded (not a whole frame, or not asked for yet)."""
        return len(self._data)

    def ints_available(self) -> int:
        return len(self._data) // INT_BYTES

    def peek(self, index: int) -> int:
        value: int = _INT.unpack_from(self._data, index * INT_BYTES)[0]
        return value

    def take(self, count: int) -> tuple[int, ...]:
        ints: tuple[int, ...] = struct.unpack_from(f"<{count}i", self._data)
        # CPython drops a bytearray's head by moving its start, not by copying the rest.
        del self._data[: count * INT_BYTES]
        return ints
