"""The event log: every session's events, through one pipeline, then replayed and followed.

Whoever produces an event — the agent through `TurnIO`, a parking turn, a resolution, a
turn's `finished` — hands it to `emit` (streamed, not waited for) or `commit` (returned
once durable), with the records of its turn's step that go with it (`TurnWrite`: a
turn's start with its `accepted`, its park with its requests, a ledger row with its
`usage`; `write` for records with no event, a checkpoint). One writer task drains what is
queued in batches: at once when something queued is waited for, else after up to
`_LINGER`, so that a turn's stream and its next commit are one transaction. Every event
passes the same steps in the same order, written once in `_write`:

1. merge, as events are queued: a streamed text chunk joins the session's last queued
   event when that is streamed text of the same turn and author (the log stays short, and
   the backlog small, when producers outrun the disk), never across a committed event,
   and never past `MERGE_MAX` characters (`log_queue.py`);
2. stamp: session, turn and time;
3. redact and cap: secrets masked in whatever kind of event it is, then the event cut to
   `EVENT_MAX` bytes, so no kind can reach a client or the disk unmasked and no event is
   too large for any client (`stamping.py`);
4. persist: the store numbers the events with their session's next seqs and writes the
   batch, with its records, in one transaction; the events and records of a turn given
   with its epoch (`fence`) are stored only if the turn is still held at that epoch, and
   those of a turn that was taken over are left out, their committers told (`TurnLost`)
   and the listener too (`lost`);
5. fan out: live readers of each session get the events, and committers are released;
   when the batch stored an event a webhook may be told of (the store put it in the
   webhook outbox in step 4), the outbox's listener hears so (`on_outbox`).

So an event is visible only once it is in the log, and its seq is final: seqs a client
sees are contiguous, live and in replay alike, and a gap means a loss. `read` replays a
session from the store and then follows it live, skipping by seq what it has yielded, so
the hand-over has no gap and no duplicate.

Where processes share the store, a session's events may be written by any of them. A live
reader gets this process's events pushed (`live_readers.py`), and learns of the others'
from the store's announcements or a slow poll (`following.py`); it reads from the store
whatever it has been told of and not received, gaps included, so what it yields stays
contiguous (`subscriptions.py`). The announcements also name turns someone asked to
cancel or steer: the listener hears of those (`asked`).

Memory is bounded twice, in bytes. The backlog waiting for the writer: past a high mark
(128 KiB, low so that a streaming turn waits for the writer instead of racing it),
producers that can wait do (`pace`, which the agent calls as it streams) until the writer
has caught up; they also wait while a live reader of their session that keeps taking what
it is sent holds half its buffer, so that a turn streams at the pace of its readers. And
each live reader's buffer (`Subscription`): one that stopped taking and falls that far
behind is told so (SLOW_CONSUMER) instead of being dropped silently.

What is queued, and how it merges, is `log_queue.py`'s; how each event is stamped, masked
and cut, `stamping.py`'s; who is pushed each batch, `live_readers.py`'s. The order of the
five steps, and the writer that drains the queue, stay here, as one piece.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Protocol

import structlog

from blitz import metrics
from blitz.core.events.following import DEFAULT_POLL, Following
from blitz.core.events.live_readers import DEFAULT_BUFFER, LiveReaders
from blitz.core.events.log_queue import Queued, queued_cost
from blitz.core.events.replays import ReplayTurns, replay
from blitz.core.events.stamping import stamped
from blitz.core.events.subscriptions import STALLED, Subscription
from blitz.core.supervisor import raise_if_cancelled
from blitz.errors import BlitzError, Reason
from blitz.store import OUTBOX_KINDS, Store, TurnWrite
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["EventLog", "LogListener", "TurnLost"]

log = structlog.get_logger(__name__)

# Bytes of queued events past which `pace` makes producers wait, and below which it lets
# them go again.
_BACKLOG_HIGH = 128 * 2**10
_BACKLOG_LOW = 32 * 2**10
# Seconds the writer waits, at most, before it writes events no one waits for (streamed
# ones): a turn's stream and its next commit are then one transaction, not several.
_LINGER = 0.005


class TurnLost(Exception):
    """The turn's events were not stored: another process holds it now."""


class LogListener(Protocol):
    """What the turn driver hears from the log."""

    def lost(self, session_id: str, turn_id: str) -> None:
        """Events of a turn this process held were fenced out: it holds it no more."""
        ...

    def asked(self, session_id: str, turn_id: str) -> None:
        """Someone asked something of the turn (to cancel, or to take steer text)."""
        ...


class EventLog:
    """Append, persist and fan out session events. `async with` runs the writer."""

    def __init__(
        self,
        store: Store,
        *,
        buffer: int = DEFAULT_BUFFER,
        poll: float = DEFAULT_POLL,
        stalled: float = STALLED,
    ) -> None:
        """`buffer`: the bytes each live reader may lag behind; `poll`: seconds between
        polls of other processes' appends (a shared store); `stalled`: seconds without
        taking after which a reader is not waited for (`pace`)."""
        self._store = store
        self._listener: LogListener | None = None
        # Each session's live readers here, what step 5 pushes each batch to.
        self._readers = LiveReaders(store, buffer=buffer, stalled=stalled)
        # Other processes' appends, where they share the store.
        self._following = (
            Following(
                store,
                followed=self._readers.sessions,
                hint=self._hinted,
                asked=self._asked,
                poll=poll,
            )
            if store.shared
            else None
        )
        self._queue: list[Queued] = []
        # Batches the writer has taken from the queue, and those it has written (or
        # failed to): `written` waits for the number to reach its own.
        self._batches_taken = 0
        self._batches_done = 0
        self._batch_written = asyncio.Event()
        # The last queued event of each session, while it may still take more text.
        self._tails: dict[str, Queued] = {}
        self._backlog = 0
        self._caught_up = asyncio.Event()
        self._caught_up.set()
        self._wake = asyncio.Event()
        # Set once what is queued is waited for: a commit, a `written`, a backlog past its
        # high mark, the close. Until then the writer lingers (`_LINGER`).
        self._due = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._closing = False
        self._outbox_written: Callable[[], None] | None = None
        self._replay_turns = ReplayTurns()
        self._changed: Callable[[str], None] | None = None

    def listen(self, listener: LogListener) -> None:
        self._listener = listener

    def on_changed(self, changed: Callable[[str], None] | None) -> None:
        """Call `changed(session_id)` for each session a stored batch holds events of,
        here or (announced) in another process sharing the store."""
        self._changed = changed

    def _hinted(self, session_id: str, seq: int) -> None:
        self._readers.hint(session_id, seq)
        if self._changed is not None:
            self._changed(session_id)

    def on_outbox(self, written: Callable[[], None] | None) -> None:
        """Call `written` after each batch that put an event in the webhook outbox."""
        self._outbox_written = written

    async def __aenter__(self) -> EventLog:
        self._writer = asyncio.create_task(self._write_loop(), name="blitz-event-writer")
        if self._following is not None:
            await self._following.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._following is not None:
            await self._following.__aexit__(*exc)
        # Flush what is queued, then stop the writer and end every live reader.
        self._closing = True
        self._wake.set()
        self._due.set()
        if self._writer is not None:
            try:
                await self._writer
            finally:
                self._writer = None
        self._readers.end_all()

    # Appending

    def emit(
        self,
        session_id: str,
        turn_id: str,
        event: TurnEvent,
        *,
        fence: int | None = None,
        writes: Sequence[TurnWrite] = (),
    ) -> None:
        """Queue an event of the turn; it is stored and sent out with the next batch.

        `fence`: the epoch the caller holds the turn at, when it writes as its holder;
        `writes`: records written with it (see `commit`), which no one waits for: what
        waits for them awaits a `commit` queued after, or `written`.
        """
        self._enqueue(Queued(session_id, turn_id, event, None, fence, writes))

    def commit(
        self,
        session_id: str,
        turn_id: str,
        event: TurnEvent,
        *,
        fence: int | None = None,
        writes: Sequence[TurnWrite] = (),
    ) -> Awaitable[TurnEvent]:
        """Append an event of the turn: queued at once, so what is queued after it follows
        it (in the same batch, when it is soon enough); awaited, returns the event,
        numbered and masked, once durable. `writes` are written in the same transaction
        (`Store.append_events`), only if the turn is still held at `fence`: a turn's end
        with its `finished`, its start with its `accepted`, its requests with their
        announcements, a workflow run's state with its `flow_step`.

        Raises `TurnLost` when `fence` is given and the turn is held at another epoch, or
        when a `TurnStart` in `writes` could not take its session.
        """
        if self._closing and self._writer is None:
            raise BlitzError(Reason.SHUTTING_DOWN, "the server is shutting down")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._enqueue(Queued(session_id, turn_id, event, done, fence, writes))
        return _durable(done, event)

    async def written(self) -> None:
        """Return once the writer is done with everything queued so far, what was emitted
        included (its `writes` too): stored, or failed as the committers were told."""
        wanted = self._batches_taken + 1 if self._queue else self._batches_taken
        self._due.set()
        while self._batches_done < wanted and self._writer is not None:
            await self._batch_written.wait()

    def write(
        self, session_id: str, turn_id: str, writes: Sequence[TurnWrite], *, fence: int
    ) -> Awaitable[None]:
        """Records of the turn with no event of their own (a checkpoint), written in the
        next batch, fenced as `commit` is; awaited, returns once durable."""
        if self._closing and self._writer is None:
            raise BlitzError(Reason.SHUTTING_DOWN, "the server is shutting down")
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._enqueue(Queued(session_id, turn_id, None, done, fence, writes))
        return done

    async def pace(self, session_id: str) -> None:
        """Return at once unless the backlog is past its high mark (then once it is low),
        or a live reader of the session that keeps taking is half full (then once it has
        taken its events, or stopped taking: see `Subscription.room`)."""
        if not self._caught_up.is_set():
            await self._caught_up.wait()
        for reader in self._readers.behind(session_id):
            await reader.room()

    def _enqueue(self, item: Queued) -> None:
        # 1. merge, into the session's last queued event when it may take it: other
        # sessions' events in between do not change this session's order.
        tail = self._tails.get(item.session_id)
        if tail is not None and tail.absorbs(item):
            self._backlog += tail.merge(item)
        else:
            self._queue.append(item)
            self._tails[item.session_id] = item
            self._backlog += queued_cost(item)
            self._wake.set()
        if item.done is not None:
            self._due.set()
        if self._backlog > _BACKLOG_HIGH:
            self._caught_up.clear()
            self._due.set()

    async def _write_loop(self) -> None:
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            if not self._due.is_set() and not self._closing:
                # Only streamed events so far: they wait a moment for more, and for the
                # turn's next commit, to be written with them in one transaction.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_LINGER):
                        await self._due.wait()
            self._due.clear()
            batch, self._queue = self._queue, []
            self._batches_taken += 1
            self._tails.clear()
            try:
                await self._write(batch)
            except Exception:  # the store failed: tell every waiter, keep serving
                raise_if_cancelled()
                log.exception("event_write_failed", events=len(batch))
                for item in batch:
                    if item.done is not None and not item.done.done():
                        item.done.set_exception(
                            BlitzError(Reason.INTERNAL, "the event could not be stored")
                        )
            finally:
                self._batches_done += 1
                self._batch_written.set()
                self._batch_written = asyncio.Event()
                if not self._queue:
                    self._backlog = 0
                else:
                    self._backlog = sum(queued_cost(item) for item in self._queue)
                if self._backlog < _BACKLOG_LOW:
                    self._caught_up.set()

    async def _write(self, kept: list[Queued]) -> None:
        """The rest of the pipeline (see the module doc): stamp, redact, persist, fan out."""
        now_ns = time.time_ns()
        events: list[TurnEvent] = []
        kinds: list[str] = []
        for item in kept:
            # 2. stamp, 3. redact and cap
            event = stamped(item, now_ns)
            if event is None:
                continue
            events.append(event)
            kinds.append(event.WhichOneof("kind") or "")
        # 4. persist: the store sets each event's seq, and leaves out a lost turn's
        fences = {(i.session_id, i.turn_id): i.fence for i in kept if i.fence is not None}
        writes = [write for item in kept for write in item.writes]
        started = time.perf_counter()
        lost = await self._store.append_events(events, fences=fences, writes=writes)
        metrics.store_write("append_events", time.perf_counter() - started)
        metrics.events_appended(kinds)
        if lost:
            self._fenced_out(kept, lost)
        # 5. fan out
        self._readers.push(events)
        if self._changed is not None:
            for session_id in {event.session_id for event in events}:
                self._changed(session_id)
        for item in kept:
            if item.done is not None and not item.done.done():
                item.done.set_result(None)
        if self._outbox_written is not None and not OUTBOX_KINDS.isdisjoint(kinds):
            self._outbox_written()

    def _fenced_out(self, kept: list[Queued], lost: set[tuple[str, str]]) -> None:
        for key in lost:
            log.warning("turn_lost", session_id=key[0], turn_id=key[1])
            if self._listener is not None:
                self._listener.lost(*key)
        for item in kept:
            if (item.session_id, item.turn_id) in lost and item.done is not None:
                if not item.done.done():
                    item.done.set_exception(TurnLost(item.session_id, item.turn_id))

    def _asked(self, session_id: str, turn_id: str) -> None:
        """Another process asked something of the turn."""
        if self._listener is not None:
            self._listener.asked(session_id, turn_id)

    # Reading

    @property
    def watchers(self) -> int:
        """Live subscriptions open now."""
        return self._readers.count

    def subscribe(self, session_id: str) -> Subscription:
        """Live events of the session from now on (see `read` for replay first)."""
        sub = self._readers.subscribe(session_id)
        if self._closing:
            sub.end()
        return sub

    async def read(
        self, session_id: str, *, after_seq: int, follow: bool
    ) -> AsyncGenerator[TurnEvent, None]:
        """The session's events after `after_seq` from the store (in bounded pages, a few
        replays at a time: `replays.py`), then (with `follow`) live.

        Subscribing before reading the store and skipping seqs already yielded is what
        makes the hand-over free of gaps and duplicates.
        """
        sub = self.subscribe(session_id) if follow else None
        try:
            last = after_seq
            stored = replay(self._store, self._replay_turns, session_id, after_seq=after_seq)
            async with contextlib.aclosing(stored):
                async for event in stored:
                    last = event.seq
                    yield event
            if sub is None:
                return
            async for event in self.follow(sub, after_seq=last):
                yield event
        finally:
            if sub is not None:
                sub.close()

    async def follow(self, sub: Subscription, *, after_seq: int) -> AsyncGenerator[TurnEvent, None]:
        """`sub`'s events after `after_seq`, live, with no replay from the store first: for a
        subscription made before the first of them could be stored. Closes `sub` at its
        end."""
        try:
            async for batch in sub.batches(after_seq=after_seq):
                for event in batch:
                    yield event
        finally:
            sub.close()


async def _durable(done: asyncio.Future[None], event: TurnEvent) -> TurnEvent:
    await done
    return event
