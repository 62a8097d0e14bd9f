"""Helpers of the transport tests: an open arena in-process, real players, a real broker.

The arena runs ``serve_open`` on real sockets (127.0.0.1, ephemeral ports);
players are the client's own transports (``play_tcp``, ``play_ws``,
``play_mqtt``) with a sample strategy, as asyncio tasks in the test's loop.
``start_broker`` starts a real MQTT broker (Mosquitto or amqtt) on a free port with a
temporary config.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

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

# Random players reply at once, so the limit does not slow the games; it is the room a
# reply has to cross a loaded broker before it counts as late (0.4 s once was not).
TIME_LIMIT = 1.0
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

    def progress(self) -> str:
        """Where the arena's game stands: over or not, and each seat's connection."""
        over = "its game is over" if self.games else "its game is not over"
        seats = []
        for seat, conn in sorted(self.lobby.connections.items()):
            if conn is None:
                seats.append(f"seat {seat}: none")
            else:
                flags = [k for k in ("closed", "game_over") if getattr(conn, k)]
                asked = "asked" if conn.awaiting_reply else "not asked"
                seats.append(f"seat {seat} team {conn.team}: {asked} {' '.join(flags)}".strip())
        return f"the arena: {over}; " + ", ".join(seats)

    async def run_players(
        self,
        *players: Awaitable[Any],
        return_exceptions: bool = False,
        timeout: float = 60.0,
    ) -> list[Any]:
        """Each player's summary (or, with ``return_exceptions``, the error that ended it).

        Players still playing after ``timeout`` are cancelled and the test fails naming them
        and where the arena's game stands (``progress``): from outside, a player waiting for a
        frame that never came and an arena that stopped asking look alike.
        """
        tasks = [asyncio.ensure_future(player) for player in players]
        first = asyncio.ALL_COMPLETED if return_exceptions else asyncio.FIRST_EXCEPTION
        _, pending = await asyncio.wait(tasks, timeout=timeout, return_when=first)
        if pending:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            done = [t for t in tasks if t.done() and not t.cancelled()]
            errors = [error for t in done if (error := t.exception()) is not None]
            if errors:  # a player failed first: its error is the news
                raise errors[0]
            still = [i for i, task in enumerate(tasks, start=1) if task in pending]
            raise AssertionError(
                f"player(s) {still} of {len(tasks)} (in the order given) still playing after"
                f" {timeout:g} s; {self.progress()}"
            )
        if return_exceptions:
            return [task.exception() or task.result() for task in tasks]
        return [task.result() for task in tasks]

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


def tcp_player(
    port: int, team: int, game: int = 1, strategy: str = "random"
) -> Awaitable[GameSummary]:
    return play_tcp(
        session(game, strategy),
        ConnectOptions(port=port, team=team, connect_for=10, reconnect_for=2),
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


# ------------------------------------------------------------------ broker
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


BROKERS = ("mosquitto", "amqtt")
"""The MQTT brokers the transport tests run on: Mosquitto where installed, amqtt always."""

NO_MOSQUITTO = "BATTLESHEEP_NO_MOSQUITTO"
"""Set to 1 to run as if Mosquitto were not installed (a fresh machine's `make test`)."""


def mosquitto_exe() -> str | None:
    """Mosquitto's executable, or None where it is not installed (or hidden by NO_MOSQUITTO)."""
    if os.environ.get(NO_MOSQUITTO, "") not in ("", "0"):
        return None
    return shutil.which("mosquitto") or next(
        (p for p in ("/usr/sbin/mosquitto", "/usr/bin/mosquitto") if Path(p).exists()), None
    )


class Broker:
    """A real MQTT broker process on 127.0.0.1, on a free port, with a temporary config.

    ``users`` maps user names to passwords: with them, only those users may connect.
    """

    name = ""

    def __init__(self, directory: Path, users: dict[str, str] | None = None) -> None:
        self.directory = directory
        self.port = free_port()
        self.log = directory / f"{self.name}.log"
        self.command = self._configure(users or {})
        self.process: subprocess.Popen[bytes] | None = None

    def _configure(self, users: dict[str, str]) -> list[str]:
        """Writes the broker's files; returns the command that starts it."""
        raise NotImplementedError

    def _environment(self) -> dict[str, str] | None:
        """The broker process's environment (None: this one's)."""
        return None

    def start(self) -> Broker:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._environment(),
            )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log.read_text()}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 0.2),
            ):
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} did not listen on {self.port}: {self.log.read_text()}")

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


class Mosquitto(Broker):
    """Mosquitto (Debian's package; .ci/run installs it), users in a mosquitto_passwd file."""

    name = "mosquitto"

    def _configure(self, users: dict[str, str]) -> list[str]:
        exe = mosquitto_exe()
        if exe is None:
            raise RuntimeError(
                "mosquitto is not installed: apt-get install mosquitto (.ci/run does it in CI)"
            )
        lines = [f"listener {self.port} 127.0.0.1", "persistence false", "set_tcp_nodelay true"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # As root Mosquitto would switch to its own user, who cannot read the temp dir.
            lines.append("user root")
        if users:
            passwd = self.directory / "passwd"
            passwd.write_text("".join(f"{u}:{p}\n" for u, p in users.items()))
            passwd.chmod(0o600)
            tool = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
            subprocess.run([tool, "-U", str(passwd)], check=True, capture_output=True)
            lines += ["allow_anonymous false", f"password_file {passwd}"]
        else:
            lines.append("allow_anonymous true")
        config = self.directory / "mosquitto.conf"
        config.write_text("\n".join(lines) + "\n")
        return [exe, "-c", str(config)]


AMQTT_BROKER = """
import asyncio, json, signal, sys
from pathlib import Path
from amqtt.broker import Broker
from pwdlib import PasswordHash
from pwdlib.hashers.argon2 import Argon2Hasher

port, users_file = int(sys.argv[1]), Path(sys.argv[2])
users = json.loads(users_file.read_text())
if users:
    hasher = PasswordHash((Argon2Hasher(),))
    passwd = users_file.with_suffix(".passwd")
    passwd.write_text("".join(f"{u}:{hasher.hash(p)}\\n" for u, p in users.items()))
    auth = {"amqtt.plugins.authentication.FileAuthPlugin": {"password_file": str(passwd)}}
else:
    auth = {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}}
config = {"listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{port}"}}, "plugins": auth}

async def main():
    broker = Broker(config)
    await broker.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await broker.shutdown()

asyncio.run(main())
"""
"""The amqtt broker's process: port and a JSON file of users (name to password) as arguments."""


def amqtt_dir() -> Path:
    """Where `make test` installs amqtt, apart from the venv's packages (see the Makefile)."""
    return Path(sys.prefix) / "amqtt"


class Amqtt(Broker):
    """amqtt, an asyncio MQTT broker from PyPI, in its own process.

    Only that process imports amqtt, from ``amqtt_dir()``; users go to a password file of
    Argon2 hashes read by its FileAuthPlugin.
    """

    name = "amqtt"

    def _configure(self, users: dict[str, str]) -> list[str]:
        path = self.directory / "amqtt-users.json"
        path.write_text(json.dumps(users))
        return [sys.executable, "-c", AMQTT_BROKER, str(self.port), str(path)]

    def _environment(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(amqtt_dir())}


def start_broker(name: str, directory: Path, users: dict[str, str] | None = None) -> Broker:
    """A started broker of that name (one of BROKERS)."""
    kinds: dict[str, type[Broker]] = {"mosquitto": Mosquitto, "amqtt": Amqtt}
    return kinds[name](directory, users).start()


async def wait_for(
    predicate: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(interval)


def need_broker(name: str) -> None:
    """Skips a test on a broker this machine does not have (tests/conftest.py fails it in CI).

    Mosquitto is Debian's package, which .ci/run installs; `make test` installs amqtt.
    """
    if name == "mosquitto" and mosquitto_exe() is None:
        pytest.skip("mosquitto is not installed (apt-get install mosquitto): MQTT on amqtt only")
    if name == "amqtt" and not (amqtt_dir() / "amqtt").is_dir():
        pytest.skip(f"amqtt is not installed in {amqtt_dir()}: `make test` installs it")


def match_id() -> str:
    """A fresh MQTT match id per test: the topics of one test never reach another's arena."""
    return "t" + uuid.uuid4().hex[:10]
