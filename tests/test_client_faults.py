"""Faults: the client survives what it can and exits with one clear line where it cannot."""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest

from client.clock import TimeLimits
from client.errors import ConnectionFailed, ExitCode, ServerDataError
from client.session import GameSession
from client.tcp import play_tcp
from protocol import GameOver, InitialMap, PositionReply, Turn, encode
from state.boardgen import random_geometry
from state.game import GameState, Move
from state.settings import get_setting
from strategies.registry import make_strategy
from tests.referee import Referee, as_board
from tests.test_client import LIMIT, SLACK, assert_clean, options, run_game, session

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
SIZE = 12


async def serve(handler: Handler) -> tuple[asyncio.Server, int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class OneSeat:
    """A game of seat 1 played by hand: the initial map, then a board after the others placed."""

    def __init__(self, seed: int = 5) -> None:
        setting = get_setting(1)
        self.state = GameState(setting, random_geometry(setting, seed))
        self.rng = random.Random(seed)

    def initial_map(self, ident: int) -> InitialMap:
        return InitialMap(
            code=1, id_package=ident, player_id=1, map=as_board(self.state.wire_map())
        )

    def place_reply(self, data: bytes) -> int:
        """Apply seat 1's position reply and random placements of the others; the cell."""
        code, _ident, x, y = struct.unpack("<4i", data)
        assert code == 1
        cell = self.state.geometry.index(x, y)
        assert cell in self.state.initial_positions()
        self.state.place(cell)
        while self.state.placing:
            self.state.place(self.rng.choice(self.state.initial_positions()))
        return cell

    def turn(self, ident: int) -> Turn:
        assert self.state.to_move == 1
        return Turn(
            code=1,
            id_package=ident,
            map=as_board(self.state.wire_map()),
            sheep=as_board(self.state.wire_sheep(1)),
        )

    def is_legal_move(self, data: bytes) -> bool:
        code, _ident, x, y, split, direction = struct.unpack("<6i", data)
        move = Move(self.state.geometry.index(x, y), split, direction)
        return code == 1 and move in self.state.legal_moves(1)


async def test_closed_mid_frame_then_back_resynchronises_from_the_next_board() -> None:
    game = OneSeat()
    connections: list[int] = []
    legal: list[bool] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(struct.unpack("<i", await reader.readexactly(4))[0])
        if len(connections) == 1:
            writer.write(encode(game.initial_map(1), SIZE))
            game.place_reply(await reader.readexactly(16))
            frame = encode(game.turn(2), SIZE)
            writer.write(frame[: len(frame) // 2])
            await writer.drain()
        else:
            writer.write(encode(game.turn(3), SIZE))
            reply = await reader.readexactly(24)
            assert struct.unpack("<2i", reply[:8]) == (1, 3)
            legal.append(game.is_legal_move(reply))
            writer.write(encode(GameOver(id_package=4), SIZE))
            await writer.drain()
        writer.close()

    server, port = await serve(handler)
    async with server:
        summary = await asyncio.wait_for(
            play_tcp(session(1), options(port, 7, reconnect_for=5)), timeout=10
        )
    assert connections == [7, 7]  # the team id again on reconnect
    assert legal == [True]
    assert summary.moves == 1 and summary.placements == 1


async def test_closed_mid_frame_and_gone_fails_after_the_reconnect_window() -> None:
    game = OneSeat()
    server_holder: list[asyncio.Server] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(4)
        writer.write(encode(game.initial_map(1), SIZE))
        game.place_reply(await reader.readexactly(16))
        writer.write(encode(game.turn(2), SIZE)[:100])
        await writer.drain()
        server_holder[0].close()  # stop listening: reconnects are refused
        writer.close()

    server, port = await serve(handler)
    server_holder.append(server)
    started = time.monotonic()
    with pytest.raises(ConnectionFailed, match="cannot connect"):
        await asyncio.wait_for(play_tcp(session(1), options(port, 7, reconnect_for=0.6)), 10)
    assert time.monotonic() - started < 3


async def test_garbage_from_the_server_is_a_clear_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(4)
        writer.write(struct.pack("<3i", 1, 1, 9) + bytes(range(256)) * 3)
        await writer.drain()
        await asyncio.sleep(2)
        writer.close()

    server, port = await serve(handler)
    async with server:
        with pytest.raises(ServerDataError, match=r"malformed.*player_id: 9"):
            await asyncio.wait_for(play_tcp(session(1), options(port, 7)), 5)


async def test_a_board_of_another_field_is_a_clear_error() -> None:
    game, other = OneSeat(5), OneSeat(6)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(4)
        writer.write(encode(game.initial_map(1), SIZE))
        await reader.readexactly(16)
        writer.write(encode(other.turn(2), SIZE))
        await writer.drain()
        await asyncio.sleep(2)
        writer.close()

    server, port = await serve(handler)
    async with server:
        with pytest.raises(ServerDataError, match="board 2 is no board of this game"):
            await asyncio.wait_for(play_tcp(session(1), options(port, 7)), 5)


async def test_a_map_of_another_setting_is_refused_not_answered() -> None:
    """A 15x15 initial map sent to a game-1 client: read at 12x12 it is cut short (the
    wire has no length); the client must say so and send nothing."""
    setting = get_setting(2)
    big = GameState(setting, random_geometry(setting, 3))
    sent = InitialMap(code=1, id_package=1, player_id=1, map=as_board(big.wire_map()))
    replies: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(4)
        writer.write(encode(sent, setting.size))
        await writer.drain()
        replies.append(await reader.read(16))
        writer.close()

    server, port = await serve(handler)
    async with server:
        with pytest.raises(ServerDataError, match=r"playing cells, but game 1 is played on 64"):
            await asyncio.wait_for(play_tcp(session(1), options(port, 7)), 5)
    assert replies in ([], [b""])  # no position reply was sent


async def test_a_server_gone_silent_is_said_and_given_up_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server takes the placement, then says nothing and keeps the socket open (and
    does the same on every reconnection): the client logs the silence and ends with the
    connection error instead of waiting forever."""
    game = OneSeat(5)
    connections: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await reader.readexactly(4)
        if len(connections) == 1:
            writer.write(encode(game.initial_map(1), SIZE))
            await writer.drain()
            await reader.readexactly(16)
        await asyncio.sleep(30)  # silent, the connection open

    server, port = await serve(handler)
    opts = replace(options(port, 7, connect_for=1.0, reconnect_for=0.5), silence_slack=0.2)
    quick = GameSession(get_setting(1), make_strategy("greedy", {"seed": 1}), TimeLimits(0.2, 0.05))
    async with server:
        with pytest.raises(ConnectionFailed, match="sent nothing"):
            await asyncio.wait_for(play_tcp(quick, opts), 20)
    assert len(connections) >= 2  # the silence counted as a lost connection: it reconnected
    assert any("has sent nothing for" in r.getMessage() for r in caplog.records)


async def run_cli(*args: str, timeout: float = 20) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "battlesheep",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_cli_reports_malformed_data_in_one_line_without_traceback() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(4)
        writer.write(struct.pack("<3i", 1, 1, 9) + bytes(600))
        await writer.drain()
        await asyncio.sleep(5)
        writer.close()

    server, port = await serve(handler)
    async with server:
        code, out, err = await run_cli("play", "--game", "1", "--port", str(port))
    assert code == ExitCode.SERVER_DATA
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "malformed" in errors[0] and "player_id" in errors[0]
    assert out == ""


async def test_cli_reports_no_server_in_one_line_without_traceback() -> None:
    code, _out, err = await run_cli(
        "sample", "random", "--game", "2", "--port", str(free_port()), "--connect-for", "0.5"
    )
    assert code == ExitCode.CONNECTION
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "cannot connect" in errors[0]


async def test_stale_boards_are_not_answered_and_the_current_one_is() -> None:
    referee = Referee(1, seed=21, time_limit=LIMIT, stale_for=frozenset({2}))
    sessions = [session(1, "greedy", seed=s) for s in range(1, 5)]
    result, _ = await run_game(referee, sessions)
    assert_clean(result)
    assert sessions[1].stats.superseded >= 3
    assert not [r for r in result.records if r.stale]


async def test_slow_server_start() -> None:
    referee = Referee(4, seed=22, time_limit=LIMIT)
    sessions = [session(4, "greedy", seed=s) for s in range(1, 5)]
    result, summaries = await run_game(referee, sessions, port=free_port(), start_referee_after=0.8)
    assert_clean(result)
    assert all(s.finished for s in sessions)
    assert [s.seat for s in summaries] == [1, 2, 3, 4]


@pytest.mark.parametrize("game", [1, 3])
async def test_dropped_mid_game_reconnects_and_finishes(game: int) -> None:
    referee = Referee(game, seed=23, time_limit=LIMIT, drop_after={2: 3, 4: 5})
    sessions = [session(game, "greedy", seed=s) for s in range(1, 5)]
    result, summaries = await run_game(referee, sessions, reconnect_for=5)
    assert_clean(result)
    assert result.connections == {1: 1, 2: 2, 3: 1, 4: 2}
    assert len(result.replies(2)) > 3 and len(result.replies(4)) > 5
    assert all(s.finished for s in sessions)
    assert summaries[1].score == result.scores[1]


async def test_boards_without_a_legal_move_get_a_harmless_reply() -> None:
    referee = Referee(1, seed=24, time_limit=LIMIT, boards_to_passing=True)
    sessions = [session(1, "greedy" if s < 3 else "random", seed=s) for s in range(1, 5)]
    result, summaries = await run_game(referee, sessions)
    assert_clean(result)
    passing = [r for r in result.records if not r.had_moves]
    assert passing
    for r in passing:
        assert r.values is not None and r.values[1] == r.id_package  # answered, id echoed
        assert r.elapsed <= LIMIT + SLACK
    assert sum(s.passes for s in summaries) == len(passing)


async def test_a_seat_shut_in_from_its_first_turn_knows_its_final_score() -> None:
    """The server sends no board to a seat without a move, and game over has no board: a
    seat boxed in at placement sees only its initial map. It never moved, so it ends with
    the one cell it was given, whatever the others did; a game cut off is still unknown."""
    game = OneSeat()
    ended, cut_off = session(1), session(1)
    for s in (ended, cut_off):
        reply = await s.respond(game.initial_map(1), time.monotonic())
        assert isinstance(reply, PositionReply)
        assert reply.x * SIZE + reply.y in game.state.initial_positions()
        assert s.summary().score is None  # placed, the game still on
    await ended.respond(GameOver(id_package=2), time.monotonic())
    assert ended.summary().score == 1 and ended.summary().moves == 0
    assert "final score 1 " in ended.summary().line()
    assert cut_off.summary().score is None


async def test_wrong_team_gets_game_over_and_a_clean_exit() -> None:
    referee = Referee(1, seed=25, time_limit=LIMIT)
    port = await referee.start()
    try:
        summary = await asyncio.wait_for(play_tcp(session(1), options(port, 99)), 5)
    finally:
        await referee.close()
    assert summary.seat is None and summary.moves == 0
    assert "seat ?" in summary.line()


async def test_cli_plays_a_full_game() -> None:
    referee = Referee(2, seed=26, time_limit=LIMIT)
    port = await referee.start()
    common = ["--game", "2", "--port", str(port), "--time-limit", "0.5", "--margin", "0.1"]
    commands = [
        ["play", "--team", "11", "--param", "seed=1", *common],
        ["play", "--team", "12", "--strategy", "random", *common],
        ["sample", "greedy", "--team", "13", *common],
        ["sample", "random", "--team", "14", "-v", *common],
    ]
    players = [asyncio.create_task(run_cli(*c, timeout=60)) for c in commands]
    try:
        result = await asyncio.wait_for(referee.play(), 60)
        outcomes = await asyncio.gather(*players)
    finally:
        await referee.close()
    assert_clean(result)
    for seat, (code, out, err) in enumerate(outcomes, start=1):
        assert code == 0, err
        assert out.startswith(f"game 2 seat {seat}: ") and out.count("\n") == 1
        assert "Traceback" not in err
    assert "DEBUG" in outcomes[3][2] and "recv" in outcomes[3][2]
    assert " INFO client.session: turn " in outcomes[0][2]
