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
from typing import TypeVar

from client.errors import ConnectionFailed
from client.session import GameSession, GameSummary
from protocol.messages import ClientMessage, ServerMessage

log = logging.getLogger(__name__)

T = TypeVar("T")


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
    backoff_first: float = 0.05,
    backoff_max: float = 1.0,
    retry_on: tuple[type[BaseException], ...] = (OSError, TimeoutError),
) -> T:
    """``await open_once(timeout)`` until it succeeds or ``give_up_at`` (monotonic) passes."""
    backoff = Backoff(backoff_first, backoff_max, rng)
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
    connect_for: float,
    reconnect_for: float,
) -> GameSummary:
    """Play one game over as many connections as needed; the summary at game over.

    ``run_connection(give_up_at, progress)`` connects (retrying until
    ``give_up_at``), serves until the session is finished, and closes; it raises
    ``ConnectionLost`` when the link goes and ``ConnectionFailed`` when it
    cannot connect in time. The session is closed on the way out.
    """
    give_up_at = time.monotonic() + connect_for
    try:
        while True:
            progress = Progress()
            try:
                await run_connection(give_up_at, progress)
            except ConnectionLost as lost:
                if progress.messages:
                    # Made progress on this connection: a fresh window from the loss.
                    give_up_at = time.monotonic() + reconnect_for
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
