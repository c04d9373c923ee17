"""What the webhook tests share besides fixtures: making a webhook through a client."""

from __future__ import annotations

from typing import Any

from blitz.v1 import webhooks_pb2 as wh
from support.wire import Wire

__all__ = ["ASKED", "LOOPBACK", "create"]

# The range a test receiver is in, which a test server is allowed to reach.
LOOPBACK = ("127.0.0.0/8",)
# The kinds of a turn that asks for approval, asks a question and finishes.
ASKED = ["approval_request", "question", "finished"]


async def create(
    wire: Wire, url: str, events: list[str] | None = None, **fields: Any
) -> wh.CreateWebhookResponse:
    """CreateWebhook; its answer (the webhook and its secret)."""
    request = wh.CreateWebhookRequest(url=url, events=events or ASKED, **fields)
    result: wh.CreateWebhookResponse = await wire.call("CreateWebhook", request)
    return result
