"""Making, listing, changing, pausing and deleting webhooks, and what each call refuses."""

from __future__ import annotations

import asyncio

import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from support.webhooks import create
from support.wire import expect_error

from blitz.v1 import webhooks_pb2 as wh


def update(webhook_id: str, *paths: str, **fields: object) -> wh.UpdateWebhookRequest:
    return wh.UpdateWebhookRequest(
        webhook_id=webhook_id, update_mask=FieldMask(paths=list(paths)), **fields
    )


async def test_a_webhook_is_made_listed_changed_and_deleted(client, receiver):
    made = await create(client, receiver.url, ["finished", "question", "finished"],
                        labels={"team": "docs"}, description="docs pager")  # fmt: skip
    hook = made.webhook
    assert hook.id.startswith("wh_") and made.secret.startswith("whsec_")
    assert list(hook.events) == ["finished", "question"], "each kind once"
    assert (hook.state, hook.format, hook.owner, hook.server_wide) == (
        wh.WEBHOOK_STATE_ACTIVE,
        wh.WEBHOOK_FORMAT_STANDARD,
        "",
        False,
    )
    listed = await client.call("ListWebhooks", wh.ListWebhooksRequest())
    assert [w.id for w in listed.webhooks] == [hook.id]
    changed = await client.call(
        "UpdateWebhook",
        update(hook.id, "events", "labels", "description", events=["*"], description="all"),
    )
    assert (list(changed.events), dict(changed.labels), changed.description) == (["*"], {}, "all")
    assert changed.url == receiver.url, "what the mask does not name stays"
    await client.call("DeleteWebhook", wh.DeleteWebhookRequest(webhook_id=hook.id))
    await expect_error(
        client.call("GetWebhook", wh.GetWebhookRequest(webhook_id=hook.id)),
        "not_found",
        "WEBHOOK_NOT_FOUND",
    )
    session = await client.create_session()
    await client.run_all(session.id, "hello")
    await asyncio.sleep(0.5)
    assert receiver.requests() == [], "nothing is sent to a deleted webhook"


async def test_a_paused_webhooks_deliveries_wait_and_go_on_resume(client, receiver):
    made = await create(client, receiver.url, ["finished"])
    paused = await client.call(
        "UpdateWebhook", update(made.webhook.id, "state", state=wh.WEBHOOK_STATE_PAUSED)
    )
    assert paused.state == wh.WEBHOOK_STATE_PAUSED and paused.state_reason.startswith("paused")
    session = await client.create_session()
    await client.run_all(session.id, "one")
    await client.run_all(session.id, "two")
    await asyncio.sleep(1)
    assert receiver.requests() == []
    await client.call(
        "UpdateWebhook", update(made.webhook.id, "state", state=wh.WEBHOOK_STATE_ACTIVE)
    )
    got = await receiver.wait_for(lambda r: len(r) == 2)
    outputs = [r.payload()["data"]["event"]["finished"]["output"] for r in got]
    assert ["one" in outputs[0], "two" in outputs[1]] == [True, True], "in seq order"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"url": ""}, "url"),
        ({"url": "ftp://example.com/x"}, "url"),
        ({"url": "https://"}, "url"),
        ({"url": "https://example.com:99999/"}, "url"),
        ({"url": "https://example.com/" + "x" * 3000}, "url"),
        ({"events": ["approval_request", "nothing"]}, "events"),
        ({"labels": {"bad key!": "x"}}, "labels"),
        ({"description": "d" * 501}, "description"),
        ({"format": 9}, "format"),
    ],
)
async def test_a_bad_webhook_is_refused_naming_its_field(client, fields, field):
    request = {"url": "https://blitz.invalid/hook", "events": ["finished"], **fields}
    error = await expect_error(
        client.call("CreateWebhook", wh.CreateWebhookRequest(**request)),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == field


async def test_events_are_required_and_listed_when_refused(client):
    error = await expect_error(
        client.call("CreateWebhook", wh.CreateWebhookRequest(url="https://blitz.invalid/")),
        "invalid_argument",
        "INVALID_ARGUMENT",
    )
    assert error.metadata["field"] == "events" and "approval_request" in error.metadata["accepted"]


async def test_what_an_update_may_not_do(client):
    made = await create(client, "https://blitz.invalid/hook")
    hook = made.webhook.id
    for request, field in [
        (update(hook), "update_mask"),
        (update(hook, "owner"), "update_mask"),
        (update(hook, "state", state=wh.WEBHOOK_STATE_FAILING), "state"),
        (update(hook, "url", url="http://127.0.0.2:1/"), "url"),  # allowed range, http: fine
        (update(hook, "url", url="https://10.1.2.3/"), "url"),
    ]:
        if field == "url" and request.url.startswith("http://127."):
            done = await client.call("UpdateWebhook", request)
            assert done.url == request.url
            continue
        error = await expect_error(
            client.call("UpdateWebhook", request), "invalid_argument", "INVALID_ARGUMENT"
        )
        assert error.metadata["field"] == field
    await expect_error(
        client.call("UpdateWebhook", update(hook, "session_id", session_id="s_nope")),
        "not_found",
        "SESSION_NOT_FOUND",
    )


async def test_without_tokens_no_caller_is_an_admin(client):
    error = await expect_error(
        create(client, "https://blitz.invalid/x", server_wide=True),
        "permission_denied",
        "PERMISSION_DENIED",
    )
    assert error.metadata["field"] == "server_wide"
