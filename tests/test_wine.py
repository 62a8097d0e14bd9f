"""Windows players on Linux: the course template player cross-compiled with MinGW-w64 and
started by ``battlesheep serve`` through Wine, from an input.txt written on Windows.

Without Wine or MinGW-w64 the tests that need them are skipped with the reason
(pytest -ra prints it); in CI (``CI=true``, where .ci/run installs both) they fail
instead. 32-bit Wine (Debian's wine32:i386) is never required: the 32-bit build
plays where it is installed and is refused before the game where it is not.
"""

from __future__ import annotations

import os
import shlex
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from arena import wine
from arena.config import command_argv, read_input_file
from arena.replay import read_replay
from arena.results import read_results
from tests.cli_support import battlesheep
from tests.test_arena_cpp import _check_row, _check_template_log, _moves_per_seat

SOURCE = Path(__file__).with_name("course_template_player.cpp")
PYTHON = shlex.quote(sys.executable)
AGENT = (
    f"{PYTHON} -m battlesheep play --game {{game}} --host {{host}} --port {{port}}"
    " --team {team} --time-limit {time_limit}"
)
TEAMS = [41, 42, 43, 44]
FLAGS = ("-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-static")
"""A console program that needs no MinGW DLLs next to it."""


def _require(*tools: str) -> str:
    """The first of ``tools`` on PATH; skip (fail in CI) when none is."""
    for tool in tools:
        path = shutil.which(tool)
        if path:
            return path
    reason = f"{' or '.join(tools)} not on PATH (Debian: apt-get install wine wine64 mingw-w64)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}: .ci/run installs them, CI must not skip these tests")
    pytest.skip(reason)


def _build(compiler: str, out: Path) -> Path:
    gxx = _require(compiler)
    proc = subprocess.run(
        [gxx, *FLAGS, "-o", str(out), str(SOURCE), "-lws2_32"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def exe64(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build("x86_64-w64-mingw32-g++", tmp_path_factory.mktemp("mingw") / "player.exe")


@pytest.fixture(scope="module")
def exe32(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build("i686-w64-mingw32-g++", tmp_path_factory.mktemp("mingw32") / "player32.exe")


def _fake_pe(path: Path, magic: int) -> Path:
    """Just the headers of a Windows executable: DOS stub, PE signature, COFF, magic."""
    dos = bytearray(64)
    dos[:2] = b"MZ"
    struct.pack_into("<I", dos, 0x3C, 64)
    path.write_bytes(bytes(dos) + b"PE\0\0" + bytes(20) + struct.pack("<H", magic) + bytes(200))
    return path


def _windows_input(folder: Path, commands: list[str], game: int) -> Path:
    """input.txt as written on Windows: CRLF line ends, a BOM-less ANSI text file."""
    lines = [
        line for team, command in zip(TEAMS, commands, strict=True) for line in (str(team), command)
    ]
    path = folder / "input.txt"
    path.write_bytes(("\r\n".join([*lines, str(game)]) + "\r\n").encode())
    return path


def _serve(
    folder: Path, input_txt: Path, time_limit: float = 1.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    cwd = folder / "cwd"  # not input.txt's folder: its paths must still resolve
    cwd.mkdir(exist_ok=True)
    return battlesheep(
        *("serve", "--players", str(input_txt), "--port", "0"),
        *("--time-limit", str(time_limit), "--seed", "5"),
        *("--results", str(folder / "results.jsonl"), "--record", str(folder / "rec")),
        *("--player-logs", str(folder / "logs")),
        timeout=240,
        cwd=cwd,
        env=env,
    )


# ---- no tools needed: headers and paths ---------------------------------------


def test_pe_kind_reads_the_optional_header_magic(tmp_path: Path) -> None:
    assert wine.pe_kind(_fake_pe(tmp_path / "a.exe", 0x10B)) == "PE32"
    assert wine.pe_kind(_fake_pe(tmp_path / "no_extension", 0x20B)) == "PE32+"
    assert wine.pe_kind(_fake_pe(tmp_path / "rom.exe", 0x107)) is None
    (tmp_path / "script.exe").write_text("#!/bin/sh\necho MZ\n")
    assert wine.pe_kind(tmp_path / "script.exe") is None
    (tmp_path / "dos.exe").write_bytes(b"MZ" + bytes(100))  # MZ without a PE header
    assert wine.pe_kind(tmp_path / "dos.exe") is None
    assert wine.pe_kind(tmp_path / "missing.exe") is None


def test_windows_program_paths_resolve_next_to_input_txt(tmp_path: Path) -> None:
    (tmp_path / "sample").mkdir()
    exe = tmp_path / "sample" / "Sample_1.exe"
    exe.write_bytes(b"")
    (tmp_path / "Sample_2.exe").write_bytes(b"")
    values: dict[str, object] = {"port": 8887, "team": 7}
    for command in (r".\sample\Sample_1.exe {team} {port}", r"sample\Sample_1.exe {team} {port}"):
        assert command_argv(command, values, tmp_path) == [str(exe), "7", "8887"]
    quoted = r'".\sample\Sample_1.exe" "a b" c\d'
    assert command_argv(quoted, values, tmp_path) == [str(exe), "a b", r"c\d"]
    assert command_argv("Sample_2.exe 7", values, tmp_path) == [str(tmp_path / "Sample_2.exe"), "7"]
    # POSIX commands as before: ./ paths, a name on PATH, backslash escapes.
    assert command_argv("./sample/Sample_1.exe", values, tmp_path) == [str(exe)]
    assert command_argv("python3 -c 'x'", values, tmp_path) == ["python3", "-c", "x"]
    assert command_argv(r"my\ player --x", values, tmp_path) == ["my player", "--x"]


def test_crlf_input_txt_with_windows_paths(tmp_path: Path) -> None:
    commands = [r".\sample\Sample_1.exe", r"sample\Sample_2.exe", "Sample_3.exe", AGENT]
    players = read_input_file(_windows_input(tmp_path, commands, 2))
    assert players.game == 2 and players.teams == TEAMS
    assert [p.command for p in players.players] == commands


def test_serve_without_wine_refuses_a_windows_player_before_the_game(tmp_path: Path) -> None:
    (tmp_path / "sample").mkdir()
    _fake_pe(tmp_path / "sample" / "Sample_1.exe", 0x20B)
    commands = [r".\sample\Sample_1.exe {team} {port}", AGENT, AGENT, AGENT]
    proc = _serve(tmp_path, _windows_input(tmp_path, commands, 1), env={**os.environ, "PATH": ""})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("battlesheep: error: seat 1 (team 41): "), line
    assert "64-bit Windows program and Wine is not on PATH" in line
    assert "apt-get install wine wine64" in line and "brew install --cask wine-stable" in line
    assert not (tmp_path / "logs").exists() and not (tmp_path / "results.jsonl").exists()


# ---- MinGW-w64 builds under Wine ------------------------------------------------


def test_builds_are_recognised_by_their_header(exe64: Path, exe32: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "player"
    shutil.copy2(exe64, renamed)
    assert wine.pe_kind(exe64) == wine.pe_kind(renamed) == "PE32+"
    assert wine.pe_kind(exe32) == "PE32"
    assert wine.windows_program("player", tmp_path) is None  # a bare name: PATH, not cwd
    assert wine.windows_program("./player", tmp_path) == (str(tmp_path / "player"), "PE32+")


def _install(exe: Path, folder: Path) -> None:
    """The course kit's layout: players in sample/, one copy next to input.txt, and a
    shell script named like an executable (not PE: started as it is)."""
    (folder / "sample").mkdir()
    shutil.copy2(exe, folder / "sample" / "course_player.exe")
    shutil.copy2(exe, folder / "sample" / "course_player")  # no .exe: still PE
    shutil.copy2(exe, folder / "Player.exe")
    script = folder / "sample" / "greedy.exe"
    script.write_text(f'#!/bin/sh\nexec {PYTHON} -m battlesheep sample greedy "$@"\n')
    script.chmod(0o755)


SEATS = {
    1: [
        r".\sample\course_player.exe {team} {port} --game {game} --seed 1",
        AGENT,
        r"sample\greedy.exe --game {game} --port {port} --team {team} --time-limit {time_limit}",
        "Player.exe {team} {port} --game {game} --seed 4",
    ],
    2: [
        r"sample\course_player {team} {port} --game {game} --seed 1",
        AGENT,
        r".\sample\course_player.exe {team} {port} --game {game} --seed 3",
        f"{PYTHON} -m battlesheep sample random --game {{game}} --port {{port}} --team {{team}}",
    ],
}
WINE_SEATS = {1: (1, 4), 2: (1, 3)}


@pytest.mark.timeout(400)
@pytest.mark.parametrize("game", [1, 2])
def test_windows_players_play_a_full_game_via_serve(exe64: Path, tmp_path: Path, game: int) -> None:
    _require("wine", "wine64")
    _install(exe64, tmp_path)
    proc = _serve(tmp_path, _windows_input(tmp_path, SEATS[game], game))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (row,) = read_results(tmp_path / "results.jsonl")
    (replay_file,) = (tmp_path / "rec").iterdir()
    replay = read_replay(replay_file)
    _check_row(row, replay, game, TEAMS)
    moves = _moves_per_seat(replay)
    for seat in WINE_SEATS[game]:
        log = (tmp_path / "logs" / f"game1-seat{seat}-team{TEAMS[seat - 1]}.log").read_text()
        assert log.startswith("# arena: ") and "wine" in log.splitlines()[0], log
        _check_template_log(tmp_path, seat, TEAMS[seat - 1], moves[seat - 1])
    if game == 1:  # the script named greedy.exe ran as it is, not through Wine
        log = (tmp_path / "logs" / "game1-seat3-team43.log").read_text()
        assert "wine" not in log.splitlines()[0], log


@pytest.mark.timeout(400)
def test_32bit_build_plays_or_is_refused_with_what_to_install(exe32: Path, tmp_path: Path) -> None:
    wine_path = _require("wine", "wine64")
    (tmp_path / "sample").mkdir()
    shutil.copy2(exe32, tmp_path / "sample" / "Sample_1.exe")
    commands = [r".\sample\Sample_1.exe {team} {port} --game {game} --seed 1", *SEATS[2][1:]]
    commands[2] = commands[0].replace("--seed 1", "--seed 3")
    proc = _serve(tmp_path, _windows_input(tmp_path, commands, 1))
    wine.prepare_prefix(wine_path)  # serve made it already: this only reads the marker
    if wine.runs_32bit(wine_path, wine.prefix_path()):
        assert proc.returncode == 0, proc.stdout + proc.stderr
        (row,) = read_results(tmp_path / "results.jsonl")
        assert row.seat_moves[0] > 0 and row.illegal == [0, 0, 0, 0]
        return
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("battlesheep: error: seat 1 (team 41): "), line
    assert "32-bit Windows program" in line and "runs 64-bit programs only" in line, line
    assert "dpkg --add-architecture i386" in line and "apt-get install wine32:i386" in line
    assert not (tmp_path / "logs").exists() and not (tmp_path / "results.jsonl").exists()


def test_wine_check_reports_what_runs(exe64: Path, tmp_path: Path) -> None:
    _require("wine", "wine64")
    script = tmp_path / "script.exe"
    script.write_text("#!/bin/sh\n")
    proc = battlesheep("wine-check", str(exe64), str(script), timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert out.startswith("wine: ") and f"prefix: {wine.prefix_path()} " in out
    assert "a console program starts in " in out and "32-bit programs: " in out
    assert f"{exe64}: PE32+, runs through " in out
    assert f"{script}: not a Windows executable (started as it is)" in out
