"""Accepting connections, seating them by team id, and reading each player's replies.

A connection must send its 4-byte team id within the handshake timeout. An
unknown team id gets a game-over header and is closed; a connection claiming a
seat whose player is still connected, one that says nothing, or one that sends
half a frame, is closed and logged. A seated connection has one reader task:
it feeds a ``PlayerStreamDecoder``, resolves the referee's pending request
with the reply that echoes its ``id_package``, discards stale replies (counted),
and drops the connection on unframeable bytes or a flood of unasked replies.
Memory is bounded: reads are chunked and drained at once, handshakes in
progress are capped, and a peer that does not read its frames is dropped once
the unsent bytes pass a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from protocol import (
    NEED_DATA,
    GameOver,
    InvalidReply,
    MoveReply,
    PlayerStreamDecoder,
    PositionReply,
    ProtocolError,
    ReplyKind,
    ServerMessage,
    TeamId,
    encode,
)
from state.settings import PLAYERS

logger = logging.getLogger(__name__)

READ_CHUNK = 1 << 16
MAX_HANDSHAKES = 16
"""Connections still to send their team id; more are closed at once."""
MAX_UNASKED = 16
"""Replies in a row that answer nothing (stale or duplicate) before the peer counts as flooding."""
MAX_UNSENT = 1 << 20
"""Bytes waiting for a peer that does not read before it is dropped."""


@dataclass
class SeatStats:
    """What happened to one seat in one game; lists of these make the results' counts."""

    illegal: int = 0
    late: int = 0
    stale: int = 0
    disconnects: int = 0
    absent: int = 0
    """Turns lost because the seat had no connection."""
    protocol_errors: int = 0
    connects: int = 0
    move_times: list[float] = field(default_factory=list)
    """Seconds from request to reply, for replies in time."""


class Reply(NamedTuple):
    message: PositionReply | MoveReply | InvalidReply
    received: float


class _Flood(Exception):
    pass


class PlayerConnection:
    """One seated player's connection."""

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
        self.seat = seat
        self.team = team
        self.peer = peer
        self._reader = reader
        self._writer = writer
        self._decoder = decoder
        self.stats = stats
        self._pending: tuple[int, asyncio.Future[Reply | None]] | None = None
        self._unasked = 0
        self.closed = False
        self.closed_by_server = False
        self.game_over = False
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(
            self._read_loop(), name=f"arena-seat{self.seat}-reader"
        )

    def request(
        self, message: ServerMessage, kind: ReplyKind | None
    ) -> asyncio.Future[Reply | None]:
        """Send a frame; with ``kind``, a future for the reply echoing its id (None if the
        connection is lost first)."""
        future: asyncio.Future[Reply | None] = asyncio.get_running_loop().create_future()
        if self.closed:
            future.set_result(None)
            return future
        if kind is not None:
            # Ids stay registered for the whole connection, so a late reply is still
            # framed (and discarded as stale) instead of breaking the stream.
            self._decoder.expect(message.id_package, kind)
            self._pending = (message.id_package, future)
            self._unasked = 0
        else:
            future.set_result(None)
        self._write(encode(message, self._decoder.size))
        return future

    def cancel_request(self) -> None:
        """The referee stopped waiting: a reply that still comes is stale."""
        self._pending = None

    def send(self, message: ServerMessage) -> None:
        if not self.closed:
            self._write(encode(message, self._decoder.size))

    def _write(self, data: bytes) -> None:
        try:
            self._writer.write(data)
        except (ConnectionError, RuntimeError, OSError) as exc:
            logger.warning("seat %s (team %s): write failed: %s", self.seat, self.team, exc)
            self._lost("write failed")
            return
        transport = self._writer.transport
        if transport.get_write_buffer_size() > MAX_UNSENT:
            logger.warning(
                "seat %s (team %s): does not read its frames (%s bytes unsent); dropped",
                self.seat,
                self.team,
                transport.get_write_buffer_size(),
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
                    self._dispatch(message)
        except ProtocolError as exc:
            self.stats.protocol_errors += 1
            reason = f"sent bytes that are not a reply ({exc}); dropped"
        except _Flood:
            self.stats.protocol_errors += 1
            reason = f"sent more than {MAX_UNASKED} replies nobody asked for; dropped"
        except (ConnectionError, OSError) as exc:
            reason = f"connection error: {exc}"
        except asyncio.CancelledError:
            self._close_transport()
            raise
        self._lost(reason)

    def _dispatch(self, message: TeamId | PositionReply | MoveReply | InvalidReply) -> None:
        if isinstance(message, TeamId):  # cannot happen after the handshake; keep mypy honest
            raise ProtocolError("team_id", message.team_id, "sent twice")
        pending = self._pending
        if pending is not None and pending[0] == message.id_package and not pending[1].done():
            self._pending = None
            pending[1].set_result(Reply(message, time.monotonic()))
            return
        self.stats.stale += 1
        self._unasked += 1
        logger.warning(
            "seat %s (team %s): stale reply with id_package %s discarded",
            self.seat,
            self.team,
            message.id_package,
        )
        if self._unasked > MAX_UNASKED:
            raise _Flood

    def _lost(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        if self.closed_by_server or self.game_over:
            logger.debug("seat %s (team %s): %s after the game", self.seat, self.team, reason)
        else:
            self.stats.disconnects += 1
            logger.warning("seat %s (team %s): %s", self.seat, self.team, reason)
        pending, self._pending = self._pending, None
        if pending is not None and not pending[1].done():
            pending[1].set_result(None)
        self._close_transport()

    def _close_transport(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.close()

    async def close(self) -> None:
        """Closed by the server (end of game): not counted as a disconnect."""
        self.closed_by_server = True
        self._lost("closed by the server")
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), 1.0)


class Lobby:
    """The listening socket and the four seats of the current game."""

    def __init__(
        self,
        teams: Sequence[int],
        size: int,
        host: str = "127.0.0.1",
        port: int = 0,
        handshake_timeout: float = 2.0,
    ) -> None:
        if len(teams) != 4 or len(set(teams)) != 4:
            raise ValueError(f"four distinct team ids are needed, not {list(teams)}")
        self.teams = list(teams)
        self.size = size
        self.host = host
        self.port = port
        self.handshake_timeout = handshake_timeout
        self.seat_of = {team: seat for seat, team in zip(PLAYERS, teams, strict=True)}
        self.connections: dict[int, PlayerConnection | None] = dict.fromkeys(PLAYERS)
        self.stats: dict[int, SeatStats] = {seat: SeatStats() for seat in PLAYERS}
        self.accepting = False
        self.rejected = 0
        self._server: asyncio.Server | None = None
        self._handshakes: set[asyncio.Task[None]] = set()
        self._seated = asyncio.Event()

    async def start(self) -> int:
        """Listen; returns the port (the real one when asked for port 0)."""
        self._server = await asyncio.start_server(
            self._on_connect, self.host, self.port, limit=READ_CHUNK
        )
        self.port = self._server.sockets[0].getsockname()[1]
        logger.info("listening on %s:%s", self.host, self.port)
        return self.port

    def new_game(self) -> None:
        self.stats = {seat: SeatStats() for seat in PLAYERS}
        self._seated.clear()
        self.accepting = True

    def connection(self, seat: int) -> PlayerConnection | None:
        conn = self.connections[seat]
        return None if conn is None or conn.closed else conn

    def all_seated(self) -> bool:
        return all(self.connection(seat) is not None for seat in PLAYERS)

    async def wait_seated(self, timeout: float) -> bool:
        """Wait until all four seats are connected, at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self.all_seated():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._seated.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seated.wait(), remaining)
        return True

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if not self.accepting or len(self._handshakes) >= MAX_HANDSHAKES:
            why = "no game is open" if not self.accepting else "too many handshakes in progress"
            logger.warning("connection from %s closed at once: %s", peer, why)
            self.rejected += 1
            await self._refuse(writer)
            return
        task = asyncio.current_task()
        assert task is not None
        self._handshakes.add(task)
        decoder = PlayerStreamDecoder(self.size)
        try:
            head = await asyncio.wait_for(reader.readexactly(4), self.handshake_timeout)
            decoder.feed(head)
            message = decoder.next_message()
            assert isinstance(message, TeamId)
        except TimeoutError:
            logger.warning(
                "connection from %s sent no team id within %.1f s; closed",
                peer,
                self.handshake_timeout,
            )
            self.rejected += 1
            await self._refuse(writer, game_over=False)
            return
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            logger.warning("connection from %s closed before its team id: %s", peer, exc)
            self.rejected += 1
            await self._refuse(writer, game_over=False)
            return
        finally:
            self._handshakes.discard(task)
        self._seat(message.team_id, reader, writer, decoder, peer)

    def _seat(
        self,
        team: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        decoder: PlayerStreamDecoder,
        peer: object,
    ) -> None:
        seat = self.seat_of.get(team)
        if seat is None or not self.accepting:
            logger.warning("connection from %s: unknown team id %s; closed", peer, team)
            self.rejected += 1
            asyncio.get_running_loop().create_task(self._refuse(writer))
            return
        if self.connection(seat) is not None:
            logger.warning(
                "connection from %s claims seat %s (team %s), whose player is connected; closed",
                peer,
                seat,
                team,
            )
            self.rejected += 1
            asyncio.get_running_loop().create_task(self._refuse(writer, game_over=False))
            return
        stats = self.stats[seat]
        stats.connects += 1
        conn = PlayerConnection(seat, team, reader, writer, decoder, stats, peer)
        self.connections[seat] = conn
        conn.start()
        logger.info(
            "seat %s: team %s connected from %s%s",
            seat,
            team,
            peer,
            " (reconnect)" if stats.connects > 1 else "",
        )
        if self.all_seated():
            self._seated.set()

    async def _refuse(self, writer: asyncio.StreamWriter, game_over: bool = True) -> None:
        with contextlib.suppress(Exception):
            if game_over:
                writer.write(encode(GameOver(id_package=0), self.size))
            writer.close()
            await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def end_game(self, id_package: int) -> None:
        """Game over header to every connected seat; no new players until ``new_game``."""
        self.accepting = False
        for seat in PLAYERS:
            conn = self.connection(seat)
            if conn is not None:
                conn.send(GameOver(id_package=id_package))
                conn.game_over = True

    async def drop_all(self) -> None:
        conns = [c for c in self.connections.values() if c is not None]
        self.connections = dict.fromkeys(PLAYERS)
        await asyncio.gather(*(c.close() for c in conns))

    async def close(self) -> None:
        self.accepting = False
        if self._server is not None:
            self._server.close()
        for task in list(self._handshakes):
            task.cancel()
        await self.drop_all()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
