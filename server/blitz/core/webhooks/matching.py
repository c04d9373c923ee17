"""Which webhooks hear of a stored event, and the deliveries it becomes for them.

A webhook hears of an event when all of these hold: it asked for the event's kind (or
"*"); the event's session is its owner's (or the webhook is server-wide); the session is
the one it names, if it names one; the session has every label it names; and the event
was stored at or after the webhook was made (a webhook hears of what happens after it
exists, not of the past). Whether it is paused does not matter here: a paused webhook's
deliveries wait for it, each within its retry window.

`expander` is the `Store.Expand` the dispatcher hands to `expand_outbox`: a pure function,
run inside the store's transaction, that makes each delivery's body once per format, and
an approval's or a question's links once for all formats (`blitz.core.links.offers`).
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from blitz.core.webhooks.payloads import body_of, message_id, session_link
from blitz.store import DeliveryRecord, DeliveryState, Expand, OutboxItem, WebhookRecord
from blitz.v1 import turn_pb2 as t

if TYPE_CHECKING:
    from blitz.core.links.offers import LinkMaker

__all__ = ["ALL_KINDS", "expander", "hears", "new_delivery_id"]

ALL_KINDS = "*"
_MADE = itertools.count()


def new_delivery_id() -> str:
    """A delivery's id, in the order deliveries are made (a listing's ties go by it)."""
    return f"dl_{time.time_ns():016x}{next(_MADE) % 2**32:08x}{secrets.token_hex(3)}"


def hears(hook: WebhookRecord, item: OutboxItem) -> bool:
    """Whether `hook` is told of the outbox's `item` (see the module doc)."""
    if item.owner is None or item.labels is None:
        return False  # its session is gone
    if item.kind not in hook.events and ALL_KINDS not in hook.events:
        return False
    if not hook.server_wide and item.owner != hook.owner:
        return False
    if hook.session_id and item.session_id != hook.session_id:
        return False
    if any(item.labels.get(key) != value for key, value in hook.labels.items()):
        return False
    return item.time >= hook.create_time


def expander(*, public_url: str, window: float, links: LinkMaker | None = None) -> Expand:
    """What `expand_outbox` makes of outbox rows: a delivery for each webhook that hears of
    each, due now and given up `window` seconds after; with `links`, an approval's or a
    question's body carries the links that answer it."""

    def expand(
        items: Sequence[OutboxItem], hooks: Sequence[WebhookRecord], now: float
    ) -> list[DeliveryRecord]:
        made: list[DeliveryRecord] = []
        for item in items:
            wanted = [hook for hook in hooks if hears(hook, item)]
            if not wanted or item.event is None:
                continue
            event = t.TurnEvent.FromString(item.event)
            link = session_link(public_url, item.session_id)
            offers = (
                links.offers(event, owner=item.owner or "", asked_at=item.time)
                if links is not None
                else []
            )
            bodies: dict[int, bytes] = {}
            for hook in wanted:
                body = bodies.get(hook.format)
                if body is None:
                    body = bodies[hook.format] = body_of(
                        event, format=hook.format, title=item.title, labels=item.labels or {},
                        link=link, offers=offers,
                    )  # fmt: skip
                made.append(
                    DeliveryRecord(
                        id=new_delivery_id(),
                        webhook_id=hook.id,
                        message_id=message_id(item.session_id, item.seq),
                        kind=item.kind,
                        session_id=item.session_id,
                        turn_id=event.turn_id,
                        seq=item.seq,
                        body=body,
                        state=DeliveryState.PENDING,
                        tries=0,
                        attempts=[],
                        next_attempt=now,
                        deadline=now + window,
                        event_time=item.time,
                        create_time=now,
                    )
                )
        return made

    return expand
