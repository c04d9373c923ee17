"""The link ports: answering a request from outside a client, as the transports ask it.

A webhook's message can carry signed links (`GET`/`POST /approve/TOKEN`) and Slack
buttons (`POST /slack/actions`) that answer the approval or question it tells of
(docs/webhooks.md, "Approval links"). `LinkPort` is what the HTTP port's link pages ask
of the core: what a link would do (`page`, which never decides) and doing it (`decide`),
each as a `LinkView` the transport renders. `SlackPort` takes Slack's interactivity
request as it came (its exact bytes and headers, which its signature covers) and says
what to answer Slack.

Nothing here knows HTML, ASGI or how a token is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

__all__ = ["LinkPort", "LinkState", "LinkView", "SlackAnswer", "SlackPort"]


class LinkState(StrEnum):
    """What became of a link, as its page says it."""

    # The request waits: the page offers the one button that decides (GET only).
    OPEN = "open"
    # Decided now, by this link.
    DONE = "done"
    # The request was already resolved (by whom and how: `resolved_by`, `via`).
    ANSWERED = "answered"
    # The link's time is up.
    EXPIRED = "expired"
    # Not a link of this server: malformed, altered, or signed with another key.
    INVALID = "invalid"
    # Its session or request no longer exists.
    GONE = "gone"
    # The decision was refused (a rule past the limit, a principal not allowed).
    REFUSED = "refused"


@dataclass(frozen=True, kw_only=True)
class LinkView:
    """What a link page shows. Every string but `state` may hold what a model wrote:
    render it as text, never as markup."""

    state: LinkState
    # What happened, in one sentence ("Approved once — by link as alice").
    message: str
    title: str = ""
    session_id: str = ""
    # The session in the console ("" without --public-url).
    console_url: str = ""
    # "approval" or "question"; "" when the link names nothing readable.
    kind: str = ""
    # An approval's action kind (COMMAND, WRITE, …), tool, detail and rule scope.
    action: str = ""
    tool: str = ""
    detail: str = ""
    scope_label: str = ""
    # A question's text.
    question: str = ""
    # What the link does, in words ("Approve once", "Deny", "Answer “yes”").
    choice: str = ""
    # Whether the choice refuses (a DENY), for the button's look.
    refuses: bool = False
    # The principal it answers as.
    principal: str = ""
    # When the link stops working (Unix seconds; 0: unknown).
    expires: float = 0.0
    # For ANSWERED: who resolved the request, and how.
    resolved_by: str = ""
    via: str = ""


class LinkPort(Protocol):
    """Approval links, transport-free (implemented by `blitz.core.links.LinkCore`)."""

    async def page(self, token: str) -> LinkView:
        """What `token` would do; never decides anything."""
        ...

    async def decide(self, token: str) -> LinkView:
        """Do what `token` says, once: the request resolved with `via: "link"`."""
        ...


@dataclass(frozen=True)
class SlackAnswer:
    """The HTTP answer to one Slack interactivity request: a status and a line of text.
    Slack needs a 200 within 3 s; what it shows its user goes to the `response_url`."""

    status: int
    text: str = ""


class SlackPort(Protocol):
    """Slack's buttons, transport-free (implemented by `blitz.core.links.SlackActions`)."""

    async def slack_action(self, body: bytes, headers: Mapping[str, str]) -> SlackAnswer:
        """Answer one interactivity request: `body` exactly as received, `headers` with
        lower-case names."""
        ...
