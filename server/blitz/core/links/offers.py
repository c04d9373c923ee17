"""Which links a webhook's message of a request carries, each with its signed token.

An approval gets one link per decision a link may make, of those the request offers
(`ApprovalRequest.available_decisions`): ONCE, SESSION and DENY. Not ALWAYS: a rule that
outlives the session and covers the workspace is made where its scope can be read and
edited (a client, the console), not by one press on a phone. A question with options gets
one link per option (at most `OPTIONS_LINKED`; more are for a client), answering with that
option alone, also when several may be chosen; a question without options, or with a
form, gets none (the console's link is there for it).

A link works until the earlier of its request's own `expire_time` and `--link-ttl` after
the request was asked. Made once per event, when the outbox is expanded: every webhook
that hears of it, whatever its format, carries the same tokens, and a retry the same body.

Pure: it signs, and reads nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import quote

from blitz.core.links.tokens import LinkSigner, LinkToken
from blitz.v1 import turn_pb2 as t

__all__ = ["LINK_DECISIONS", "OPTIONS_LINKED", "LinkMaker", "Offer", "choice_label", "link_path"]

# The decisions a link may make, in the order they are offered.
LINK_DECISIONS = (t.DECISION_ONCE, t.DECISION_SESSION, t.DECISION_DENY)
# The most options of a question that get links.
OPTIONS_LINKED = 10
# Where a link is served, under the public URL.
_PATH = "/approve/"
_LABELS: dict[int, str] = {
    t.DECISION_ONCE: "Approve once",
    t.DECISION_SESSION: "Approve for this session",
    t.DECISION_ALWAYS: "Approve always",
    t.DECISION_DENY: "Deny",
}


def choice_label(decision: int) -> str:
    """A decision in the words a link and a page use."""
    return _LABELS.get(decision, "Decide")


def link_path(token: str) -> str:
    """The path a token is served at."""
    return _PATH + quote(token, safe="")


@dataclass(frozen=True)
class Offer:
    """One link of a message: what it does, its token and its URL. `decision` is set for
    an approval's link, `answer` for a question's."""

    label: str
    token: str
    url: str
    expires: float
    decision: int = 0
    answer: str = ""

    @property
    def refuses(self) -> bool:
        return self.decision == t.DECISION_DENY


class LinkMaker:
    """Makes the links of a request's event, under the server's public URL."""

    def __init__(self, *, signer: LinkSigner, public_url: str, ttl: float) -> None:
        self._signer = signer
        self._base = public_url.rstrip("/")
        self._ttl = ttl

    def offers(self, event: t.TurnEvent, *, owner: str, asked_at: float) -> list[Offer]:
        """The links of `event` (none unless it is an approval_request or a question that
        takes a link), answering as `owner`."""
        kind = event.WhichOneof("kind")
        if kind == "approval_request":
            asked = event.approval_request
            offered = set(asked.available_decisions) or {t.DECISION_ONCE, t.DECISION_DENY}
            expires = self._expiry(asked, asked_at)
            return [
                self._offer(event, asked.request_id, owner, expires, decision=decision)
                for decision in LINK_DECISIONS
                if decision in offered
            ]
        if kind == "question":
            question = event.question
            if question.HasField("form") or not 0 < len(question.options) <= OPTIONS_LINKED:
                return []
            expires = self._expiry(question, asked_at)
            return [
                self._offer(event, question.request_id, owner, expires, option=index)
                for index in range(len(question.options))
            ]
        return []

    def _expiry(self, asked: t.ApprovalRequest | t.Question, asked_at: float) -> int:
        until = asked_at + self._ttl
        if asked.HasField("expire_time"):
            until = min(until, asked.expire_time.seconds + asked.expire_time.nanos / 1e9)
        return math.floor(until)

    def _offer(
        self,
        event: t.TurnEvent,
        request_id: str,
        owner: str,
        expires: int,
        *,
        decision: int = 0,
        option: int = -1,
    ) -> Offer:
        token = self._signer.sign(
            LinkToken(
                session_id=event.session_id,
                request_id=request_id,
                principal=owner,
                expires=expires,
                decision=decision,
                option=option,
            )
        )
        answer = event.question.options[option] if option >= 0 else ""
        return Offer(
            label=answer or choice_label(decision),
            token=token,
            url=self._base + link_path(token),
            expires=float(expires),
            decision=decision,
            answer=answer,
        )
