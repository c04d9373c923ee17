"""Webhooks the operator declares in the configuration file: server-wide (or one
principal's), signed with the secret the file gives, changed only there."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.receiver import Receiver
from support.servers import make_settings
from support.webhooks import LOOPBACK
from support.wire import expect_error, open_wire

from blitz.auth import ServeRefused
from blitz.config import load_settings
from blitz.config.webhooks import DeclaredWebhook
from blitz.server import running_server
from blitz.v1 import webhooks_pb2 as wh

TOKENS = "alice:alice-token-1234,bob:bob-token-5678,root:root-token-9012:admin"
SECRET = "whsec_" + "c2VjcmV0LXNpZ25pbmcta2V5LTEyMzQ1Njc4"


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_the_configuration_file_declares_webhooks_as_tables(tmp_path):
    path = tmp_path / "blitz.toml"
    path.write_text(
        f"""grpc_port = 6001

[[webhooks]]
name = "ops"
url = "https://hooks.example.com/b"
events = ["approval_request", "finished"]
secret = "{SECRET}"
labels = {{ team = "docs" }}

[[webhooks]]
name = "chat"
url = "https://hooks.slack.com/services/T/B/X"
events = ["*"]
format = "slack"
principal = "alice"
"""
    )
    settings = load_settings({}, {}, config=str(path))
    ops, chat = settings.webhooks
    assert (ops.name, ops.events, dict(ops.labels), ops.secret) == (
        "ops",
        ("approval_request", "finished"),
        {"team": "docs"},
        SECRET,
    )
    assert (chat.format, chat.principal, chat.secret) == ("slack", "alice", "")
    assert SECRET not in repr(settings), "kept out of repr, and so out of logs"
    as_json = load_settings({}, {"BLITZ_WEBHOOKS": '[{"name": "x", "url": "https://a/", '
                                 '"events": ["finished"], "format": "slack"}]'})  # fmt: skip
    assert as_json.webhooks[0].name == "x"


async def test_a_declared_webhook_hears_of_every_principal_and_is_changed_only_there(tmp_path):
    with Receiver() as rx:
        declared = DeclaredWebhook(name="ops", url=rx.url, events=("finished",), secret=SECRET)
        settings = make_settings(tmp_path / "data", tokens=TOKENS)
        settings = replace(settings, webhook_allow_private=LOOPBACK, webhooks=(declared,))
        async with running_server(settings) as server:
            alice = open_wire("grpc", server, bearer("alice-token-1234"))
            bob = open_wire("connect", server, bearer("bob-token-5678"))
            root = open_wire("grpc", server, bearer("root-token-9012"))
            try:
                for wire in (alice, bob):
                    session = await wire.create_session()
                    await wire.run_all(session.id, "hello")
                await rx.wait_for(lambda r: len(r) == 2)
                payloads = rx.verified(SECRET)
                assert len({p["data"]["session_id"] for p in payloads}) == 2
                [hook] = (await root.call("ListWebhooks", wh.ListWebhooksRequest())).webhooks
                assert (hook.id, hook.declared, hook.server_wide) == ("wh_config_ops", "ops", True)
                assert (
                    list((await alice.call("ListWebhooks", wh.ListWebhooksRequest())).webhooks)
                    == []
                )
                for method, request in [
                    ("DeleteWebhook", wh.DeleteWebhookRequest(webhook_id=hook.id)),
                    ("RotateWebhookSecret", wh.RotateWebhookSecretRequest(webhook_id=hook.id)),
                    (
                        "UpdateWebhook",
                        wh.UpdateWebhookRequest(
                            webhook_id=hook.id,
                            description="x",
                            update_mask={"paths": ["description"]},
                        ),
                    ),
                ]:
                    error = await expect_error(
                        root.call(method, request), "permission_denied", "PERMISSION_DENIED"
                    )
                    assert "configuration file" in error.message
                ping = await root.call("TestWebhook", wh.TestWebhookRequest(webhook_id=hook.id))
                assert ping.state == wh.DELIVERY_STATE_DELIVERED
            finally:
                for wire in (alice, bob, root):
                    await wire.close()
        # Declared no more: at the next start it is gone, with its deliveries.
        async with running_server(replace(settings, webhooks=())) as server:
            root = open_wire("grpc", server, bearer("root-token-9012"))
            try:
                listed = await root.call("ListWebhooks", wh.ListWebhooksRequest())
            finally:
                await root.close()
        assert list(listed.webhooks) == []


@pytest.mark.parametrize(
    ("declared", "wrong"),
    [
        (DeclaredWebhook(name="a", url="https://x/", events=("nope",), secret=SECRET), "nope"),
        (DeclaredWebhook(name="b", url="gopher://x/", events=("finished",), secret=SECRET), "url"),
        (
            DeclaredWebhook(name="c", url="https://x/", events=("finished",), secret="s3cr3t"),
            "secret",
        ),
    ],
)
async def test_a_declared_webhook_that_cannot_be_served_stops_the_start(tmp_path, declared, wrong):
    settings = replace(make_settings(tmp_path / "data"), webhooks=(declared,))
    with pytest.raises(ServeRefused) as refused:
        async with running_server(settings):
            pass
    assert declared.name in str(refused.value) and wrong in str(refused.value)
