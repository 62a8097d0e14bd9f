"""What every transport of the client does the same way: retry, reconnect, answer.

A transport supplies two things: how to open one connection (retried here
with jittered exponential backoff until a deadline) and how to serve it
(decode frames, hand them to ``answer``, raise ``ConnectionLost`` when the
link goes). ``play_reconnecting`` runs the game over as many connections as
it takes: the first connect is retried for ``connect_for`` seconds, and a
connection that made progress before it was lost opens a fresh
``reconnect_for`` window; the ``GameSession`` keeps its state throughout.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from client.errors import ConnectionFailed
from client.session import GameSession, GameSummary
from protocol.messages import ClientMessage, ServerMessage

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LinkOptions:
    """What the options of every transport share: the team, and how long and how often
    to (re)connect. ``tcp.ConnectOptions``, ``ws.WsOptions`` and ``mqtt.MqttOptions``
    add where to connect."""

    team: int = 1
    connect_for: float = 60.0
    """Seconds to keep trying before the first connection."""
    reconnect_for: float = 30.0
    """Seconds to keep trying after a connection is lost."""
    backoff_first: float = 0.05
    backoff_max: float = 1.0


class ConnectionLost(Exception):
    """The server closed or reset the connection; ``str`` says how."""


class Backoff:
    """Jittered exponential delays: each at most twice the last, capped, at least half of it."""

    def __init__(self, first: float, cap: float, rng: random.Random) -> None:
        self._next = first
        self._cap = cap
        self._rng = rng

    def delay(self) -> float:
        d = self._next * self._rng.uniform(0.5, 1.0)
        self._next = min(self._cap, self._next * 2)
        return d


SILENCE_ROUNDS = 5
"""Boards the server may take between two of ours: three other seats' turns at most, plus
placement's fourth and slack; past ``SILENCE_ROUNDS`` time limits (and ``SILENCE_SLACK``)
a silent server is said so in the log, and later given up on."""
SILENCE_SLACK = 5.0


class Silence:
    """How long the server may say nothing: warned about once, then given up on.

    During a game: ``SILENCE_ROUNDS`` time limits (plus slack) until the warning, and
    ``reconnect_for`` more until the connection counts as lost (and is reconnected, or
    the client ends with the connection error). Before a game's first frame the server
    may still be waiting for the other players: ``connect_for`` is added to both.
    """

    def __init__(
        self,
        time_limit: float,
        connect_for: float,
        reconnect_for: float,
        slack: float = SILENCE_SLACK,
    ) -> None:
        self.game = SILENCE_ROUNDS * time_limit + slack
        self.connect_for = connect_for
        self.reconnect_for = reconnect_for

    def bounds(self, started: bool) -> tuple[float, float]:
        """Seconds until the warning and until giving up, from the last frame received."""
        warn = self.game if started else self.game + self.connect_for
        return warn, warn + self.reconnect_for

    async def read(self, read: Callable[[], Awaitable[T]], started: bool, where: str) -> T:
        """``await read()``, logging a silence past the warning bound once and raising
        ``ConnectionLost`` past the give-up bound."""
        warn, give_up = self.bounds(started)
        task = asyncio.ensure_future(read())
        try:
            done, _ = await asyncio.wait((task,), timeout=warn)
            if not done:
                log.warning(
                    "the server %s has sent nothing for %.0f s; waiting %.0f s more",
                    where,
                    warn,
                    give_up - warn,
                )
                done, _ = await asyncio.wait((task,), timeout=give_up - warn)
            if not done:
                raise ConnectionLost(f"the server {where} sent nothing for {give_up:.0f} s")
            return task.result()
        finally:
            if not task.done():
                task.cancel()


class Progress:
    """Messages received on the current connection (zero: it never got going)."""

    __slots__ = ("messages",)

    def __init__(self) -> None:
        self.messages = 0


async def retry_connect(
    open_once: Callable[[float], Awaitable[T]],
    where: str,
    give_up_at: float,
    rng: random.Random,
    options: LinkOptions,
    retry_on: tuple[type[BaseException], ...] = (OSError, TimeoutError),
) -> T:
    """``await open_once(timeout)`` until it succeeds or ``give_up_at`` (monotonic) passes,
    the waits between tries by ``options``' backoff."""
    backoff = Backoff(options.backoff_first, options.backoff_max, rng)
    attempts = 0
    while True:
        attempts += 1
        try:
            link = await open_once(max(0.1, min(5.0, give_up_at - time.monotonic())))
        except retry_on as exc:
            now = time.monotonic()
            if now >= give_up_at:
                raise ConnectionFailed(
                    f"cannot connect to {where} after {attempts} attempts:"
                    f" {exc or type(exc).__name__}"
                ) from None
            if attempts == 1:
                log.info("server %s not reachable yet (%s); retrying", where, exc)
            await asyncio.sleep(min(backoff.delay(), max(0.0, give_up_at - now)))
            continue
        log.info("connected to %s (attempt %s)", where, attempts)
        return link


async def play_reconnecting(
    session: GameSession,
    run_connection: Callable[[float, Progress], Awaitable[None]],
    options: LinkOptions,
) -> GameSummary:
    """Play one game over as many connections as needed; the summary at game over.

    ``run_connection(give_up_at, progress)`` connects (retrying until
    ``give_up_at``), serves until the session is finished, and closes; it raises
    ``ConnectionLost`` when the link goes and ``ConnectionFailed`` when it
    cannot connect in time (``options.connect_for`` for the first connection,
    ``options.reconnect_for`` after one that made progress). The session is closed on
    the way out.
    """
    give_up_at = time.monotonic() + options.connect_for
    try:
        while True:
            progress = Progress()
            try:
                await run_connection(give_up_at, progress)
            except ConnectionLost as lost:
                if progress.messages:
                    # Made progress on this connection: a fresh window from the loss.
                    give_up_at = time.monotonic() + options.reconnect_for
                elif time.monotonic() >= give_up_at:
                    # Connected, but nothing came in time: a server that accepts and
                    # stays silent must not keep the client forever.
                    raise ConnectionFailed(f"{lost}; no game within the window") from None
                log.warning(
                    "%s; reconnecting for up to %.0f s",
                    lost,
                    max(0.0, give_up_at - time.monotonic()),
                )
                continue
            return session.summary()
    finally:
        session.close()


async def answer(
    session: GameSession,
    messages: Sequence[tuple[ServerMessage, float]],
    send: Callable[[ClientMessage], Awaitable[None]],
    debug: bool = False,
) -> None:
    """Hand a batch of decoded frames (with arrival times) to the session; send its reply.

    Only the newest frame is answered: an older board's reply would carry a
    stale id_package the server discards, and costs the newest one time.
    """
    last = len(messages) - 1
    for i, (message, received_at) in enumerate(messages):
        if debug:
            log.debug("frame %r", message)
        if i < last and not session.finished:
            session.absorb(message)
            continue
        if session.finished:
            break
        reply = await session.respond(message, received_at)
        if reply is not None:
            await send(reply)
