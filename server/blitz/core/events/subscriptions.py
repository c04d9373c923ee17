"""A live reader of one session's events: what it was sent, what it is owed, how far behind.

The event log (`event_log.py`) pushes each batch of a session's new events to its
`Subscription`s and hints at seqs other processes appended; a subscription hands its
reader contiguous batches, reading from the store what it was told of and not pushed
(`read_range`), so no seq is skipped or repeated.

Its memory is bounded in bytes, its largest event aside: a reader that stopped taking and
falls that far behind is told so (SLOW_CONSUMER, with the last seq it got) instead of
being dropped silently, what it had queued is let go at once, and it resumes with
Watch(after_seq). While it holds half its limit and keeps taking, its session's producers
wait for it (`room`), so a turn streams at the pace of its readers; one that took nothing
for `STALLED` seconds is not waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable

from blitz.errors import BlitzError, Reason
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["STALLED", "ReadRange", "Subscription"]

# Seconds after which a live reader that took nothing is not waited for (`room`): it is
# stalled, and is cut off when it overflows.
STALLED = 1.0

# The stored events of a session after a seq, up to another (a page at most).
ReadRange = Callable[[str, int, int], Awaitable[list[TurnEvent]]]


class Subscription:
    """Live events of one session from the moment of subscribing, in seq order."""

    def __init__(
        self,
        session_id: str,
        limit: int,
        *,
        read_range: ReadRange,
        on_close: Callable[[Subscription], None],
        stalled: float = STALLED,
    ) -> None:
        """`limit`: the bytes it may lag behind; `read_range(session_id, after, upto)`: the
        stored events it was told of and not pushed; `on_close`: when it ends; `stalled`:
        seconds without taking after which it is not waited for."""
        self.session_id = session_id
        self._read_range = read_range
        self._on_close = on_close
        self._stalled = stalled
        self._limit = limit
        self._queue: deque[TurnEvent] = deque()
        self._bytes = 0
        # The largest event queued, in bytes.
        self._largest = 0
        # The seq of the last event handed to the reader, and the newest it knows exists.
        self._delivered = 0
        self._known = 0
        self._wake = asyncio.Event()
        self._overflow_after: int | None = None
        self._closed = False
        # Set while it holds less than half its limit; when it last took a batch.
        self._room = asyncio.Event()
        self._room.set()
        self._taken_at = time.monotonic()

    def push(self, events: list[TurnEvent], size: int, largest: int) -> None:
        """This process's new events of the session: `size` bytes, the largest `largest`."""
        if self._overflow_after is not None:
            return
        largest = max(largest, self._largest)
        if self._queue and self._bytes + size - largest > self._limit:
            # Too far behind: what is queued is let go now, and the reader is told where
            # to resume (after what it got) once it asks for more. Its largest event
            # does not count, so one large event (a diff of a quarter of a MiB, say) does
            # not end a stream that keeps up: a reader holds its limit and one event.
            self._overflow_after = self._known = self._delivered
            self._queue.clear()
            self._bytes = self._largest = 0
            self._room.set()
        else:
            self._queue.extend(events)
            self._bytes += size
            self._largest = largest
            self._known = max(self._known, events[-1].seq)
            if self._bytes > self._limit // 2:
                self._room.clear()
        self._wake.set()

    def behind(self) -> bool:
        """Whether a producer of its session should wait for it (`room`): it holds half
        its limit and has taken something within the last `stalled` seconds."""
        return not self._room.is_set() and time.monotonic() - self._taken_at <= self._stalled

    async def room(self) -> None:
        """Until this reader holds less than half its limit: a producer of its session
        waits here, so a reader that takes what it is sent, however slowly, is not cut
        off. One that has taken nothing for `stalled` seconds is not waited for."""
        if not self.behind():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._stalled):
                await self._room.wait()

    def hint(self, seq: int) -> None:
        """Another process appended up to `seq`: read what is missing from the store."""
        if seq > self._known and self._overflow_after is None:
            self._known = seq
            self._wake.set()

    def end(self) -> None:
        """The log is closing: the reader is told to resume elsewhere (SHUTTING_DOWN)."""
        self._closed = True
        self._room.set()
        self._wake.set()

    async def batches(self, *, after_seq: int = 0) -> AsyncIterator[list[TurnEvent]]:
        """Yield what has arrived since the last batch, skipping seqs up to `after_seq`.

        What it was told of and has not received (another process's events, or a gap
        before one of this process's) is read from the store first, so that the seqs it
        yields are contiguous.
        """
        self._delivered = after_seq
        self._known = max(self._known, after_seq)
        try:
            while True:
                if not self._queue and self._known <= self._delivered:
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
                queued = [e for e in self._queue if e.seq > self._delivered]
                self._queue.clear()
                self._bytes = self._largest = 0
                self._taken_at = time.monotonic()
                self._room.set()
                batch = await self._complete(queued)
                if batch:
                    self._delivered = batch[-1].seq
                    self._known = max(self._known, self._delivered)
                    yield batch
        finally:
            self.close()

    async def _complete(self, queued: list[TurnEvent]) -> list[TurnEvent]:
        """`queued` after what comes before it and was not pushed here, from the store.

        A page at most is read at once; when more is missing, the queued events wait for
        the next round.
        """
        upto = queued[0].seq - 1 if queued else self._known
        if upto <= self._delivered:
            return queued
        missing = await self._read_range(self.session_id, self._delivered, upto)
        if not missing:
            if not queued:
                self._known = self._delivered  # told of more than the store holds
            return queued  # the store has none of them: go on past the gap
        if missing[-1].seq < upto and queued:
            self._queue.extendleft(reversed(queued))
            self._bytes += sum(e.ByteSize() for e in queued)
            return missing
        return [*missing, *(e for e in queued if e.seq > missing[-1].seq)]

    def close(self) -> None:
        self._room.set()
        self._on_close(self)
