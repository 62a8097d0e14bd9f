"""Root-parallel MCTS on the other cores.

During our own turn, worker processes search the same position as the strategy's
own thread, each on a tree of its own (kept between turns, like the main tree), and
at the deadline the root statistics of all the trees are added up: the most visited
slide over all trees wins, with its most visited split (``merged_best``). Root
parallelism needs no locks and no shared tree, and the trees' different random
streams make it an ensemble as well as a sum of visits.

- Processes, not threads: the tree policy is Python and holds the GIL; only the
  playout kernel releases it.
- ``spawn`` on every platform: the client's process has threads (the event loop,
  the search thread, the kernel's compiling thread), which ``fork`` would copy in an
  undefined state; and ``spawn`` is what Windows (the course's machine) has.
- Started when the strategy is made, before the first board, but only once this
  process has compiled the playout kernel (numba's cache then serves the workers in
  a fraction of a second instead of each compiling it again for seconds, which on
  two cores starved the strategy's own replies). A worker reports ready once it
  has imported everything and loaded the kernel; a turn uses only the workers
  ready by then, so start-up never costs a deadline.
- Game 3's worlds side by side (``hybrid``'s hedge world beside the mean world): the
  positions are shared out, the k-th worker started taking the k-th world given, so
  that with one worker the two worlds get a core each (``HybridStrategy._share_worlds``).
- Searching only during our own turn, never between turns: a worker blocks on its
  pipe until it is given a position and a stop time.
- Never more processes than cores: ``workers=-1`` is every core the process may
  run on but the one the strategy's own thread searches on.
- The built agents: the zipapp's children find the packages on the parent's
  ``sys.path``; the PyInstaller executable's entry point calls
  ``multiprocessing.freeze_support`` (``tournament.build.entry_script``).
- Worker results that come after the deadline are dropped (each request has a
  number); a worker that dies is left out from then on, with one warning.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import random
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any

from state.belief import Belief
from state.game import GameState, Move
from strategies.base import Budget
from strategies.mcts import Mcts, MctsParams, SplitSampler, WorldSampler
from strategies.mcts_tree import Node

log = logging.getLogger(__name__)

REPORT_TIME = 0.002
"""Seconds before the main search's stop at which workers stop, so that their root
statistics are in the pipe when the main search ends."""

KERNEL_WAIT = 300.0
"""Seconds the pool waits for this process's kernel compile before it starts the
workers anyway (they then compile it themselves)."""

RootStats = list[tuple[int, int, list[tuple[int, int, float]]]]
"""A tree's root: (cell, direction, [(split, visits, reward sum), ...]) per slide."""


def available_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def worker_count(workers: int) -> int:
    """``workers`` processes, or for -1 every available core but one."""
    return max(0, available_cores() - 1) if workers < 0 else workers


def root_stats(root: Node | None) -> RootStats:
    if root is None or not root.edges:
        return []
    return [(e.cell, e.direction, [(s.split, s.n, s.w) for s in e.splits]) for e in root.edges]


def merged_best(trees: Sequence[RootStats]) -> Move | None:
    """The most visited slide over all ``trees`` (ties: the better mean), with its most
    visited split; None when no tree has a visited root slide."""
    slides: dict[tuple[int, int], dict[int, list[float]]] = {}
    for stats in trees:
        for cell, direction, splits in stats:
            by_split = slides.setdefault((cell, direction), {})
            for split, n, w in splits:
                total = by_split.setdefault(split, [0.0, 0.0])
                total[0] += n
                total[1] += w
    best: tuple[float, float, int, int, int] | None = None
    for (cell, direction), by_split in slides.items():
        visits = sum(v[0] for v in by_split.values())
        if visits <= 0:
            continue
        mean = sum(v[1] for v in by_split.values()) / visits
        split = max(by_split, key=lambda s: (by_split[s][0], by_split[s][1]))
        key = (visits, mean, cell, direction, split)
        if best is None or key[:2] > best[:2]:
            best = key
    if best is None:
        return None
    _n, _q, cell, direction, split = best
    return Move(cell, split, direction)


@dataclass(frozen=True)
class SearchRequest:
    """One turn's search for a worker: the position (game 3: with its hidden counts
    and the belief that fills them) and when to stop."""

    number: int
    state: GameState
    stop_at: float
    max_iterations: int = 0
    belief: Belief | None = None
    worlds: int = 0
    split_rules: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchReport:
    number: int
    stats: RootStats
    iterations: int
    nodes: int
    depth: int


@dataclass(frozen=True)
class NewGame:
    """Drop the tree; search with these parameters and this seed from now on."""

    params: MctsParams
    seed: int


class _SharedStopBudget(Budget):
    """A worker's budget: its stop time, or the pool's stop event."""

    __slots__ = ("shared",)

    def __init__(self, deadline: float, shared: Event) -> None:
        super().__init__(deadline)
        self.shared = shared

    def expired(self) -> bool:
        return self.shared.is_set() or time.monotonic() >= self.deadline


def _serve(conn: Connection, stop: Event, fast: bool) -> None:
    """A worker process: load the kernel (``fast``: the compiled one), say ready, then
    search what it is sent."""
    from state.belief import world_sampler
    from strategies.kernel import warm_up

    if fast:
        warm_up(background=False)
    mcts: Mcts | None = None
    try:
        conn.send("ready")
    except OSError:
        return  # the pool was dropped while this worker started
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the strategy's process is gone
        if message is None:
            return
        if isinstance(message, NewGame):
            mcts = Mcts(message.params, random.Random(message.seed))
            continue
        assert isinstance(message, SearchRequest) and mcts is not None
        conn.send(_search(mcts, message, stop, world_sampler))


def _search(mcts: Mcts, request: SearchRequest, stop: Event, world_sampler: Any) -> SearchReport:
    state = request.state
    budget = _SharedStopBudget(request.stop_at, stop)
    sample: WorldSampler | None = None
    splits: SplitSampler | None = None
    if request.belief is not None:
        # Game 3: hashes below the root depend on the worlds: a fresh tree each turn.
        mcts.root = None
        sample = world_sampler(state, request.belief)
        splits = request.belief.draw_split
    mcts.iterations = mcts.nodes = mcts.max_depth = 0
    mcts.split_rules = request.split_rules
    mcts.set_root(state)
    mcts.expand_root(state)
    mcts.search(
        state, budget, request.stop_at, request.max_iterations, sample, request.worlds, splits
    )
    return SearchReport(
        request.number, root_stats(mcts.root), mcts.iterations, mcts.nodes, mcts.max_depth
    )


class _Worker:
    def __init__(self, context: Any, stop: Event, fast: bool) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child, stop, fast), name="search-worker", daemon=True
        )
        self.process.start()
        child.close()
        self.ready = False
        self.alive = True
        self.busy: int | None = None  # the request it searches, if any

    def check_ready(self) -> bool:
        """True once the worker has said it is ready (never waits)."""
        if not self.ready and self.alive:
            try:
                if self.conn.poll():
                    self.ready = self.conn.recv() == "ready"
            except (EOFError, OSError):
                self.died()
        return self.ready

    def send(self, message: object) -> None:
        try:
            self.conn.send(message)
        except (EOFError, OSError):
            self.died()

    def died(self) -> None:
        if self.alive:
            log.warning("search worker %s ended (exit code %s)", self.process.pid,
                        self.process.exitcode)  # fmt: skip
        self.alive = self.ready = False
        self.busy = None


_ENDING: list[tuple[list[_Worker], Event]] = []
"""Pools dropped without ``close()`` whose workers still run, with their stop event.
A worker that is still starting rebuilds that event by its name, and this process
unlinks the name as soon as the event is freed: the event lives until they end."""


def _release(workers: list[_Worker], closed: threading.Event, stop: Event | None = None) -> None:
    """Tell every worker to end and close the pipes (no waiting); ``stop``: the pool's
    event, kept until the workers have ended (see ``_ENDING``)."""
    closed.set()
    for worker in workers:
        if not worker.conn.closed:
            worker.send(None)
            worker.conn.close()
    _ENDING[:] = [(w, e) for w, e in _ENDING if any(x.process.is_alive() for x in w)]
    if stop is not None and any(worker.process.is_alive() for worker in workers):
        _ENDING.append((workers, stop))


class SearchPool:
    """The worker processes of one strategy (see the module docstring)."""

    def __init__(self, workers: int, fast: bool = True) -> None:
        """``workers`` processes; ``fast``: they play out on the compiled kernel (the
        strategy's ``kernel`` is not ``python``), so they start after its compile."""
        self._fast = fast
        self._context = multiprocessing.get_context("spawn")
        self._stop = self._context.Event()
        self._workers: list[_Worker] = []
        self._closed = threading.Event()
        self._starter = threading.Thread(
            target=self._start_workers, args=(workers,), name="search-workers", daemon=True
        )
        self._starter.start()
        # A pool dropped without close() still tells its workers to end.
        self._finalizer = weakref.finalize(self, _release, self._workers, self._closed, self._stop)
        self._number = 0
        self._game: NewGame | None = None
        self._told: set[int] = set()  # workers told of the current game

    def _start_workers(self, workers: int) -> None:
        """After this process's kernel compile (see the module docstring)."""
        from strategies.kernel import wait_warm

        give_up = time.monotonic() + KERNEL_WAIT
        while self._fast and not wait_warm(0.1) and time.monotonic() < give_up:
            if self._closed.is_set():
                return
        for _ in range(workers):
            if self._closed.is_set():
                return
            self._workers.append(_Worker(self._context, self._stop, self._fast))

    def wait_started(self, timeout: float | None = None) -> None:
        """Until every worker process has been started (not: is ready)."""
        self._starter.join(timeout)

    @property
    def size(self) -> int:
        return len(self._workers)

    def new_game(self, params: MctsParams, seed: int) -> None:
        self._game = NewGame(params, seed)
        self._told.clear()

    def start(
        self,
        state: GameState | Sequence[GameState],
        stop_at: float,
        max_iterations: int = 0,
        belief: Belief | None = None,
        worlds: int = 0,
        split_rules: dict[int, str] | None = None,
    ) -> int:
        """Give the position to every ready, idle worker; how many started. Given several
        positions (game 3's worlds side by side), the k-th worker started searches the
        k-th, round and round."""
        self._number += 1
        self._stop.clear()
        states = [state] if isinstance(state, GameState) else list(state)
        if not states:
            raise ValueError("SearchPool.start needs at least one position")
        requests = [
            SearchRequest(
                self._number,
                position,
                stop_at - REPORT_TIME,
                max_iterations,
                belief,
                worlds,
                split_rules or {},
            )
            for position in states
        ]
        started = 0
        for i, worker in enumerate(list(self._workers)):
            if worker.busy is not None:
                self._drain(worker, 0.0)
            if worker.busy is not None or not worker.check_ready():
                continue
            if i not in self._told and self._game is not None:
                seed = self._game.seed + i + 1
                worker.send(NewGame(self._game.params, seed))
                self._told.add(i)
            worker.send(requests[started % len(requests)])
            if worker.alive:
                worker.busy = self._number
                started += 1
        return started

    def cancel(self) -> None:
        """Stop the workers' searches now (the move was decided without them)."""
        self._stop.set()

    def collect(self, until: float) -> list[SearchReport]:
        """The reports of this turn's searches that arrive by ``until``."""
        reports = []
        for worker in self._workers:
            if worker.busy == self._number:
                report = self._drain(worker, max(0.0, until - time.monotonic()))
                if report is not None and report.number == self._number:
                    reports.append(report)
        return reports

    def _drain(self, worker: _Worker, wait: float) -> SearchReport | None:
        """The worker's report if it comes within ``wait`` seconds (it is idle then)."""
        try:
            if not worker.conn.poll(wait):
                return None
            report = worker.conn.recv()
        except (EOFError, OSError):
            worker.died()
            return None
        worker.busy = None
        return report if isinstance(report, SearchReport) else None

    def close(self) -> None:
        self._closed.set()
        self._starter.join()
        self._finalizer.detach()
        _release(self._workers, self._closed)
        for worker in self._workers:
            worker.process.join(timeout=1.0)
            if worker.process.is_alive():
                worker.process.terminate()
        self._workers = []
