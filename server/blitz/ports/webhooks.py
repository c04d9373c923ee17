"""The webhook port: `blitz.v1.WebhookService` as the transports ask it of the core.

Like the session port (`session.py`), each method is an RPC named in snake_case, takes the
request message and the call's `CallContext`, and returns the response message; failures
are `blitz.errors.BlitzError`. Nothing here knows a wire format or how a delivery is sent.
"""

from __future__ import annotations

from typing import Protocol

from blitz.ports.session import CallContext
from blitz.v1 import webhooks_pb2 as wh

__all__ = ["WebhookPort"]


class WebhookPort(Protocol):
    """`blitz.v1.WebhookService`, transport-free (implemented by `blitz.core.WebhookCore`)."""

    async def create_webhook(
        self, req: wh.CreateWebhookRequest, ctx: CallContext
    ) -> wh.CreateWebhookResponse: ...
    async def get_webhook(self, req: wh.GetWebhookRequest, ctx: CallContext) -> wh.Webhook: ...
    async def list_webhooks(
        self, req: wh.ListWebhooksRequest, ctx: CallContext
    ) -> wh.ListWebhooksResponse: ...
    async def update_webhook(
        self, req: wh.UpdateWebhookRequest, ctx: CallContext
    ) -> wh.Webhook: ...
    async def delete_webhook(
        self, req: wh.DeleteWebhookRequest, ctx: CallContext
    ) -> wh.DeleteWebhookResponse: ...
    async def rotate_webhook_secret(
        self, req: wh.RotateWebhookSecretRequest, ctx: CallContext
    ) -> wh.RotateWebhookSecretResponse: ...
    async def test_webhook(self, req: wh.TestWebhookRequest, ctx: CallContext) -> wh.Delivery: ...
    async def list_deliveries(
        self, req: wh.ListDeliveriesRequest, ctx: CallContext
    ) -> wh.ListDeliveriesResponse: ...
    async def redeliver_webhook(
        self, req: wh.RedeliverWebhookRequest, ctx: CallContext
    ) -> wh.Delivery: ...
