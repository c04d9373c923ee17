"""WebhookService, transport-free: the webhook port (`blitz.ports.WebhookPort`) implemented.

`WebhookCore` serves the calls and owns what runs beside them: the webhooks the operator
declares, made records at start (`declared.py`), and the dispatcher that sends
deliveries (`dispatcher.py`). Each call checks its request (`checks.py`), finds the
caller's webhook and answers with the views of `views.py`.

Whose is what: a webhook belongs to the principal that made it and hears of that
principal's sessions only. A principal sees and changes its own webhooks; another is told
WEBHOOK_NOT_FOUND, as it is told SESSION_NOT_FOUND of another's session, so no id reveals
anything. An admin sees and acts on every webhook, and only an admin makes a server-wide
one. A declared webhook changes only in the configuration file. A secret is in the answer
of the call that makes it (CreateWebhook, RotateWebhookSecret) and nowhere else, ever.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import structlog

from blitz.config.webhooks import DeclaredWebhook
from blitz.core.api import validation as check
from blitz.core.webhooks import checks
from blitz.core.webhooks.declared import declared_records
from blitz.core.webhooks.dispatcher import Dispatcher
from blitz.core.webhooks.retries import Retries
from blitz.core.webhooks.signing import new_secret
from blitz.core.webhooks.views import delivery_view, webhook_view
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.outbound import AddressPolicy
from blitz.ports import CallContext
from blitz.size_limits import ANSWER_BUDGET
from blitz.store import DeliveryPage, Store, WebhookRecord
from blitz.v1 import webhooks_pb2 as wh

if TYPE_CHECKING:
    from blitz.core.api.service import FindSession
    from blitz.core.events.event_log import EventLog
    from blitz.core.links.offers import LinkMaker

__all__ = ["WebhookCore"]

log = structlog.get_logger(__name__)


class WebhookCore:
    """Every WebhookService call. `async with` declares the operator's webhooks and runs
    the dispatcher until it is left."""

    def __init__(
        self,
        *,
        find_session: FindSession,
        store: Store,
        log: EventLog,
        replica: str,
        policy: AddressPolicy,
        retry: Retries,
        timeout: float = 10.0,
        workers: int = 32,
        public_url: str = "",
        declared: Sequence[DeclaredWebhook] = (),
        links: LinkMaker | None = None,
    ) -> None:
        """`find_session`: the caller's session (`SessionCore.session_record`), for a
        webhook of one session; `log`: the event log, whose batches wake the dispatcher
        when they put an event in the outbox; `replica`: this process, as the holder of the
        deliveries it claims; `policy`: which internal addresses deliveries may reach (and
        over plain http); `links`: what makes the approval links of an approval's or a
        question's delivery (None: they carry none)."""
        self._find_session = find_session
        self._store = store
        self._policy = policy
        self._declared = declared_records(declared, now=time.time())  # ValueError
        self._dispatcher = Dispatcher(
            store=store,
            log=log,
            replica=replica,
            policy=policy,
            timeout=timeout,
            retry=retry,
            workers=workers,
            public_url=public_url,
            links=links,
        )

    async def __aenter__(self) -> WebhookCore:
        await self._store.declare_webhooks(self._declared)
        await self._dispatcher.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._dispatcher.__aexit__(*exc)

    async def _webhook(self, webhook_id: str, ctx: CallContext) -> WebhookRecord:
        """The caller's webhook, or WEBHOOK_NOT_FOUND (another's is not revealed)."""
        check.require(webhook_id, "webhook_id")
        rec = await self._store.get_webhook(webhook_id)
        if rec is None or (rec.owner != ctx.caller and not ctx.admin):
            raise BlitzError(
                Reason.WEBHOOK_NOT_FOUND, f"no webhook {webhook_id!r}", {"webhook_id": webhook_id}
            )
        return rec

    async def _mutable(self, webhook_id: str, ctx: CallContext) -> WebhookRecord:
        rec = await self._webhook(webhook_id, ctx)
        if rec.declared:
            raise checks.read_only(rec.declared)
        return rec

    def _view(self, rec: WebhookRecord) -> wh.Webhook:
        return webhook_view(rec, now=time.time())

    async def create_webhook(
        self, req: wh.CreateWebhookRequest, ctx: CallContext
    ) -> wh.CreateWebhookResponse:
        events, form = checks.check_fields(
            url=req.url,
            events=req.events,
            labels=dict(req.labels),
            description=req.description,
            format=req.format,
        )
        if req.server_wide and not ctx.admin:
            raise checks.server_wide_refused()
        if req.session_id:
            await self._find_session(req.session_id, ctx)
        await checks.target(req.url, self._policy)
        owned = [w for w in await self._store.list_webhooks(ctx.caller) if not w.declared]
        if len(owned) >= checks.WEBHOOKS_MAX:
            raise invalid_argument(
                "url",
                f"a principal has at most {checks.WEBHOOKS_MAX} webhooks: delete one first",
                limit=str(checks.WEBHOOKS_MAX),
            )
        now = time.time()
        secret = new_secret()
        rec = WebhookRecord(
            id="wh_" + uuid.uuid4().hex[:24],
            owner=ctx.caller,
            url=req.url,
            events=events,
            labels=dict(req.labels),
            session_id=req.session_id,
            description=req.description,
            format=form,
            state=wh.WEBHOOK_STATE_ACTIVE,
            state_reason="",
            server_wide=req.server_wide,
            declared="",
            secret=secret,
            create_time=now,
            update_time=now,
        )
        await self._store.add_webhook(rec)
        self._dispatcher.webhook_made()
        log.info(
            "webhook_created",
            webhook_id=rec.id,
            host=urlsplit(rec.url).hostname,
            events=events,
            server_wide=rec.server_wide,
        )
        return wh.CreateWebhookResponse(webhook=self._view(rec), secret=secret)

    async def get_webhook(self, req: wh.GetWebhookRequest, ctx: CallContext) -> wh.Webhook:
        return self._view(await self._webhook(req.webhook_id, ctx))

    async def list_webhooks(
        self, req: wh.ListWebhooksRequest, ctx: CallContext
    ) -> wh.ListWebhooksResponse:
        found = await self._store.list_webhooks(None if ctx.admin else ctx.caller)
        return wh.ListWebhooksResponse(webhooks=[self._view(rec) for rec in found])

    async def update_webhook(self, req: wh.UpdateWebhookRequest, ctx: CallContext) -> wh.Webhook:
        rec = await self._mutable(req.webhook_id, ctx)
        resumed = False
        for path in checks.check_mask(req.update_mask.paths):
            if path == "url":
                rec.url = checks.check_url(req.url)
                await checks.target(req.url, self._policy)
            elif path == "events":
                rec.events = checks.check_events(req.events)
            elif path == "labels":
                check.check_labels(req.labels)
                rec.labels = dict(req.labels)
            elif path == "session_id":
                if req.session_id:
                    await self._find_session(req.session_id, ctx)
                rec.session_id = req.session_id
            elif path == "description":
                checks.check_fields(
                    url=rec.url, events=rec.events, labels={}, description=req.description,
                    format=rec.format,
                )  # fmt: skip
                rec.description = req.description
            elif path == "format":
                rec.format = checks.check_format(req.format)
            elif checks.check_state(req.state) == wh.WEBHOOK_STATE_ACTIVE:
                resumed = rec.state != wh.WEBHOOK_STATE_ACTIVE
                rec.state, rec.state_reason, rec.failures = req.state, "", 0
            else:
                rec.state = req.state
                rec.state_reason = f"paused by {ctx.caller or 'the local user'}"
        rec.update_time = time.time()
        if not await self._store.update_webhook(rec):
            raise BlitzError(
                Reason.WEBHOOK_NOT_FOUND, f"no webhook {rec.id!r}", {"webhook_id": rec.id}
            )
        log.info("webhook_updated", webhook_id=rec.id, fields=list(req.update_mask.paths))
        if resumed:
            self._dispatcher.deliveries_due()
        return self._view(rec)

    async def delete_webhook(
        self, req: wh.DeleteWebhookRequest, ctx: CallContext
    ) -> wh.DeleteWebhookResponse:
        rec = await self._mutable(req.webhook_id, ctx)
        await self._store.delete_webhook(rec.id)
        log.info("webhook_deleted", webhook_id=rec.id)
        return wh.DeleteWebhookResponse()

    async def rotate_webhook_secret(
        self, req: wh.RotateWebhookSecretRequest, ctx: CallContext
    ) -> wh.RotateWebhookSecretResponse:
        rec = await self._mutable(req.webhook_id, ctx)
        overlap = checks.check_overlap(req)
        now = time.time()
        secret = new_secret()
        rec.previous_secret, rec.previous_until = (
            (rec.secret, now + overlap) if overlap > 0 else ("", None)
        )
        rec.secret = secret
        rec.update_time = now
        await self._store.update_webhook(rec)
        log.info("webhook_secret_rotated", webhook_id=rec.id, overlap_s=overlap)
        return wh.RotateWebhookSecretResponse(webhook=self._view(rec), secret=secret)

    async def test_webhook(self, req: wh.TestWebhookRequest, ctx: CallContext) -> wh.Delivery:
        rec = await self._webhook(req.webhook_id, ctx)
        return delivery_view(await self._dispatcher.ping(rec))

    async def list_deliveries(
        self, req: wh.ListDeliveriesRequest, ctx: CallContext
    ) -> wh.ListDeliveriesResponse:
        rec = await self._webhook(req.webhook_id, ctx)
        size, before = check.page_of(req.page_size, req.page_token)
        found = await self._store.list_deliveries(
            DeliveryPage(webhook_id=rec.id, limit=size + 1, before=before)
        )
        page = wh.ListDeliveriesResponse()
        used = 0
        for delivery in found[:size]:
            view = delivery_view(delivery)
            used += view.ByteSize() + 8
            if page.deliveries and used > ANSWER_BUDGET:
                break  # the page is full: the next one starts at this delivery
            page.deliveries.append(view)
        if len(found) > len(page.deliveries):
            last = found[len(page.deliveries) - 1]
            page.next_page_token = check.token_after(last.create_time, last.id)
        return page

    async def redeliver_webhook(
        self, req: wh.RedeliverWebhookRequest, ctx: CallContext
    ) -> wh.Delivery:
        rec = await self._webhook(req.webhook_id, ctx)
        check.require(req.delivery_id, "delivery_id")
        delivery = await self._store.get_delivery(req.delivery_id)
        if delivery is None or delivery.webhook_id != rec.id:
            raise BlitzError(
                Reason.DELIVERY_NOT_FOUND,
                f"no delivery {req.delivery_id!r} of this webhook",
                {"delivery_id": req.delivery_id},
            )
        now = time.time()
        await self._store.redeliver(delivery.id, now=now, deadline=now + self._dispatcher.window)
        log.info("webhook_redelivered", webhook_id=rec.id, delivery_id=delivery.id)
        self._dispatcher.deliveries_due()
        again = await self._store.get_delivery(delivery.id)
        return delivery_view(again or delivery)
