"""Turns being admitted go before agent work: `accepted` first, for every caller.

Admitting a turn (RunTurn, from its call to its `accepted` handed to the transport) costs
about a millisecond; a turn's run to its park costs a couple more. On one event loop,
served in arrival order, a burst of a thousand RunTurns had each caller wait for the agent
work of every turn ahead of it before its `accepted` went out: the transport takes in one
new call per turn of the loop, and each turn of the loop ran every run that was ready.

So a run about to start (or resume) first lets admissions through. It starts at once when
no admission is under way, no burst of them is coming in, and no run is held before it. A
burst is `_BURST` admissions or more begun within the last `_WINDOW` seconds: the
transport handing over calls as fast as they are admitted, a rate that turns sent by
people at tens a second rarely reach. Otherwise the run is held, in order, and held runs
are let go one per turn of the loop, each only while that is still so: a pause in a burst
(a garbage collection, a long write) lets a run or two go, not every run held, whose
first steps would all land in one turn of the loop and stall the transport's intake. A
run held for `_MOST` seconds goes even during a burst, one per turn of the loop, so that a
steady stream of admissions cannot starve the turns they admitted. Runs already under way
are never held back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Iterator

__all__ = ["Admissions"]

# The longest a run is held for admissions before it goes anyway (seconds).
_MOST = 1.0
# This many admissions begun within the last `_WINDOW` seconds are a burst.
_BURST = 3
_WINDOW = 0.02


class Admissions:
    """The admissions under way in this process, and the runs held for them."""

    def __init__(self, *, window: float = _WINDOW, most: float = _MOST) -> None:
        """`window`: the seconds within which `_BURST` admissions are a burst; `most`: the
        longest a run is held."""
        self._window = window
        self._most = most
        self._count = 0
        # When the admissions of the last `_WINDOW` seconds began (monotonic), oldest first.
        self._began: deque[float] = deque()
        # The runs held, oldest first: since when, and what lets each go.
        self._held: deque[tuple[float, asyncio.Future[None]]] = deque()
        # The one look ahead at the held runs, and when it is due (the loop's time).
        self._look: asyncio.TimerHandle | None = None
        self._look_at = 0.0

    @contextlib.contextmanager
    def admitting(self) -> Iterator[None]:
        """Hold while a turn is being admitted."""
        self._began.append(time.monotonic())
        self._count += 1
        try:
            yield
        finally:
            self._count -= 1
            if not self._count and self._held:
                self._look_in(0.0)

    async def let_through(self) -> None:
        """Return once this run may start (see the module doc)."""
        if not self._held and self._open(time.monotonic()):
            return
        waiter = asyncio.get_running_loop().create_future()
        self._held.append((time.monotonic(), waiter))
        self._look_in(0.0)
        await waiter  # cancelled: it is skipped when its turn comes

    def _open(self, now: float) -> bool:
        """No admission under way, and no burst of them coming in."""
        while self._began and self._began[0] < now - self._window:
            self._began.popleft()
        return not self._count and len(self._began) < _BURST

    def _let_one_go(self) -> None:
        """Let the oldest held run go if it may; look again when the next one might."""
        self._look = None
        while self._held and self._held[0][1].done():
            self._held.popleft()  # cancelled while held
        if not self._held:
            return
        now = time.monotonic()
        since, waiter = self._held[0]
        if self._open(now) or now - since >= self._most:
            self._held.popleft()
            waiter.set_result(None)
            if self._held:
                self._look_in(0.0)  # the next one, on the loop's next turn
            return
        # Held: look again when the oldest's time is up, or the burst may be over; while an
        # admission is under way, its end looks again.
        at = since + self._most
        if not self._count:
            at = min(at, self._began[-_BURST] + self._window)
        self._look_in(max(0.0, at - now))

    def _look_in(self, delay: float) -> None:
        loop = asyncio.get_running_loop()
        at = loop.time() + delay
        if self._look is not None:
            if self._look_at <= at:
                return
            self._look.cancel()
        self._look = loop.call_at(at, self._let_one_go)
        self._look_at = at
