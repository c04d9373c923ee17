"""The event log: every session's events, numbered, persisted, then fanned out live.

One writer task per process drains a queue of appended events in batches: it merges
adjacent partial text (the log stays short when producers outrun the disk), numbers each
event with its session's next `seq`, writes the batch in one transaction, and only then
hands the events to live subscribers. So an event is visible only once it is in the log,
and a reader that replays from the store and then follows the live feed, skipping what it
has seen by seq, sees no gap and no duplicate.

A subscriber's buffer is bounded. When a reader falls that far behind, it is told so
(SLOW_CONSUMER, with the last seq it got) instead of being dropped silently; it resumes
with Watch(after_seq).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator

import structlog

from blitz.core.coalesce import coalesce, mergeable
from blitz.errors import BlitzError, Reason
from blitz.store import EventRow, Store
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["EventLog", "Subscription"]

log = structlog.get_logger(__name__)

# Events a live reader may lag behind before it is told to resume from the store.
DEFAULT_BUFFER = 50_000
# Sessions whose last seq is kept in memory; others are read from the store when needed.
SEQ_CACHE = 10_000


class Subscription:
    """Live events of one session from the moment of subscribing, in seq order."""

    def __init__(self, owner: EventLog, session_id: str, limit: int) -> None:
        self._owner = owner
        self.session_id = session_id
        self._limit = limit
        self._queue: deque[TurnEvent] = deque()
        self._wake = asyncio.Event()
        self._overflow_after: int | None = None
        self._closed = False

    def _push(self, events: list[TurnEvent]) -> None:
        if self._overflow_after is not None:
            return
        if len(self._queue) + len(events) > self._limit:
            # Everything up to what is queued was delivered or is still deliverable; the
            # reader gets those, then the error, and resumes from the store.
            self._overflow_after = self._queue[-1].seq if self._queue else -1
        else:
            self._queue.extend(events)
        self._wake.set()

    def _end(self) -> None:
        self._closed = True
        self._wake.set()

    async def batches(self, *, after_seq: int = 0) -> AsyncIterator[list[TurnEvent]]:
        """Yield what has arrived since the last batch, adjacent partial text merged.

        Events at or before `after_seq` (already read from the store) are skipped first, so
        a merge never carries text the reader has seen.
        """
        try:
            while True:
                if not self._queue:
                    if self._overflow_after is not None:
                        raise BlitzError(
                            Reason.SLOW_CONSUMER,
                            "the client fell too far behind the live stream; "
                            "resume with Watch(after_seq)",
                            {"after_seq": str(self._overflow_after), "limit": str(self._limit)},
                        )
                    if self._closed:
                        raise BlitzError(
                            Reason.SHUTTING_DOWN,
                            "the server is shutting down; resume with Watch(after_seq) later",
                        )
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                batch = [e for e in self._queue if e.seq > after_seq]
                self._queue.clear()
                if batch:
                    after_seq = batch[-1].seq
                    yield coalesce(batch)
        finally:
            self.close()

    def close(self) -> None:
        self._owner._unsubscribe(self)


class _Pending:
    __slots__ = ("done", "event", "session_id")

    def __init__(
        self, session_id: str, event: TurnEvent, done: asyncio.Future[None] | None
    ) -> None:
        self.session_id = session_id
        self.event = event
        self.done = done


class EventLog:
    """Append, persist and fan out session events. `async with` runs the writer."""

    def __init__(self, store: Store, *, buffer: int = DEFAULT_BUFFER) -> None:
        self._store = store
        self._buffer = buffer
        self._queue: list[_Pending] = []
        self._wake = asyncio.Event()
        # The last seq handed out per session: a bounded cache, filled from the store.
        self._next_seq: OrderedDict[str, int] = OrderedDict()
        self._subscribers: dict[str, set[Subscription]] = {}
        self._writer: asyncio.Task[None] | None = None
        self._closing = False

    async def __aenter__(self) -> EventLog:
        self._writer = asyncio.create_task(self._write_loop(), name="blitz-event-writer")
        return self

    async def __aexit__(self, *exc: object) -> None:
        # Flush what is queued, then stop the writer and end every live reader.
        self._closing = True
        self._wake.set()
        if self._writer is not None:
            try:
                await self._writer
            finally:
                self._writer = None
        for subs in list(self._subscribers.values()):
            for sub in list(subs):
                sub._end()

    def emit(self, session_id: str, event: TurnEvent) -> None:
        """Queue an event; it is numbered and persisted in the next batch."""
        self._queue.append(_Pending(session_id, event, None))
        self._wake.set()

    async def commit(self, session_id: str, event: TurnEvent) -> TurnEvent:
        """Append an event and return it, numbered, once it is durable."""
        if self._closing and self._writer is None:
            raise BlitzError(Reason.SHUTTING_DOWN, "the server is shutting down")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(session_id, event, done))
        self._wake.set()
        await done
        return event

    def subscribe(self, session_id: str) -> Subscription:
        sub = Subscription(self, session_id, self._buffer)
        self._subscribers.setdefault(session_id, set()).add(sub)
        if self._closing:
            sub._end()
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        subs = self._subscribers.get(sub.session_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subscribers[sub.session_id]

    async def _write_loop(self) -> None:
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            batch, self._queue = self._queue, []
            try:
                await self._write(batch)
            except Exception:  # the store failed: tell every waiter, keep serving
                log.exception("event_write_failed", events=len(batch))
                for item in batch:
                    if item.done is not None and not item.done.done():
                        item.done.set_exception(
                            BlitzError(Reason.INTERNAL, "the event could not be stored")
                        )

    async def _write(self, batch: list[_Pending]) -> None:
        # Merge runs of streamed text per session; waiters' events are never merged away.
        merged: list[_Pending] = []
        pieces: dict[int, list[str]] = {}  # index in merged -> text chunks to join
        for item in batch:
            if merged and item.done is None:
                prev = merged[-1]
                if (
                    prev.done is None
                    and prev.session_id == item.session_id
                    and mergeable(prev.event, item.event)
                ):
                    pieces.setdefault(len(merged) - 1, [prev.event.text.text]).append(
                        item.event.text.text
                    )
                    continue
            merged.append(item)
        for index, texts in pieces.items():
            merged[index].event.text.text = "".join(texts)

        now_ns = time.time_ns()
        rows: list[EventRow] = []
        by_session: dict[str, list[TurnEvent]] = {}
        for item in merged:
            sid = item.session_id
            seq = self._next_seq.get(sid)
            if seq is None:
                seq = await self._store.last_seq(sid)
            seq += 1
            self._next_seq[sid] = seq
            self._next_seq.move_to_end(sid)
            if len(self._next_seq) > SEQ_CACHE:
                self._next_seq.popitem(last=False)
            event = item.event
            event.seq = seq
            event.session_id = sid
            event.time.FromNanoseconds(now_ns)
            rows.append(EventRow(sid, seq, event.turn_id, event.SerializeToString()))
            by_session.setdefault(sid, []).append(event)
        try:
            await self._store.append_events(rows)
        except BaseException:
            # Nothing was written: forget the numbers handed out, so seq stays gap-free.
            for sid in by_session:
                self._next_seq.pop(sid, None)
            raise
        for sid, events in by_session.items():
            for sub in list(self._subscribers.get(sid, ())):
                sub._push(events)
        for item in merged:
            if item.done is not None and not item.done.done():
                item.done.set_result(None)
