"""The store's webhook operations, run alike by both engines: subscriptions, the outbox
and deliveries (docs/webhooks.md).

`SqlWebhooks` is part of `SqlStore` (sql_store.py), apart because it is one idea: what the
webhook dispatcher (core/webhooks) keeps. Its statements are `WebhookStatements`
(webhook_statements.py), its engine's `_hook_sql`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import ClassVar, TypeVar

from blitz.store import rows
from blitz.store.records import (
    AttemptOutcome,
    AttemptRecord,
    DeliveryPage,
    DeliveryRecord,
    Expanded,
    OutboxStats,
    Recorded,
    WebhookRecord,
)
from blitz.store.rows import Row
from blitz.store.tx import Tx
from blitz.store.webhook_base import Expand
from blitz.store.webhook_records import Fairness
from blitz.store.webhook_statements import WebhookStatements
from blitz.v1 import webhooks_pb2 as wh

__all__ = ["ATTEMPTS_KEPT", "CLOCKS_AGREE", "SqlWebhooks"]

_T = TypeVar("_T")
# The attempts a delivery keeps (its latest).
ATTEMPTS_KEPT = 20
# Due deliveries a claim looks at, per delivery it may take: enough that principals past
# their share in the first few do not hide the rest (see `Fairness`).
_CANDIDATES = 4
# While no webhook exists, outbox rows stamped this long before now are deleted: stamps
# come from the clocks of the processes sharing the store, which agree within this.
CLOCKS_AGREE = 2.0


class SqlWebhooks:
    """The webhook half of `SqlStore`; what each operation does, store/base.py says."""

    # The engine's webhook statements, and how it runs them (as SqlStore's).
    _hook_sql: ClassVar[WebhookStatements]
    _execute: Callable[[str, Sequence[object]], Awaitable[int]]
    _fetch: Callable[[str, Sequence[object]], Awaitable[list[Row]]]

    async def _transaction(self, body: Callable[[Tx], Awaitable[_T]]) -> _T:
        raise NotImplementedError

    # Webhooks

    async def add_webhook(self, rec: WebhookRecord) -> None:
        await self._execute(self._hook_sql.add_webhook, rows.webhook_params(rec))

    async def get_webhook(self, webhook_id: str) -> WebhookRecord | None:
        found = await self._fetch(self._hook_sql.get_webhook, (webhook_id,))
        return rows.webhook(found[0]) if found else None

    async def list_webhooks(self, owner: str | None = None) -> list[WebhookRecord]:
        sql, args = self._hook_sql.list_webhooks(owner)
        return [rows.webhook(row) for row in await self._fetch(sql, args)]

    async def update_webhook(self, rec: WebhookRecord) -> bool:
        params = rows.webhook_params(rec)
        # Every column but id, owner, server_wide, declared and create_time, then the id.
        changed = await self._execute(
            self._hook_sql.update_webhook, (*params[2:10], *params[12:16], params[17], rec.id)
        )
        return changed == 1

    async def delete_webhook(self, webhook_id: str) -> bool:
        async def body(tx: Tx) -> bool:
            deliveries, webhook = self._hook_sql.delete_webhook
            await tx.execute(deliveries, (webhook_id,))
            return await tx.execute(webhook, (webhook_id,)) == 1

        return await self._transaction(body)

    async def declare_webhooks(self, recs: Sequence[WebhookRecord]) -> None:
        async def body(tx: Tx) -> None:
            before = {row[0] for row in await tx.fetch(self._hook_sql.declared_webhooks, ())}
            for rec in recs:
                await tx.execute(self._hook_sql.declare_webhook, rows.webhook_params(rec))
            for gone in sorted(before - {rec.id for rec in recs}):
                for sql in self._hook_sql.delete_webhook:
                    await tx.execute(sql, (gone,))

        await self._transaction(body)

    async def expand_outbox(self, limit: int, expand: Expand, *, now: float) -> Expanded:
        sql = self._hook_sql

        async def body(tx: Tx) -> Expanded:
            if not await tx.fetch(sql.webhooks_exist, ()):
                dropped = await tx.execute(sql.drop_old_outbox, (now - CLOCKS_AGREE,))
                return Expanded(dropped, 0, webhooks=False)
            items = [rows.outbox_item(row) for row in await tx.fetch(sql.take_outbox, (limit,))]
            if not items:
                return Expanded(0, 0, webhooks=True)
            # Read after the rows were taken: a webhook made before an event was stored is
            # among them.
            listed, args = sql.list_webhooks(None)
            hooks = [rows.webhook(row) for row in await tx.fetch(listed, args)]
            made = expand(items, hooks, now)
            if made:
                await tx.execute_many(sql.add_delivery, [rows.delivery_params(d) for d in made])
            await tx.execute_many(sql.drop_outbox, [(item.id,) for item in items])
            return Expanded(len(items), len(made), webhooks=True)

        return await self._transaction(body)

    async def outbox_stats(self) -> OutboxStats:
        (row,) = await self._fetch(self._hook_sql.outbox_stats, ())
        return OutboxStats(int(row[0]), row[1], int(row[2]), row[3])

    # Webhook deliveries

    async def add_delivery(self, rec: DeliveryRecord) -> None:
        await self._execute(self._hook_sql.add_delivery, rows.delivery_params(rec))

    async def get_delivery(self, delivery_id: str) -> DeliveryRecord | None:
        found = await self._fetch(self._hook_sql.get_delivery, (delivery_id,))
        return rows.delivery(found[0]) if found else None

    async def list_deliveries(self, page: DeliveryPage) -> list[DeliveryRecord]:
        sql, args = self._hook_sql.list_deliveries(page)
        return [rows.delivery(row) for row in await self._fetch(sql, args)]

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
        fair = fair or Fairness()
        each = fair.each or limit
        found = await self._fetch(
            self._hook_sql.claim_deliveries,
            (
                owner,
                lease_until,
                now,
                now,
                json.dumps(list(skip)),
                json.dumps(list(fair.skip)),
                limit * _CANDIDATES,
                each,
                json.dumps(list(fair.busy)),
                limit,
            ),
        )
        claimed = (replace(rows.delivery(row[:-1]), principal=str(row[-1])) for row in found)
        return sorted(claimed, key=_due_order)

    async def release_deliveries(self, owner: str, ids: Sequence[str]) -> None:
        if ids:
            await self._execute(self._hook_sql.release_deliveries, (owner, json.dumps(list(ids))))

    async def release_all_deliveries(self) -> None:
        await self._execute(self._hook_sql.release_all_deliveries, ())

    async def record_attempt(
        self,
        delivery: DeliveryRecord,
        attempt: AttemptRecord,
        *,
        owner: str,
        outcome: AttemptOutcome,
    ) -> Recorded:
        sql = self._hook_sql
        kept = [*delivery.attempts, attempt][-ATTEMPTS_KEPT:]
        finish = (
            outcome.state.value,
            attempt.number,
            rows.attempts_json(kept),
            outcome.next_attempt,
            delivery.id,
            owner,
        )

        async def body(tx: Tx) -> Recorded:
            if await tx.execute(sql.finish_attempt, finish) != 1:
                return Recorded(False)  # no longer ours: another process has it now
            if outcome.webhook == "success":
                await tx.execute(sql.webhook_recovered, (delivery.webhook_id,))
            if outcome.webhook not in ("failure", "gone"):
                return Recorded(True)
            found = await tx.fetch(sql.lock_webhook, (delivery.webhook_id,))
            if not found:
                return Recorded(True)
            hook = rows.webhook(found[0])
            after = _health(hook, outcome)
            await tx.execute(
                sql.webhook_health,
                (after.failures, after.state, after.state_reason, after.update_time, hook.id),
            )
            stopped = after.state != hook.state and after.state in _STOPPED
            return Recorded(True, after if stopped else None)

        return await self._transaction(body)

    async def redeliver(self, delivery_id: str, *, now: float, deadline: float) -> bool:
        return await self._execute(self._hook_sql.redeliver, (now, deadline, delivery_id)) == 1

    async def expire_deliveries(self, now: float) -> int:
        return await self._execute(self._hook_sql.expire_deliveries, (now, now))

    async def prune_deliveries(self, before: float) -> int:
        return await self._execute(self._hook_sql.prune_deliveries, (before,))

    async def pending_sessions(self, webhook_id: str, *, limit: int) -> list[str]:
        found = await self._fetch(self._hook_sql.pending_sessions, (webhook_id, limit))
        return sorted(str(row[0]) for row in found)


# The states a webhook is stopped in by the server (not by its owner).
_STOPPED = (wh.WEBHOOK_STATE_FAILING, wh.WEBHOOK_STATE_GONE)


def _due_order(rec: DeliveryRecord) -> tuple[float, int]:
    return (rec.next_attempt, rec.seq)


def _health(hook: WebhookRecord, outcome: AttemptOutcome) -> WebhookRecord:
    """The webhook after a failed attempt: one failure more, and stopped when this is the
    one that reaches `pause_after` in a row (FAILING) or the receiver is gone (GONE)."""
    failures = hook.failures + 1
    active = hook.state == wh.WEBHOOK_STATE_ACTIVE
    if outcome.webhook == "gone" and hook.state != wh.WEBHOOK_STATE_GONE:
        return replace(
            hook,
            failures=failures,
            state=wh.WEBHOOK_STATE_GONE,
            state_reason=outcome.reason,
            update_time=outcome.now,
        )
    if active and outcome.pause_after and failures >= outcome.pause_after:
        return replace(
            hook,
            failures=failures,
            state=wh.WEBHOOK_STATE_FAILING,
            state_reason=outcome.reason,
            update_time=outcome.now,
        )
    return replace(hook, failures=failures)
