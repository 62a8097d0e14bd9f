"""WebSocket transport: full games mixed with TCP, and every fault and security case.

Each game runs an open-mode arena on real sockets with the client's real
transports as players; faulty players and intruders are raw WebSocket
clients. The other seats must play a whole, correctly scored game with
nothing counted against them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from client.lifecycle import answer
from protocol import ProtocolError
from protocol.messages import ClientMessage, MoveReply, ServerMessage, Turn
from protocol.msgpack_codec import MAX_PAYLOAD, SERVER_TYPES, Hello, decode_payload, encode_payload
from tests.arena_support import check_game
from tests.transport_support import (
    open_arena,
    others_clean,
    session,
    tcp_player,
    wait_for,
    ws_player,
)

TOKEN = "s3cret-token"
POLICY = CloseCode.POLICY_VIOLATION


async def test_full_game_over_ws_mixed_with_tcp() -> None:
    async with open_arena(("ws://127.0.0.1:0/arena",)) as arena:
        url = arena.url("ws")
        assert url.endswith("/arena")
        # Connection order is not seat order: seats go by ascending team id. Greedy
        # players place on a cell with the most room, where the few stacks placed and
        # slid before a seat's first turn cannot close every direction (a random
        # player may place where they do: it did once).
        summaries = await arena.run_players(
            ws_player(url, 40, strategy="greedy"),
            tcp_player(arena.tcp_port, 10, strategy="greedy"),
            ws_player(url, 30, strategy="greedy"),
            tcp_player(arena.tcp_port, 20, strategy="greedy"),
        )
        record, result = await arena.result()
    check_game(record, result)
    others_clean(result)
    assert result.teams == [10, 20, 30, 40]
    assert [s.seat for s in summaries] == [4, 1, 3, 2]
    moves = {seat: 0 for seat in range(1, 5)}
    for event in record.events:
        if event.kind == "move":
            moves[event.seat] += 1
    assert all(moves.values()), moves  # every seat, ws and tcp alike, had moves applied
    for summary, seat in zip(summaries, [4, 1, 3, 2], strict=True):
        assert summary.moves == moves[seat]
        assert summary.score == result.scores[seat - 1]


async def test_token_is_accepted_and_game_plays() -> None:
    async with open_arena(token=TOKEN) as arena:
        url = arena.url("ws")
        await arena.run_players(*(ws_player(url, team, token=TOKEN) for team in (1, 2, 3, 4)))
        record, result = await arena.result()
    check_game(record, result)
    others_clean(result)


# ------------------------------------------------------------------ intruders
async def _intruder(
    kind: str,
    url: str,
    outcome: dict[str, Any],
    before_hello: Callable[[], Awaitable[object]] | None = None,
) -> None:
    """A fifth connection that must be turned away without disturbing the game."""
    target = url + "elsewhere" if kind == "wrong_path" else url
    async with connect(target, max_size=MAX_PAYLOAD) as ws:
        if before_hello is not None:
            await before_hello()
        if kind == "wrong_token":
            await ws.send(encode_payload(Hello(team_id=1, token="guess"), 12))
        elif kind == "no_token":
            await ws.send(encode_payload(Hello(team_id=1), 12))
        elif kind == "second_claim":
            await ws.send(encode_payload(Hello(team_id=1, token=TOKEN), 12))
        elif kind == "unknown_team":
            await ws.send(encode_payload(Hello(team_id=99, token=TOKEN), 12))
        frames = []
        with contextlib.suppress(ConnectionClosed):
            async for frame in ws:
                frames.append(frame)
        outcome["frames"] = frames
        assert ws.close_code is not None
        outcome["code"] = ws.close_code
        outcome["reason"] = ws.close_reason


INTRUDERS = {
    "wrong_token": (POLICY, "bad token", "wrong token"),
    "no_token": (POLICY, "bad token", "no token"),
    "no_hello": (POLICY, "no hello in time", "sent no hello within"),
    "second_claim": (POLICY, "whose player is connected", "whose player is connected"),
    "unknown_team": (POLICY, "unknown team id 99", "unknown team id 99"),
    "wrong_path": (POLICY, "unknown path", "unknown path"),
}


@pytest.mark.parametrize("kind", sorted(INTRUDERS))
async def test_intruder_is_refused_and_costs_nothing(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    code, reason, logged = INTRUDERS[kind]
    caplog.set_level(logging.INFO, logger="arena")
    outcome: dict[str, Any] = {}
    async with open_arena(token=TOKEN) as arena:
        url = arena.url("ws")
        players: list[asyncio.Future[Any]] = []
        if kind in ("second_claim", "unknown_team"):

            async def seats_fixed() -> None:
                # The intruder is connected already and says hello as soon as the seats
                # are fixed (99 is unknown then): a game of random players is short.
                players.extend(
                    asyncio.ensure_future(ws_player(url, t, token=TOKEN)) for t in (1, 2, 3, 4)
                )
                await wait_for(lambda: len(arena.lobby.teams) == 4, interval=0.001)

            await asyncio.wait_for(_intruder(kind, url, outcome, seats_fixed), 10)
        else:
            # The intruder comes first: the lobby must still seat the players after it.
            await asyncio.wait_for(_intruder(kind, url, outcome), 10)
        if not players:
            players = [asyncio.ensure_future(ws_player(url, t, token=TOKEN)) for t in (1, 2, 3, 4)]
        await arena.run_players(*players)
        record, result = await arena.result()
    check_game(record, result)
    others_clean(result)
    assert outcome["code"] == code
    assert reason in outcome["reason"]
    assert logged in caplog.text
    if kind == "unknown_team":  # told to stop, as the course server does over TCP
        message, _ = decode_payload(outcome["frames"][0], 12, SERVER_TYPES)
        assert message.model_dump() == {"id_package": 0}
    else:
        assert outcome["frames"] == []
    assert arena.lobby.rejected >= 1


# ---------------------------------------------------------- faulty seat player
FAULTS: dict[str, tuple[bytes | str, int, str]] = {
    "oversized": (
        b"\x00" * (MAX_PAYLOAD + 1),
        CloseCode.MESSAGE_TOO_BIG,
        f"over {MAX_PAYLOAD} bytes",
    ),
    "junk": (b"\xc1\xc1\xc1", POLICY, "malformed frame"),
    "text": ("hello", POLICY, "text frame"),
    "server_type": (
        msgpack.packb({"type": "game_over", "id_package": 1}),
        POLICY,
        "is not expected here",
    ),
    "extra_key": (
        msgpack.packb(
            {"type": "move", "id_package": 1, "x": 0, "y": 0, "split": 1, "direction": 1, "s": 1}
        ),
        POLICY,
        "malformed frame",
    ),
}


async def _faulty_seat(url: str, team: int, frame: bytes | str, outcome: dict[str, Any]) -> None:
    async with connect(url) as ws:
        await ws.send(encode_payload(Hello(team_id=team), 12))
        await ws.recv()  # its first request: answered with the fault
        await ws.send(frame)
        with contextlib.suppress(ConnectionClosed):
            async for _ in ws:
                pass
        outcome["code"] = ws.close_code
        outcome["reason"] = ws.close_reason


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_bad_frame_closes_that_connection_only(
    fault: str, caplog: pytest.LogCaptureFixture
) -> None:
    frame, code, logged = FAULTS[fault]
    caplog.set_level(logging.INFO, logger="arena")
    outcome: dict[str, Any] = {}
    async with open_arena() as arena:
        url = arena.url("ws")
        await arena.run_players(
            ws_player(url, 1),
            _faulty_seat(url, 2, frame, outcome),
            ws_player(url, 3),
            tcp_player(arena.tcp_port, 4),
        )
        record, result = await arena.result()
    check_game(record, result)
    others_clean(result, faulty={2})
    assert outcome["code"] == code
    assert result.protocol_errors[1] == 1
    assert result.disconnects[1] == 1
    assert not any(e.kind == "move" for e in record.events if e.seat == 2)
    assert logged in caplog.text
    assert "seat 2 (team 2, ws)" in caplog.text


# ----------------------------------------------------------- moves for others
async def _cheater(url: str, team: int, forged: list[int]) -> None:
    """Plays its own seat properly and also sends moves for the seats around it.

    It places greedily, on a cell with the most room: a random placement is shut in
    before its first turn in about 3 games of 1,000 (measured in-process on this map),
    and a seat that never moves never forges a reply.
    """
    game = session(strategy="greedy")
    async with connect(url) as ws:
        await ws.send(encode_payload(Hello(team_id=team), 12))

        async def send(reply: ClientMessage) -> None:
            await ws.send(encode_payload(reply, 12))
            if isinstance(reply, MoveReply):
                for other in (reply.id_package - 1, reply.id_package + 1):
                    forged.append(other)
                    await ws.send(
                        encode_payload(reply.model_copy(update={"id_package": other}), 12)
                    )

        with contextlib.suppress(ConnectionClosed):
            while not game.finished:
                frame = await ws.recv()
                assert isinstance(frame, bytes)
                message, _ = decode_payload(frame, 12, SERVER_TYPES)
                assert isinstance(message, ServerMessage)
                await answer(game, [(message, asyncio.get_running_loop().time())], send)
    game.close()


async def test_a_player_moves_only_its_own_seat() -> None:
    forged: list[int] = []
    async with open_arena() as arena:
        url = arena.url("ws")
        await arena.run_players(
            ws_player(url, 1),
            _cheater(url, 2, forged),
            ws_player(url, 3),
            tcp_player(arena.tcp_port, 4),
        )
        record, result = await arena.result()
    check_game(record, result)
    others_clean(result, faulty={2})
    assert forged
    # Every forged reply was the cheater's own stale reply; none became another seat's move.
    # (Near the end, when the others pass, a forged "next id" can be the cheater's own next
    # request, which is its own seat's turn to spend: so a few may not count as stale.)
    assert len(forged) - 4 <= result.stale[1] <= len(forged)
    assert result.disconnects[1] == 0
    turns = [e for e in record.events if e.kind in ("move", "skip")]
    assert all(e.outcome == "ok" for e in turns if e.seat != 2)


def test_schema_decoding_rejects_what_the_arena_rejects() -> None:
    """The frames of the fault tests are refused by the codec itself, with the field named."""
    with pytest.raises(ProtocolError) as info:
        decode_payload(FAULTS["server_type"][0], 12)  # type: ignore[arg-type]
    assert info.value.field == "type"
    turn = Turn(code=1, id_package=1, map=((0,) * 12,) * 12, sheep=((0,) * 12,) * 12)
    with pytest.raises(ProtocolError):
        decode_payload(encode_payload(turn, 12), 15, SERVER_TYPES)


async def test_a_player_that_never_ends_fails_the_test_saying_where_the_game_stands() -> None:
    """The transport tests' wait for their players (``Arena.run_players``): a player still
    playing at the timeout is named, with the arena's game and its seats, so a hang in CI
    tells a lost frame from an arena that stopped asking."""
    async with open_arena() as arena:
        # Team 1 waits in the lobby for three more teams; the other waits for nothing.
        players = [ws_player(arena.url("ws"), 1), asyncio.Event().wait()]
        with pytest.raises(AssertionError) as info:
            await arena.run_players(*players, timeout=2.0)
    text = str(info.value)
    assert "player(s) [1, 2] of 2 (in the order given) still playing after 2 s" in text
    assert "the arena: its game is not over" in text
    assert "seat 1: none" in text  # no game yet: seats are given when four teams are in
