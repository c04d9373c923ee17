"""What the approval-link and Slack tests share: a request asked with a webhook listening,
its delivery's links, and what a session still waits on.

`ask` makes webhooks of the caller to `standard` (and, given, `slack`: the Slack format)
receivers, runs `prompt` in a new session up to its approval or question, and waits for
the deliveries; the stream stays open, so a test reads on to see the turn resume.
`path_of` is a link's path, to fetch from the test's server whatever the public URL
names; `waiting` the session's open requests.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh
from support.receiver import Receiver
from support.webhooks import create
from support.wire import Wire

__all__ = [
    "ALICE",
    "ASKS",
    "BOB",
    "PUBLIC",
    "SIGNING_SECRET",
    "SLACK_USERS",
    "Asked",
    "ask",
    "path_of",
    "waiting",
]

# The kinds of event that carry links.
ASKS = ["approval_request", "question"]
# Where the links point: not this machine, so a test fetches a link's path from its server.
PUBLIC = "https://blitz.example.com/"
# The two principals' headers, and the Slack app's secret and users.
ALICE = {"authorization": "Bearer alice-token-1234"}
BOB = {"authorization": "Bearer bob-token-5678"}
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SLACK_USERS = {"UALICE001": "alice", "UBOB00001": "bob"}


@dataclass
class Asked:
    """A request asked, as the test's webhooks were told of it."""

    session: s.Session
    event: t.TurnEvent
    # The turn's stream, open: read on to see it resume.
    stream: AsyncGenerator[t.TurnEvent, None]
    # The standard delivery's payload, and the Slack one's (None: no Slack receiver).
    payload: dict[str, Any]
    slack: dict[str, Any] | None

    @property
    def links(self) -> list[dict[str, str]]:
        found: list[dict[str, str]] = self.payload["data"].get("links", [])
        return found

    def link(self, label: str) -> str:
        """The path of the link labelled `label`."""
        for link in self.links:
            if link["label"] == label:
                return path_of(link["url"])
        raise AssertionError(f"no link {label!r} in {self.links}")


async def ask(
    wire: Wire, prompt: str, standard: Receiver, slack: Receiver | None = None, **session: Any
) -> Asked:
    await create(wire, standard.url, ASKS)
    if slack is not None:
        await create(wire, slack.url, ASKS, format=wh.WEBHOOK_FORMAT_SLACK)
    created = await wire.create_session(**session)
    stream = wire.run(created.id, prompt)
    async for event in stream:
        if event.WhichOneof("kind") in ASKS:
            break
    else:
        raise AssertionError("the turn asked nothing")
    [got] = await standard.wait_for(lambda r: len(r) == 1)
    message = None
    if slack is not None:
        [sent] = await slack.wait_for(lambda r: len(r) == 1)
        message = sent.payload()
    return Asked(created, event, stream, got.payload(), message)


def path_of(url: str) -> str:
    """A link's path (its host is the public URL's, not the test server's)."""
    return urlsplit(url).path


async def waiting(wire: Wire, session_id: str) -> list[t.TurnEvent]:
    """The session's open requests."""
    session = await wire.call("GetSession", s.GetSessionRequest(session_id=session_id))
    return list(session.pending)
