"""Other processes' events, where processes share the store: announcements and a poll.

A live reader gets this process's events pushed by the event log; it learns of the other
processes' from the store's announcements (`Store.changes`: PostgreSQL's LISTEN/NOTIFY,
session ids and seqs only), followed by one task, or, should one be missed, from a poll of
the followed sessions' last seqs every few seconds, the floor of correctness. Either way
the reader is only hinted (`Subscription.hint`) and reads what it is owed from the store.
The announcements also name turns someone asked to cancel or steer: the listener hears of
those (`asked`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping

import structlog

from blitz.core.supervisor import raise_if_cancelled
from blitz.store import Store

__all__ = ["DEFAULT_POLL", "Following"]

log = structlog.get_logger(__name__)

# Seconds between polls of the followed sessions' last seqs.
DEFAULT_POLL = 2.0
# Sessions asked about in one poll query.
_POLL_PAGE = 1000


class Following:
    """`async with Following(...)`: hears other processes' appends while open."""

    def __init__(
        self,
        store: Store,
        *,
        followed: Callable[[], Iterable[str]],
        hint: Callable[[str, int], None],
        asked: Callable[[str, str], None],
        poll: float = DEFAULT_POLL,
    ) -> None:
        """`followed()`: the sessions with live readers here; `hint(session_id, seq)`:
        another process appended up to `seq`; `asked(session_id, turn_id)`: someone asked
        something of the turn."""
        self._store = store
        self._followed = followed
        self._hint = hint
        self._asked = asked
        self._poll_every = poll
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> Following:
        self._tasks = [
            asyncio.create_task(self._follow(), name="blitz-event-follower"),
            asyncio.create_task(self._poll(), name="blitz-event-poll"),
        ]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _follow(self) -> None:
        """Hear the store's announcements for as long as this is open."""
        while True:
            try:
                async for change in self._store.changes():
                    if not change.seqs and not change.turns:
                        await self._poll_once()  # (again) listening: catch up on the gap
                    self._hints(change.seqs)
                    for sid, tid in change.turns:
                        self._asked(sid, tid)
            except asyncio.CancelledError:
                raise
            except Exception:
                raise_if_cancelled()
                log.warning("event_follow_failed", exc_info=True)
            await asyncio.sleep(1.0)  # the poll covers what is announced meanwhile

    async def _poll(self) -> None:
        """The floor of correctness: an announcement may be missed, a poll is not."""
        while True:
            await asyncio.sleep(self._poll_every)
            try:
                await self._poll_once()
            except Exception:
                raise_if_cancelled()
                log.warning("event_poll_failed", exc_info=True)

    async def _poll_once(self) -> None:
        followed = list(self._followed())
        for start in range(0, len(followed), _POLL_PAGE):
            self._hints(await self._store.last_seqs(followed[start : start + _POLL_PAGE]))

    def _hints(self, seqs: Mapping[str, int]) -> None:
        for sid, seq in seqs.items():
            self._hint(sid, seq)
