"""What waits for the event log's writer (`event_log.py`): an event, or records with none.

Each `Queued` item is one event of a turn, with who waits for it (a `commit`), the epoch
its turn is held at, and the records written with it; and how a streamed text chunk is
merged into the one queued before it (step 1 of the pipeline), never across a committed
event, an event with records, or another turn's. `queued_cost` is what the backlog
reckons an item holds. No I/O here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from blitz.store import TurnWrite
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["EVENT_COST", "MERGE_MAX", "Queued", "queued_cost"]

# What an event is reckoned to cost beside its text (its envelope, its object).
EVENT_COST = 256
# The most characters streamed chunks are merged into.
MERGE_MAX = 64 * 1024


class Queued:
    """An event waiting for the writer, with where it belongs and who waits for it; or,
    with no event, records of a turn that go in the next batch (`write`)."""

    __slots__ = ("done", "event", "fence", "session_id", "size", "texts", "turn_id", "writes")

    def __init__(
        self,
        session_id: str,
        turn_id: str,
        event: TurnEvent | None,
        done: asyncio.Future[None] | None,
        fence: int | None,
        writes: Sequence[TurnWrite] = (),
    ) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self.event = event
        self.done = done
        # The epoch the turn's holder holds it at, for step 4; None: not the holder's.
        self.fence = fence
        # What is written with this event, in the transaction that appends it: the turn's
        # start with its `accepted`, its end with its `finished`, and so on (`TurnWrite`).
        self.writes = writes
        # Text of later chunks merged into this one, joined once (step 1), and its length.
        self.texts: list[str] | None = None
        self.size = len(event.text.text) if event is not None and event.HasField("text") else 0

    def merge(self, other: Queued) -> int:
        """Take `other`'s text (see `absorbs`); how many characters it added."""
        assert self.event is not None and other.event is not None
        if self.texts is None:
            self.texts = [self.event.text.text]
        self.texts.append(other.event.text.text)
        self.size += len(other.event.text.text)
        return len(other.event.text.text)

    def absorbs(self, other: Queued) -> bool:
        """Whether `other` may be merged into this event without changing its meaning."""
        if self.done is not None or other.done is not None or self.turn_id != other.turn_id:
            return False
        if self.writes or other.writes:
            return False
        if self.fence != other.fence:
            return False
        a, b = self.event, other.event
        if a is None or b is None:
            return False
        if a.WhichOneof("kind") != "text" or b.WhichOneof("kind") != "text":
            return False
        return (
            a.text.partial
            and b.text.partial
            and a.text.thought == b.text.thought
            and a.author == b.author
            and self.size + len(b.text.text) <= MERGE_MAX
        )


def queued_cost(item: Queued) -> int:
    """What a queued event is reckoned to hold, in bytes: its size, counted cheaply for
    streamed text (the hot path), whose merged chunks are not joined yet."""
    if item.event is None:
        return EVENT_COST
    if item.event.WhichOneof("kind") != "text":
        return EVENT_COST + item.event.ByteSize()
    texts = item.texts if item.texts is not None else [item.event.text.text]
    return EVENT_COST + sum(len(text) for text in texts)
