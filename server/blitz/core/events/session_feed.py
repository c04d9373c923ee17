"""Which sessions changed, for the streams that watch a principal's sessions (WatchSessions).

A session's list-level fields (its state, turn, title, labels, mode, open requests, usage)
change with its events, or with a call that writes no event (CreateSession,
UpdateSession, DeleteSession, a fork). The event log tells the feed of every batch it
stores and of every append another process announces; the session calls tell it of the
rest. The feed only marks: each watcher keeps the ids marked since it last looked, and
reads those sessions itself (core/api/session_watch.py), so a session that streams text
costs a watcher one read per look, not one per event. With no watcher, a mark is a
check of an empty set.

A call that writes no event, made by another process sharing the store, is not marked
here: a watcher on a shared store looks at its whole page again now and then
(`REFRESH`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["REFRESH", "SessionFeed", "Watcher"]

# Seconds between a watcher's looks at its whole page, on a shared store.
REFRESH = 10.0
# Seconds a watcher lets marks gather before it looks: a burst of events is one look.
_GATHER = 0.05


class Watcher:
    """The sessions marked since one stream last looked."""

    def __init__(self) -> None:
        self._marked: set[str] = set()
        self._wake = asyncio.Event()

    def mark(self, session_id: str) -> None:
        self._marked.add(session_id)
        self._wake.set()

    async def marked(self, within: float | None = None) -> set[str] | None:
        """The ids marked since the last call, once there is one; None when `within`
        seconds passed without any."""
        try:
            async with asyncio.timeout(within):
                await self._wake.wait()
        except TimeoutError:
            return None
        await asyncio.sleep(_GATHER)
        self._wake.clear()
        marked, self._marked = self._marked, set()
        return marked


class SessionFeed:
    """This process's watchers of sessions, and the marks they are given."""

    def __init__(self) -> None:
        self._watchers: set[Watcher] = set()

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    def changed(self, session_id: str) -> None:
        """The session (may have) changed: every watcher looks at it."""
        for watcher in self._watchers:
            watcher.mark(session_id)

    @contextmanager
    def watch(self) -> Iterator[Watcher]:
        watcher = Watcher()
        self._watchers.add(watcher)
        try:
            yield watcher
        finally:
            self._watchers.discard(watcher)
