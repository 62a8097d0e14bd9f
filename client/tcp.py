"""The course's TCP transport: connect with retry, frame the stream, reconnect on loss.

The course server starts its players before it listens, so the first connect
is retried with jittered exponential backoff for ``connect_for`` seconds. A
connection lost mid-game is retried the same way for ``reconnect_for``
seconds from the loss; the team id is sent again and the session, which keeps
its state, resynchronises from the next board. Malformed bytes end the game
with a ``ServerDataError``: a stream that broke its framing once cannot be
trusted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
from dataclasses import dataclass

from client.errors import ServerDataError
from client.lifecycle import (
    SILENCE_SLACK,
    ConnectionLost,
    LinkOptions,
    Progress,
    Silence,
    answer,
    play_reconnecting,
    retry_connect,
)
from client.session import GameSession, GameSummary
from protocol import NEED_DATA, ProtocolError, ServerStreamDecoder, TeamId, encode
from protocol.messages import ClientMessage, ServerMessage

log = logging.getLogger(__name__)

READ_SIZE = 1 << 16


@dataclass(frozen=True, slots=True)
class ConnectOptions(LinkOptions):
    host: str = "127.0.0.1"
    port: int = 8887
    silence_slack: float = SILENCE_SLACK
    """Seconds of server silence allowed beyond the time limits (``lifecycle.Silence``)."""


async def connect(
    options: ConnectOptions, give_up_at: float, rng: random.Random
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open a connection, retrying until ``give_up_at`` (monotonic)."""

    async def open_once(timeout: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.wait_for(
            asyncio.open_connection(options.host, options.port), timeout=timeout
        )

    reader, writer = await retry_connect(
        open_once,
        f"{options.host}:{options.port}",
        give_up_at,
        rng,
        options,
    )
    sock = writer.get_extra_info("socket")
    if sock is not None:
        # Replies are tiny: without this, Nagle's algorithm can hold one back for
        # the server's delayed ACK (40 ms or more).
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return reader, writer


async def play_tcp(
    session: GameSession, options: ConnectOptions, rng: random.Random | None = None
) -> GameSummary:
    """Play one game on the course server; return the summary at game over.

    Raises ``ServerDataError`` for malformed data and ``ConnectionFailed`` when
    no connection can be (re)established in time.
    """
    chosen = rng or random.Random()

    async def run_connection(give_up_at: float, progress: Progress) -> None:
        reader, writer = await connect(options, give_up_at, chosen)
        try:
            await _serve(session, options, reader, writer, progress)
        finally:
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()

    return await play_reconnecting(session, run_connection, options)


async def _serve(
    session: GameSession,
    options: ConnectOptions,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    progress: Progress,
) -> None:
    """Send the team id and answer frames until game over (or raise ConnectionLost)."""
    size = session.setting.size
    debug = log.isEnabledFor(logging.DEBUG)
    await _send(writer, encode(TeamId(team_id=options.team), size), debug)
    decoder = ServerStreamDecoder(size, expect_initial_map=session.expects_initial_map)
    silence = Silence(
        session.limits.time_limit,
        options.connect_for,
        options.reconnect_for,
        options.silence_slack,
    )
    where = f"{options.host}:{options.port}"
    while True:
        try:
            started = session.placed or progress.messages > 0
            data = await silence.read(lambda: reader.read(READ_SIZE), started, where)
        except (ConnectionError, OSError) as exc:
            raise ConnectionLost(f"connection lost: {exc!r}") from None
        if not data:
            if decoder.pending:
                raise ConnectionLost(
                    f"server closed the connection mid-frame ({decoder.pending} bytes of a"
                    " frame received)"
                )
            raise ConnectionLost("server closed the connection")
        if debug:
            log.debug("recv %d bytes: %s", len(data), data.hex())
        messages: list[tuple[ServerMessage, float]] = []
        try:
            decoder.feed(data)
            while (message := decoder.next_message()) is not NEED_DATA:
                messages.append((message, time.monotonic()))
        except ProtocolError as exc:
            raise ServerDataError(f"server sent malformed data: {exc}") from None
        if not messages:
            continue
        progress.messages += len(messages)

        async def send(reply: ClientMessage) -> None:
            await _send(writer, encode(reply, size), debug)

        await answer(session, messages, send, debug)
        if session.finished:
            return


async def _send(writer: asyncio.StreamWriter, frame: bytes, debug: bool) -> None:
    if debug:
        log.debug("send %d bytes: %s", len(frame), frame.hex())
    try:
        writer.write(frame)
        await writer.drain()
    except (ConnectionError, OSError) as exc:
        raise ConnectionLost(f"connection lost while sending: {exc!r}") from None
