"""Starting and stopping the players of a game.

A ``ProcessPlayer`` runs a command with its stdout and stderr written to its
own log file (never mixed into the server's output), in its own process
group so that a shell wrapper's children are stopped with it. A ``TaskPlayer``
runs a coroutine in the server's event loop (the benchmark's players).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Protocol

from arena.config import command_argv
from arena.wine import launch_for

logger = logging.getLogger(__name__)

_RUNNING: set[ProcessPlayer] = set()
"""Players started and not yet stopped: what ``kill_running`` ends."""


class Player(Protocol):
    label: str

    @property
    def finished(self) -> bool:
        """It has ended (or never started): waiting for it to connect is pointless."""
        ...

    async def start(self, host: str, port: int) -> None: ...

    async def stop(self, grace: float) -> None: ...


class ProcessPlayer:
    """A player program started by the server."""

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        team: int,
        game: int,
        log_path: Path,
        cwd: Path | None = None,
        label: str = "",
        time_limit: float = 3.0,
    ) -> None:
        self.command = command
        self.time_limit = time_limit
        self.team = team
        self.game = game
        self.log_path = log_path
        self.cwd = cwd
        self.label = label or (command if isinstance(command, str) else " ".join(command))
        self.process: asyncio.subprocess.Process | None = None
        self.returncode: int | None = None
        self._failed = False

    @property
    def finished(self) -> bool:
        return self._failed or (self.process is not None and self.process.returncode is not None)

    @property
    def failed(self) -> bool:
        """It could not start, or ended with an error (or had to be killed)."""
        return self._failed or self.returncode not in (None, 0)

    async def start(self, host: str, port: int) -> None:
        values: dict[str, object] = {
            "port": port,
            "host": host,
            "team": self.team,
            "game": self.game,
            "time_limit": f"{self.time_limit:g}",
        }
        try:
            argv = command_argv(self.command, values, self.cwd)
            # A Windows program goes through Wine off Windows; its prefix may take seconds.
            launch = await asyncio.to_thread(launch_for, argv, self.cwd)
        except ValueError as exc:
            self._failed = True
            logger.error("team %s: %s", self.team, exc)
            return
        argv = launch.argv
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"# arena: {' '.join(argv)}\n".encode())
            log.flush()
            try:
                self.process = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=launch.cwd,
                    env=launch.env,
                    start_new_session=os.name == "posix",
                )
            except OSError as exc:
                self._failed = True
                log.write(f"# arena: cannot start: {exc}\n".encode())
                logger.error("team %s: cannot start %s: %s", self.team, argv, exc)
                return
        _RUNNING.add(self)
        logger.info("team %s: started pid %s: %s", self.team, self.process.pid, argv)

    def _signal(self, sig: int) -> None:
        proc = self.process
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if os.name == "posix":
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)

    async def stop(self, grace: float) -> None:
        """Give it ``grace`` seconds to exit after the game-over header, then end it."""
        proc = self.process
        if proc is None:
            return
        for sig, wait in ((None, grace), (signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
            if sig is not None:
                if os.name != "posix" and sig == signal.SIGTERM:
                    continue
                self._signal(sig)
            try:
                await asyncio.wait_for(proc.wait(), wait)
                break
            except TimeoutError:
                continue
        self.returncode = proc.returncode
        if os.name == "posix":  # whatever it left behind in its process group
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.killpg(proc.pid, signal.SIGKILL)
        _RUNNING.discard(self)
        logger.info("team %s: exited with %s", self.team, self.returncode)

    def kill(self) -> None:
        """End it and its process group at once, without waiting (the last resort)."""
        self._signal(signal.SIGKILL)
        _RUNNING.discard(self)


def kill_running() -> int:
    """Kill every started player not stopped yet (however the server is ending); how many."""
    players = list(_RUNNING)
    for player in players:
        player.kill()
    return len(players)


def add_log_arguments(parser: argparse.ArgumentParser) -> None:
    """``--player-logs`` and ``--keep-logs``, for every command that starts players."""
    parser.add_argument(
        "--player-logs",
        metavar="DIR",
        help="players' output (default: a temp dir, removed after a clean run)",
    )
    parser.add_argument(
        "--keep-logs", action="store_true", help="keep the default temp dir of the players' logs"
    )


class PlayerLogs:
    """The directory of the players' logs: the one given (kept), or a temporary one that is
    removed at the end of a run unless there is a reason to keep it or ``keep`` is set."""

    def __init__(self, given: str | None, prefix: str, keep: bool = False) -> None:
        self.temporary = not given
        self.path = Path(given) if given else Path(tempfile.mkdtemp(prefix=prefix))
        self.keep = keep

    def close(self, why_keep: str | None) -> str | None:
        """The run is over: remove a temporary directory unless ``why_keep`` (or ``keep``);
        returns a line telling where the kept logs are, None when there is nothing to say."""
        if not self.temporary:
            return None
        empty = not any(self.path.iterdir()) if self.path.is_dir() else True
        if empty or (why_keep is None and not self.keep):
            shutil.rmtree(self.path, ignore_errors=True)
            return None
        return f"player logs kept in {self.path}" + (f" ({why_keep})" if why_keep else "")


class TaskPlayer:
    """A player coroutine ``run(host, port)`` in the server's own event loop."""

    def __init__(self, run: Callable[[str, int], Awaitable[None]], label: str = "task") -> None:
        self._run = run
        self.label = label
        self.task: asyncio.Task[None] | None = None

    @property
    def finished(self) -> bool:
        return self.task is not None and self.task.done()

    async def start(self, host: str, port: int) -> None:
        async def wrapped() -> None:
            await self._run(host, port)

        self.task = asyncio.get_running_loop().create_task(wrapped(), name=f"player-{self.label}")

    async def stop(self, grace: float) -> None:
        task = self.task
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
