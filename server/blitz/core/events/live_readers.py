"""Each session's live readers in this process: the event log's step 5, fan-out, and back.

The event log (`event_log.py`) hands every stored batch to `LiveReaders.push`, which gives
each session's `Subscription`s (`subscriptions.py`) that session's events, numbered, in
one push per reader; another process's appends arrive as hints (`hint`, from
`following.py`), which each reader turns into reads of the store (`read_range`). The log
asks here which sessions are followed, which readers of a session are behind (its
producers wait for those: `pace`), and ends them all at its close. Nothing here writes an
event or decides what a reader does with what it is sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from blitz.core.events.replays import PAGE_EVENTS
from blitz.core.events.subscriptions import STALLED, Subscription
from blitz.store import Store
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["DEFAULT_BUFFER", "LiveReaders"]

# Bytes of events a live reader may lag behind before it is told to resume from the store.
DEFAULT_BUFFER = 256 * 1024


class LiveReaders:
    """The open subscriptions of each session, and what is pushed to them."""

    def __init__(
        self, store: Store, *, buffer: int = DEFAULT_BUFFER, stalled: float = STALLED
    ) -> None:
        """`buffer`: the bytes each live reader may lag behind; `stalled`: seconds without
        taking after which a reader is not waited for (`Subscription.room`)."""
        self._store = store
        self._buffer = buffer
        self._stalled = stalled
        self._by_session: dict[str, set[Subscription]] = {}

    @property
    def count(self) -> int:
        """Live subscriptions open now."""
        return sum(len(subs) for subs in self._by_session.values())

    def sessions(self) -> list[str]:
        """The sessions with a live reader here."""
        return list(self._by_session)

    def subscribe(self, session_id: str) -> Subscription:
        sub = Subscription(
            session_id,
            self._buffer,
            read_range=self._read_range,
            on_close=self._unsubscribe,
            stalled=self._stalled,
        )
        self._by_session.setdefault(session_id, set()).add(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        subs = self._by_session.get(sub.session_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._by_session[sub.session_id]

    def behind(self, session_id: str) -> list[Subscription]:
        """The session's readers its producers should wait for (`Subscription.behind`)."""
        # Per stream event: a plain look at each reader, an await only for one behind.
        readers = self._by_session.get(session_id)
        if not readers:
            return []
        return [r for r in readers if r.behind()]

    def push(self, events: Sequence[TurnEvent]) -> None:
        """Step 5: each session's stored (numbered) events to its live readers, at once."""
        by_session: dict[str, tuple[list[TurnEvent], list[int]]] = {}
        for event in events:
            if event.seq and event.session_id in self._by_session:
                listed, sizes = by_session.setdefault(event.session_id, ([], [0, 0]))
                listed.append(event)
                size = event.ByteSize()
                sizes[0] += size
                sizes[1] = max(sizes[1], size)
        for sid, (session_events, sizes) in by_session.items():
            for sub in list(self._by_session.get(sid, ())):
                sub.push(session_events, sizes[0], sizes[1])

    def hint(self, session_id: str, seq: int) -> None:
        """Another process appended the session's events up to `seq`."""
        for sub in self._by_session.get(session_id, ()):
            sub.hint(seq)

    def end_all(self) -> None:
        for subs in list(self._by_session.values()):
            for sub in list(subs):
                sub.end()

    async def _read_range(self, session_id: str, after_seq: int, upto: int) -> list[TurnEvent]:
        """The session's stored events after `after_seq` up to `upto`, a page at most."""
        limit = min(upto - after_seq, PAGE_EVENTS)
        rows = await self._store.read_events(session_id, after_seq=after_seq, limit=limit)
        return [TurnEvent.FromString(row.data) for row in rows if row.seq <= upto]
