"""Slack's interactivity requests on the HTTP port: `POST /slack/actions`.

A Slack app's "Interactivity Request URL" points here: pressing a button of a `slack`
webhook's message makes Slack POST a signed, form-encoded payload (docs/webhooks.md,
"Slack buttons"). This reads the body whole (its exact bytes are what the signature
covers, so nothing parses it first), hands it with the headers to the Slack port
(`blitz.ports.SlackPort`), and answers what that says. Slack's servers send neither
`Origin` nor `Sec-Fetch-*`, so the port's Host and Origin checks (`rebinding.py`) let them
through as they let any non-browser client; a browser's cross-site form is refused there.

No business rule here, and no signature check: the port does both.
"""

from __future__ import annotations

import structlog

from blitz.ports import SlackPort
from blitz.transport.http import Receive, Scope, Send, read_body, respond_text

__all__ = ["SLACK_ACTIONS_PATH", "SlackApp"]

log = structlog.get_logger(__name__)

SLACK_PATH = "/slack"
SLACK_ACTIONS_PATH = SLACK_PATH + "/actions"
# The most of a request's body read: a payload holds the whole message, blocks and all.
_BODY_MAX = 1024 * 1024


class SlackApp:
    """`POST /slack/actions`, mounted on the HTTP port at `/slack/`."""

    path = SLACK_PATH

    def __init__(self, port: SlackPort) -> None:
        self._port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] != SLACK_ACTIONS_PATH:
            await respond_text(send, 404, "not found")
            return
        if scope["method"] != "POST":
            await respond_text(send, 405, "POST only", ((b"allow", b"POST"),))
            return
        body = await read_body(receive, _BODY_MAX)
        if body is None:
            await respond_text(send, 413, "too large")
            return
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope["headers"]
        }
        try:
            answer = await self._port.slack_action(body, headers)
        except Exception:
            log.exception("slack_action_failed")
            await respond_text(send, 500, "internal error")
            return
        await respond_text(send, answer.status, answer.text)
