"""The arena's TCP way in: the course's socket, a 4-byte team id, then the course's frames.

A connection must send its team id within the handshake timeout. An unknown
team id (or a connection when no game is open) hears a game-over header and
is closed, as from the course server; a connection claiming a seat whose
player is still connected, one that says nothing, or one that sends half a
frame, is closed and logged. A seated connection has one reader task: it
feeds a ``PlayerStreamDecoder`` and hands the replies to the
``SeatConnection``, and drops the connection on unframeable bytes or a flood
of unasked replies. Memory is bounded: reads are chunked and drained at once,
handshakes in progress are capped, and a peer that does not read its frames
is dropped once the unsent bytes pass a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from arena.connections import (
    MAX_UNASKED,
    Flood,
    Handshakes,
    RefusalKind,
    SeatConnection,
    SeatStats,
)
from protocol import (
    NEED_DATA,
    GameOver,
    PlayerStreamDecoder,
    ProtocolError,
    ReplyKind,
    ServerMessage,
    TeamId,
    encode,
)

if TYPE_CHECKING:
    from arena.lobby import Lobby

logger = logging.getLogger(__name__)

READ_CHUNK = 1 << 16
MAX_UNSENT = 1 << 20
"""Bytes waiting for a peer that does not read before it is dropped."""


class TcpConnection(SeatConnection):
    """A seated player on the course's TCP protocol."""

    transport = "tcp"

    def __init__(
        self,
        seat: int,
        team: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        decoder: PlayerStreamDecoder,
        stats: SeatStats,
        peer: object,
    ) -> None:
        super().__init__(seat, team, stats, peer, decoder.size)
        self._reader = reader
        self._writer = writer
        self._decoder = decoder

    def start(self) -> None:
        self._start_reader(self._read_loop())

    def _expect(self, id_package: int, kind: ReplyKind) -> None:
        # Ids stay registered for the whole connection, so a late reply is still
        # framed (and discarded as stale) instead of breaking the stream.
        self._decoder.expect(id_package, kind)

    def _transmit(self, message: ServerMessage) -> None:
        try:
            self._writer.write(encode(message, self._decoder.size))
        except (ConnectionError, RuntimeError, OSError) as exc:
            logger.warning("seat %s (team %s): write failed: %s", self.seat, self.team, exc)
            self._lost("write failed")
            return
        unsent = self._writer.transport.get_write_buffer_size()
        if unsent > MAX_UNSENT:
            logger.warning(
                "seat %s (team %s): does not read its frames (%s bytes unsent); dropped",
                self.seat,
                self.team,
                unsent,
            )
            self.stats.protocol_errors += 1
            self._lost("not reading")

    async def _read_loop(self) -> None:
        reason = "closed the connection"
        try:
            while not self.closed:
                data = await self._reader.read(READ_CHUNK)
                if not data:
                    if self._decoder.pending:
                        pending = self._decoder.pending
                        reason = f"closed the connection after half a frame ({pending} bytes)"
                    break
                self._decoder.feed(data)
                while (message := self._decoder.next_message()) is not NEED_DATA:
                    self.deliver(message)
        except ProtocolError as exc:
            self.stats.protocol_errors += 1
            reason = f"sent bytes that are not a reply ({exc}); dropped"
        except Flood:
            self.stats.protocol_errors += 1
            reason = f"sent more than {MAX_UNASKED} replies nobody asked for; dropped"
        except (ConnectionError, OSError) as exc:
            reason = f"connection error: {exc}"
        except asyncio.CancelledError:
            self._close_transport()
            raise
        self._lost(reason)

    def _close_transport(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()

    async def _wait_closed(self) -> None:
        await self._writer.wait_closed()


class TcpListener:
    """The lobby's own socket (``Lobby(tcp=True)``): team id handshake, then seating."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.url = f"tcp://{host}:{port}"
        self.urls: list[str] = []
        """Every address actually bound (a name such as localhost may bind several)."""
        self._lobby: Lobby | None = None
        self._server: asyncio.Server | None = None
        self._handshakes = Handshakes()
        """Connections still to send their team id."""

    async def start(self, lobby: Lobby) -> str:
        """Listen; ``port`` becomes the real one when asked for port 0."""
        self._lobby = lobby
        self._server = await asyncio.start_server(
            self._on_connect, self.host, self.port, limit=READ_CHUNK
        )
        self.urls = [_tcp_url(sock.getsockname()) for sock in self._server.sockets]
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = self.urls[0]
        return ", ".join(self.urls)

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lobby = self._lobby
        assert lobby is not None
        peer = writer.get_extra_info("peername")
        if not lobby.accepting:
            logger.warning("connection from %s closed at once: no game is open", peer)
            lobby.rejected += 1
            await _refuse(writer, lobby.size, game_over=True)
            return
        self._handshakes.enter(writer, writer.close)
        decoder = PlayerStreamDecoder(lobby.size)
        try:
            head = await asyncio.wait_for(reader.readexactly(4), lobby.handshake_timeout)
            decoder.feed(head)
            message = decoder.next_message()
            assert isinstance(message, TeamId)
        except TimeoutError:
            logger.warning(
                "connection from %s sent no team id within %.1f s; closed",
                peer,
                lobby.handshake_timeout,
            )
            lobby.rejected += 1
            await _refuse(writer, lobby.size, game_over=False)
            return
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            logger.warning("connection from %s closed before its team id: %s", peer, exc)
            lobby.rejected += 1
            await _refuse(writer, lobby.size, game_over=False)
            return
        finally:
            self._handshakes.leave(writer)
        await self._seat(lobby, message.team_id, reader, writer, decoder, peer)

    async def _seat(
        self,
        lobby: Lobby,
        team: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        decoder: PlayerStreamDecoder,
        peer: object,
    ) -> None:
        def make(seat: int, stats: SeatStats) -> SeatConnection:
            return TcpConnection(seat, team, reader, writer, decoder, stats, peer)

        refusal = lobby.claim(team, peer, make)
        if refusal is None:
            return
        logger.warning("connection from %s: %s; closed", peer, refusal.reason)
        lobby.rejected += 1
        # As from the course server, a connection when no game is open hears game over too.
        game_over = refusal.tells_game_over or refusal.kind is RefusalKind.NO_GAME
        await _refuse(writer, lobby.size, game_over=game_over)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)


def _tcp_url(sockname: tuple[object, ...]) -> str:
    """``tcp://host:port`` of a bound socket, an IPv6 host in brackets."""
    host, port = str(sockname[0]), sockname[1]
    return f"tcp://[{host}]:{port}" if ":" in host else f"tcp://{host}:{port}"


async def _refuse(writer: asyncio.StreamWriter, size: int, game_over: bool) -> None:
    with contextlib.suppress(Exception):
        if game_over:
            writer.write(encode(GameOver(id_package=0), size))
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 1.0)
