"""Replays from the store: bounded pages, read in turns, so a flood of them cannot stall the loop.

A replay (Watch from `after_seq`, a RunTurn stream from its turn's start) reads the
session's stored events a page at a time. SQLite answers on the loop's thread, and each
event yielded is encoded and written by the transport on it too, so a replay is pure loop
work for as long as its client keeps reading. Three bounds keep that from starving
everything else (a probe: 300 Connect replays of 20,000 events held the loop 3.3 s at
once, pages being 1,000 events):

- a page holds at most `PAGE_EVENTS` events, and about `PAGE_BYTES` bytes: the next page
  is sized by the last one's bytes, the first is small, so a session of large events is not
  read a hundred MiB at a time;
- a replay reads and hands out a page only while it holds a turn (`ReplayTurns`): a few
  replays work at once and the others wait, off the loop's ready queue, so a health probe
  or a turn waits behind a few pages' work, not behind every open replay's;
- a turn lasts one page, and at most `LEASE` seconds: a replay whose client stopped
  reading (its writes waiting for the socket) holds no one up past that.

It must never hold a turn across anything but its own page: not the live follow that comes
after (`EventLog.read`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from blitz.store import Store
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["LEASE", "PAGE_BYTES", "PAGE_EVENTS", "ReplayTurns", "replay"]

# Events in a page at most: a page of small events is read in about half a millisecond.
PAGE_EVENTS = 128
# The bytes a page aims at: the next page is sized from the last one's bytes per event.
PAGE_BYTES = 256 * 1024
# Events in a replay's first page, before it knows how large its events are.
_FIRST_PAGE = 16
# Replays that read and hand out a page at once.
TURNS = 4
# Seconds a replay holds its turn at most, though its page is not all taken.
LEASE = 0.1


class ReplayTurns:
    """At most `turns` replays work at once; a turn ends with its page or after `lease` s."""

    def __init__(self, turns: int = TURNS, *, lease: float = LEASE) -> None:
        self._slots = asyncio.Semaphore(turns)
        self._lease = lease

    async def take(self) -> _Turn:
        await self._slots.acquire()
        return _Turn(self._slots, self._lease)


class _Turn:
    """One replay's turn: ended by `end`, or by its lease, whichever comes first."""

    def __init__(self, slots: asyncio.Semaphore, lease: float) -> None:
        self._slots: asyncio.Semaphore | None = slots
        self._timer = asyncio.get_running_loop().call_later(lease, self.end)

    def end(self) -> None:
        if self._slots is not None:
            self._slots.release()
            self._slots = None
            self._timer.cancel()


async def replay(
    store: Store, turns: ReplayTurns, session_id: str, *, after_seq: int
) -> AsyncGenerator[TurnEvent, None]:
    """The session's stored events after `after_seq`, in seq order, a bounded page a turn."""
    last, limit = after_seq, _FIRST_PAGE
    while True:
        turn = await turns.take()
        try:
            rows = await store.read_events(session_id, after_seq=last, limit=limit)
            for row in rows:
                yield TurnEvent.FromString(row.data)
        finally:
            turn.end()
        if len(rows) < limit:
            return
        last = rows[-1].seq
        size = sum(len(row.data) for row in rows)
        limit = max(1, min(PAGE_EVENTS, PAGE_BYTES * len(rows) // max(size, 1)))
        # A turn free again is taken at once when no one waits for it: give way here, so
        # the loop runs what else is ready between two pages.
        await asyncio.sleep(0)
