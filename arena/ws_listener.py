"""The arena's WebSocket way in (``ws://host:port/<path>``), seating players in the ``Lobby``.

A player's first frame is a ``hello`` (team id, and the token when the arena
has one) within the handshake timeout; after it, ``position`` and ``move``
frames answer the arena's ``initial_map`` and ``turn`` frames. A frame over
``MAX_PAYLOAD`` bytes, a text frame, a frame that is not one of those
messages, a wrong token or path, a second claim on a connected seat or a
flood of unasked replies closes that connection (close code policy violation,
or message too big for size) with a logged reason; the seat then loses only its own turns and may
reconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from arena.connections import (
    MAX_UNASKED,
    Flood,
    Handshakes,
    SeatConnection,
    SeatStats,
    token_ok,
)
from arena.lobby import Lobby
from protocol import GameOver, MoveReply, PositionReply, ProtocolError, ServerMessage
from protocol.endpoints import Endpoint
from protocol.msgpack_codec import MAX_PAYLOAD, Hello, decode_payload, encode_payload

logger = logging.getLogger(__name__)

MAX_OUTGOING = 64
"""Frames queued for a peer that does not read before it is dropped."""


class WsConnection(SeatConnection):
    transport = "ws"

    def __init__(
        self, seat: int, team: int, ws: ServerConnection, stats: SeatStats, peer: object, size: int
    ) -> None:
        super().__init__(seat, team, stats, peer, size)
        self._ws = ws
        self._outgoing: asyncio.Queue[bytes] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._close_code = CloseCode.NORMAL_CLOSURE
        self._close_reason = "game over"

    def start(self) -> None:
        self._start_reader(self._read_loop())
        self._sender = self._spawn(self._send_loop(), "sender")

    def _transmit(self, message: ServerMessage) -> None:
        if self._outgoing.qsize() >= MAX_OUTGOING:
            self._close_code = CloseCode.POLICY_VIOLATION
            self._close_reason = "not reading its frames"
            self.drop(f"does not read its frames ({MAX_OUTGOING} queued); dropped")
            return
        self._outgoing.put_nowait(encode_payload(message, self.size))

    async def _send_loop(self) -> None:
        while True:
            frame = await self._outgoing.get()
            try:
                await self._ws.send(frame)
            except ConnectionClosed:
                self._lost("closed the connection")
                return

    def _fail(self, code: CloseCode, reason: str, log_reason: str) -> None:
        self._close_code, self._close_reason = code, reason
        self.drop(log_reason)

    async def _read_loop(self) -> None:
        try:
            async for frame in self._ws:
                if isinstance(frame, str):
                    self._fail(
                        CloseCode.POLICY_VIOLATION,
                        "text frame",
                        "sent a text frame; frames are binary; dropped",
                    )
                    return
                try:
                    message, _ = decode_payload(frame, self.size, ("position", "move"))
                except ProtocolError as exc:
                    self._fail(
                        CloseCode.POLICY_VIOLATION,
                        "malformed frame",
                        f"sent a malformed frame ({exc}); dropped",
                    )
                    return
                assert isinstance(message, PositionReply | MoveReply)
                try:
                    self.deliver(message)
                except Flood:
                    self._fail(
                        CloseCode.POLICY_VIOLATION,
                        "flood",
                        f"sent more than {MAX_UNASKED} replies nobody asked for; dropped",
                    )
                    return
        except ConnectionClosed as exc:
            if exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
                self.drop(f"sent a frame over {MAX_PAYLOAD} bytes; closed")
                return
        self._lost("closed the connection")

    def _close_transport(self) -> None:
        # Frames already queued (the game-over frame) go out before the close frame.
        async def flush_and_close() -> None:
            with contextlib.suppress(Exception):
                while not self._outgoing.empty():
                    await asyncio.wait_for(self._ws.send(self._outgoing.get_nowait()), 1.0)
            if self._sender is not None:
                self._sender.cancel()
            with contextlib.suppress(Exception):
                await self._ws.close(self._close_code, self._close_reason)

        if self._sender is not None and self._sender is asyncio.current_task():
            self._sender = None
        self._spawn(flush_and_close(), "closer")

    async def _wait_closed(self) -> None:
        await self._ws.wait_closed()


class WsListener:
    def __init__(self, endpoint: Endpoint, token: str | None) -> None:
        self.endpoint = endpoint
        self.url = endpoint.url
        self.token = token
        self.port = endpoint.port
        self._server: Server | None = None
        self._lobby: Lobby | None = None
        self._handshakes = Handshakes()

    async def start(self, lobby: Lobby) -> str:
        self._lobby = lobby
        self._server = await serve(
            self._handler,
            self.endpoint.host,
            self.endpoint.port,
            max_size=MAX_PAYLOAD,
            compression=None,
            # Under the arena's logger, so that the server's quiet mode quiets it too.
            logger=logging.getLogger("arena.ws"),
        )
        self.port = next(iter(self._server.sockets)).getsockname()[1]
        self.url = f"ws://{self.endpoint.host}:{self.port}{self.endpoint.path}"
        return self.url

    async def _handler(self, ws: ServerConnection) -> None:
        lobby = self._lobby
        assert lobby is not None
        peer = ws.remote_address
        if ws.request is not None and ws.request.path != self.endpoint.path:
            logger.warning("ws connection from %s: unknown path %r; closed", peer, ws.request.path)
            lobby.rejected += 1
            await ws.close(
                CloseCode.POLICY_VIOLATION,
                f"unknown path; this arena listens on {self.endpoint.path}",
            )
            return
        if not lobby.accepting:
            logger.warning("ws connection from %s closed at once: no game is open", peer)
            lobby.rejected += 1
            await ws.close(CloseCode.TRY_AGAIN_LATER, "no game is open")
            return
        self._handshakes.enter(ws, ws.transport.abort)
        try:
            hello = await self._hello(ws, lobby, peer)
        finally:
            self._handshakes.leave(ws)
        if hello is None:
            lobby.rejected += 1
            return
        team = hello.team_id
        conn: WsConnection | None = None

        def make(seat: int, stats: SeatStats) -> SeatConnection:
            nonlocal conn
            conn = WsConnection(seat, team, ws, stats, peer, lobby.size)
            return conn

        refusal = lobby.claim(team, peer, make)
        if refusal is not None:
            logger.warning("ws connection from %s: %s; closed", peer, refusal.reason)
            lobby.rejected += 1
            if refusal.tells_game_over:
                with contextlib.suppress(ConnectionClosed):
                    await ws.send(encode_payload(GameOver(id_package=0), lobby.size))
            await ws.close(CloseCode.POLICY_VIOLATION, refusal.reason[:120])
            return
        assert conn is not None
        # The connection lives as long as this handler: websockets closes it on return.
        await conn.lost.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.wait_closed(), 2.0)

    async def _hello(self, ws: ServerConnection, lobby: Lobby, peer: object) -> Hello | None:
        """The peer's hello, or None after closing it with the reason logged."""
        try:
            frame = await asyncio.wait_for(ws.recv(), lobby.handshake_timeout)
        except TimeoutError:
            logger.warning(
                "ws connection from %s sent no hello within %.1f s; closed",
                peer,
                lobby.handshake_timeout,
            )
            await ws.close(CloseCode.POLICY_VIOLATION, "no hello in time")
            return None
        except ConnectionClosed as exc:
            too_big = exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG
            why = "a frame too big" if too_big else exc
            logger.warning("ws connection from %s closed before its hello: %s", peer, why)
            return None
        if isinstance(frame, str):
            logger.warning("ws connection from %s sent a text frame as hello; closed", peer)
            await ws.close(CloseCode.POLICY_VIOLATION, "frames are binary msgpack")
            return None
        try:
            message, _ = decode_payload(frame, lobby.size, ("hello",))
        except ProtocolError as exc:
            logger.warning("ws connection from %s sent a malformed hello (%s); closed", peer, exc)
            await ws.close(CloseCode.POLICY_VIOLATION, "malformed hello")
            return None
        assert isinstance(message, Hello)
        if not token_ok(self.token, message.token):
            logger.warning(
                "ws connection from %s (team %s): %s token; closed",
                peer,
                message.team_id,
                "no" if message.token is None else "wrong",
            )
            await ws.close(CloseCode.POLICY_VIOLATION, "bad token")
            return None
        return message

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
