"""A misbehaving player costs only its own turns; intruders never disturb the game.

Seat 2 runs the faulty template player; the other seats must play a whole,
correctly scored game with nothing counted against them.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from pathlib import Path

import pytest

from arena.players import TaskPlayer
from arena.results import GameResult
from tests.arena_support import check_game, play_template_game, seat_log

CLEAN = ("illegal", "late", "stale", "disconnects", "absent", "protocol_errors")


def others_clean(result: GameResult, faulty: int = 2) -> None:
    for key in CLEAN:
        values = getattr(result, key)
        assert isinstance(values, list)
        assert not any(v for seat, v in enumerate(values, start=1) if seat != faulty), key


async def test_crash(tmp_path: Path) -> None:
    record, result = await play_template_game(1, tmp_path, seed=21, faults={2: "crash"})
    check_game(record, result)
    others_clean(result)
    assert result.disconnects[1] == 1
    assert result.absent[1] >= 1  # its later turns were lost at once
    assert "crashing on purpose" in seat_log(tmp_path, 2)


async def test_hang(tmp_path: Path) -> None:
    started = time.monotonic()
    record, result = await play_template_game(
        1, tmp_path, seed=22, faults={2: "hang"}, time_limit=0.25
    )
    check_game(record, result)
    others_clean(result)
    assert result.late[1] >= 1
    late_turns = sum(1 for e in record.events if e.seat == 2 and e.outcome == "late")
    assert late_turns == result.late[1]
    # Each lost turn costs at most the time limit (and a little).
    assert time.monotonic() - started < 0.25 * late_turns + 8


async def test_disconnect(tmp_path: Path) -> None:
    record, result = await play_template_game(1, tmp_path, seed=23, faults={2: "quit"})
    check_game(record, result)
    others_clean(result)
    assert result.disconnects[1] == 1


async def test_garbage(tmp_path: Path) -> None:
    record, result = await play_template_game(1, tmp_path, seed=24, faults={2: "garbage"})
    check_game(record, result)
    others_clean(result)
    assert result.protocol_errors[1] == 1 and result.disconnects[1] == 1


async def test_flood(tmp_path: Path) -> None:
    record, result = await play_template_game(1, tmp_path, seed=25, faults={2: "flood"})
    check_game(record, result)
    others_clean(result)
    assert result.protocol_errors[1] == 1
    assert result.stale[1] == 17  # dropped after a bounded number of unasked replies


async def test_illegal_moves_and_position(tmp_path: Path) -> None:
    record, result = await play_template_game(1, tmp_path, seed=26, faults={2: "illegal"})
    check_game(record, result)
    others_clean(result)
    assert result.illegal[1] == 4  # the initial position and three moves
    place = next(e for e in record.events if e.seat == 2 and e.kind == "place")
    assert place.outcome == "illegal"
    assert record.state.owner[place.x * 12 + place.y] == 2  # a random border cell instead
    assert result.disconnects[1] == 0


async def test_late_replies(tmp_path: Path) -> None:
    record, result = await play_template_game(
        1, tmp_path, seed=27, faults={2: "late"}, time_limit=0.3
    )
    check_game(record, result)
    others_clean(result)
    # The initial position and two moves are late, and so are the boards sent
    # while it slept: it reads them only afterwards.
    late = [e for e in record.events if e.seat == 2 and e.outcome == "late"]
    assert result.late[1] == len(late) >= 3
    place = next(e for e in record.events if e.seat == 2 and e.kind == "place")
    assert place.outcome == "late"
    assert result.stale[1] == 0  # the late replies that came in are counted late only
    assert sum(1 for e in record.events if e.seat == 2 and e.kind == "move") >= 1


async def test_stale_replies(tmp_path: Path) -> None:
    record, result = await play_template_game(1, tmp_path, seed=28, faults={2: "stale"})
    check_game(record, result)
    others_clean(result)
    assert result.stale[1] == 3
    assert result.illegal[1] == 0 and result.late[1] == 0


async def test_transposed_player_loses_its_turns_only(tmp_path: Path) -> None:
    record, result = await play_template_game(1, tmp_path, seed=29, faults={2: "transposed"})
    check_game(record, result)
    others_clean(result)
    assert result.illegal[1] >= 1


async def test_reconnect(tmp_path: Path) -> None:
    record, result = await play_template_game(
        1, tmp_path, seed=30, faults={2: "reconnect"}, delay=0.02
    )
    check_game(record, result)
    others_clean(result)
    assert result.disconnects[1] == 1
    assert record.stats[1].connects == 2
    lost = next(i for i, e in enumerate(record.events) if e.seat == 2 and e.kind == "skip")
    assert any(e.seat == 2 and e.kind == "move" for e in record.events[lost:])


# ---------------------------------------------------------------- intruders


async def _read_all(reader: asyncio.StreamReader, timeout: float) -> bytes:
    return await asyncio.wait_for(reader.read(), timeout)


def _intruder(kind: str, outcome: dict[str, object]) -> TaskPlayer:
    async def run(host: str, port: int) -> None:
        await asyncio.sleep(0.3)  # the players are seated and the game is on
        started = time.monotonic()
        if kind == "many":
            conns = [await asyncio.open_connection(host, port) for _ in range(60)]
            data = await asyncio.gather(*(_read_all(r, 5.0) for r, _ in conns))
            outcome["closed_after"] = time.monotonic() - started
            outcome["data"] = b"".join(data)
            for _, w in conns:
                w.close()
            return
        reader, writer = await asyncio.open_connection(host, port)
        with contextlib.suppress(ConnectionError):
            if kind == "unknown":
                writer.write(struct.pack("<i", 999))
            elif kind == "hijack":
                writer.write(struct.pack("<i", 11))  # seat 1 is connected
            elif kind == "half":
                writer.write(b"\x0b\x00")
            elif kind == "junk":
                writer.write(b"\x7f\x13\x99\x01" * 250_000)  # a megabyte
            await writer.drain()
        with contextlib.suppress(ConnectionError):
            outcome["data"] = await _read_all(reader, 5.0)
        outcome["closed_after"] = time.monotonic() - started
        writer.close()

    return TaskPlayer(run, label=f"intruder-{kind}")


@pytest.mark.parametrize("kind", ["unknown", "hijack", "silent", "half", "junk", "many"])
async def test_intruders_never_disturb_the_game(kind: str, tmp_path: Path) -> None:
    outcome: dict[str, object] = {}
    record, result = await play_template_game(
        1, tmp_path, seed=31, delay=0.02, extra=[_intruder(kind, outcome)]
    )
    check_game(record, result)
    others_clean(result, faulty=0)
    assert [s.connects for s in record.stats] == [1, 1, 1, 1]
    closed_after = outcome["closed_after"]
    assert isinstance(closed_after, float)
    # Closed at once, or after the short handshake timeout (0.5 s here).
    assert closed_after < 2.0
    if kind == "unknown":
        assert outcome["data"] == struct.pack("<2i", 0, 0)  # the game-over header
    if kind in {"hijack", "silent", "half"}:
        assert outcome["data"] == b""
    # The game was still going when the intruder came: it did not end early.
    assert record.duration > 0.5


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        (tmp_path / "input.txt").write_text("1\na\n2\nb\n3\nc\n4\nd\n1\n")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "battlesheep",
                "serve",
                "--players",
                "input.txt",
                "--port",
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=tmp_path,
        )
    assert proc.returncode == 2 and "cannot listen" in proc.stderr


async def test_player_that_cannot_start(tmp_path: Path) -> None:
    from arena.config import ServerConfig
    from arena.players import ProcessPlayer
    from arena.server import GamePlan, play_single
    from tests.arena_support import TEAMS, template_players

    players = template_players(1, tmp_path, seed=32)
    players[2] = ProcessPlayer(
        "/nonexistent/player.exe", team=13, game=1, log_path=tmp_path / "seat3.log"
    )
    plan = GamePlan(game=1, seed=32, teams=TEAMS, players=players)
    started = time.monotonic()
    record, result = await play_single(plan, ServerConfig(time_limit=0.3, connect_timeout=20))
    assert time.monotonic() - started < 10  # not the connect timeout: it had ended
    check_game(record, result)
    others_clean(result, faulty=3)
    assert result.absent[2] >= 1
    assert "cannot start" in (tmp_path / "seat3.log").read_text()
