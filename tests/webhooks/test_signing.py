"""Signatures: each attempt signed afresh with the webhook's secret, and during a rotation's
overlap with the previous one too, so a receiver that knows either verifies."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration
from standardwebhooks import Webhook, WebhookVerificationError
from support.webhooks import create

from blitz.v1 import webhooks_pb2 as wh


async def ping(client, webhook_id: str) -> None:
    await client.call("TestWebhook", wh.TestWebhookRequest(webhook_id=webhook_id))


async def test_a_rotation_signs_with_both_secrets_until_its_overlap_ends(client, receiver):
    made = await create(client, receiver.url)
    old = made.secret
    rotated = await client.call(
        "RotateWebhookSecret", wh.RotateWebhookSecretRequest(webhook_id=made.webhook.id)
    )
    new = rotated.secret
    assert new != old and new.startswith("whsec_")
    assert rotated.webhook.HasField("previous_secret_expire_time")
    await ping(client, made.webhook.id)
    [request] = receiver.requests()
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        Webhook(secret).verify(request.body, request.headers)
    again = await client.call(
        "RotateWebhookSecret",
        wh.RotateWebhookSecretRequest(webhook_id=made.webhook.id, overlap=Duration(seconds=0)),
    )
    assert not again.webhook.HasField("previous_secret_expire_time")
    await ping(client, made.webhook.id)
    latest = receiver.requests()[-1]
    assert len(latest.headers["webhook-signature"].split(" ")) == 1
    Webhook(again.secret).verify(latest.body, latest.headers)
    for stale in (old, new):
        with pytest.raises(WebhookVerificationError):
            Webhook(stale).verify(latest.body, latest.headers)


async def test_no_secret_is_shown_but_by_the_call_that_makes_it(client, receiver):
    made = await create(client, receiver.url)
    shown = [
        await client.call("GetWebhook", wh.GetWebhookRequest(webhook_id=made.webhook.id)),
        await client.call("ListWebhooks", wh.ListWebhooksRequest()),
        await client.call("TestWebhook", wh.TestWebhookRequest(webhook_id=made.webhook.id)),
    ]
    for message in shown:
        assert made.secret not in str(message)
        assert made.secret[len("whsec_") :] not in message.SerializeToString().decode("latin-1")


async def test_a_forged_signature_is_refused_by_the_receivers_library(client, receiver):
    made = await create(client, receiver.url)
    await ping(client, made.webhook.id)
    [request] = receiver.requests()
    tampered = request.body.replace(b"ping", b"pong")
    with pytest.raises(WebhookVerificationError):
        Webhook(made.secret).verify(tampered, request.headers)
