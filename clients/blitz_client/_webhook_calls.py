"""WebhookService's calls of the asyncio client: `AsyncBlitz` is made of them and its other
calls (`_calls.py`), apart because subscriptions and deliveries are one idea of their own."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from datetime import timedelta
from typing import Literal

from blitz.v1 import webhooks_pb2
from blitz_client._calls import Calls
from blitz_client._requests import duration

__all__ = ["WEBHOOK_EVENTS", "WebhookCalls"]

WEBHOOK_EVENTS = ("approval_request", "question", "finished")
"""The event kinds a webhook hears of unless told: what a person waiting needs to know."""
_WEBHOOK_FORMATS = {
    "standard": webhooks_pb2.WEBHOOK_FORMAT_STANDARD,
    "slack": webhooks_pb2.WEBHOOK_FORMAT_SLACK,
}


def _webhook_format(name: str) -> webhooks_pb2.WebhookFormat:
    try:
        return _WEBHOOK_FORMATS[name]
    except KeyError:
        raise ValueError(f"format must be one of {', '.join(_WEBHOOK_FORMATS)}") from None


class WebhookCalls(Calls):
    """The webhook calls of `AsyncBlitz`."""

    async def create_webhook(
        self,
        url: str,
        events: Sequence[str] = WEBHOOK_EVENTS,
        *,
        labels: Mapping[str, str] | None = None,
        session_id: str = "",
        description: str = "",
        format: Literal["standard", "slack"] = "standard",
        server_wide: bool = False,
    ) -> webhooks_pb2.CreateWebhookResponse:
        """A webhook that POSTs these event kinds ("*": all) of your sessions (with every
        one of `labels`; only `session_id`'s, if given) to `url`. The answer holds its
        `webhook` and its signing `secret`, which is shown only here. `server_wide`
        (admins only): every principal's sessions."""
        request = webhooks_pb2.CreateWebhookRequest(
            url=url,
            events=list(events),
            labels=dict(labels or {}),
            session_id=session_id,
            description=description,
            format=_webhook_format(format),
            server_wide=server_wide,
        )
        result: webhooks_pb2.CreateWebhookResponse = await self._unary("CreateWebhook", request)
        return result

    async def webhooks(self) -> list[webhooks_pb2.Webhook]:
        """Your webhooks, oldest first (an admin's: every webhook)."""
        response: webhooks_pb2.ListWebhooksResponse = await self._unary(
            "ListWebhooks", webhooks_pb2.ListWebhooksRequest()
        )
        return list(response.webhooks)

    async def webhook(self, webhook_id: str) -> webhooks_pb2.Webhook:
        """One webhook: its filters, `state` (active, paused, failing, gone) and why."""
        request = webhooks_pb2.GetWebhookRequest(webhook_id=webhook_id)
        result: webhooks_pb2.Webhook = await self._unary("GetWebhook", request)
        return result

    async def update_webhook(
        self,
        webhook_id: str,
        *,
        url: str | None = None,
        events: Sequence[str] | None = None,
        labels: Mapping[str, str] | None = None,
        session_id: str | None = None,
        description: str | None = None,
        format: Literal["standard", "slack"] | None = None,
        paused: bool | None = None,
    ) -> webhooks_pb2.Webhook:
        """Change what is given, leave the rest; `paused=False` resumes a paused or failing
        webhook (its failures count from 0 again). The webhook as it now is."""
        request = webhooks_pb2.UpdateWebhookRequest(webhook_id=webhook_id)
        paths = request.update_mask.paths
        if url is not None:
            request.url = url
            paths.append("url")
        if events is not None:
            request.events.extend(events)
            paths.append("events")
        if labels is not None:
            request.labels.update(labels)
            paths.append("labels")
        if session_id is not None:
            request.session_id = session_id
            paths.append("session_id")
        if description is not None:
            request.description = description
            paths.append("description")
        if format is not None:
            request.format = _webhook_format(format)
            paths.append("format")
        if paused is not None:
            request.state = (
                webhooks_pb2.WEBHOOK_STATE_PAUSED if paused else webhooks_pb2.WEBHOOK_STATE_ACTIVE
            )
            paths.append("state")
        result: webhooks_pb2.Webhook = await self._unary("UpdateWebhook", request)
        return result

    async def delete_webhook(self, webhook_id: str) -> None:
        """Delete a webhook and its deliveries: nothing more is sent to it."""
        await self._unary("DeleteWebhook", webhooks_pb2.DeleteWebhookRequest(webhook_id=webhook_id))

    async def rotate_webhook_secret(
        self, webhook_id: str, *, overlap: float | timedelta | None = None
    ) -> webhooks_pb2.RotateWebhookSecretResponse:
        """A new signing secret (in the answer, shown only there); the old one signs beside
        it for `overlap` (default 24 hours; 0: not at all)."""
        request = webhooks_pb2.RotateWebhookSecretRequest(webhook_id=webhook_id)
        if overlap is not None:
            request.overlap.CopyFrom(duration(overlap))
        result: webhooks_pb2.RotateWebhookSecretResponse = await self._unary(
            "RotateWebhookSecret", request
        )
        return result

    async def test_webhook(self, webhook_id: str) -> webhooks_pb2.Delivery:
        """Send a `ping` now; the delivery, with its one attempt's status and latency."""
        request = webhooks_pb2.TestWebhookRequest(webhook_id=webhook_id)
        result: webhooks_pb2.Delivery = await self._unary("TestWebhook", request)
        return result

    async def deliveries(
        self, webhook_id: str, *, page_size: int = 0
    ) -> AsyncGenerator[webhooks_pb2.Delivery, None]:
        """The webhook's deliveries, newest first, fetched a page at a time, each with its
        attempts (status, latency, the answer's first bytes)."""
        token = ""
        while True:
            request = webhooks_pb2.ListDeliveriesRequest(
                webhook_id=webhook_id, page_size=page_size, page_token=token
            )
            page: webhooks_pb2.ListDeliveriesResponse = await self._unary("ListDeliveries", request)
            for delivery in page.deliveries:
                yield delivery
            token = page.next_page_token
            if not token:
                return

    async def redeliver(self, webhook_id: str, delivery_id: str) -> webhooks_pb2.Delivery:
        """Send a delivery again (the same webhook-id and body), with a new retry window."""
        request = webhooks_pb2.RedeliverWebhookRequest(
            webhook_id=webhook_id, delivery_id=delivery_id
        )
        result: webhooks_pb2.Delivery = await self._unary("RedeliverWebhook", request)
        return result
