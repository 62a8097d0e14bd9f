"""Where a tournament's games are played: local worker processes or a Dask cluster.

Each game is one task. ``play_task`` plays it through the one game loop, either
on an arena server on an ephemeral port with the four player processes (what a
user runs: ``match``, ``tournament``, ``tune``) or, for a ``local`` schedule,
with the four strategies as client sessions in the worker process (``bench
strength``); it returns the arena's ``GameResult`` (``arena/results.py``) with
the entrants' names and seats, and writes the replay when asked. A runner
yields results as they finish, in any order; the game index in each result
says which game it was.

Dask, not Ray, for the cluster: it is pure Python and pip-installable
everywhere the project runs (Windows included), ``LocalCluster`` gives the
tests a real scheduler and workers in a second, ``Client(address)`` joins an
existing one, futures with ``as_completed`` stream results, and
``retries=`` reruns a game whose worker was lost. A game needs nothing but
the project installed on the worker.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import threading
import uuid
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Protocol

from arena.config import ServerConfig
from arena.local import play_local
from arena.players import ProcessPlayer
from arena.referee import GameRecord
from arena.replay import write_replay
from arena.results import GameResult, result_of, search_figures
from arena.server import GamePlan, play_single
from strategies.base import ConfigError
from strategies.registry import make_strategy
from tournament.schedule import GameTask

logger = logging.getLogger(__name__)

RETRIES = 2
"""Times a game whose Dask worker was lost is rerun elsewhere."""


def play_task(task: GameTask) -> GameResult:
    """Play one game; runs in a worker process (or a Dask worker)."""
    result = _play_local(task) if task.strategies is not None else _play_processes(task)
    return result.with_entrants(list(task.names), list(task.seats))


def _play_local(task: GameTask) -> GameResult:
    """The game in this process: each seat a client session of its strategy."""
    assert task.strategies is not None
    strategies = []
    for seat, (name, params) in enumerate(task.strategies, start=1):
        params = {"seed": (task.seed * 4096 + task.index) * 4 + seat, **params}
        strategy = make_strategy(name, params)
        strategies.append(strategy)
    game = play_local(
        task.game,
        task.seed,
        strategies,
        task.time_limit,
        task.teams,
        reveal=task.reveal,
        clocks=task.clocks,
    )
    search = [search_figures(moves) for moves in game.figures]
    result = result_of(game.record, task.index, search)
    _record(task, game.record, result)
    return result


def _record(task: GameTask, record: GameRecord, result: GameResult) -> None:
    if task.record_dir:
        name = f"game{task.index + 1}-seed{task.seed}.msgpack"
        write_replay(Path(task.record_dir) / name, record, result)


def _play_processes(task: GameTask) -> GameResult:
    """The game on its own server, each seat a player process (what a user runs)."""
    log_dir = Path(task.log_dir)
    players = [
        ProcessPlayer(
            command if isinstance(command, str) else list(command),
            team=team,
            game=task.game,
            log_path=log_dir / f"game{task.index + 1}-seat{seat}-{_file_safe(name)}.log",
            label=name,
        )
        for seat, (name, command, team) in enumerate(
            zip(task.names, task.commands, task.teams, strict=True), start=1
        )
    ]
    plan = GamePlan(
        game=task.game, seed=task.seed, teams=task.teams, players=players, index=task.index
    )
    config = ServerConfig(port=0, time_limit=task.time_limit, connect_timeout=task.connect_timeout)
    record, result = asyncio.run(play_single(plan, config))
    _record(task, record, result)
    return result


def _file_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:40]


class Runner(Protocol):
    def results(self, tasks: Iterable[GameTask]) -> Iterator[GameResult]:
        """Results of the tasks as they finish; stopping the iteration cancels the rest."""
        ...

    def close(self) -> None: ...


def default_jobs() -> int:
    return os.cpu_count() or 1


def _end_with_parent() -> None:
    """A pool worker's initializer: the worker ends as soon as the process that started
    the pool does. A ``bench strength``, ``match`` or ``tournament`` killed by a signal
    (no ``close()``) would otherwise leave each worker playing its game on, then
    waiting on its call queue for ever."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(1)  # the results have nowhere to go

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class LocalRunner:
    """Worker processes on this machine; at most ``jobs`` games at a time.

    Tasks are submitted lazily (twice as many as workers in flight) so that a
    stopped run (SPRT verdict, Ctrl-C) leaves few games to cancel. A worker ends with
    the process that started it (``_end_with_parent``), even when that one is killed.
    """

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        # forkserver: a worker must not inherit the parent's threads (rich's refresher).
        method = "forkserver" if os.name == "posix" else "spawn"
        self.pool = ProcessPoolExecutor(
            self.jobs,
            mp_context=multiprocessing.get_context(method),
            initializer=_end_with_parent,
        )

    def results(self, tasks: Iterable[GameTask]) -> Iterator[GameResult]:
        pending: set[Future[GameResult]] = set()
        source = iter(tasks)
        try:
            while True:
                for task in source:
                    pending.add(self.pool.submit(play_task, task))
                    if len(pending) >= 2 * self.jobs:
                        break
                if not pending:
                    return
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class DaskRunner:
    """Games as tasks of a Dask cluster: ``address`` joins a running scheduler
    (``tcp://host:8786``); without one a local cluster of ``jobs`` worker
    processes is started for the run."""

    def __init__(self, address: str | None, jobs: int) -> None:
        try:
            # Typed as Any: distributed ships no annotations mypy accepts in strict use.
            self.dask: Any = importlib.import_module("distributed")
        except ImportError:
            raise ConfigError("--cluster needs Dask: pip install 'battlesheep[cluster]'") from None
        self.cluster: Any = None
        if address:
            self.client: Any = self.dask.Client(address)
        else:
            self.cluster = self.dask.LocalCluster(
                n_workers=max(1, jobs),
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            )
            self.client = self.dask.Client(self.cluster)
        logger.info("dask scheduler %s", self.client.scheduler.address)

    def results(self, tasks: Iterable[GameTask]) -> Iterator[GameResult]:
        run = uuid.uuid4().hex[:12]  # keys must not collide with other runs on a shared cluster
        futures = [
            self.client.submit(
                play_task, task, key=f"battlesheep-game-{task.index}-{run}",
                retries=RETRIES, pure=False,
            )
            for task in tasks
        ]  # fmt: skip
        if not futures:
            return
        try:
            for future in self.dask.as_completed(futures):
                yield future.result()
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def make_runner(jobs: int, cluster: str | None, use_cluster: bool) -> Runner:
    if use_cluster:
        return DaskRunner(cluster, jobs)
    return LocalRunner(jobs)
