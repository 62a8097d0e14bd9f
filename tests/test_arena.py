"""The local match server: full games over real TCP with course-template players."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from arena.config import command_argv, parse_input_text
from arena.replay import final_state, read_replay, write_replay
from arena.results import GameResult, course_lines, read_results
from state.scoring import ranked_results, tournament_points
from state.settings import get_setting
from strategies.base import ConfigError
from tests.arena_support import TEAMS, TEMPLATE, check_game, play_template_game, seat_log
from tests.boards import read_vector, rows_to_map
from tests.cli_support import battlesheep

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("game", [1, 2, 3, 4])
async def test_full_game_of_each_setting(game: int, tmp_path: Path) -> None:
    record, result = await play_template_game(game, tmp_path, seed=game)
    check_game(record, result)
    assert result.game == game and result.teams == TEAMS
    for key in ("illegal", "late", "stale", "disconnects", "absent", "protocol_errors"):
        assert getattr(result, key) == [0, 0, 0, 0], key
    assert result.moves > 20
    assert sum(result.seat_moves) == result.moves and min(result.seat_moves) > 0
    # no turn was lost, so every turn is a move or a pass; turns go round in seat
    # order, so the seats' turn counts differ by at most the unfinished last round
    assert result.turns == result.moves + sum(result.passes)
    per_seat = [m + p for m, p in zip(result.seat_moves, result.passes, strict=True)]
    assert max(per_seat) - min(per_seat) <= 1, per_seat
    size = 15 if game == 2 else 12
    assert len(result.final_map) == size and len(result.final_map[0]) == size
    for seat in range(1, 5):
        log = seat_log(tmp_path, seat)
        assert f"is player {seat}" in log
        assert "game over after" in log  # the game-over header reached everyone
        # A seat without a legal move is sent nothing; game 3 hides others' counts.
        assert "BOARD WITHOUT MOVE" not in log
        assert "SAW HIDDEN COUNT" not in log
    # Each seat was asked exactly when it had a move: boards = its moves here.
    for seat in range(1, 5):
        moves = sum(1 for e in record.events if e.seat == seat and e.kind == "move")
        assert f"game over after {moves} boards" in seat_log(tmp_path, seat)


async def test_same_seed_same_board(tmp_path: Path) -> None:
    a, _ = await play_template_game(1, tmp_path / "a", seed=5)
    b, _ = await play_template_game(1, tmp_path / "b", seed=5)
    assert a.initial_map == b.initial_map
    # Same players' seeds too: the whole game is the same.
    assert a.state.owner == b.state.owner


async def test_replay_round_trip(tmp_path: Path) -> None:
    record, result = await play_template_game(3, tmp_path, seed=9)
    path = write_replay(tmp_path / "game.msgpack", record, result)
    replay = read_replay(path)
    state = final_state(replay)
    assert state.wire_map() == result.final_map
    assert state.wire_sheep() == result.final_sheep  # true counts, game 3 included
    assert state.scores() == result.scores == replay.scores
    assert replay.points == result.points
    assert len(replay.events) == len(record.events)
    assert all(e.elapsed is not None for e in replay.events if e.kind == "move")


def test_replay_command_prints_the_game(tmp_path: Path) -> None:
    # A hand-made two-event replay is enough to see the command work end to end.
    import asyncio

    record, result = asyncio.run(play_template_game(1, tmp_path, seed=4))
    path = write_replay(tmp_path / "g.msgpack", record, result)
    out = battlesheep("replay", str(path), check=True).stdout
    assert "seat 1 (O, team 11) places at" in out
    assert " moves " in out
    assert out.strip().splitlines()[-2].startswith("final scores: 1=" + str(result.scores[0]))
    bad = tmp_path / "bad.msgpack"
    bad.write_bytes(b"\x93\x01\x02\x03")
    proc = battlesheep("replay", str(bad))
    assert proc.returncode == 2 and "not a battlesheep replay" in proc.stderr


def _input_txt(tmp_path: Path, game_line: str = "1") -> Path:
    lines = []
    for team in TEAMS:
        lines += [str(team), f"{TEMPLATE.name} {team} {{port}} --game {{game}} --seed {team}"]
    path = tmp_path / "input.txt"
    path.write_text("\n".join([*lines, game_line]) + "\n")
    (tmp_path / TEMPLATE.name).write_text(TEMPLATE.read_text())
    return path


def test_serve_command_the_course_way(tmp_path: Path) -> None:
    input_txt = _input_txt(tmp_path, "2")
    results = tmp_path / "results.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "battlesheep",
            "serve",
            "--players",
            str(input_txt),
            "--port",
            "0",
            "--games",
            "2",
            "--time-limit",
            "0.5",
            "--seed",
            "7",
            "--results",
            str(results),
            "--record",
            str(tmp_path / "rec"),
            "--player-logs",
            str(tmp_path / "logs"),
            "--game",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    rows = read_results(results)
    assert [r.seed for r in rows] == [7, 8]
    for row in rows:
        assert row.game == 4  # --game overrides the 9th line
        assert row.teams == TEAMS
        for seat, team in enumerate(TEAMS, start=1):
            assert f"player {seat}=team {team} : {row.results[seat - 1]:g}" in out
        for key in ("final_map", "scores", "exact_scores", "points", "illegal", "late"):
            assert len(getattr(row, key)) in (4, 12)
        assert row.disconnects == [0, 0, 0, 0]
    assert sum(1 for line in out if line.startswith("winner")) == 2
    # Player output goes to per-seat logs, never to the server's output.
    assert "placed at" not in proc.stdout + proc.stderr
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert logs[0] == "game1-seat1-team11.log" and len(logs) == 8
    assert "placed at" in (tmp_path / "logs" / "game2-seat3-team13.log").read_text()
    replays = sorted((tmp_path / "rec").iterdir())
    assert len(replays) == 2
    assert final_state(read_replay(replays[1])).scores() == rows[1].scores


def test_embedded_default_match_plays_within_a_short_limit(tmp_path: Path) -> None:
    """What `make run` plays: the agent is told the server's limit, so it is never late."""
    results = tmp_path / "results.jsonl"
    proc = battlesheep(
        *("serve", "--port", "0", "--time-limit", "0.4", "--seed", "3"),
        *("--results", str(results)),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    (row,) = read_results(results)
    assert row.game == 1
    assert row.late == [0, 0, 0, 0] and row.illegal == [0, 0, 0, 0]
    assert sum(row.points) == pytest.approx(11)
    assert "player 1 is the project's agent" in proc.stdout


def test_serve_reports_bad_input_by_line(tmp_path: Path) -> None:
    path = tmp_path / "input.txt"
    path.write_text("11\nplayer.exe\nxx\nplayer.exe\n13\na\n14\nb\n1\n")
    proc = battlesheep("serve", "--players", str(path), "--port", "0")
    assert proc.returncode == 2
    assert "line 3" in proc.stderr and "'xx'" in proc.stderr


def test_input_file_parsing() -> None:
    text = "11\n./a.exe\n\n12\npython b.py {port}\n13\nc\n14\nd\n3\n"
    parsed = parse_input_text(text)
    assert parsed.teams == TEAMS and parsed.game == 3
    assert parsed.players[1].command == "python b.py {port}"
    assert parse_input_text("1\na\n2\nb\n3\nc\n4\nd\n").game is None
    with pytest.raises(ConfigError, match="line 9: game setting"):
        parse_input_text("1\na\n2\nb\n3\nc\n4\nd\n5\n")
    with pytest.raises(ConfigError, match="seat 1 and seat 3"):
        parse_input_text("1\na\n2\nb\n1\nc\n4\nd\n1\n")
    with pytest.raises(ConfigError, match="7 non-blank lines"):
        parse_input_text("1\na\n2\nb\n3\nc\n4\n")
    argv = command_argv("player.py --port {port} --team {team} {x}", {"port": 5, "team": 9})
    assert argv == [sys.executable, "player.py", "--port", "5", "--team", "9", "{x}"]


def course_result(game: int, ranked: list[float]) -> GameResult:
    """Just what ``course_lines`` reads of a result."""
    fields: dict[str, Any] = {"game": game, "teams": TEAMS, "results": ranked}
    return GameResult.model_construct(**fields)


def test_scores_and_points_from_the_course_vector() -> None:
    from state.geometry import Geometry
    from state.scoring import flood_scores

    _, rows = read_vector("figure_terminal_scores.txt")
    board = rows_to_map(rows)
    n = len(board)
    geometry = Geometry(n, [board[x][y] != -1 for x in range(n) for y in range(n)])
    owner = [board[x][y] for x in range(n) for y in range(n)]
    scores = flood_scores(geometry, owner)
    assert scores == [28, 14, 20, 28]
    ranked1 = ranked_results(get_setting(1), scores)
    result = course_result(1, ranked1)
    assert tournament_points(ranked1) == [4.0, 1.0, 2.0, 4.0]
    assert course_lines(result) == [
        "player 1=team 11 : 28",
        "player 2=team 12 : 14",
        "player 3=team 13 : 20",
        "player 4=team 14 : 28",
        "winners (tie): player 1=team 11, player 4=team 14 : 28",
    ]
    # Game 4: pairs 1 & 3 (24) against 2 & 4 (21).
    ranked = ranked_results(get_setting(4), scores)
    assert ranked == [24.0, 21.0, 24.0, 21.0]
    assert tournament_points(ranked) == [4.0, 1.5, 4.0, 1.5]
    lines = course_lines(course_result(4, ranked))
    assert lines[-1] == "winner: players 1 & 3=teams 11 & 13 : 24"


@pytest.mark.parametrize(
    ("scores", "points", "winner"),
    [
        ([10, 20, 30, 40], [1, 2, 3, 5], "winner: player 4=team 14 : 40"),
        ([7, 7, 7, 7], [2.75] * 4, "winners (tie): player 1=team 11, player 2=team 12, "),
        ([9, 30, 9, 1], [2.5, 5, 2.5, 1], "winner: player 2=team 12 : 30"),
        ([5, 5, 5, 9], [2, 2, 2, 5], "winner: player 4=team 14 : 9"),
    ],
)
def test_hand_built_ties(scores: list[int], points: list[float], winner: str) -> None:
    ranked = ranked_results(get_setting(1), scores)
    assert tournament_points(ranked) == points
    assert course_lines(course_result(1, ranked))[-1].startswith(winner)
