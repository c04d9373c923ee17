"""WatchSessions: the caller's sessions, live, for a list that always agrees with the
sessions themselves.

`SessionWatchCalls` is the part of `SessionCore` (service.py) that streams them: first
the newest `page_size` sessions the caller may see (an admin: everyone's), carrying
the labels asked for, as their views; then `synced`; then, each time the feed
(core/events/session_feed.py) marks a session, its view again if what a list shows of
it changed (anything but `last_seq`, which moves with every event), a new session's
view, or `deleted_id` for one that is gone or no longer matches. A stream sends only
what changed since it last looked, and looks at most every few tens of milliseconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from blitz.core.api import validation as check
from blitz.core.events.session_feed import REFRESH, SessionFeed
from blitz.ports import CallContext
from blitz.store import SessionQuery, SessionRecord, Store
from blitz.v1 import session_pb2 as s

__all__ = ["SessionWatchCalls"]


class SessionWatchCalls:
    """WatchSessions; `SessionCore` holds what it uses."""

    _store: Store
    _feed: SessionFeed

    async def _view(self, rec: SessionRecord) -> s.Session:
        raise NotImplementedError  # pragma: no cover - sessions.SessionCalls'

    async def watch_sessions(
        self, req: s.WatchSessionsRequest, ctx: CallContext
    ) -> AsyncIterator[s.SessionsUpdate]:
        size, _ = check.session_page(
            s.ListSessionsRequest(page_size=req.page_size, labels=req.labels)
        )
        labels = dict(req.labels)
        owner = None if ctx.admin else ctx.caller

        def shown(rec: SessionRecord) -> bool:
            if owner is not None and rec.owner != owner:
                return False
            return all(rec.labels.get(k) == v for k, v in labels.items())

        sent: dict[str, bytes] = {}
        with self._feed.watch() as watcher:
            query = SessionQuery(owner=owner, labels=labels, limit=size)
            for rec in await self._store.list_sessions(query):
                view = await self._view(rec)
                sent[rec.id] = _key(view)
                yield s.SessionsUpdate(session=view)
            yield s.SessionsUpdate(synced=True)
            while True:
                marked = await watcher.marked(REFRESH if self._store.shared else None)
                if marked is None:  # a look at the whole page: another process's calls
                    page = await self._store.list_sessions(query)
                    marked = set(sent) | {rec.id for rec in page}
                for session_id in sorted(marked):
                    found = await self._store.get_session(session_id)
                    if found is None or not shown(found):
                        if sent.pop(session_id, None) is not None:
                            yield s.SessionsUpdate(deleted_id=session_id)
                        continue
                    view = await self._view(found)
                    key = _key(view)
                    if sent.get(session_id) != key:
                        sent[session_id] = key
                        yield s.SessionsUpdate(session=view)


def _key(view: s.Session) -> bytes:
    """What a list shows of a session: its view but for the seq of its last event."""
    shown = s.Session()
    shown.CopyFrom(view)
    shown.last_seq = 0
    return shown.SerializeToString(deterministic=True)
