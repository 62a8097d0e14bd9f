"""One seated player, whatever transport carries its frames: what the referee talks to.

A ``SeatConnection`` matches each reply to the referee's pending request by
the ``id_package`` it echoes, discards stale replies (counted; a reply to a
request the referee gave up on was counted late by the referee and is not
counted again), drops a peer
that floods with replies nobody asked for, and reports the loss of its link.
The transports subclass it (``arena.tcp_listener``, ``arena.ws_listener``,
``arena.mqtt_listener``); the ``arena.lobby.Lobby`` seats them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any, NamedTuple

from arena.background import BackgroundTasks
from protocol import (
    InvalidReply,
    MoveReply,
    PositionReply,
    ProtocolError,
    ReplyKind,
    ServerMessage,
    TeamId,
)

logger = logging.getLogger(__name__)

MAX_HANDSHAKES = 16
"""Connections of one listener still to say who they are; beyond that, the one that has
waited longest is closed (``Handshakes``)."""
MAX_UNASKED = 16
"""Replies in a row that answer nothing (stale or duplicate) before the peer counts as flooding."""
MAX_GIVEN_UP = 64
"""Ids of requests given up as late that are remembered, so their replies count once."""


class Handshakes:
    """The connections of a listener still to say who they are, oldest first.

    At most ``MAX_HANDSHAKES`` wait at a time. A newcomer beyond that closes the one that
    has waited longest instead of being refused: an honest player says its team id at
    once, so idle sockets, however many and however often reopened, can only push each
    other out, never lock the expected teams out of their seats.
    """

    def __init__(self, limit: int = MAX_HANDSHAKES) -> None:
        self.limit = limit
        self._waiting: dict[object, Callable[[], None]] = {}  # insertion order: oldest first
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._waiting)

    def enter(self, key: object, close: Callable[[], None]) -> None:
        """``key`` starts its handshake; ``close`` ends it if it must make room."""
        while len(self._waiting) >= self.limit:
            oldest = next(iter(self._waiting))
            self._waiting.pop(oldest)()
            self.evicted += 1
        self._waiting[key] = close

    def leave(self, key: object) -> None:
        self._waiting.pop(key, None)


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


class RefusalKind(Enum):
    """Why the lobby would not seat a connection."""

    NO_GAME = auto()
    UNKNOWN_TEAM = auto()
    SEAT_TAKEN = auto()
    """The seat's player is still connected."""
    TEAM_WAITING = auto()
    """Open mode: the team is connected already and waits for the others."""


@dataclass(frozen=True, slots=True)
class Refusal:
    kind: RefusalKind
    reason: str
    """For the log."""

    @property
    def tells_game_over(self) -> bool:
        """Whether the peer hears game over before it is closed: an unknown team has no game
        here to wait for, while a second claim on a seat may be a reconnect that came early."""
        return self.kind is RefusalKind.UNKNOWN_TEAM


class Flood(Exception):
    """More unasked replies in a row than MAX_UNASKED."""


class SeatConnection:
    """One seated player, whatever carries its frames: the referee talks to this only.

    It matches replies to the pending request by ``id_package``, counts and
    discards stale ones, drops a peer that floods, and reports the loss of the
    link. A transport subclass sends frames (``_transmit``), closes its link
    (``_close_transport``, ``_wait_closed``), hands decoded replies to
    ``deliver``, and starts its tasks with ``_spawn`` or ``_start_reader`` (they
    end with the connection).
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
        self._given_up: dict[int, None] = {}
        """Ids the referee stopped waiting for (counted late there), oldest first."""
        self.closed = False
        self.closed_by_server = False
        self.game_over = False
        self._tasks = BackgroundTasks()
        self.lost = asyncio.Event()
        """Set once the connection is gone, whoever closed it."""

    def start(self) -> None:
        """Begin reading (transports that read in their own task start it here)."""

    def _spawn(self, coro: Coroutine[Any, Any, None], role: str) -> asyncio.Task[None]:
        """A task of this connection: kept, its failure logged, cancelled by ``close``."""
        return self._tasks.spawn(coro, f"arena-{self.transport}-team{self.team}-{role}")

    def _start_reader(self, reading: Coroutine[Any, Any, None]) -> None:
        """Read in a task; should the reading itself fail, the connection counts as lost."""

        async def guarded() -> None:
            try:
                await reading
            except Exception:
                self._lost("the arena's reader of this connection failed")
                raise

        self._spawn(guarded(), "reader")

    @property
    def awaiting_reply(self) -> bool:
        """Whether the referee is waiting for this seat's reply to a request."""
        return self._pending is not None

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
        """The referee stopped waiting and counts the turn late: a reply that still comes
        for it is discarded without being counted again."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self._given_up[pending[0]] = None
            while len(self._given_up) > MAX_GIVEN_UP:
                del self._given_up[next(iter(self._given_up))]

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
        if message.id_package in self._given_up:  # already counted late by the referee
            del self._given_up[message.id_package]
            logger.info(
                "seat %s (team %s): late reply with id_package %s discarded",
                self.seat,
                self.team,
                message.id_package,
            )
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
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._wait_closed(), 1.0)
        await self._tasks.close()


def token_ok(expected: str | None, given: str | None) -> bool:
    """Whether ``given`` is the arena's shared secret (always, when it has none)."""
    if expected is None:
        return True
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())
