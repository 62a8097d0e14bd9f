"""The arena against a player compiled from the course's C++ template shape.

``course_template_player.cpp`` is built with g++ and started by ``battlesheep
serve`` from a course-format input.txt, alone and mixed with the Python
template player and a built-in sample. The player checks on each board that its
previous reply was applied as the rules say and logs ``MISMATCH`` if not; a
fake server pins its side (framing, direction table, border rule) to RULES.md,
so the two checks do not share a mistake.
"""

from __future__ import annotations

import itertools
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.replay import Replay, read_replay
from arena.results import GameResult, read_results
from tests.arena_support import TEMPLATE
from tests.boards import shut_in_before_first_turn
from tests.cli_support import battlesheep

SOURCE = Path(__file__).with_name("course_template_player.cpp")
# RULES.md section 2: dir -> (dx on the first index, dy on the second).
DIRS = {
    1: (-1, -1),
    2: (0, -1),
    3: (1, -1),
    4: (-1, 0),
    6: (1, 0),
    7: (-1, 1),
    8: (0, 1),
    9: (1, 1),
}
PLACE_POINTS = (5.0, 3.0, 2.0, 1.0)


@pytest.fixture(scope="module")
def cpp_player(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gxx = shutil.which("g++")
    if gxx is None:
        # Every machine of this project has g++: a skip here would hide a broken CI image.
        pytest.fail("g++ not found on PATH: it is needed to build tests/course_template_player.cpp")
    binary = tmp_path_factory.mktemp("cpp") / "course_template_player"
    proc = subprocess.run(
        [gxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(binary), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    return binary


# ---- the player alone, against a fake server --------------------------------


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        assert chunk, f"player closed the connection after {len(data)} of {n} bytes"
        data += chunk
    return data


def _recv_ints(conn: socket.socket, count: int) -> list[int]:
    return list(struct.unpack(f"<{count}i", _recv_exact(conn, 4 * count)))


def _send_cut(conn: socket.socket, data: bytes, cuts: tuple[int, ...]) -> None:
    """Send in pieces cut inside ints, paused so they arrive as separate reads."""
    bounds = [0, *cuts, len(data)]
    for a, b in itertools.pairwise(bounds):
        conn.sendall(data[a:b])
        time.sleep(0.01)


def _flat(board: list[list[int]]) -> list[int]:
    return [c for row in board for c in row]  # x outer, as on the wire


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def late_listener() -> Iterator[tuple[int, list[socket.socket]]]:
    """A free port, and a list to put the listener in once the test opens it."""
    holder: list[socket.socket] = []
    yield _free_port(), holder
    for s in holder:
        s.close()


def _listen_on(port: int, holder: list[socket.socket]) -> socket.socket:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(1)
    server.settimeout(10)
    holder.append(server)
    return server


def test_cpp_player_against_a_fake_server(
    cpp_player: Path, late_listener: tuple[int, list[socket.socket]]
) -> None:
    """Connect retry, split frames, the 4-neighbour border rule and the keypad table."""
    port, holder = late_listener
    n = 12
    player = subprocess.Popen(
        [str(cpp_player), "77", str(port), "--game", "1", "--seed", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        time.sleep(0.5)  # the player starts before anyone listens, as in the course
        server = _listen_on(port, holder)
        conn, _ = server.accept()
        conn.settimeout(10)
        with conn:
            assert _recv_ints(conn, 1) == [77]

            # A 5x5 field at x 3..7, y 3..7 without its corners, its edge taken by
            # earlier players except (7, 5): the one free border cell by the
            # 4-neighbour rule. The 8-neighbour rule would also allow the interior
            # cells next to a missing corner, "any free cell" the whole interior.
            board = [[-1] * n for _ in range(n)]
            for x in range(3, 8):
                for y in range(3, 8):
                    edge = x in (3, 7) or y in (3, 7)
                    board[x][y] = 2 if edge else 0
            for x, y in ((3, 3), (3, 7), (7, 3), (7, 7)):
                board[x][y] = -1
            board[7][5] = 0
            frame = struct.pack(f"<3i{n * n}i", 1, 100, 1, *_flat(board))
            _send_cut(conn, frame, (1, 6, 11, 301))
            assert _recv_ints(conn, 4) == [1, 100, 7, 5]

            # One board per direction: the own cell (5, 5) has exactly one free
            # neighbour, in that direction, so the reply can only name it.
            for k, (d, (dx, dy)) in enumerate(DIRS.items()):
                owner = [[-1] * n for _ in range(n)]
                sheep = [[0] * n for _ in range(n)]
                owner[5][5], sheep[5][5] = 1, 16
                for step in (1, 2):  # room to slide further than one cell
                    owner[5 + step * dx][5 + step * dy] = 0
                frame = struct.pack(f"<2i{2 * n * n}i", 1, 200 + k, *_flat(owner), *_flat(sheep))
                _send_cut(conn, frame, (3, 10, 599) if k % 2 else ())
                code, id_package, x, y, m, direction = _recv_ints(conn, 6)
                assert (code, id_package, x, y) == (1, 200 + k, 5, 5)
                assert 1 <= m <= 15
                assert direction == d, f"wanted dir {d} for (dx, dy) = {(dx, dy)}"

            # A board without a legal move (one sheep per cell): any reply, same id.
            owner = [[-1] * n for _ in range(n)]
            sheep = [[0] * n for _ in range(n)]
            owner[5][5], sheep[5][5], owner[5][6] = 1, 1, 0
            conn.sendall(struct.pack(f"<2i{2 * n * n}i", 1, 300, *_flat(owner), *_flat(sheep)))
            code, id_package = _recv_ints(conn, 6)[:2]
            assert (code, id_package) == (1, 300)

            conn.sendall(struct.pack("<2i", 0, 301))
            out, _ = player.communicate(timeout=10)
    finally:
        if player.poll() is None:
            player.kill()
            player.wait()
    assert player.returncode == 0, out
    assert "team 77 is player 1 placed at" in out
    assert "BOARD WITHOUT MOVE" in out
    assert "game over after 9 boards" in out


def test_cpp_player_stops_on_a_game_over_instead_of_a_map(
    cpp_player: Path, late_listener: tuple[int, list[socket.socket]]
) -> None:
    """What an unknown team id gets: the header alone, code 0."""
    port, holder = late_listener
    server = _listen_on(port, holder)
    player = subprocess.Popen([str(cpp_player), "5", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        conn, _ = server.accept()
        with conn:
            assert _recv_ints(conn, 1) == [5]
            conn.sendall(struct.pack("<2i", 0, 1))
            out, _ = player.communicate(timeout=10)
    finally:
        if player.poll() is None:
            player.kill()
            player.wait()
    assert player.returncode == 0
    assert "game over before the initial map" in out


# ---- the player through `battlesheep serve` ----------------------------------


def _serve(
    tmp_path: Path, commands: list[tuple[int, str]], game: int, time_limit: float
) -> tuple[subprocess.CompletedProcess[str], GameResult, Replay]:
    """The course's way: input.txt with four team/command pairs and the setting."""
    lines = [line for team, command in commands for line in (str(team), command)]
    (tmp_path / "input.txt").write_text("\n".join([*lines, str(game)]) + "\n")
    results, records, cwd = tmp_path / "results.jsonl", tmp_path / "rec", tmp_path / "cwd"
    cwd.mkdir()  # not input.txt's directory: relative player paths must still resolve
    proc = battlesheep(
        *("serve", "--players", str(tmp_path / "input.txt")),
        *("--port", "0", "--time-limit", str(time_limit), "--seed", str(10 + game)),
        *("--results", str(results), "--record", str(records)),
        *("--player-logs", str(tmp_path / "logs")),
        timeout=60,
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (row,) = read_results(results)
    (replay_file,) = records.iterdir()
    return proc, row, read_replay(replay_file)


def _region_scores(final_map: list[list[int]]) -> list[float]:
    """sum(size ** 1.25) over 4-connected regions, per player, computed here from scratch."""
    n = len(final_map)
    seen: set[tuple[int, int]] = set()
    sums = [0.0] * 4
    for x0 in range(n):
        for y0 in range(n):
            player = final_map[x0][y0]
            if player < 1 or (x0, y0) in seen:
                continue
            stack, size = [(x0, y0)], 0
            seen.add((x0, y0))
            while stack:
                x, y = stack.pop()
                size += 1
                for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                    inside = 0 <= nx < n and 0 <= ny < n
                    if inside and (nx, ny) not in seen and final_map[nx][ny] == player:
                        seen.add((nx, ny))
                        stack.append((nx, ny))
            sums[player - 1] += size**1.25
    return sums


def _check_row(row: GameResult, replay: Replay, game: int, teams: list[int]) -> None:
    size, sheep = (15, 32) if game == 2 else (12, 16)
    assert row.game == game and row.teams == teams
    for key in ("illegal", "late", "stale", "disconnects", "absent", "protocol_errors"):
        assert getattr(row, key) == [0, 0, 0, 0], key
    assert not row.stalled
    final_map, final_sheep = row.final_map, row.final_sheep
    assert len(final_map) == size and all(len(col) == size for col in final_map)
    assert sum(map(sum, final_sheep)) == 4 * sheep
    exact = _region_scores(final_map)
    assert row.exact_scores == pytest.approx(exact)
    assert row.scores == [round(s) for s in exact]
    scores = row.scores
    expected = [(scores[i] + scores[(i + 2) % 4]) / 2 for i in range(4)] if game == 4 else scores
    assert row.results == expected
    for seat, result in enumerate(expected):
        better = sum(1 for other in expected if other > result)
        tied = sum(1 for other in expected if other == result)
        assert row.ranks[seat] == better + 1
        assert row.points[seat] == sum(PLACE_POINTS[better : better + tied]) / tied
    assert sum(row.points) == pytest.approx(11)
    moves = _moves_per_seat(replay)
    for seat, made in enumerate(moves, start=1):
        assert made > 0 or shut_in_before_first_turn(replay, seat), (seat, moves)
    assert sum(moves) == row.moves
    assert row.seat_moves == moves


def _moves_per_seat(replay: Replay) -> list[int]:
    moves = [0, 0, 0, 0]
    for event in replay.events:
        if event.kind == "move" and event.outcome == "ok":
            moves[event.seat - 1] += 1
    return moves


def _check_template_log(tmp_path: Path, seat: int, team: int, moves: int) -> None:
    log = (tmp_path / "logs" / f"game1-seat{seat}-team{team}.log").read_text()
    assert f"team {team} is player {seat} placed at" in log, log
    # Sent a board exactly when it had a move, and the game-over header at the end.
    assert f"game over after {moves} boards" in log, log
    for bad in ("MISMATCH", "BOARD WITHOUT MOVE", "SAW HIDDEN COUNT", "connection lost"):
        assert bad not in log, log


def _install(cpp_player: Path, tmp_path: Path) -> str:
    """The binary next to input.txt, named as the course's input.txt names its players."""
    (tmp_path / "sample").mkdir()
    shutil.copy2(cpp_player, tmp_path / "sample" / cpp_player.name)
    return f"./sample/{cpp_player.name}"


@pytest.mark.parametrize("game", [1, 2])
def test_four_cpp_players_via_serve(cpp_player: Path, tmp_path: Path, game: int) -> None:
    program = _install(cpp_player, tmp_path)
    teams = [21, 22, 23, 24]
    commands = [(t, f"{program} {{team}} {{port}} --game {{game}} --seed {t}") for t in teams]
    proc, row, replay = _serve(tmp_path, commands, game, 0.5)
    _check_row(row, replay, game, teams)
    out = proc.stdout.splitlines()
    for seat, team in enumerate(teams, start=1):
        assert f"player {seat}=team {team} : {row.results[seat - 1]:g}" in out
    for seat, (team, moves) in enumerate(zip(teams, _moves_per_seat(replay), strict=True), 1):
        _check_template_log(tmp_path, seat, team, moves)


@pytest.mark.parametrize("game", [3, 4])
def test_cpp_python_template_and_sample_mixed(cpp_player: Path, tmp_path: Path, game: int) -> None:
    """Game 4 pairs the two C++ seats (1 & 3) against the two Python ones (2 & 4)."""
    program = _install(cpp_player, tmp_path)
    python = shlex.quote(sys.executable)
    commands = [
        (31, f"{program} {{team}} {{port}} --game {{game}} --seed 1"),
        (32, f"{shlex.quote(str(TEMPLATE))} {{team}} {{port}} --game {{game}} --seed 2"),
        (33, f"{program} {{team}} {{port}} --game {{game}} --seed 3"),
        (
            34,
            f"{python} -m battlesheep sample random --game {{game}} --port {{port}}"
            " --team {team} --time-limit {time_limit}",
        ),
    ]
    # Python players start slowly and share the machine: a looser limit than the C++-only games.
    _, row, replay = _serve(tmp_path, commands, game, 1.0)
    _check_row(row, replay, game, [31, 32, 33, 34])
    moves = _moves_per_seat(replay)
    for seat in (1, 2, 3):
        _check_template_log(tmp_path, seat, 30 + seat, moves[seat - 1])
