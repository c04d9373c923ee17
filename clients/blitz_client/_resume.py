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

A client given several addresses (replicas) uses one at a time (`_addresses.py`). A
failure that says its server is gone or leaving (`unavailable`, SHUTTING_DOWN included, or
no connection made at all, a connect timeout included) moves the client on to the next
address, and the call or stream is sent again there at once; each address is tried once
per attempt, and the backoff comes between full rounds. Other failures (SLOW_CONSUMER)
resume on the same address.

This module only decides when and where to send again and which events to skip:
`AsyncBlitz` builds the requests and the transports move them. It never retries what a
retry cannot fix: an error that is not resumable is raised at once, a unary call that may
have been carried out is not sent twice unless it only reads (`READS`), and a client that
has never reached a server fails once every address has failed (a wrong address, say).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

from blitz.v1 import turn_pb2
from blitz_client._addresses import Addresses
from blitz_client._errors import BlitzError
from blitz_client._transport import Transport

__all__ = ["READS", "Resumer", "StreamOpener"]

T = TypeVar("T")

StreamOpener = Callable[[Transport, int], AsyncGenerator[turn_pb2.TurnEvent, None]]
"""Opens a stream of events on a transport after a given seq (0: from the start)."""

READS = frozenset(
    {
        "GetServerInfo",
        "GetSession",
        "ListSessions",
        "ListTurns",
        "GetUsage",
        "ListRules",
        "ListFiles",
        "ReadFile",
        "GetDiff",
    }
)
"""The unary calls that change nothing, so that sending one again is always safe: even
after a failure that leaves open whether the server carried it out (a connection reset
mid-call). Any other call is sent again only when it cannot have been carried out: it was
turned away at the door (SHUTTING_DOWN) or never sent (no connection was made)."""

# A stream that failed after staying open this long (s) had reached the server.
_CONNECTED_S = 1.0


class Resumer:
    """One client's way through outages, and its memory of having reached the server.

    `reconnect_timeout` is how long, in seconds, each outage may last before its last
    error is raised.
    """

    def __init__(self, addresses: Addresses, *, reconnect_timeout: float) -> None:
        self._addresses = addresses
        self._reconnect_timeout = reconnect_timeout
        # Whether a call has reached a server: from then on, streams ride out outages.
        self._reached = False

    async def call(self, method: str, send: Callable[[Transport], Awaitable[T]]) -> T:
        """`send(transport)`'s result, sent to the next address while servers go away.

        SHUTTING_DOWN on a call means it was turned away at the door, before anything was
        done, and a call on no connection was never sent: either is sent again at once to
        the next address. A call in `READS` is, too, after any failure of a server that is
        gone; any other call that may have been carried out is not, and its error raised.
        Once every address has failed this call: while one of them said SHUTTING_DOWN, the
        call is sent round again after a backoff, for up to `reconnect_timeout` (another
        replica, or the same server restarted, takes it); else the last error is raised.
        """
        started = time.monotonic()
        delay = 0.05
        tried: set[int] = set()
        leaving = False  # whether a server of this round turned the call away
        while True:
            index, transport = self._addresses.pick(avoid=tried)
            try:
                result = await send(transport)
            except BlitzError as exc:
                if not _gone(exc):
                    raise
                self._addresses.move_on(index)
                refused = exc.reason == "SHUTTING_DOWN"
                if not (refused or not exc.sent or method in READS):
                    raise  # it may have been carried out: sending it again could repeat it
                tried.add(index)
                leaving = leaving or refused
                if len(tried) < len(self._addresses.all):
                    continue
                if not leaving or time.monotonic() - started > self._reconnect_timeout:
                    raise
                tried, leaving = set(), False
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            self._reached = True
            return result

    def turn(
        self,
        open_turn: Callable[[Transport], AsyncGenerator[turn_pb2.TurnEvent, None]],
        watch: StreamOpener,
        *,
        turn_id: str,
    ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
        """One turn's events until its `finished`: from `open_turn(transport)` (the request
        that starts it, sent again until an event arrives), then from the session's `watch`."""

        def open_stream(
            transport: Transport, after_seq: int
        ) -> AsyncGenerator[turn_pb2.TurnEvent, None]:
            if after_seq == 0:
                # Nothing seen yet, so the turn may not exist: ask for it again.
                return open_turn(transport)
            return watch(transport, after_seq)

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
        """Events from `open_stream(transport, last_seq)`, reopened after a resumable failure.

        With `turn_id`: only that turn's events, and a stream is not over until its
        `finished`. Without: a stream that ends cleanly is over. A stream opened after a
        seq for which `contiguous` holds is read again at once when its seqs skip one (an
        event lost on the way); if the skip is still there, the server has no such event,
        and it is accepted.

        A stream whose server is gone is reopened at once on the next address, until each
        has been tried in this outage; then after a backoff, round after round. Retrying
        lasts up to `reconnect_timeout` from the start of each outage: a stream that
        delivered an event or stayed open a while was connected, so its failure starts a
        new one. A client that has never reached a server (a wrong address, say) fails
        once every address has, as a call would.
        """
        last_seq = after_seq
        failing_since: float | None = None
        delay = 0.05
        # The seq after which a skip was read again: a second skip there is the server's.
        reread_after: int | None = None
        tried: set[int] = set()  # the addresses that failed in this round of this outage
        while True:
            opened = time.monotonic()
            checked = contiguous(last_seq)
            index, transport = self._addresses.pick(avoid=tried)
            stream = open_stream(transport, last_seq)
            gap = False
            try:
                async for event in stream:
                    self._reached = True
                    failing_since, delay = None, 0.05
                    tried.clear()
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
                if not (exc.resumable or _gone(exc)):
                    raise
                error = exc
            finally:
                await stream.aclose()
            now = time.monotonic()
            if now - opened >= _CONNECTED_S:
                self._reached, failing_since, delay = True, None, 0.05
                tried.clear()
            failing_since = failing_since or now
            if _gone(error):
                self._addresses.move_on(index)
                tried.add(index)
                if len(tried) < len(self._addresses.all):
                    if now - failing_since > self._reconnect_timeout:
                        raise error
                    continue  # the next address, at once
            tried.clear()
            if not self._reached:
                raise error
            if now - failing_since > self._reconnect_timeout:
                raise error
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)


def _gone(error: BlitzError) -> bool:
    """Whether `error` says its server is gone or leaving, so another may do better:
    `unavailable` (a refused or dropped connection, SHUTTING_DOWN) or no connection made
    at all (Connect reports a connect timeout as `deadline_exceeded`)."""
    return error.code == "unavailable" or not error.sent


def _closes(event: turn_pb2.TurnEvent) -> bool:
    """Whether `event` says the session closed: the server ends a Watch after it."""
    return (
        event.HasField("session_state")
        and event.session_state.state == turn_pb2.SessionStateChange.STATE_CLOSED
    )
