"""WebhookService's calls of the blocking client, each `AsyncBlitz`'s (`_webhook_calls.py`)
run on the client's loop: `Blitz` is made of them and its own calls (`_sync.py`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Literal

from blitz.v1 import webhooks_pb2
from blitz_client._blocking import BlockingCalls, Stream
from blitz_client._webhook_calls import WEBHOOK_EVENTS

__all__ = ["BlockingWebhookCalls"]


class BlockingWebhookCalls(BlockingCalls):
    """The webhook calls of `Blitz`."""

    def create_webhook(
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
        """A webhook and its secret, shown once; see `AsyncBlitz.create_webhook`."""
        return self._runner.run(
            self._client.create_webhook(
                url,
                events,
                labels=labels,
                session_id=session_id,
                description=description,
                format=format,
                server_wide=server_wide,
            )
        )

    def webhooks(self) -> list[webhooks_pb2.Webhook]:
        """Your webhooks, oldest first."""
        return self._runner.run(self._client.webhooks())

    def webhook(self, webhook_id: str) -> webhooks_pb2.Webhook:
        """One webhook."""
        return self._runner.run(self._client.webhook(webhook_id))

    def update_webhook(
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
        """Change what is given; see `AsyncBlitz.update_webhook`."""
        return self._runner.run(
            self._client.update_webhook(
                webhook_id,
                url=url,
                events=events,
                labels=labels,
                session_id=session_id,
                description=description,
                format=format,
                paused=paused,
            )
        )

    def delete_webhook(self, webhook_id: str) -> None:
        """Delete a webhook and its deliveries."""
        self._runner.run(self._client.delete_webhook(webhook_id))

    def rotate_webhook_secret(
        self, webhook_id: str, *, overlap: float | timedelta | None = None
    ) -> webhooks_pb2.RotateWebhookSecretResponse:
        """A new signing secret, shown once; see `AsyncBlitz.rotate_webhook_secret`."""
        return self._runner.run(self._client.rotate_webhook_secret(webhook_id, overlap=overlap))

    def test_webhook(self, webhook_id: str) -> webhooks_pb2.Delivery:
        """Send a `ping` now; the delivery with its attempt."""
        return self._runner.run(self._client.test_webhook(webhook_id))

    def deliveries(self, webhook_id: str, *, page_size: int = 0) -> Stream[webhooks_pb2.Delivery]:
        """The webhook's deliveries, newest first, a page at a time."""
        return self._stream(self._client.deliveries(webhook_id, page_size=page_size))

    def redeliver(self, webhook_id: str, delivery_id: str) -> webhooks_pb2.Delivery:
        """Send a delivery again."""
        return self._runner.run(self._client.redeliver(webhook_id, delivery_id))
