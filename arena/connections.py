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
import hmac
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

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


class Flood(Exception):
    """More unasked replies in a row than MAX_UNASKED."""


class SeatConnection:
    """One seated player, whatever carries its frames: the referee talks to this only.

    It matches replies to the pending request by ``id_package``, counts and
    discards stale ones, drops a peer that floods, and reports the loss of the
    link. A transport subclass sends frames (``_transmit``), closes its link
    (``_close_transport``, ``_wait_closed``) and hands decoded replies to
    ``deliver``.
    """

    transport = "?"

    def __init__(self, seat: int, team: int, stats: SeatStats, peer: object, size: int) -> None:
        self.seat = seat
        self.team = team
        self.peer = peer
        self.size = size
        self.stats = stats
        self._pending: tuple[int, asyncio.Future[Reply | None]] | None = None
        self._unasked = 0
        self.closed = False
        self.closed_by_server = False
        self.game_over = False
        self.task: asyncio.Task[None] | None = None
        self.lost = asyncio.Event()
        """Set once the connection is gone, whoever closed it."""

    def start(self) -> None:
        """Begin reading (transports that read in their own task start it here)."""

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
            self._expect(message.id_package, kind)
            self._pending = (message.id_package, future)
            self._unasked = 0
        else:
            future.set_result(None)
        self._transmit(message)
        return future

    def cancel_request(self) -> None:
        """The referee stopped waiting: a reply that still comes is stale."""
        self._pending = None

    def send(self, message: ServerMessage) -> None:
        if not self.closed:
            self._transmit(message)

    def _expect(self, id_package: int, kind: ReplyKind) -> None:
        """A request with this id is about to go (the TCP decoder must know its reply length)."""

    def _transmit(self, message: ServerMessage) -> None:
        raise NotImplementedError

    def _close_transport(self) -> None:
        raise NotImplementedError

    async def _wait_closed(self) -> None:
        """Until the link is really closed (bounded by the caller)."""

    def deliver(self, message: TeamId | PositionReply | MoveReply | InvalidReply) -> None:
        """A decoded reply from this seat's player; raises Flood after too many unasked ones."""
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
            raise Flood

    def disconnected(self, reason: str) -> None:
        """The link is gone (the peer left, or the way to it broke)."""
        self._lost(reason)

    def drop(self, reason: str) -> None:
        """The peer broke the protocol: count it and close this connection only."""
        self.stats.protocol_errors += 1
        self._lost(reason)

    def _lost(self, reason: str) -> None:
        if self.closed:
            return
        self.closed = True
        self.lost.set()
        if self.closed_by_server or self.game_over:
            logger.debug("seat %s (team %s): %s after the game", self.seat, self.team, reason)
        else:
            self.stats.disconnects += 1
            logger.warning(
                "seat %s (team %s, %s): %s", self.seat, self.team, self.transport, reason
            )
        pending, self._pending = self._pending, None
        if pending is not None and not pending[1].done():
            pending[1].set_result(None)
        self._close_transport()

    async def close(self) -> None:
        """Closed by the server (end of game): not counted as a disconnect."""
        self.closed_by_server = True
        self._lost("closed by the server")
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._wait_closed(), 1.0)


class PlayerConnection(SeatConnection):
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
        self.task = asyncio.get_running_loop().create_task(
            self._read_loop(), name=f"arena-seat{self.seat}-reader"
        )

    def _expect(self, id_package: int, kind: ReplyKind) -> None:
        # Ids stay registered for the whole connection, so a late reply is still
        # framed (and discarded as stale) instead of breaking the stream.
        self._decoder.expect(id_package, kind)

    def _transmit(self, message: ServerMessage) -> None:
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


def token_ok(expected: str | None, given: str | None) -> bool:
    """Whether ``given`` is the arena's shared secret (always, when it has none)."""
    if expected is None:
        return True
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class Listener(Protocol):
    """A way in besides the course's TCP socket (WebSocket, MQTT): see ``arena.listeners``."""

    url: str

    async def start(self, lobby: Lobby) -> str:
        """Start accepting players for ``lobby``; returns where (for the log)."""
        ...

    async def close(self) -> None: ...


MakeConnection = Callable[[int, SeatStats], SeatConnection]
"""Builds a transport's connection once the lobby knows its seat and stats."""


class Lobby:
    """The listeners and the four seats of the current game.

    With ``teams`` the seats are fixed: seat k belongs to the k-th team id. With
    ``teams=None`` (open mode) the first four distinct team ids that connect
    take the seats in ascending order of team id; until then their connections
    wait, and the seats stay with those teams for later games.
    """

    def __init__(
        self,
        teams: Sequence[int] | None,
        size: int,
        host: str = "127.0.0.1",
        port: int = 0,
        handshake_timeout: float = 2.0,
        listeners: Sequence[Listener] = (),
        tcp: bool = True,
    ) -> None:
        if teams is not None and (len(teams) != 4 or len(set(teams)) != 4):
            raise ValueError(f"four distinct team ids are needed, not {list(teams)}")
        self.teams = list(teams) if teams is not None else []
        self.size = size
        self.host = host
        self.port = port
        self.handshake_timeout = handshake_timeout
        self.listeners = list(listeners)
        self.tcp = tcp
        self.seat_of = dict(zip(self.teams, PLAYERS, strict=False))
        self.connections: dict[int, SeatConnection | None] = dict.fromkeys(PLAYERS)
        self.stats: dict[int, SeatStats] = {seat: SeatStats() for seat in PLAYERS}
        self.accepting = False
        self.rejected = 0
        self._server: asyncio.Server | None = None
        self._handshakes: set[asyncio.Task[None]] = set()
        self._seated = asyncio.Event()
        self._waiting: dict[int, SeatConnection] = {}
        self._teams_known = asyncio.Event()
        if self.teams:
            self._teams_known.set()

    async def start(self) -> int:
        """Listen; returns the TCP port (the real one when asked for port 0; 0 without TCP)."""
        if self.tcp:
            self._server = await asyncio.start_server(
                self._on_connect, self.host, self.port, limit=READ_CHUNK
            )
            self.port = self._server.sockets[0].getsockname()[1]
            logger.info("listening on %s:%s", self.host, self.port)
        else:
            self.port = 0
        for listener in self.listeners:
            where = await listener.start(self)
            logger.info("listening on %s", where)
        return self.port

    def new_game(self) -> None:
        self.stats = {seat: SeatStats() for seat in PLAYERS}
        self._seated.clear()
        self.accepting = True

    def connection(self, seat: int) -> SeatConnection | None:
        conn = self.connections[seat]
        return None if conn is None or conn.closed else conn

    def all_seated(self) -> bool:
        return all(self.connection(seat) is not None for seat in PLAYERS)

    async def wait_teams(self) -> list[int]:
        """Open mode: until four distinct teams have connected; the teams by seat."""
        await self._teams_known.wait()
        return list(self.teams)

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

    def claim(self, team: int, peer: object, make: MakeConnection) -> str | None:
        """Seat a connection that says it is ``team``: None if seated (or waiting for the
        other teams in open mode), else why it is refused (the caller closes it)."""
        if not self.accepting:
            return "no game is open"
        seat = self.seat_of.get(team)
        if seat is None:
            if self._teams_known.is_set():
                return f"unknown team id {team}"
            return self._wait_for_teams(team, peer, make)
        if self.connection(seat) is not None:
            return f"claims seat {seat} (team {team}), whose player is connected"
        stats = self.stats[seat]
        stats.connects += 1
        conn = make(seat, stats)
        self.connections[seat] = conn
        conn.start()
        logger.info(
            "seat %s: team %s connected over %s from %s%s",
            seat,
            team,
            conn.transport,
            peer,
            " (reconnect)" if stats.connects > 1 else "",
        )
        if self.all_seated():
            self._seated.set()
        return None

    def _wait_for_teams(self, team: int, peer: object, make: MakeConnection) -> str | None:
        waiting = self._waiting.get(team)
        if waiting is not None and not waiting.closed:
            return f"team {team} is already connected and waiting for the others"
        conn = make(0, SeatStats())
        self._waiting[team] = conn
        conn.start()
        logger.info("team %s connected over %s from %s; waiting", team, conn.transport, peer)
        if len(self._waiting) == len(PLAYERS):
            self._fix_teams()
        return None

    def _fix_teams(self) -> None:
        """Open mode: four teams are in; seat them by ascending team id."""
        self.teams = sorted(self._waiting)
        self.seat_of = {team: seat for seat, team in zip(PLAYERS, self.teams, strict=True)}
        for team, seat in self.seat_of.items():
            conn = self._waiting[team]
            conn.seat = seat
            conn.stats = self.stats[seat]
            conn.stats.connects += 1
            self.connections[seat] = conn
            logger.info("seat %s: team %s (%s)", seat, team, conn.transport)
        self._waiting.clear()
        self._teams_known.set()
        if self.all_seated():
            self._seated.set()

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
        def make(seat: int, stats: SeatStats) -> SeatConnection:
            return PlayerConnection(seat, team, reader, writer, decoder, stats, peer)

        refusal = self.claim(team, peer, make)
        if refusal is None:
            return
        logger.warning("connection from %s: %s; closed", peer, refusal)
        self.rejected += 1
        # An unknown team (or no game) hears game over, as from the course server;
        # a second claim on a seat is only closed.
        game_over = not refusal.startswith(("claims seat", "team "))
        asyncio.get_running_loop().create_task(self._refuse(writer, game_over=game_over))

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
        conns += list(self._waiting.values())
        self._waiting.clear()
        self.connections = dict.fromkeys(PLAYERS)
        await asyncio.gather(*(c.close() for c in conns))

    async def close(self) -> None:
        self.accepting = False
        if self._server is not None:
            self._server.close()
        for task in list(self._handshakes):
            task.cancel()
        await self.drop_all()
        for listener in self.listeners:
            with contextlib.suppress(Exception):
                await listener.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
