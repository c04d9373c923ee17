"""Steps 2 and 3 of the event log's pipeline: each event stamped, masked and cut to fit.

The writer (`event_log.py`) runs every queued event through `stamped` before the store
sees it, whatever its kind and whoever produced it:

2. stamp: session, turn and time (one time for a whole batch);
3. redact and cap: secrets masked in whatever kind of event it is
   (`blitz.redact.redact_event`), so no kind can reach a client or the disk unmasked; then
   the event cut to `EVENT_MAX` bytes (`blitz.size_limits.fit`: the longest strings keep
   their start and say how much was cut), so no event can be too large for any client.
   Masking runs on at most four times that, cut first the same way, so a huge event
   costs the loop no more than a large one.

It changes the event in place and does no I/O: persisting and fanning out stay the
writer's.
"""

from __future__ import annotations

import structlog

from blitz.core.events.log_queue import Queued
from blitz.redact import redact_event
from blitz.size_limits import EVENT_MAX, fit
from blitz.v1.turn_pb2 import Notice, TurnEvent

__all__ = ["stamped"]

log = structlog.get_logger(__name__)

# What a cut string says of why (step 3).
_CUT_WHY = f"an event holds at most {EVENT_MAX // (1024 * 1024)} MiB"


def stamped(item: Queued, now_ns: int) -> TurnEvent | None:
    """The queued item's event (its merged text joined), stamped, masked and capped; None
    for records with no event."""
    event = item.event
    if event is None:
        return None
    if item.texts is not None:
        event.text.text = "".join(item.texts)
    # 2. stamp
    event.session_id = item.session_id
    event.turn_id = item.turn_id
    event.time.FromNanoseconds(now_ns)
    # 3. redact and cap
    fit(event, 4 * EVENT_MAX, why=_CUT_WHY)
    redact_event(event)
    _cap(event)
    return event


def _cap(event: TurnEvent) -> None:
    """Step 3's cut: the event within EVENT_MAX, each cut saying what was left out.

    An event that cutting strings and lists cannot shrink enough (one of nothing but map
    keys) is replaced by an error notice of its kind and size.
    """
    if fit(event, EVENT_MAX, why=_CUT_WHY) and event.ByteSize() > EVENT_MAX:
        kind = event.WhichOneof("kind") or "event"
        size = event.ByteSize()
        log.warning("event_too_large", kind=kind, size=size)
        event.notice.CopyFrom(
            Notice(text=f"a {kind} event of {size:,} bytes was too large to keep", error=True)
        )
