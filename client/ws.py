"""The WebSocket transport: one msgpack message per binary frame (``protocol.msgpack_codec``).

The player opens ``ws://host:port/<path>``, sends a ``hello`` frame (team id,
and the arena's token when it has one), and answers every ``initial_map`` and
``turn`` frame with a ``position`` or ``move`` frame until ``game_over``.
Connect retry, reconnect and answering only the newest frame are the same as
over TCP (``client.lifecycle``).
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from client.errors import ConnectionFailed, ServerDataError
from client.lifecycle import (
    ConnectionLost,
    LinkOptions,
    Progress,
    answer,
    play_reconnecting,
    retry_connect,
)
from client.session import GameSession, GameSummary
from protocol import ProtocolError
from protocol.messages import ClientMessage, ServerMessage
from protocol.msgpack_codec import MAX_PAYLOAD, SERVER_TYPES, Hello, decode_payload, encode_payload

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WsOptions(LinkOptions):
    url: str = "ws://127.0.0.1:8765/"
    token: str | None = None


async def play_ws(
    session: GameSession, options: WsOptions, rng: random.Random | None = None
) -> GameSummary:
    """Play one game over a WebSocket; the summary at game over.

    Raises ``ServerDataError`` for a malformed frame and ``ConnectionFailed``
    when no connection can be (re)established in time or the URL is no
    WebSocket URL.
    """
    chosen = rng or random.Random()

    async def open_once(timeout: float) -> ClientConnection:
        try:
            return await connect(
                options.url,
                open_timeout=timeout,
                max_size=MAX_PAYLOAD,
                compression=None,
            )
        except InvalidURI as exc:
            raise ConnectionFailed(f"{options.url} is no WebSocket URL: {exc}") from None
        except InvalidHandshake as exc:  # e.g. a plain HTTP server there: retry like a refusal
            raise OSError(str(exc)) from None

    async def run_connection(give_up_at: float, progress: Progress) -> None:
        connected = await retry_connect(
            open_once,
            options.url,
            give_up_at,
            chosen,
            options,
        )
        async with connected as ws:  # closes the connection however serving ends
            await _serve(session, options, ws, progress)

    return await play_reconnecting(session, run_connection, options)


async def _serve(
    session: GameSession, options: WsOptions, ws: ClientConnection, progress: Progress
) -> None:
    size = session.setting.size
    debug = log.isEnabledFor(logging.DEBUG)

    async def send(reply: ClientMessage | Hello) -> None:
        frame = encode_payload(reply, size)
        if debug:
            log.debug("send %d bytes: %s", len(frame), frame.hex())
        try:
            await ws.send(frame)
        except ConnectionClosed as exc:
            raise ConnectionLost(f"connection lost while sending: {exc}") from None

    await send(Hello(team_id=options.team, token=options.token))
    try:
        async for frame in ws:
            received_at = time.monotonic()
            if isinstance(frame, str):
                raise ServerDataError("server sent a text frame; frames are binary msgpack")
            if debug:
                log.debug("recv %d bytes: %s", len(frame), frame.hex())
            try:
                message, _ = decode_payload(frame, size, SERVER_TYPES)
            except ProtocolError as exc:
                raise ServerDataError(f"server sent a malformed frame: {exc}") from None
            assert isinstance(message, ServerMessage)
            progress.messages += 1
            await answer(session, [(message, received_at)], send, debug)
            if session.finished:
                return
    except ConnectionClosed as exc:  # closed with an error
        raise ConnectionLost(f"server closed the connection ({exc})") from None
    raise ConnectionLost(f"server closed the connection ({ws.close_code} {ws.close_reason})")
