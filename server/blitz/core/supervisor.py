"""Owning the core's background tasks: every one is named, watched and, at the end, awaited.

A task started through `Supervisor.spawn` that fails is logged with its traceback the
moment it ends (a turn task that dies must not die silently), and `aclose` cancels and
awaits whatever is still running. Cancellation is never logged as a failure. Nothing here
knows what the tasks do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import structlog

__all__ = ["Supervisor", "raise_if_cancelled"]

log = structlog.get_logger(__name__)

_T = TypeVar("_T")


def raise_if_cancelled() -> None:
    """Raise CancelledError if this task is being cancelled.

    A loop that catches Exception to keep serving calls this before it waits again: a
    database driver may swallow the cancellation of a query, or turn it into an error of
    its own (psycopg's pool can), and the loop must still end when its owner closes.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class Supervisor:
    """The tasks one part of the core runs in the background."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, _T], *, name: str) -> asyncio.Task[_T]:
        """Run `coro` as a task this supervisor owns."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error(
                "task_failed",
                supervisor=self._name,
                task=task.get_name(),
                exc_info=(type(error), error, error.__traceback__),
            )

    def __len__(self) -> int:
        return len(self._tasks)

    async def aclose(self) -> None:
        """Cancel every task still running and wait until all have ended."""
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
