"""Webhooks are their principal's: one hears of its owner's sessions only, another
principal is told nothing of it, and only an admin makes one that hears of everyone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from support.receiver import Receiver
from support.servers import make_settings
from support.webhooks import LOOPBACK, create
from support.wire import Wire, expect_error, open_wire

from blitz.server import RunningServer, running_server
from blitz.v1 import webhooks_pb2 as wh

TOKENS = "alice:alice-token-1234,bob:bob-token-5678,root:root-token-9012:admin"


@pytest.fixture
async def server(tmp_path) -> AsyncIterator[RunningServer]:
    settings = make_settings(tmp_path / "data", tokens=TOKENS)
    async with running_server(replace(settings, webhook_allow_private=LOOPBACK)) as running:
        yield running


@pytest.fixture
async def wires(server: RunningServer) -> AsyncIterator[dict[str, Wire]]:
    opened = {
        name: open_wire(kind, server, {"authorization": f"Bearer {token}"})
        for name, kind, token in [
            ("alice", "grpc", "alice-token-1234"),
            ("bob", "connect", "bob-token-5678"),
            ("root", "grpc", "root-token-9012"),
        ]
    }
    yield opened
    for wire in opened.values():
        await wire.close()


async def test_another_principals_events_never_reach_a_webhook(wires):
    alice, bob, root = wires["alice"], wires["bob"], wires["root"]
    with Receiver() as hers, Receiver() as his, Receiver() as everyone:
        await create(alice, hers.url, ["finished"])
        await create(bob, his.url, ["finished"])
        await create(root, everyone.url, ["finished"], server_wide=True)
        mine = await alice.create_session(title="alice's")
        theirs = await bob.create_session(title="bob's")
        await alice.run_all(mine.id, "from alice")
        await bob.run_all(theirs.id, "from bob")
        await everyone.wait_for(lambda r: len(r) == 2)
        await hers.wait_for(lambda r: len(r) == 1)
        await his.wait_for(lambda r: len(r) == 1)
        await asyncio.sleep(0.5)
        assert [r.payload()["data"]["session_id"] for r in hers.requests()] == [mine.id]
        assert [r.payload()["data"]["session_id"] for r in his.requests()] == [theirs.id]
        heard = {r.payload()["data"]["session_id"] for r in everyone.requests()}
        assert heard == {mine.id, theirs.id}, "a server-wide webhook hears of both"


async def test_another_principal_is_told_nothing_of_alices_webhook(wires):
    alice, bob = wires["alice"], wires["bob"]
    session = await alice.create_session()
    made = await create(alice, "https://blitz.invalid/hook", description="alice's pager")
    hook = made.webhook.id
    refused = {
        "GetWebhook": wh.GetWebhookRequest(webhook_id=hook),
        "UpdateWebhook": wh.UpdateWebhookRequest(
            webhook_id=hook, description="mine now", update_mask={"paths": ["description"]}
        ),
        "DeleteWebhook": wh.DeleteWebhookRequest(webhook_id=hook),
        "RotateWebhookSecret": wh.RotateWebhookSecretRequest(webhook_id=hook),
        "TestWebhook": wh.TestWebhookRequest(webhook_id=hook),
        "ListDeliveries": wh.ListDeliveriesRequest(webhook_id=hook),
        "RedeliverWebhook": wh.RedeliverWebhookRequest(webhook_id=hook, delivery_id="dl_x"),
    }
    for method, request in refused.items():
        error = await expect_error(bob.call(method, request), "not_found", "WEBHOOK_NOT_FOUND")
        assert "alice" not in error.message, method
    listed = await bob.call("ListWebhooks", wh.ListWebhooksRequest())
    assert list(listed.webhooks) == []
    await expect_error(
        create(bob, "https://blitz.invalid/bob", session_id=session.id),
        "not_found",
        "SESSION_NOT_FOUND",
    )
    got = await alice.call("GetWebhook", wh.GetWebhookRequest(webhook_id=hook))
    assert got.description == "alice's pager" and got.owner == "alice"


async def test_only_an_admin_makes_a_server_wide_webhook_and_sees_every_one(wires):
    alice, root = wires["alice"], wires["root"]
    error = await expect_error(
        create(alice, "https://blitz.invalid/x", server_wide=True),
        "permission_denied",
        "PERMISSION_DENIED",
    )
    assert error.metadata["field"] == "server_wide"
    hers = await create(alice, "https://blitz.invalid/alice")
    wide = await create(root, "https://blitz.invalid/all", server_wide=True)
    assert wide.webhook.server_wide and wide.webhook.owner == "root"
    listed = await root.call("ListWebhooks", wh.ListWebhooksRequest())
    assert {w.id for w in listed.webhooks} == {hers.webhook.id, wide.webhook.id}
    mine = await alice.call("ListWebhooks", wh.ListWebhooksRequest())
    assert [w.id for w in mine.webhooks] == [hers.webhook.id]
    paused = wh.UpdateWebhookRequest(
        webhook_id=hers.webhook.id,
        state=wh.WEBHOOK_STATE_PAUSED,
        update_mask={"paths": ["state"]},
    )
    done = await root.call("UpdateWebhook", paused)
    assert done.state == wh.WEBHOOK_STATE_PAUSED and done.state_reason == "paused by root"
