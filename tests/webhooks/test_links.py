"""Approval links: what a delivery carries, and what opening and sending one does.

A real server on 127.0.0.1 with a public URL (elsewhere, so each link's path is fetched
from the test's server), tokens for alice and bob, a real receiver, and a plain HTTP
client as the browser.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import replace

import httpx
import structlog
from support.links import PUBLIC, ask, waiting
from support.receiver import Receiver
from support.webhooks import create
from support.wire import open_wire, until

from blitz.server import running_server
from blitz.v1 import turn_pb2 as t

COMMAND = "$ echo hello"


def _payload_of(path: str) -> tuple[str, dict[str, object], str]:
    """A link's token, cut open: its version, payload and MAC."""
    version, payload, mac = path.removeprefix("/approve/").split(".")
    decoded = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return version, decoded, mac


def _with_payload(path: str, **changed: object) -> str:
    """The link with its payload changed and its MAC kept: what a forger can make."""
    version, payload, mac = _payload_of(path)
    text = json.dumps({**payload, **changed}, separators=(",", ":")).encode()
    return f"/approve/{version}.{base64.urlsafe_b64encode(text).rstrip(b'=').decode()}.{mac}"


async def test_an_approval_is_delivered_with_a_link_for_each_decision_a_link_makes(alice, receiver):
    asked = await ask(alice, COMMAND, receiver)
    await asked.stream.aclose()
    links = asked.links
    assert [(link["label"], link["decision"]) for link in links] == [
        ("Approve once", "DECISION_ONCE"),
        ("Approve for this session", "DECISION_SESSION"),
        ("Deny", "DECISION_DENY"),
    ], "ALWAYS is made in a client, where its scope can be read"
    assert all(link["url"].startswith(f"{PUBLIC}approve/v1.") for link in links)
    assert all(link["expire_time"].endswith("Z") for link in links)


async def test_without_a_public_url_a_delivery_carries_no_links(hooked_settings):
    async with running_server(hooked_settings) as server:
        wire = open_wire("connect", server)
        try:
            with Receiver() as standard, Receiver() as slack:
                asked = await ask(wire, COMMAND, standard, slack)
                await asked.stream.aclose()
        finally:
            await wire.close()
    assert "links" not in asked.payload["data"]
    assert asked.slack is not None
    assert [b["type"] for b in asked.slack["blocks"]] == ["section", "section", "context"]


async def test_opening_a_link_shows_what_it_would_do_and_decides_nothing(alice, receiver, web):
    asked = await ask(alice, COMMAND, receiver)
    page = await web.get(asked.link("Approve once"))
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    for shown in ("Approval needed", "echo hello", "Approve once", "alice", '<form method="post">'):
        assert shown in page.text
    head = await web.head(asked.link("Deny"))
    assert head.status_code == 200 and head.content == b""
    assert len(await waiting(alice, asked.session.id)) == 1, "a GET never decides"
    await asked.stream.aclose()


async def test_sending_a_link_decides_once_as_the_sessions_owner(alice, receiver, web):
    asked = await ask(alice, COMMAND, receiver)
    sent = await web.post(asked.link("Approve once"))
    assert sent.status_code == 200
    assert "Approved once — by link as alice" in sent.text
    resolved = await until(asked.stream, "resolution")
    assert resolved.resolution.via == "link"
    assert resolved.resolution.resolved_by == "alice"
    assert resolved.resolution.decision == t.DECISION_ONCE
    assert resolved.resolution.client == ""
    finished = await until(asked.stream, "finished")
    assert not finished.finished.HasField("error"), "the turn resumed and ran the command"
    await asked.stream.aclose()
    assert await waiting(alice, asked.session.id) == []


async def test_a_link_sent_again_and_its_siblings_are_refused(alice, receiver, web):
    asked = await ask(alice, COMMAND, receiver)
    assert (await web.post(asked.link("Deny"))).status_code == 200
    again = await web.post(asked.link("Deny"))
    assert again.status_code == 409
    assert "Already answered by alice: denied (by link)." in again.text
    other = await web.post(asked.link("Approve once"))
    assert other.status_code == 409 and "Already answered" in other.text
    await until(asked.stream, "finished")
    await asked.stream.aclose()


async def test_a_link_of_a_request_answered_elsewhere_says_by_whom(alice, receiver, web):
    asked = await ask(alice, COMMAND, receiver)
    await alice.decide(asked.session.id, asked.event, "once")
    page = await web.get(asked.link("Deny"))
    assert page.status_code == 409
    assert "Already answered by alice: approved once (in a client)." in page.text
    assert "<form" not in page.text
    sent = await web.post(asked.link("Deny"))
    assert sent.status_code == 409
    await asked.stream.aclose()


async def test_an_expired_link_is_refused(linked_settings):
    async with running_server(replace(linked_settings, link_ttl=1.0)) as server:
        wire = open_wire("connect", server, {"authorization": "Bearer alice-token-1234"})
        try:
            with Receiver() as receiver:
                asked = await ask(wire, COMMAND, receiver)
                _, payload, _ = _payload_of(asked.link("Approve once"))
                assert isinstance(payload["e"], int) and payload["e"] <= time.time() + 1
                await asyncio.sleep(max(0.0, payload["e"] - time.time()) + 0.05)
                async with httpx.AsyncClient(base_url=server.http_url) as web:
                    page = await web.get(asked.link("Approve once"))
                    sent = await web.post(asked.link("Approve once"))
                assert (page.status_code, sent.status_code) == (410, 410)
                assert "This link has expired" in sent.text
                assert len(await waiting(wire, asked.session.id)) == 1
                await asked.stream.aclose()
        finally:
            await wire.close()


async def test_an_altered_link_is_refused_and_decides_nothing(alice, receiver, web):
    asked = await ask(alice, COMMAND, receiver)
    path = asked.link("Deny")
    flipped = path[:-1] + ("A" if path[-1] != "A" else "B")
    forged = [
        flipped,
        _with_payload(path, p="bob"),
        _with_payload(path, d=t.DECISION_ALWAYS),
        _with_payload(path, e=int(time.time()) + 10**6),
        "/approve/v1.e30.AAAA",
        "/approve/" + "x" * 5000,
    ]
    for link in forged:
        for answer in (await web.get(link), await web.post(link)):
            assert answer.status_code == 403, link
            assert "This link is not valid" in answer.text
    assert len(await waiting(alice, asked.session.id)) == 1
    await asked.stream.aclose()


async def test_a_questions_option_link_answers_with_that_option(alice, receiver, web):
    asked = await ask(alice, "ask: Which colour? [red|green|blue]", receiver)
    assert [(link["label"], link["answer"]) for link in asked.links] == [
        ("red", "red"),
        ("green", "green"),
        ("blue", "blue"),
    ]
    page = await web.get(asked.link("green"))
    assert "Which colour?" in page.text and "Answer “green”" in page.text
    sent = await web.post(asked.link("green"))
    assert sent.status_code == 200 and "Answered “green” — by link as alice" in sent.text
    resolved = await until(asked.stream, "resolution")
    assert list(resolved.resolution.answers) == ["green"]
    assert (resolved.resolution.via, resolved.resolution.resolved_by) == ("link", "alice")
    await asked.stream.aclose()


async def test_a_page_escapes_what_the_model_wrote_under_a_strict_policy(alice, receiver, web):
    asked = await ask(alice, "$ echo '<script>alert(1)</script>'", receiver)
    page = await web.get(asked.link("Approve once"))
    assert "<script" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "form-action 'self'" in policy
    assert "script-src" not in policy and "unsafe-inline" not in policy
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["x-frame-options"] == "DENY"
    await asked.stream.aclose()


async def test_a_cross_site_form_is_refused(alice, receiver, web):
    asked = await ask(alice, COMMAND, receiver)
    by_origin = await web.post(asked.link("Approve once"), headers={"origin": "https://evil.test"})
    by_fetch = await web.post(asked.link("Approve once"), headers={"sec-fetch-site": "cross-site"})
    assert (by_origin.status_code, by_fetch.status_code) == (403, 403)
    own = await web.post(
        asked.link("Deny"), headers={"origin": PUBLIC.rstrip("/"), "sec-fetch-site": "same-origin"}
    )
    assert own.status_code == 200, "the page's own form, behind the public URL"
    await asked.stream.aclose()


async def test_a_link_passes_the_ports_host_check(alice, receiver, web):
    asked = await ask(alice, COMMAND, receiver)
    rebound = await web.get(asked.link("Approve once"), headers={"host": "attacker.example"})
    assert rebound.status_code == 400
    named = await web.get(asked.link("Approve once"), headers={"host": "blitz.example.com"})
    assert named.status_code == 200, "the public URL's host is served"
    await asked.stream.aclose()


async def test_the_slack_format_carries_the_same_links_as_buttons_and_text(alice):
    with Receiver() as standard, Receiver() as slack:
        asked = await ask(alice, COMMAND, standard, slack)
    await asked.stream.aclose()
    assert asked.slack is not None
    blocks = {block.get("block_id"): block for block in asked.slack["blocks"]}
    buttons = blocks["blitz_actions"]["elements"]
    tokens = [link["url"].removeprefix(f"{PUBLIC}approve/") for link in asked.links]
    assert [b["value"] for b in buttons] == tokens
    assert [b["text"]["text"] for b in buttons] == [link["label"] for link in asked.links]
    assert [b.get("style") for b in buttons] == ["primary", None, "danger"]
    text = blocks["blitz_links"]["text"]["text"]
    assert all(f"<{link['url']}|{link['label']}>" in text for link in asked.links)


async def test_a_start_without_a_public_url_says_notifications_carry_no_links(
    hooked_settings, linked_settings
):
    with structlog.testing.capture_logs() as without:
        async with running_server(hooked_settings):
            pass
    with structlog.testing.capture_logs() as with_url:
        async with running_server(linked_settings):
            pass
    said = [e for e in without if "no --public-url" in e["event"]]
    assert [e["log_level"] for e in said] == ["warning"]
    assert not [e for e in with_url if "no --public-url" in e["event"]]


async def test_a_server_wide_webhook_gets_links_answering_as_the_sessions_owner(
    linked, receiver, web
):
    """An admin's webhook hears of alice's session: its links still answer as alice."""
    admin = open_wire("connect", linked, {"authorization": "Bearer root-token-0000"})
    alice = open_wire("connect", linked, {"authorization": "Bearer alice-token-1234"})
    try:
        await create(admin, receiver.url, ["approval_request"], server_wide=True)
        session = await alice.create_session()
        stream = alice.run(session.id, COMMAND)
        await until(stream, "approval_request")
        [got] = await receiver.wait_for(lambda r: len(r) == 1)
        [deny] = [link for link in got.payload()["data"]["links"] if link["label"] == "Deny"]
        sent = await web.post(deny["url"].removeprefix(PUBLIC.rstrip("/")))
        assert "Denied — by link as alice" in sent.text
        await stream.aclose()
    finally:
        await admin.close()
        await alice.close()
