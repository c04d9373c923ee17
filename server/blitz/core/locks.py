"""One lock per session, held while a step must see the session whole.

A turn's last steps (its state to idle, its `finished` committed) and the next turn's first
are ordered by it, and so are a request's resolution and the turn's resumption. Locks are
made on demand; an idle one is forgotten once nobody holds or waits on it.
"""

from __future__ import annotations

import asyncio
import weakref

__all__ = ["SessionLocks"]


class SessionLocks:
    """The per-session locks of this process."""

    def __init__(self) -> None:
        # Held locks are referenced by their holders and waiters; idle ones may go.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def __call__(self, session_id: str) -> asyncio.Lock:
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock
