"""Riding out outages: a call sent again while the server goes away, a dropped stream resumed.

Every event carries a per-session `seq`. A stream that drops (a network error, a server
restart or shutdown, SLOW_CONSUMER) is picked up again with `Watch(after_seq=last seq
seen)`, and events at or below that seq are skipped, so a consumer sees each event once
and in order. Seqs are contiguous (a merged text event has a seq of its own): on a Watch
stream, a seq that skips one means an event was lost on the way, and the stream is read
again after the last one seen, as after a drop. A turn's stream (`RunTurn`, `AcceptPlan`)
resumes the same turn: before its first event by sending the same request again (its
client-chosen `turn_id` makes that idempotent), after it by watching the session from the
last seq and keeping that turn's events until `finished`.

This module only decides when to send again and which events to skip: `AsyncBlitz` builds
the requests and the transports move them. It never retries what a retry cannot fix: an
error that is not resumable is raised at once, and so is every error of a client that has
never reached its server (a wrong address, say).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

from blitz.v1 import turn_pb2
from blitz_client._errors import BlitzError

__all__ = ["Resumer", "StreamOpener"]

T = TypeVar("T")

StreamOpener = Callable[[int], AsyncGenerator[turn_pb2.TurnEvent, None]]
"""Opens a stream of events after a given seq (0: from the start)."""

# A stream that failed after staying open this long (s) had reached the server.
_CONNECTED_S = 1.0


class Resumer:
    """One client's way through outages, and its memory of having reached the server.

    `reconnect_timeout` is how long, in seconds, each outage may last before its last
    error is raised.
    """

    def __init__(self, *, reconnect_timeout: float) -> None:
        self._reconnect_timeout = reconnect_timeout
        # Whether a call has reached the server: from then on, streams ride out outages.
        self._reached = False

    async def call(self, send: Callable[[], Awaitable[T]]) -> T:
        """`send()`'s result; sent again while a server that is going away refuses it.

        SHUTTING_DOWN on a call means it was turned away at the door, before anything was
        done, so sending it again is safe: it reaches another replica (or the same server
        once restarted) within `reconnect_timeout`.
        """
        started = time.monotonic()
        delay = 0.05
        while True:
            try:
                result = await send()
            except BlitzError as exc:
                if exc.reason != "SHUTTING_DOWN":
                    raise
                if time.monotonic() - started > self._reconnect_timeout:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            self._reached = True
            return result

    def turn(
        self,
        open_turn: Callable[[], AsyncGenerator[turn_pb2.TurnEvent, None]],
        watch: StreamOpener,
        *,
        turn_id: str,
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """One turn's events until its `finished`: from `open_turn()` (the request that
        starts it, sent again until an event arrives), then from the session's `watch`."""

        def open_stream(after_seq: int) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
            if after_seq == 0:
                # Nothing seen yet, so the turn may not exist: ask for it again.
                return open_turn()
            return watch(after_seq)

        # RunTurn's own stream holds only this turn's events, so its seqs may skip those of
        # an aside; once resumed, it reads the session's Watch, whose seqs may not skip.
        return self.events(open_stream, turn_id=turn_id, contiguous=lambda after_seq: after_seq > 0)

    async def events(
        self,
        open_stream: StreamOpener,
        *,
        after_seq: int = 0,
        turn_id: str | None = None,
        contiguous: Callable[[int], bool] = lambda after_seq: True,
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """Events from `open_stream(last_seq)`, reopened after a resumable failure.

        With `turn_id`: only that turn's events, and a stream is not over until its
        `finished`. Without: a stream that ends cleanly is over. A stream opened after a
        seq for which `contiguous` holds is read again at once when its seqs skip one (an
        event lost on the way); if the skip is still there, the server has no such event,
        and it is accepted.

        Retrying lasts up to `reconnect_timeout` from the start of each outage: a stream
        that delivered an event or stayed open a while was connected, so its failure starts
        a new one. A client that has never reached the server (a wrong address, say) fails
        at once, as a call would.
        """
        last_seq = after_seq
        failing_since: float | None = None
        delay = 0.05
        # The seq after which a skip was read again: a second skip there is the server's.
        reread_after: int | None = None
        while True:
            opened = time.monotonic()
            checked = contiguous(last_seq)
            stream = open_stream(last_seq)
            gap = False
            try:
                async for event in stream:
                    self._reached = True
                    failing_since, delay = None, 0.05
                    if event.seq:
                        if event.seq <= last_seq:
                            continue  # seen before the stream dropped
                        if checked and event.seq > last_seq + 1 and reread_after != last_seq:
                            gap, reread_after = True, last_seq  # lost on the way: read again
                            break
                        last_seq = event.seq
                    if turn_id is not None and _closes(event):
                        return  # the session closed: its turns have all finished
                    if turn_id is not None and event.turn_id != turn_id:
                        continue
                    yield event
                    if turn_id is not None and event.HasField("finished"):
                        return
                if gap:
                    continue
                if turn_id is None:
                    return
                error = BlitzError("unavailable", "UNAVAILABLE", "the stream ended early")
            except BlitzError as exc:
                if not exc.resumable:
                    raise
                error = exc
            finally:
                await stream.aclose()
            now = time.monotonic()
            if now - opened >= _CONNECTED_S:
                self._reached, failing_since, delay = True, None, 0.05
            if not self._reached:
                raise error
            failing_since = failing_since or now
            if now - failing_since > self._reconnect_timeout:
                raise error
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)


def _closes(event: turn_pb2.TurnEvent) -> bool:
    """Whether `event` says the session closed: the server ends a Watch after it."""
    return (
        event.HasField("session_state")
        and event.session_state.state == turn_pb2.SessionStateChange.STATE_CLOSED
    )
