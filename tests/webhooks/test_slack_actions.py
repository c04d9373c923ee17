"""Slack's buttons: `POST /slack/actions` as Slack sends it, signed with the app's secret.

The `slack` webhook's message goes to a receiver (Slack's incoming webhook); a press is
the form Slack posts, signed as Slack signs (slack-sdk's own signature); the message's
update goes to a second receiver standing in for Slack's `response_url`, on 127.0.0.1,
which `--webhook-allow-private` lets the server reach.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import structlog
from slack_sdk.signature import SignatureVerifier
from support.links import SIGNING_SECRET, Asked, ask, waiting
from support.receiver import Receiver
from support.wire import until

from blitz.config import load_settings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"
COMMAND = "$ echo hello"


def press(
    asked: Asked,
    user: str,
    response_url: str,
    *,
    label: str = "Approve once",
    secret: str = SIGNING_SECRET,
    at: float | None = None,
) -> tuple[bytes, dict[str, str]]:
    """The request Slack sends when `user` presses the button `label` of the message."""
    assert asked.slack is not None
    [actions] = [b for b in asked.slack["blocks"] if b.get("block_id") == "blitz_actions"]
    [button] = [b for b in actions["elements"] if b["text"]["text"] == label]
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0001"},
        "team": {"id": "T0001", "domain": "acme"},
        "container": {"type": "message", "message_ts": "1700000000.000100"},
        "response_url": response_url,
        "message": {"type": "message", "text": asked.slack["text"], **asked.slack},
        "actions": [
            {
                "type": "button",
                "block_id": "blitz_actions",
                "action_id": button["action_id"],
                "value": button["value"],
                "text": button["text"],
                "action_ts": "1700000001.000200",
            }
        ],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    timestamp = str(int(time.time() if at is None else at))
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    headers = {
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": signature,
        "user-agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
    }
    return body, headers


async def test_a_signed_press_decides_and_the_message_says_who_decided(alice, receiver, web):
    with Receiver() as slack, Receiver() as responses:
        asked = await ask(alice, COMMAND, receiver, slack)
        body, headers = press(asked, "UALICE001", responses.url)
        answer = await web.post("/slack/actions", content=body, headers=headers)
        assert answer.status_code == 200
        resolved = await until(asked.stream, "resolution")
        assert (resolved.resolution.via, resolved.resolution.resolved_by) == ("slack", "alice")
        finished = await until(asked.stream, "finished")
        assert not finished.finished.HasField("error")
        [update] = await responses.wait_for(lambda r: len(r) == 1)
    await asked.stream.aclose()
    message = update.payload()
    assert message["replace_original"] is True
    assert "Approved once — from Slack as alice" in message["text"]
    ids = [block.get("block_id") for block in message["blocks"]]
    assert "blitz_actions" not in ids and "blitz_links" not in ids, "its buttons are gone"
    assert ids[-1] == "blitz_outcome"
    assert message["blocks"][0] == asked.slack["blocks"][0], "what it asked stays"


async def test_a_press_on_an_answered_request_updates_the_message_to_say_so(alice, receiver, web):
    with Receiver() as slack, Receiver() as responses:
        asked = await ask(alice, COMMAND, receiver, slack)
        await alice.decide(asked.session.id, asked.event, "deny")
        body, headers = press(asked, "UALICE001", responses.url)
        assert (await web.post("/slack/actions", content=body, headers=headers)).status_code == 200
        [update] = await responses.wait_for(lambda r: len(r) == 1)
    await asked.stream.aclose()
    assert "Already answered by alice: denied (in a client)." in update.payload()["text"]


async def test_a_badly_signed_or_stale_press_decides_nothing(alice, receiver, web):
    with Receiver() as slack, Receiver() as responses:
        asked = await ask(alice, COMMAND, receiver, slack)
        forged = press(asked, "UALICE001", responses.url, secret="not-the-apps-secret")
        stale = press(asked, "UALICE001", responses.url, at=time.time() - 6 * 60)
        body, headers = press(asked, "UALICE001", responses.url)
        unsigned = (body, {k: v for k, v in headers.items() if k != "x-slack-signature"})
        altered = (body.replace(b"UALICE001", b"UBOB00001"), headers)
        for body, headers in (forged, stale, unsigned, altered):
            answer = await web.post("/slack/actions", content=body, headers=headers)
            assert answer.status_code == 401
        assert len(await waiting(alice, asked.session.id)) == 1
        assert responses.requests() == []
    await asked.stream.aclose()


async def test_an_unmapped_user_is_told_so_and_decides_nothing(alice, receiver, web):
    with Receiver() as slack, Receiver() as responses:
        asked = await ask(alice, COMMAND, receiver, slack)
        body, headers = press(asked, "USTRANGER", responses.url)
        answer = await web.post("/slack/actions", content=body, headers=headers)
        assert answer.status_code == 200, "Slack is answered; the user is told privately"
        [told] = await responses.wait_for(lambda r: len(r) == 1)
        assert len(await waiting(alice, asked.session.id)) == 1
    await asked.stream.aclose()
    message = told.payload()
    assert message["response_type"] == "ephemeral" and message["replace_original"] is False
    assert "not allowed" in message["text"]


async def test_a_user_mapped_to_another_principal_decides_nothing(alice, receiver, web):
    with Receiver() as slack, Receiver() as responses:
        asked = await ask(alice, COMMAND, receiver, slack)
        body, headers = press(asked, "UBOB00001", responses.url, label="Deny")
        assert (await web.post("/slack/actions", content=body, headers=headers)).status_code == 200
        [told] = await responses.wait_for(lambda r: len(r) == 1)
        assert len(await waiting(alice, asked.session.id)) == 1
    await asked.stream.aclose()
    assert told.payload()["response_type"] == "ephemeral"
    assert "bob may not answer this session's requests" in told.payload()["text"]


async def test_a_response_url_elsewhere_is_not_posted_to(alice, receiver, web):
    """Only Slack's hooks (or the operator's allowed ranges) get the update: a press still
    decides, and nothing is sent to the other address."""
    with Receiver() as slack:
        asked = await ask(alice, COMMAND, receiver, slack)
        body, headers = press(asked, "UALICE001", "https://hooks.slack.com.evil.test/x")
        with structlog.testing.capture_logs() as logged:
            answer = await web.post("/slack/actions", content=body, headers=headers)
        assert answer.status_code == 200
        resolved = await until(asked.stream, "resolution")
        assert resolved.resolution.via == "slack"
    await asked.stream.aclose()
    assert [e["why"] for e in logged if e["event"] == "slack_response_refused"] == [
        "not a Slack response URL"
    ]


async def test_slack_actions_are_refused_where_no_signing_secret_is_set(hooked):
    async with httpx.AsyncClient(base_url=hooked.http_url) as web:
        answer = await web.post("/slack/actions", content=b"payload=%7B%7D")
    assert answer.status_code == 404


def test_the_docs_slack_configuration_loads(tmp_path):
    """docs/webhooks.md's Slack settings, as a configuration file."""
    text = DOCS.read_text()
    section = text[text.index("### Slack buttons") :]
    block = section[section.index("```toml\n") + len("```toml\n") :]
    path = tmp_path / "blitz.toml"
    path.write_text(block[: block.index("```")])
    settings = load_settings({}, {}, config=str(path))
    assert settings.slack_users == {"U0123ABCD": "alice", "U0456EFGH": "bob"}
    assert settings.slack_signing_secret and settings.public_url
