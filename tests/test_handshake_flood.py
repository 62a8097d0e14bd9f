"""Idle connections, however many and however often reopened, cannot lock the expected
teams out of their seats: a newcomer past the limit closes the longest-waiting handshake."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from websockets.asyncio.client import connect as ws_connect

from arena.connections import MAX_HANDSHAKES, Handshakes
from tests.arena_support import check_game
from tests.transport_support import (
    open_arena,
    others_clean,
    tcp_player,
    ws_player,
)

TOKEN = "flood-test-token"
FLOOD_SECONDS = 20.0
"""The flood's bound: it stops by itself, whatever the test does."""


def test_the_longest_waiting_handshake_makes_room() -> None:
    closed: list[int] = []
    slots = Handshakes(limit=3)
    for k in range(3):
        slots.enter(k, functools.partial(closed.append, k))
    slots.leave(1)  # said its team id in time
    slots.enter(3, lambda: closed.append(3))
    assert closed == [] and len(slots) == 3
    slots.enter(4, lambda: closed.append(4))
    slots.enter(5, lambda: closed.append(5))
    assert closed == [0, 2] and slots.evicted == 2 and len(slots) == 3


@contextlib.asynccontextmanager
async def flood(open_idle: Callable[[], Awaitable[object]], count: int) -> AsyncIterator[None]:
    """``count`` idle connections, each reopened as soon as it is closed, until the block
    ends (or ``FLOOD_SECONDS`` pass)."""
    stop_at = time.monotonic() + FLOOD_SECONDS

    async def one() -> None:
        while time.monotonic() < stop_at:
            with contextlib.suppress(OSError, Exception):
                await open_idle()

    tasks = [asyncio.ensure_future(one()) for _ in range(count)]
    await asyncio.sleep(0.3)  # the flood holds every slot before the players come
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@pytest.mark.parametrize("transport", ["tcp", "ws"])
async def test_players_are_seated_through_a_flood_of_idle_connections(transport: str) -> None:
    async with open_arena(token=TOKEN) as arena:
        if transport == "tcp":
            host, port = "127.0.0.1", arena.tcp_port

            async def idle() -> None:
                reader, writer = await asyncio.open_connection(host, port)
                try:
                    await reader.read()  # says nothing; returns when the arena closes it
                finally:
                    writer.close()

        else:
            url = arena.url("ws")

            async def idle() -> None:
                async with ws_connect(url, open_timeout=5) as ws:
                    await ws.wait_closed()  # says no hello

        async with flood(idle, MAX_HANDSHAKES):  # the 16, each reopened at once
            if transport == "tcp":
                players = [tcp_player(arena.tcp_port, team) for team in (1, 2, 3, 4)]
            else:
                players = [ws_player(arena.url("ws"), t, token=TOKEN) for t in (1, 2, 3, 4)]
            await arena.run_players(*players)
            record, result = await arena.result()
    check_game(record, result)
    others_clean(result)
    assert result.absent == [0, 0, 0, 0]
    assert arena.lobby.rejected > 0  # the flood was there, and was closed
