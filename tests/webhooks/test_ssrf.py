"""Webhook URLs pass the same address checks as the agent's fetches (`blitz.outbound`).

Without the operator's allowance (`--webhook-allow-private`) no loopback, private,
link-local or metadata address is reached, however it is spelled: CreateWebhook refuses
it (INVALID_ARGUMENT on `url`), and an attempt checks the resolved address again at
connect time, so a URL made under an allowance is refused once the allowance is gone. No
redirect is followed, to the metadata address or anywhere else.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from support.receiver import Receiver
from support.webhooks import create
from support.wire import Wire, expect_error, open_wire

from blitz.server import running_server
from blitz.v1 import webhooks_pb2 as wh

INTERNAL = [
    "http://127.0.0.1:9/hook",
    "https://127.0.0.1/hook",
    "http://127.1:9/hook",
    "http://0x7f.1/hook",
    "http://0177.0.0.1/hook",
    "http://2130706433/hook",
    "http://[::1]:9/hook",
    "http://[0:0:0:0:0:0:0:1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[::ffff:7f00:1]/hook",
    "https://localhost/hook",
    "http://10.0.0.1/hook",
    "http://192.168.1.10/hook",
    "http://[fd00::1]/hook",
    "http://[fe80::1]/hook",
    "http://0.0.0.0/hook",
]
METADATA = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:169.254.169.254]/",
    "http://[fd00:ec2::254]/",
    "https://168.63.129.16/",
]


@pytest.fixture
async def plain(server) -> Wire:
    """A client of a server with no allowance (the default settings)."""
    wire = open_wire("grpc", server)
    yield wire
    await wire.close()


@pytest.mark.parametrize("url", INTERNAL)
async def test_internal_addresses_are_refused_however_spelled(plain, url):
    error = await expect_error(create(plain, url), "invalid_argument", "INVALID_ARGUMENT")
    assert error.metadata["field"] == "url"
    assert error.metadata["reason"] == "private"
    assert "--webhook-allow-private" in error.message


@pytest.mark.parametrize("url", METADATA)
async def test_metadata_addresses_are_refused_even_where_internal_ones_are_allowed(client, url):
    error = await expect_error(create(client, url), "invalid_argument", "INVALID_ARGUMENT")
    assert error.metadata["reason"] == "metadata"


async def test_plain_http_only_reaches_what_the_operator_allows(plain, client):
    refused = await expect_error(
        create(plain, "http://93.184.216.34/hook"), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert refused.metadata["reason"] == "http" and "https" in refused.message
    error = await expect_error(
        create(client, "http://[::1]:9/"), "invalid_argument", "INVALID_ARGUMENT"
    )
    assert error.metadata["reason"] == "private", "the allowance is 127.0.0.0/8, not ::1"


async def test_a_redirect_is_not_followed(client):
    with Receiver() as elsewhere:
        targets = [elsewhere.url, "http://169.254.169.254/latest/meta-data/"]
        for target in targets:
            answer = (302, {"Location": target}, b"")
            with Receiver(lambda _, a=answer: a) as rx:
                made = await create(client, rx.url, ["finished"])
                session = await client.create_session()
                await client.run_all(session.id, "hello")
                await rx.wait_for(lambda r: len(r) >= 1)
                listed = wh.ListDeliveriesRequest(webhook_id=made.webhook.id)
                for _ in range(100):
                    [delivery] = (await client.call("ListDeliveries", listed)).deliveries
                    if delivery.attempts:
                        break
                    await asyncio.sleep(0.1)
                attempt = delivery.attempts[0]
                assert attempt.status == 302 and "do not follow" in attempt.error
                assert delivery.state == wh.DELIVERY_STATE_PENDING, "a failure: retried"
                delete = wh.DeleteWebhookRequest(webhook_id=made.webhook.id)
                await client.call("DeleteWebhook", delete)
        await asyncio.sleep(0.5)
        assert elsewhere.requests() == [], "the redirect's target was never asked"


async def test_the_address_is_checked_again_when_an_attempt_connects(hooked_settings, receiver):
    """A URL made under the allowance, by a name (localhost), is refused at connect time by a
    server without it: the check is of the address the name resolves to now."""
    url = receiver.url.replace("127.0.0.1", "localhost")
    async with running_server(hooked_settings) as allowed:
        wire = open_wire("grpc", allowed)
        made = await create(wire, url, ["finished"])
        await wire.close()
    strict = replace(hooked_settings, webhook_allow_private=())
    async with running_server(strict) as server:
        wire = open_wire("connect", server)
        try:
            session = await wire.create_session()
            await wire.run_all(session.id, "hello")
            listed = wh.ListDeliveriesRequest(webhook_id=made.webhook.id)
            for _ in range(200):
                deliveries = (await wire.call("ListDeliveries", listed)).deliveries
                if deliveries and deliveries[0].attempts:
                    break
                await asyncio.sleep(0.1)
            attempt = deliveries[0].attempts[0]
        finally:
            await wire.close()
    assert attempt.status == 0 and "internal address" in attempt.error
    assert receiver.requests() == [], "nothing reached the receiver"
