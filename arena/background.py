"""The arena's background tasks: kept until done, failures logged, cancelled and awaited on close.

asyncio keeps only a weak reference to a running task, so a task nobody holds
may be collected mid-flight, and an exception nobody retrieves is reported
late or never. Every task the arena's transports start goes through a
``BackgroundTasks`` of its owner instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

logger = logging.getLogger(__name__)


class BackgroundTasks:
    """The tasks one owner (a connection, a listener) started and still runs."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run ``coro`` as a task kept here until it ends; an exception of it is logged."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            logger.error("task %s failed: %r", task.get_name(), exc, exc_info=exc)

    async def close(self) -> None:
        """Cancel the tasks still running (but the caller's own) and wait until they end."""
        current = asyncio.current_task()
        tasks = [task for task in self._tasks if task is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
