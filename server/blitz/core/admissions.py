"""Turns being admitted go before agent work: `accepted` first, for every caller.

Admitting a turn (RunTurn, from its call to its `accepted` handed to the transport) costs
well under a millisecond; a turn's first run costs a few. On one event loop, served in
arrival order, a burst of a thousand RunTurns had each caller wait for the agent work of
every turn ahead of it before its `accepted` went out: the transport takes in one new call
per turn of the loop, and each turn of the loop ran a whole turn to its park.

So a run about to start (or resume) first lets admissions through: it waits while any is
under way, and, during a burst — another admission began within the last `_QUIET`
seconds besides its own — until the burst has passed, so that the calls still on their way
in are admitted first. It waits `_MOST` seconds at most, so that a steady stream of
admissions cannot starve the turns they admitted. A lone turn starts at once, and runs
already under way are never held back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import deque
from collections.abc import Iterator

__all__ = ["Admissions"]

# The longest a run waits for admissions before it starts anyway (seconds).
_MOST = 1.0
# Admissions that began within this many seconds of each other are one burst.
_QUIET = 0.005


class Admissions:
    """The admissions under way in this process, and the runs waiting for them."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = asyncio.Event()
        self._idle.set()
        # When the admissions of the last `_QUIET` seconds began (monotonic), oldest first;
        # set while they are no burst; and the one timer that looks again during one (the
        # runs waiting wait on the event, not on timers of their own).
        self._began: deque[float] = deque()
        self._calm = asyncio.Event()
        self._calm.set()
        self._timer: asyncio.TimerHandle | None = None

    @contextlib.contextmanager
    def admitting(self) -> Iterator[None]:
        """Hold while a turn is being admitted."""
        self._began.append(time.monotonic())
        self._look()
        self._count += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._count -= 1
            if not self._count:
                self._idle.set()

    def _look(self, *, timer: bool = False) -> None:
        """Whether a burst is coming in; while one is, look again when it may be over."""
        if timer:
            self._timer = None
        now = time.monotonic()
        while self._began and self._began[0] < now - _QUIET:
            self._began.popleft()
        if len(self._began) <= 1:
            self._calm.set()
            return
        self._calm.clear()
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(
                self._began[-1] + _QUIET - now, functools.partial(self._look, timer=True)
            )

    async def let_through(self) -> None:
        """Return once no admission is under way nor a burst of them coming in (at most
        `_MOST` seconds from now)."""
        give_up = time.monotonic() + _MOST
        while (now := time.monotonic()) < give_up:
            if self._count:
                waited = self._idle
            elif not self._calm.is_set():
                waited = self._calm
            else:
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(give_up - now):
                    await waited.wait()
