"""The lobby's seating over real sockets: what a refused connection hears, by the kind of
refusal, and that closing the lobby leaves no task of it behind; the background tasks'
failures are logged, not lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import AsyncIterator

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from arena.background import BackgroundTasks
from arena.lobby import Lobby
from arena.ws_listener import WsListener
from protocol.endpoints import parse_endpoint
from protocol.msgpack_codec import Hello, encode_payload

GAME_OVER = struct.pack("<2i", 0, 0)  # the course's game-over header, id_package 0
SIZE = 12


def arena_tasks() -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("arena-")]


@contextlib.asynccontextmanager
async def started(lobby: Lobby) -> AsyncIterator[Lobby]:
    await lobby.start()
    try:
        yield lobby
    finally:
        await lobby.close()


async def tcp_claim(port: int, team: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(struct.pack("<i", team))
    await writer.drain()
    return reader, writer


async def heard(reader: asyncio.StreamReader) -> bytes:
    """Everything the arena sends until it closes the connection."""
    return await asyncio.wait_for(reader.read(), 5.0)


async def test_tcp_refusals_say_game_over_only_to_who_has_no_game_here() -> None:
    async with started(Lobby([1, 2, 3, 4], SIZE, handshake_timeout=2.0)) as lobby:
        # No game open yet: told at once, before its team id, as by the course server.
        early, _ = await asyncio.open_connection("127.0.0.1", lobby.port)
        assert await heard(early) == GAME_OVER
        lobby.new_game()
        _, seated_writer = await tcp_claim(lobby.port, 1)
        for _ in range(100):
            if lobby.connection(1) is not None:
                break
            await asyncio.sleep(0.02)
        assert lobby.connection(1) is not None
        unknown, _ = await tcp_claim(lobby.port, 9)
        assert await heard(unknown) == GAME_OVER
        second, _ = await tcp_claim(lobby.port, 1)
        assert await heard(second) == b""  # closed, but not told the game is over
        assert lobby.rejected == 3
        assert lobby.connection(1) is not None  # the seated player was not disturbed
        assert arena_tasks()  # its reader runs
        seated_writer.close()
    assert arena_tasks() == []  # closing the lobby ended and awaited its seats' tasks


async def test_tcp_second_connection_of_a_waiting_team_is_only_closed() -> None:
    async with started(Lobby(None, SIZE)) as lobby:
        lobby.new_game()
        _, first = await tcp_claim(lobby.port, 5)
        second, _ = await tcp_claim(lobby.port, 5)
        assert await heard(second) == b""
        assert lobby.rejected == 1
        assert lobby.teams == []  # still waiting for four teams
        first.close()
    assert arena_tasks() == []


async def test_ws_second_hello_of_a_waiting_team_is_closed_without_game_over() -> None:
    listener = WsListener(parse_endpoint("ws://127.0.0.1:0/"), None)
    async with started(Lobby(None, SIZE, tcp=False, listeners=[listener])) as lobby:
        lobby.new_game()
        hello = encode_payload(Hello(team_id=5), SIZE)
        async with connect(listener.url) as first, connect(listener.url) as second:
            await first.send(hello)
            for _ in range(100):
                if arena_tasks():  # the first waits for the other teams
                    break
                await asyncio.sleep(0.02)
            await second.send(hello)
            frames = []
            with contextlib.suppress(ConnectionClosed):
                async for frame in second:
                    frames.append(frame)
            assert frames == []
            assert second.close_code == CloseCode.POLICY_VIOLATION
            assert second.close_reason is not None
            assert "already connected and waiting" in second.close_reason
        assert lobby.rejected == 1
    assert arena_tasks() == []


async def test_a_failing_background_task_is_logged_and_close_awaits_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="arena")
    tasks = BackgroundTasks()

    async def fail() -> None:
        raise ValueError("boom")

    failing = tasks.spawn(fail(), "arena-test-failing")
    sleeper = tasks.spawn(asyncio.sleep(3600), "arena-test-sleeper")
    with contextlib.suppress(ValueError):
        await failing
    await asyncio.sleep(0)  # the done callback runs
    assert "task arena-test-failing failed: ValueError('boom')" in caplog.text
    assert any(r.exc_info and r.exc_info[0] is ValueError for r in caplog.records)
    assert len(tasks) == 1  # the finished task is not kept
    await tasks.close()
    assert sleeper.cancelled()
    assert len(tasks) == 0
