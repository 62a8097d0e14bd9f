"""``battlesheep serve`` hardening: signals, addresses, counts, logs, absent seats, viewer uploads.

Real subprocesses and real sockets on 127.0.0.1 ([::1] only where the machine
has an IPv6 loopback); every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from arena.replay import ReplayError
from arena.results import read_results
from arena.viewer import server as viewer_server
from arena.viewer.server import MAX_REPLAY_BYTES, ViewerServer
from tests.arena_support import TEMPLATE, check_game, play_template_game, template_command
from tests.cli_support import BATTLESHEEP, alive, eventually_dead

ROOT = Path(__file__).resolve().parent.parent


class Serve:
    """A ``battlesheep serve`` subprocess whose stderr is read line by line as it comes."""

    def __init__(self, args: list[str], cwd: Path, tmp: Path | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if tmp is not None:  # where serve's temporary directories go
            tmp.mkdir(exist_ok=True)
            env["TMPDIR"] = str(tmp)
        self.proc = subprocess.Popen(
            [*BATTLESHEEP, "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=env,
        )
        self.lines: list[str] = []
        self.out: list[str] = []
        self._changed = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stderr, self.lines), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: IO[str] | None, lines: list[str]) -> None:
        assert stream is not None
        for line in stream:
            with self._changed:
                lines.append(line)
                self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """The first stderr line matching ``pattern``, waiting for it at most ``timeout`` s."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        with self._changed:
            while True:
                for line in self.lines:
                    if match := regex.search(line):
                        return match
                remaining = deadline - time.monotonic()
                ended = self.proc.poll() is not None and not self._readers[0].is_alive()
                if remaining <= 0 or ended:
                    raise AssertionError(f"no {pattern!r} in serve's stderr:\n{self.stderr}")
                self._changed.wait(min(remaining, 0.2))

    def port(self) -> int:
        return int(self.wait_for(r"listening on tcp://\S+:(\d+)").group(1))

    def finish(self, timeout: float = 60.0) -> tuple[int, str]:
        """(exit code, stdout) once serve has ended by itself."""
        code = self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(10)
        return code, "".join(self.out)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def serves() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for serve in started:
        serve.kill()


def input_txt(tmp_path: Path, commands: list[str], game: int = 1) -> Path:
    """The course's input.txt: team ids 11..14 and their commands, then the setting."""
    lines: list[str] = []
    for team, command in zip(range(11, 15), commands, strict=True):
        lines += [str(team), command]
    path = tmp_path / "input.txt"
    path.write_text("\n".join([*lines, str(game)]) + "\n")
    (tmp_path / TEMPLATE.name).write_text(TEMPLATE.read_text())
    return path


def template_line(team: int, extra: str = "") -> str:
    return f"{sys.executable} {TEMPLATE.name} {team} {{port}} --game {{game}} --seed {team}{extra}"


def has_ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


# ---- late replies are counted once ------------------------------------------


async def test_a_late_reply_is_counted_late_only(tmp_path: Path) -> None:
    record, result = await play_template_game(
        1, tmp_path, seed=27, faults={2: "late"}, time_limit=0.3
    )
    check_game(record, result)
    late = [e for e in record.events if e.seat == 2 and e.outcome == "late"]
    assert result.late[1] == len(late) >= 3
    # Each late reply still arrived (the player answers everything, only slowly),
    # but one event is one count: none of them is stale as well.
    assert result.stale[1] == 0


# ---- the address printed is the one bound -------------------------------------


def _open_serve(tmp_path: Path, listen: str, serves: list[Serve], *extra: str) -> Serve:
    serve = Serve(
        ["--listen", listen, "--game", "1", "--time-limit", "0.5", "--seed", "5", *extra],
        tmp_path,
    )
    serves.append(serve)
    return serve


def test_listening_line_shows_the_ipv4_address_bound(tmp_path: Path, serves: list[Serve]) -> None:
    serve = _open_serve(tmp_path, "tcp://127.0.0.1:0", serves)
    assert (
        serve.wait_for(r"listening on (tcp://\S+?)[;,]").group(1)
        == f"tcp://127.0.0.1:{serve.port()}"
    )


def test_listening_line_shows_the_ipv6_address_bound(tmp_path: Path, serves: list[Serve]) -> None:
    if not has_ipv6_loopback():
        print("skipped: this machine has no IPv6 loopback ([::1])")
        pytest.skip("no IPv6 loopback on this machine")
    serve = _open_serve(tmp_path, "tcp://[::1]:0", serves)
    where = serve.wait_for(r"listening on (tcp://\S+?)[;,]").group(1)
    port = serve.port()
    assert where == f"tcp://[::1]:{port}"
    with socket.create_connection(("::1", port), timeout=5):  # it is really there
        pass


# ---- open mode seats only teams still connected ------------------------------


def test_open_mode_does_not_seat_a_team_that_left(tmp_path: Path, serves: list[Serve]) -> None:
    results = tmp_path / "results.jsonl"
    serve = _open_serve(tmp_path, "tcp://127.0.0.1:0", serves, "-v", "--results", str(results))
    port = serve.port()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as gone:
        gone.sendall(struct.pack("<i", 1))
        serve.wait_for(r"team 1 connected over tcp")
    serve.wait_for(r"team 1, tcp\): closed the connection")
    players = [
        subprocess.Popen(
            [arg.replace("{port}", str(port)) for arg in template_command(team, 1, team)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        for team in (2, 3, 4, 5)
    ]
    try:
        code, _ = serve.finish(90)
    finally:
        for player in players:
            player.kill()
            player.wait(10)
    assert code == 0, serve.stderr
    (row,) = read_results(results)
    assert row.teams == [2, 3, 4, 5]
    assert row.absent == [0, 0, 0, 0]


# ---- no player outlives serve ---------------------------------------------------

STUBBORN = """\
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
with open(sys.argv[1] + ".tmp", "w") as out:
    out.write(f"{os.getpid()} {child.pid}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
"""
"""A player that ignores SIGTERM and SIGHUP, never connects, and has a child of its own."""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to look at pids")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_signal_to_serve_stops_every_player(
    tmp_path: Path, serves: list[Serve], signum: int
) -> None:
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    pid_files = [tmp_path / f"pids{seat}" for seat in range(1, 5)]
    commands = [f"{sys.executable} stubborn.py {path}" for path in pid_files]
    serve = Serve(
        [
            *("--players", str(input_txt(tmp_path, commands)), "--port", "0"),
            *("--connect-timeout", "120", "--player-logs", str(tmp_path / "logs")),
        ],
        tmp_path,
    )
    serves.append(serve)
    serve.port()
    deadline = time.monotonic() + 60
    while not all(p.exists() for p in pid_files) and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = [int(pid) for path in pid_files for pid in path.read_text().split()]
    try:
        assert len(pids) == 8 and all(alive(pid) for pid in pids)
        serve.proc.send_signal(signum)
        serve.proc.wait(60)
        assert eventually_dead(pids, 30) == []  # players and their children
    finally:
        for pid in pids:  # should the test fail, leave nothing behind
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    code, _ = serve.finish(10)
    assert code == 128 + signum, serve.stderr
    assert f"stopped by {signal.Signals(signum).name}" in serve.stderr


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to look at pids")
def test_an_error_in_serve_stops_every_player(tmp_path: Path, serves: list[Serve]) -> None:
    """serve fails after a game (its --results cannot be written): no player outlives it."""
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    (tmp_path / "results").mkdir()  # a directory: appending to it fails
    pid_files = [tmp_path / f"pids{seat}" for seat in range(1, 5)]
    commands = [f"{sys.executable} stubborn.py {path}" for path in pid_files]
    serve = Serve(
        [
            *("--players", str(input_txt(tmp_path, commands)), "--port", "0"),
            *("--connect-timeout", "3", "--allow-absent", "--results", "results"),
        ],
        tmp_path,
    )
    serves.append(serve)
    code, _ = serve.finish(90)
    pids = [int(pid) for path in pid_files for pid in path.read_text().split()]
    try:
        assert eventually_dead(pids, 30) == []
    finally:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert code == 2 and "cannot write results" in serve.stderr, serve.stderr


# ---- a seat that never takes part -------------------------------------------------


def _course_serve(tmp_path: Path, commands: list[str], *extra: str) -> Serve:
    args = ["--players", str(input_txt(tmp_path, commands)), "--port", "0", "--seed", "3"]
    return Serve([*args, "--time-limit", "0.5", *extra], tmp_path, tmp_path / "tmp")


def test_a_missing_player_program_makes_serve_fail(tmp_path: Path, serves: list[Serve]) -> None:
    commands = [template_line(11), template_line(12), "/nonexistent/player", template_line(14)]
    serve = _course_serve(tmp_path, commands)
    serves.append(serve)
    code, out = serve.finish(90)
    assert code == 1, serve.stderr
    assert "player 3=team 13" in out  # the game was played and reported
    assert "seat 3 (team 13) never connected" in out
    assert "seat 3 (team 13) never took part in game 1" in serve.stderr
    assert "--allow-absent" in serve.stderr


def test_allow_absent_plays_on(tmp_path: Path, serves: list[Serve]) -> None:
    commands = [template_line(11), template_line(12), "/nonexistent/player", template_line(14)]
    serve = _course_serve(tmp_path, commands, "--allow-absent", "--games", "2")
    serves.append(serve)
    code, out = serve.finish(120)
    assert code == 0, serve.stderr
    assert out.count("seat 3 (team 13) never connected") == 2


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to look at pids")
def test_a_team_that_never_connects_is_reported_and_stopped(
    tmp_path: Path, serves: list[Serve]
) -> None:
    """A running player that never connects: the game goes on without it after the connect
    timeout; at the end it is stopped although it ignores SIGTERM, and serve fails."""
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    commands = [template_line(11), template_line(12), template_line(13)]
    serve = _course_serve(
        tmp_path, [*commands, f"{sys.executable} stubborn.py pids"], "--connect-timeout", "3"
    )
    serves.append(serve)
    code, out = serve.finish(120)
    pids = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
    try:
        assert eventually_dead(pids, 30) == []
    finally:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert code == 1, serve.stderr
    assert "seat 4 (team 14) never connected" in out


# ---- the default log directory ------------------------------------------------------


def _temp_logs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "tmp").glob("battlesheep-players-*"))


def test_default_logs_are_removed_after_a_clean_run(tmp_path: Path, serves: list[Serve]) -> None:
    serve = _course_serve(tmp_path, [template_line(team) for team in range(11, 15)])
    serves.append(serve)
    code, _ = serve.finish(90)
    assert code == 0, serve.stderr
    assert _temp_logs(tmp_path) == []
    assert "kept" not in serve.stderr


def test_default_logs_are_kept_when_a_player_fails(tmp_path: Path, serves: list[Serve]) -> None:
    commands = [template_line(team) for team in range(11, 15)]
    commands[1] = template_line(12, " --fault crash")
    serve = _course_serve(tmp_path, commands)
    serves.append(serve)
    code, _ = serve.finish(90)
    assert code == 0, serve.stderr
    (logs,) = _temp_logs(tmp_path)
    assert f"player logs kept in {logs} (team 12 failed)" in serve.stderr
    assert "crashing on purpose" in (logs / "game1-seat2-team12.log").read_text()


def test_keep_logs_keeps_them(tmp_path: Path, serves: list[Serve]) -> None:
    commands = [template_line(team) for team in range(11, 15)]
    serve = _course_serve(tmp_path, commands, "--keep-logs")
    serves.append(serve)
    code, _ = serve.finish(90)
    assert code == 0, serve.stderr
    (logs,) = _temp_logs(tmp_path)
    assert f"player logs kept in {logs}" in serve.stderr
    assert len(list(logs.iterdir())) == 4


def test_tournament_logs_are_removed_after_a_clean_run(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    proc = subprocess.run(
        [
            *(
                sys.executable,
                "-m",
                "battlesheep",
                "match",
                "--seats",
                "random,random,greedy,random",
            ),
            *("--games", "1", "--jobs", "1", "--time-limit", "0.5", "--seed", "2"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path / "tmp")},
    )
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "tmp").glob("battlesheep-tournament-*")) == []


# ---- the viewer's uploads -----------------------------------------------------------


async def _replies(ws: ClientConnection) -> list[Any]:
    return [json.loads(m) async for m in ws]


async def test_an_idle_upload_is_closed_with_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(viewer_server, "UPLOAD_IDLE", 0.3)
    caplog.set_level(logging.INFO)
    async with ViewerServer() as viewer:
        url = f"ws://127.0.0.1:{viewer.port}/upload?name=idle.msgpack"
        async with connect(url) as ws:
            replies = await asyncio.wait_for(_replies(ws), 10)
    assert replies == [{"type": "error", "message": "idle.msgpack: nothing came within 0.3 s"}]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert any("sent nothing within 0.3 s" in r.getMessage() for r in caplog.records)


async def test_an_upload_larger_than_the_cap_is_refused() -> None:
    async with ViewerServer() as viewer:
        base = f"ws://127.0.0.1:{viewer.port}/upload?name=big.msgpack"
        # The page says how large the file is: refused before it is sent.
        async with connect(f"{base}&size={MAX_REPLAY_BYTES + 1}") as ws:
            replies = await asyncio.wait_for(_replies(ws), 10)
        assert len(replies) == 1 and replies[0]["type"] == "error"
        assert "big.msgpack is larger than the 1024 KiB" in replies[0]["message"]
        # A client that says nothing and sends too much is closed with "message too big".
        async with connect(base, max_size=None) as ws:
            await ws.send(b"\0" * (MAX_REPLAY_BYTES + 1))
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_uploads_only_from_the_viewers_own_page() -> None:
    async with ViewerServer() as viewer:
        url = f"ws://127.0.0.1:{viewer.port}/upload?name=x.msgpack"
        for origin in ("http://evil.example", f"http://evil.example:{viewer.port}"):
            with pytest.raises(InvalidStatus) as refused:
                async with connect(url, origin=origin):  # type: ignore[arg-type]
                    pass
            assert refused.value.response.status_code == 403
        own = f"http://127.0.0.1:{viewer.port}"
        async with connect(url, origin=own) as ws:  # type: ignore[arg-type]
            await ws.send(b"\xc1")
            replies = await asyncio.wait_for(_replies(ws), 10)
    assert (
        replies[0]["type"] == "error"
        and "x.msgpack is not a msgpack replay" in replies[0]["message"]
    )


async def test_an_upload_is_parsed_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a replay is parsed, the event loop (the referee's) goes on: here it is the loop
    itself that lets the parse finish; a parse on the loop would wait for it in vain."""
    entered, release = threading.Event(), threading.Event()

    def parse(data: bytes, name: str) -> Any:
        entered.set()
        raise ReplayError("released" if release.wait(10) else "the loop was held up")

    monkeypatch.setattr(viewer_server, "parse_replay", parse)
    async with ViewerServer() as viewer:
        url = f"ws://127.0.0.1:{viewer.port}/upload?name=x.msgpack"
        async with connect(url) as ws:
            await ws.send(b"replay")
            assert await asyncio.to_thread(entered.wait, 20)
            release.set()
            replies = await asyncio.wait_for(_replies(ws), 20)
    assert replies == [{"type": "error", "message": "released"}]
