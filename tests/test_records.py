"""One record type: results files, replay files and the viewer read the same models.

A structurally bad replay is refused in one place (``arena.replay.parse_replay``)
with one line naming what is wrong, the same way by ``battlesheep replay``, by
``replay --open`` and by the viewer's upload; output piped into ``head`` ends
without a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
from websockets.asyncio.client import connect

from arena.replay import Replay, parse_replay, read_replay, replay_of, write_replay
from arena.results import (
    OPTIONAL_KEYS,
    RESULT_KEYS,
    GameResult,
    ResultsError,
    append_result,
    read_results,
    result_line,
)
from arena.viewer.server import ViewerServer
from battlesheep.cli import main
from tests.arena_support import play_template_game
from tests.cli_support import battlesheep

Raw = dict[str, Any]


def empty_replay() -> Raw:
    """A valid game-1 replay of a game with no turn: all free cells, nothing placed."""
    board = [[0] * 12 for _ in range(12)]
    return {
        "format": "battlesheep-replay",
        "version": 1,
        "game": 1,
        "seed": 3,
        "teams": [11, 12, 13, 14],
        "size": 12,
        "time_limit": 1.0,
        "initial_map": board,
        "events": [
            {
                "seat": 1,
                "kind": "skip",
                "outcome": "late",
                "x": -1,
                "y": -1,
                "split": 0,
                "dir": 0,
                "elapsed": None,
                "reply": None,
            }
        ],
        "final_map": board,
        "final_sheep": board,
        "scores": [0, 0, 0, 0],
        "exact_scores": [0.0] * 4,
        "results": [0.0] * 4,
        "points": [2.75] * 4,
        "stalled": True,
    }


def _set(path: str, value: Any) -> Callable[[Raw], None]:
    def change(raw: Raw) -> None:
        *parents, last = path.split(".")
        target: Any = raw
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return change


_DELETE = object()

# (case, change to a valid replay's map, the one line that must be said about it)
BAD_FIELDS: list[tuple[str, Callable[[Raw], None], str]] = [
    ("no events", _set("events", _DELETE), "bad replay: events: missing"),
    ("no teams", _set("teams", _DELETE), "bad replay: teams: missing"),
    ("event without x", _set("events.0.x", _DELETE), "bad replay: events[0].x: missing"),
    (
        "x not a number",
        _set("events.0.x", "3"),
        "bad replay: events[0].x: Input should be a valid integer",
    ),
    ("teams not a list", _set("teams", "11,12"), "bad replay: teams: Input should be a valid list"),
    ("game a bool", _set("game", True), "bad replay: game: Input should be a valid integer"),
    (
        "events not a list",
        _set("events", {"seat": 1}),
        "bad replay: events: Input should be a valid list",
    ),
    ("setting 7", _set("game", 7), "bad replay: game: the setting must be 1, 2, 3 or 4, not 7"),
    ("size of game 2", _set("size", 15), "bad replay: size: game 1 is played on 12x12, not 15"),
    (
        "three teams",
        _set("teams", [1, 2, 3]),
        "bad replay: teams: List should have at least 4 items after validation, not 3",
    ),
    ("short map", _set("initial_map", [[0] * 12] * 11), "bad replay: initial_map: not 12x12"),
    (
        "unknown kind",
        _set("events.0.kind", "jump"),
        "bad replay: events[0].kind: Input should be 'place', 'move', 'pass' or 'skip'",
    ),
    (
        "unknown outcome",
        _set("events.0.outcome", "slow"),
        "bad replay: events[0].outcome: Input should be 'ok', 'late', 'illegal', 'absent' "
        "or 'disconnect'",
    ),
    (
        "cell off the board",
        lambda raw: raw["events"][0].update(kind="place", outcome="ok", x=12, y=0),
        "bad replay: events[0]: (12,0) is off the 12x12 board",
    ),
    ("unknown key", _set("comment", "hi"), "bad replay: comment: Extra inputs are not permitted"),
    ("other format", _set("format", "chess"), "is not a battlesheep replay"),
    ("version 2", _set("version", 2), "replay version 2 is not 1"),
]


def _packed(raw: Raw) -> bytes:
    data: bytes = msgpack.packb(raw, use_bin_type=True)
    return data


def bad_files() -> list[tuple[str, bytes, str]]:
    cases = []
    for case, change, message in BAD_FIELDS:
        raw = empty_replay()
        change(raw)
        cases.append((case, _packed(raw), message))
    whole = _packed(empty_replay())
    cases += [
        (
            "truncated msgpack",
            whole[:-10],
            "is not a msgpack replay: Unpack failed: incomplete input",
        ),
        ("a list, not a map", _packed([1, 2, 3]), "is not a battlesheep replay"),  # type: ignore[arg-type]
        ("empty file", b"", "is not a msgpack replay: Unpack failed: incomplete input"),
    ]
    return cases


BAD = bad_files()


def expected_line(message: str, name: str = "bad.msgpack") -> str:
    sep = " " if message.startswith("is not") else ": "
    return f"{name}{sep}{message}"


def test_the_valid_base_reads_and_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "good.msgpack"
    path.write_bytes(_packed(empty_replay()))
    replay = read_replay(path)
    assert replay.game == 1 and replay.events[0].kind == "skip"
    assert main(["replay", str(path), "--no-boards"]) == 0
    assert "points: 1=2.75" in capsys.readouterr().out


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_replay_is_one_line_and_exit_2(
    data: bytes,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.msgpack").write_bytes(data)
    line = f"battlesheep: error: {expected_line(message)}\n"
    assert main(["replay", "bad.msgpack"]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", line)
    assert main(["replay", "bad.msgpack", "--open", "--no-browser", "--http", "127.0.0.1:0"]) == 2
    assert capsys.readouterr() == ("", line)


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
async def test_bad_replay_is_refused_by_the_viewer_upload(data: bytes, message: str) -> None:
    async with ViewerServer() as viewer:
        url = f"ws://127.0.0.1:{viewer.port}/upload?name=bad.msgpack"
        async with connect(url) as ws:
            await ws.send(data)
            replies = [json.loads(m) async for m in ws]
    assert replies == [{"type": "error", "message": expected_line(message)}]


def test_a_bad_replay_through_the_real_command(tmp_path: Path) -> None:
    (tmp_path / "bad.msgpack").write_bytes(BAD[0][1])
    proc = battlesheep("replay", "bad.msgpack", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == f"battlesheep: error: {expected_line(BAD[0][2])}\n"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[GameResult, Path, Replay]:
    import asyncio

    where = tmp_path_factory.mktemp("recorded")
    record, result = asyncio.run(play_template_game(2, where, seed=6))
    path = write_replay(where / "game.msgpack", record, result)
    return result, path, replay_of(record, result)


def test_replay_file_round_trip(recorded: tuple[GameResult, Path, Replay]) -> None:
    result, path, replay = recorded
    assert read_replay(path) == replay
    assert parse_replay(path.read_bytes(), "x") == replay
    assert replay.scores == result.scores and replay.points == result.points


def test_results_file_round_trip(recorded: tuple[GameResult, Path, Replay], tmp_path: Path) -> None:
    result = recorded[0]
    path = tmp_path / "results.jsonl"
    append_result(path, result)
    tournament = result.with_entrants(["a", "b", "a", "b"], [0, 1, 0, 1])
    append_result(path, tournament)
    lines = path.read_text().splitlines()
    assert list(json.loads(lines[0])) == list(RESULT_KEYS)  # no entrants outside tournaments
    assert list(json.loads(lines[1])) == [*RESULT_KEYS, "entrants", "seats"]
    assert json.loads(lines[0]) == result.model_dump(mode="json", exclude=set(OPTIONAL_KEYS))
    assert read_results(path) == [result, tournament]
    assert result_line(read_results(path)[1]) == lines[1]
    with pytest.raises(ValueError, match="frozen"):
        result.index = 3  # type: ignore[misc]


def test_results_file_bad_lines_are_named(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"index": 0}\n')
    with pytest.raises(ResultsError, match=r"results.jsonl, line 1: not a game result: game: "):
        read_results(path)
    path.write_text("\n{not json\n")
    with pytest.raises(ResultsError, match=r"results.jsonl, line 2: not JSON"):
        read_results(path)


@pytest.mark.parametrize("command", ["replay", "schema"])
def test_output_piped_into_head_ends_quietly(
    command: str, recorded: tuple[GameResult, Path, Replay]
) -> None:
    args = f"replay {recorded[1]}" if command == "replay" else "schema"
    proc = subprocess.run(
        f"{sys.executable} -m battlesheep {args} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0  # head's status
    assert proc.stdout.count("\n") == 1
    assert proc.stderr == ""
