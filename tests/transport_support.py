"""Helpers of the transport tests: an open arena in-process, real players, a real broker.

The arena runs ``serve_open`` on real sockets (127.0.0.1, ephemeral ports);
players are the client's own transports (``play_tcp``, ``play_ws``,
``play_mqtt``) with a sample strategy, as asyncio tasks in the test's loop.
``Mosquitto`` starts a real broker on a free port with a temporary config.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.config import ServerConfig
from arena.lobby import Lobby
from arena.referee import GameRecord
from arena.results import GameResult
from arena.server import serve_open
from client.clock import TimeLimits
from client.mqtt import MqttOptions, play_mqtt
from client.session import GameSession, GameSummary
from client.tcp import ConnectOptions, play_tcp
from client.ws import WsOptions, play_ws
from state.settings import get_setting
from strategies.registry import make_strategy

TIME_LIMIT = 0.4
LIMITS = TimeLimits(TIME_LIMIT, 0.15)
CLEAN = ("illegal", "late", "stale", "disconnects", "absent", "protocol_errors")


@dataclass
class Arena:
    lobby: Lobby
    task: asyncio.Task[list[GameResult]]
    games: list[tuple[GameRecord, GameResult]] = field(default_factory=list)

    @property
    def tcp_port(self) -> int:
        return self.lobby.port

    def url(self, scheme: str) -> str:
        for listener in self.lobby.listeners:
            if listener.url.startswith(scheme + "://"):
                return listener.url
        raise LookupError(scheme)

    async def result(self, timeout: float = 40.0) -> tuple[GameRecord, GameResult]:
        await asyncio.wait_for(asyncio.shield(self.task), timeout)
        return self.games[0]


@contextlib.asynccontextmanager
async def open_arena(
    listen: tuple[str, ...] = ("ws://127.0.0.1:0/",),
    *,
    token: str | None = None,
    tcp: bool = True,
    game: int = 1,
    seed: int = 1,
    time_limit: float = TIME_LIMIT,
) -> AsyncIterator[Arena]:
    """A running open-mode arena: four players to connect, seated by team id."""
    config = ServerConfig(
        host="127.0.0.1",
        port=0,
        time_limit=time_limit,
        connect_timeout=15.0,
        handshake_timeout=0.5,
        listen=listen,
        token=token,
        tcp=tcp,
    )
    ready: asyncio.Future[Lobby] = asyncio.get_running_loop().create_future()
    games: list[tuple[GameRecord, GameResult]] = []
    task = asyncio.create_task(
        serve_open(
            game,
            [seed],
            config,
            on_game=lambda record, result: games.append((record, result)),
            on_listening=ready.set_result,
        )
    )
    waiting: set[asyncio.Future[Any]] = {ready, task}
    done, _ = await asyncio.wait(waiting, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()  # raises what stopped it
    arena = Arena(await ready, task, games)
    try:
        yield arena
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def session(game: int = 1, strategy: str = "random") -> GameSession:
    return GameSession(get_setting(game), make_strategy(strategy, {}), LIMITS)


def tcp_player(port: int, team: int, game: int = 1) -> Awaitable[GameSummary]:
    return play_tcp(
        session(game), ConnectOptions(port=port, team=team, connect_for=10, reconnect_for=2)
    )


def ws_player(
    url: str, team: int, game: int = 1, token: str | None = None, strategy: str = "random"
) -> Awaitable[GameSummary]:
    options = WsOptions(url=url, team=team, token=token, connect_for=10, reconnect_for=2)
    return play_ws(session(game, strategy), options)


def mqtt_player(
    url: str, team: int, game: int = 1, token: str | None = None, connect_for: float = 10
) -> Awaitable[GameSummary]:
    options = MqttOptions(url=url, team=team, token=token, connect_for=connect_for, reconnect_for=2)
    return play_mqtt(session(game), options)


def others_clean(result: GameResult, faulty: set[int] | None = None) -> None:
    """Nothing counted against any seat but the faulty ones."""
    faulty = faulty or set()
    for key in CLEAN:
        for seat, value in enumerate(getattr(result, key), start=1):
            if seat not in faulty:
                assert not value, (key, seat, getattr(result, key))


async def run_players(*players: Awaitable[Any]) -> list[Any]:
    return list(await asyncio.wait_for(asyncio.gather(*players), 60))


# ------------------------------------------------------------------ broker
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Mosquitto:
    """A real Mosquitto broker on 127.0.0.1 with its own temporary config."""

    def __init__(self, directory: Path, users: dict[str, str] | None = None) -> None:
        exe = shutil.which("mosquitto") or next(
            (p for p in ("/usr/sbin/mosquitto", "/usr/bin/mosquitto") if Path(p).exists()), None
        )
        if exe is None:
            raise RuntimeError(
                "mosquitto is not installed: apt-get install mosquitto (.ci/run does it in CI)"
            )
        self.exe = exe
        self.directory = directory
        self.port = free_port()
        lines = [f"listener {self.port} 127.0.0.1", "persistence false", "set_tcp_nodelay true"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # As root Mosquitto would switch to its own user, who cannot read the temp dir.
            lines.append("user root")
        if users:
            passwd = directory / "passwd"
            passwd.write_text("".join(f"{u}:{p}\n" for u, p in users.items()))
            passwd.chmod(0o600)
            tool = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
            subprocess.run([tool, "-U", str(passwd)], check=True, capture_output=True)
            lines += ["allow_anonymous false", f"password_file {passwd}"]
        else:
            lines.append("allow_anonymous true")
        self.config = directory / "mosquitto.conf"
        self.config.write_text("\n".join(lines) + "\n")
        self.log = directory / "mosquitto.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Mosquitto:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [self.exe, "-c", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mosquitto exited: {self.log.read_text()}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 0.2),
            ):
                return self
            time.sleep(0.05)
        raise RuntimeError(f"mosquitto did not listen on {self.port}: {self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def url(self, match: str, user: str = "", password: str = "") -> str:
        auth = f"{user}:{password}@" if user else ""
        return f"mqtt://{auth}127.0.0.1:{self.port}/{match}"


async def wait_for(
    predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(interval)
