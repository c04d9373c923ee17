"""The webhooks' part of the storage interface: subscriptions, the outbox, deliveries.

`Store` (base.py) is made of it; apart because it is one idea, what the webhook dispatcher
(core/webhooks) keeps. `SqlWebhooks` (sql_webhooks.py) implements it for both engines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from blitz.store.webhook_records import (
    AttemptOutcome,
    AttemptRecord,
    DeliveryPage,
    DeliveryRecord,
    Expanded,
    Fairness,
    OutboxItem,
    OutboxStats,
    Recorded,
    WebhookRecord,
)

__all__ = ["Expand", "WebhookStore"]

# What `expand_outbox` makes of the outbox rows it took, given every webhook (read after
# the rows were taken) and the time: the deliveries to store in their place. A pure
# function: it runs inside the store's transaction.
Expand = Callable[[Sequence[OutboxItem], Sequence[WebhookRecord], float], list[DeliveryRecord]]


class WebhookStore(Protocol):
    """The webhook operations of a store."""

    # Webhooks

    async def add_webhook(self, rec: WebhookRecord) -> None: ...

    async def get_webhook(self, webhook_id: str) -> WebhookRecord | None: ...

    async def list_webhooks(self, owner: str | None = None) -> list[WebhookRecord]:
        """The webhooks of `owner` (None: every one), oldest first."""
        ...

    async def update_webhook(self, rec: WebhookRecord) -> bool:
        """Write what may change of the webhook (all but its id, owner, reach, declaration
        and creation time); whether there was one."""
        ...

    async def delete_webhook(self, webhook_id: str) -> bool:
        """Delete the webhook and its deliveries, in one transaction; whether there was one."""
        ...

    async def declare_webhooks(self, recs: Sequence[WebhookRecord]) -> None:
        """Make the declared webhooks these (by id), in one transaction: each one stored as
        given, its state, failures and deliveries kept, and every other declared webhook
        deleted with its deliveries."""
        ...

    async def expand_outbox(self, limit: int, expand: Expand, *, now: float) -> Expanded:
        """Take up to `limit` of the oldest outbox rows (on a shared store, rows no other
        process has taken), and store in their place, in the same transaction, what
        `expand` makes of them. While no webhook exists the rows are only deleted (those
        stamped before `now` less a margin, which no webhook made after this moment can
        want)."""
        ...

    async def outbox_stats(self) -> OutboxStats: ...

    # Webhook deliveries

    async def add_delivery(self, rec: DeliveryRecord) -> None: ...

    async def get_delivery(self, delivery_id: str) -> DeliveryRecord | None: ...

    async def list_deliveries(self, page: DeliveryPage) -> list[DeliveryRecord]: ...

    async def claim_deliveries(
        self,
        owner: str,
        *,
        now: float,
        lease_until: float,
        limit: int,
        skip: Sequence[str] = (),
        fair: Fairness | None = None,
    ) -> list[DeliveryRecord]:
        """Take up to `limit` due deliveries for `owner` until `lease_until`: pending, due by
        `now`, held by no one (or their holder's lease ended), of an active webhook not in
        `skip`, and each the first of its (webhook, session) still to go: no earlier
        delivery of it pending, and no earlier event of its session still in the outbox.
        Of those, the first due (a few times `limit`) are taken round-robin across
        principals, as `fair` says (None: none skipped, no bound); each delivery comes with
        its `principal`. Two processes never take the same one."""
        ...

    async def release_deliveries(self, owner: str, ids: Sequence[str]) -> None:
        """Let go of the deliveries `owner` holds among `ids`."""
        ...

    async def release_all_deliveries(self) -> None:
        """Let go of every delivery anyone holds (a store no other process uses, at start)."""
        ...

    async def record_attempt(
        self,
        delivery: DeliveryRecord,
        attempt: AttemptRecord,
        *,
        owner: str,
        outcome: AttemptOutcome,
    ) -> Recorded:
        """Write an attempt of a delivery `owner` holds, and its outcome (see
        `AttemptOutcome`), in one transaction: nothing if `owner` no longer holds it."""
        ...

    async def redeliver(self, delivery_id: str, *, now: float, deadline: float) -> bool:
        """Make the delivery pending again, due now, given up after `deadline`; whether
        there was one."""
        ...

    async def expire_deliveries(self, now: float) -> int:
        """Give up the pending deliveries past their deadline that no one holds; how many."""
        ...

    async def prune_deliveries(self, before: float) -> int:
        """Delete the delivered and failed deliveries made before `before`; how many."""
        ...

    async def pending_sessions(self, webhook_id: str, *, limit: int) -> list[str]:
        """Sessions with a delivery of the webhook still pending (at most `limit`)."""
        ...
