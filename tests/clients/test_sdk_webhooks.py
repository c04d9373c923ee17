"""The SDK's webhook calls, async and blocking, over gRPC and Connect, against a real
server and a real receiver."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from standardwebhooks import Webhook
from support.receiver import Receiver
from support.webhooks import LOOPBACK

from blitz.server import RunningServer, running_server
from blitz.v1 import webhooks_pb2 as wh
from blitz_client import AsyncBlitz, Blitz, BlitzError


@pytest.fixture
async def server(settings) -> AsyncIterator[RunningServer]:
    async with running_server(replace(settings, webhook_allow_private=LOOPBACK)) as running:
        yield running


@pytest.fixture(params=["grpc", "connect"])
def url(request: pytest.FixtureRequest, server: RunningServer) -> str:
    return server.grpc_target if request.param == "grpc" else server.http_url


async def test_the_async_client_makes_tests_pauses_and_deletes_a_webhook(url):
    with Receiver() as rx:
        async with AsyncBlitz(url) as blitz:
            made = await blitz.create_webhook(rx.url, description="sdk", labels={"a": "b"})
            hook = made.webhook
            assert list(hook.events) == ["approval_request", "question", "finished"]
            assert [w.id for w in await blitz.webhooks()] == [hook.id]
            assert (await blitz.webhook(hook.id)).description == "sdk"
            ping = await blitz.test_webhook(hook.id)
            assert ping.state == wh.DELIVERY_STATE_DELIVERED
            Webhook(made.secret).verify(rx.requests()[0].body, rx.requests()[0].headers)
            paused = await blitz.update_webhook(hook.id, paused=True, events=["*"])
            assert paused.state == wh.WEBHOOK_STATE_PAUSED and list(paused.events) == ["*"]
            resumed = await blitz.update_webhook(hook.id, paused=False, format="slack")
            assert resumed.state == wh.WEBHOOK_STATE_ACTIVE
            assert resumed.format == wh.WEBHOOK_FORMAT_SLACK
            rotated = await blitz.rotate_webhook_secret(hook.id, overlap=0)
            assert rotated.secret != made.secret
            delivered = [d async for d in blitz.deliveries(hook.id, page_size=1)]
            assert [d.type for d in delivered] == ["ping"]
            again = await blitz.redeliver(hook.id, delivered[0].id)
            assert again.state == wh.DELIVERY_STATE_PENDING
            await blitz.delete_webhook(hook.id)
            with pytest.raises(BlitzError) as gone:
                await blitz.webhook(hook.id)
    assert gone.value.reason == "WEBHOOK_NOT_FOUND"
    with pytest.raises(ValueError, match="format"):
        await AsyncBlitz(url).create_webhook(rx.url, format="email")  # type: ignore[arg-type]


async def test_the_blocking_client_has_the_same_calls(url):
    with Receiver() as rx:

        def use() -> list[str]:
            with Blitz(url) as blitz:
                made = blitz.create_webhook(rx.url, ["finished"])
                blitz.test_webhook(made.webhook.id)
                kinds = [d.type for d in blitz.deliveries(made.webhook.id)]
                blitz.delete_webhook(made.webhook.id)
                return kinds + [w.id for w in blitz.webhooks()]

        assert await asyncio.to_thread(use) == ["ping"]
