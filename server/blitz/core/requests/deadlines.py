"""Deadlines of parked turns: one sleeping task for all of them, however many are parked.

A parked turn holds no task of its own. `Deadlines.set` files what to do when a wall-clock
time passes (end the turn, time out a request); one task sleeps until the earliest
deadline, then runs what is due, each action in its own supervised task so that a slow one
delays no other. Setting a key again replaces its deadline; `clear` forgets it. Nothing
here knows what the actions do.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, Coroutine
from typing import Any

from blitz.core.supervisor import Supervisor

__all__ = ["Deadlines"]

Action = Callable[[], Coroutine[Any, Any, None]]


class Deadlines:
    """Wall-clock deadlines by key, each with the action to run when it passes."""

    def __init__(self, supervisor: Supervisor) -> None:
        self._supervisor = supervisor
        self._due: dict[str, tuple[float, int, Action]] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._tokens = itertools.count()
        self._wake = asyncio.Event()
        self._sleeper: asyncio.Task[None] | None = None

    def set(self, key: str, when: float, action: Action) -> None:
        """Run `action` once `time.time()` reaches `when`, unless cleared or set again."""
        token = next(self._tokens)
        self._due[key] = (when, token, action)
        heapq.heappush(self._heap, (when, token, key))
        if self._sleeper is None or self._sleeper.done():
            self._sleeper = self._supervisor.spawn(self._sleep(), name="deadlines")
        self._wake.set()

    def clear(self, key: str) -> None:
        self._due.pop(key, None)
        if len(self._heap) > 2 * len(self._due) + 64:
            # Mostly cleared entries: rebuild, so a long deadline cleared early costs nothing.
            self._heap = [(when, token, k) for k, (when, token, _) in self._due.items()]
            heapq.heapify(self._heap)

    def __contains__(self, key: str) -> bool:
        return key in self._due

    async def _sleep(self) -> None:
        while True:
            self._wake.clear()
            now = time.time()
            while self._heap and self._heap[0][0] <= now:
                _, token, key = heapq.heappop(self._heap)
                due = self._due.get(key)
                if due is None or due[1] != token:
                    continue  # cleared, or set again since
                del self._due[key]
                self._supervisor.spawn(due[2](), name=f"deadline-{key}")
            if not self._heap:
                await self._wake.wait()
                continue
            try:
                async with asyncio.timeout(self._heap[0][0] - now):
                    await self._wake.wait()
            except TimeoutError:
                pass
