"""The strategy's search, run in a worker thread under a deadline.

Why a thread and not a process: a strategy posts its best choice so far to the
``Budget`` as it searches, and the client reads it at the deadline; a thread
shares that object (and ``Budget.stop``'s ``threading.Event``) for free, while
a process would need the state pickled over and the best move sent back
through a pipe on every improvement, costing milliseconds of every turn. The
price is the GIL: a CPU-bound search slows the event loop, but the loop's work
per turn is well under a millisecond and the interpreter hands the GIL to a
waiting thread every switch interval (5 ms), so the loop still wakes up at the
deadline within a few milliseconds (``--margin`` covers it).

Why not ``concurrent.futures.ThreadPoolExecutor``: its workers are joined at
interpreter exit, so a strategy that never returns would keep the client from
ever exiting. The worker here is a daemon thread with a job queue: one
long-lived thread per client, and a fresh one only when the previous search
is still running when the next one starts (a strategy that ignores its
budget); the stuck thread is abandoned and ends whenever its call returns.

The garbage collector's full collections are kept out of the searches
(``quiet_collector``): a search builds a tree of hundreds of thousands of small
objects, and an automatic full collection walks all of them with the GIL held,
so the event loop could not answer in time. Measured in game 1 at 0.3 s per move:
full collections of 60-190 ms in one game (a move late), young collections
(at most 13 ms) after the change. Full collections are run between games
(``full_collection``), when nothing searches.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from strategies.base import Budget

log = logging.getLogger(__name__)

T = TypeVar("T")

_worker_ids = itertools.count(1)

MAX_ABANDONED = 1
"""Searches left running past their deadline beyond which no new one is started."""


NO_AUTOMATIC_FULL = 1_000_000
"""Young collections between full ones: never, in practice (see ``quiet_collector``)."""


def quiet_collector() -> None:
    """No automatic full collections in this process (young ones stay): the search
    tree's objects are freed by reference counting (the tree has no cycles), and
    what cycles other code leaves are collected by ``full_collection``."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NO_AUTOMATIC_FULL)


def full_collection() -> None:
    """Collect every generation now (the end of a game: nothing searches)."""
    started = time.monotonic()
    found = gc.collect()
    log.debug("full collection: %d objects in %.0f ms", found, (time.monotonic() - started) * 1000)


@dataclass(frozen=True, slots=True)
class Outcome(Generic[T]):
    """What a call under a deadline came to.

    ``finished``: the call returned (``value``) or raised (``error``) before
    the deadline; otherwise the budget was stopped and the call was left to
    run on.
    """

    finished: bool
    value: T | None = None
    error: BaseException | None = None


class _Job:
    __slots__ = ("call", "future", "loop", "returned")

    def __init__(
        self,
        call: Callable[[], object],
        future: asyncio.Future[object],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.call = call
        self.future = future
        self.loop = loop
        self.returned = False  # set by the worker thread when the call is over


def _settle(future: asyncio.Future[object], value: object, error: BaseException | None) -> None:
    """Runs on the event loop: complete the future unless someone gave up on it."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


class _Worker:
    """One daemon thread running queued calls in order."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.name = f"search-{next(_worker_ids)}"
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def submit(self, job: _Job) -> None:
        self._jobs.put(job)

    def retire(self) -> None:
        """End the thread once its current call (if any) returns."""
        self._jobs.put(None)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            value: object = None
            error: BaseException | None = None
            try:
                value = job.call()
            except BaseException as exc:  # handed to the awaiting side, never lost
                error = exc
            job.returned = True
            # RuntimeError: the loop is closed, so nobody waits any more.
            with contextlib.suppress(RuntimeError):
                job.loop.call_soon_threadsafe(_settle, job.future, value, error)


class SearchRunner:
    """Runs strategy calls in a worker thread and answers at the deadline.

    ``run`` never waits past ``budget.deadline``: when it passes, it stops the
    budget and returns an unfinished ``Outcome``; the caller then sends the
    best choice the strategy posted to the budget, or its fallback.
    """

    def __init__(self, max_abandoned: int = MAX_ABANDONED) -> None:
        quiet_collector()
        self._worker: _Worker | None = None
        self._running: _Job | None = None
        self._abandoned: list[_Job] = []
        self.max_abandoned = max_abandoned
        self.abandoned_searches = 0
        """How many times a search was still running when the next one started."""
        self.skipped = 0
        """Searches not started because too many abandoned ones still run."""

    async def run(self, call: Callable[[], T], budget: Budget) -> Outcome[T]:
        loop = asyncio.get_running_loop()
        if self._running is not None and not self._running.returned:
            # The previous call ignored its stopped budget. Do not queue behind
            # it: abandon that thread to finish on its own and start a new one.
            assert self._worker is not None
            log.warning(
                "the previous search in thread %s is still running after its deadline; "
                "starting this one in a fresh thread",
                self._worker.name,
            )
            self._abandoned.append(self._running)
            self._running = None
            self._worker.retire()
            self._worker = None
            self.abandoned_searches += 1
        self._abandoned = [job for job in self._abandoned if not job.returned]
        if len(self._abandoned) > self.max_abandoned:
            # Each abandoned search that still computes takes its share of the GIL
            # from the event loop; past a few, replies would come late. The
            # strategy is broken: answer without it until one of them ends.
            self.skipped += 1
            log.warning(
                "%d searches still run past their deadlines; not starting another",
                len(self._abandoned),
            )
            budget.stop()
            return Outcome(finished=False)
        if budget.remaining() <= 0:
            budget.stop()
            return Outcome(finished=False)
        if self._worker is None:
            self._worker = _Worker()
        future: asyncio.Future[object] = loop.create_future()
        job = _Job(call, future, loop)
        self._running = job
        self._worker.submit(job)
        remaining = budget.deadline - time.monotonic()
        if remaining > 0:
            await asyncio.wait((future,), timeout=remaining)
        if not future.done():
            budget.stop()
            future.cancel()  # so that a late result or error is dropped, not reported
            return Outcome(finished=False)
        error = future.exception()
        if error is not None:
            return Outcome(finished=True, error=error)
        value: T = future.result()  # type: ignore[assignment]
        return Outcome(finished=True, value=value)

    def close(self) -> None:
        """Let the worker thread end (after its current call, if one still runs)."""
        if self._worker is not None:
            self._worker.retire()
            self._worker = None
