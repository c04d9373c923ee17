"""Deciding by link: a token checked, its request found, and answered as Decide answers.

`LinkCore` implements the link port (`blitz.ports.LinkPort`). `page` says what a token
would do and never decides: a link preview bot, a mail scanner or a prefetching browser
that GETs a link changes nothing. `decide` (the page's POST) and `resolve` (Slack's
buttons, `slack.py`) answer the request through the session core's own Decide and Answer
(`decide_via`, `answer_via`), so the same checks apply (the decisions the request takes,
the rule limit, the session's owner) and the resolution is one event of the log, with
`via` "link" or "slack" and `resolved_by` the principal answered as.

Single use comes from the request itself: a token names one request and one answer, and a
request resolves exactly once (the store decides the race), so a token used, replayed or
raced by another answer finds its request resolved and is told by whom and how. A token
whose session or request is gone, whose signature does not check or whose time is up is
refused before anything is read of what it names. The token's principal must own its
session: true by construction, since links are made for the owner; a Slack user acts as
the principal the operator maps it to, who must own the session or be an admin.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from blitz.core.links.offers import choice_label
from blitz.core.links.tokens import LinkRefused, LinkSigner, LinkToken
from blitz.core.requests.approvals import outcome_from_json
from blitz.core.webhooks.payloads import session_link
from blitz.errors import BlitzError, Reason
from blitz.ports import CallContext, LinkState, LinkView
from blitz.store import PendingRecord, SessionRecord, Store
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = ["LinkCore", "Resolver"]

log = structlog.get_logger(__name__)

# How each way of resolving a request is told on a page.
_VIA = {
    "link": "by link",
    "slack": "from Slack",
    "decide": "in a client",
    "answer": "in a client",
    "rule": "by a rule",
}


class Resolver(Protocol):
    """Decide and Answer as another way of making them calls them (`SessionCore`'s)."""

    async def decide_via(
        self, req: s.DecideRequest, ctx: CallContext, *, via: str
    ) -> s.DecideResponse: ...

    async def answer_via(
        self, req: s.AnswerRequest, ctx: CallContext, *, via: str
    ) -> s.AnswerResponse: ...


@dataclass(frozen=True)
class _Found:
    """A token that checks, with what it names as the store has it."""

    token: LinkToken
    session: SessionRecord
    pending: PendingRecord
    event: t.TurnEvent
    view: LinkView


class LinkCore:
    """Approval links' pages and decisions (see the module doc)."""

    def __init__(
        self, *, signer: LinkSigner, store: Store, resolver: Resolver, public_url: str = ""
    ) -> None:
        self._signer = signer
        self._store = store
        self._resolver = resolver
        self._public_url = public_url

    async def page(self, token: str) -> LinkView:
        found = await self._find(token)
        if isinstance(found, LinkView):
            return found
        if found.pending.resolution is not None:
            return _answered(found)
        return _with(found.view, LinkState.OPEN, "Nothing is decided until you press the button.")

    async def decide(self, token: str) -> LinkView:
        return await self.resolve(token, via="link")

    async def resolve(
        self, token: str, *, via: str, principal: str | None = None, admin: bool = False
    ) -> LinkView:
        """Answer as `token` says, once. `principal` (with `admin`) answers as someone
        other than the token's own, who must own the session or be an admin."""
        found = await self._find(token)
        if isinstance(found, LinkView):
            return found
        acting = found.token.principal if principal is None else principal
        if principal is not None and principal != found.session.owner and not admin:
            log.warning(
                "link_refused",
                why="not the session's owner",
                via=via,
                principal=principal,
                session_id=found.session.id,
            )
            return LinkView(
                state=LinkState.REFUSED,
                message=f"{principal or 'the local principal'} may not answer this"
                " session's requests.",
            )
        if found.pending.resolution is not None:
            return _answered(found)
        ctx = CallContext(caller=acting, admin=admin)
        sid, rid = found.session.id, found.pending.request_id
        try:
            if found.token.option >= 0:
                option = found.event.question.options[found.token.option]
                answer = s.AnswerRequest(session_id=sid, request_id=rid, answers=[option])
                await self._resolver.answer_via(answer, ctx, via=via)
            else:
                decision = t.Decision.ValueType(found.token.decision)
                decide = s.DecideRequest(session_id=sid, request_id=rid, decision=decision)
                await self._resolver.decide_via(decide, ctx, via=via)
        except BlitzError as exc:
            if exc.reason is Reason.ALREADY_RESOLVED:
                again = await self._find(token)
                return _answered(again) if isinstance(again, _Found) else again
            if exc.reason in (Reason.SESSION_NOT_FOUND, Reason.REQUEST_NOT_FOUND):
                return _gone("This link's request no longer exists.")
            log.info("link_refused", why=exc.reason.wire, via=via, session_id=sid)
            return _with(found.view, LinkState.REFUSED, f"Refused: {exc.message}")
        log.info("link_decided", via=via, principal=acting, session_id=sid, request_id=rid)
        who = f" as {acting}" if acting else ""
        done = f"{_outcome(found.view.choice, found.token)} — {_VIA.get(via, via)}{who}"
        return replace(found.view, state=LinkState.DONE, message=done, principal=acting, via=via)

    async def _find(self, text: str) -> _Found | LinkView:
        """The token and what it names; a LinkView saying why not, when it is refused."""
        try:
            token = self._signer.verify(text, now=time.time())
        except LinkRefused as refused:
            if refused.kind == "expired":
                return LinkView(state=LinkState.EXPIRED, message="This link has expired.")
            return LinkView(state=LinkState.INVALID, message="This link is not valid.")
        session = await self._store.get_session(token.session_id)
        if session is None:
            return _gone("This link's session no longer exists.")
        if session.owner != token.principal:
            return LinkView(state=LinkState.INVALID, message="This link is not valid.")
        found = await self._store.list_pending(
            session.id, request_id=token.request_id, open_only=False
        )
        if not found:
            return _gone("This link's request no longer exists.")
        event = t.TurnEvent.FromString(found[0].event)
        view = self._view(session, event, token)
        if view is None:
            return LinkView(state=LinkState.INVALID, message="This link is not valid.")
        return _Found(token, session, found[0], event, view)

    def _view(
        self, session: SessionRecord, event: t.TurnEvent, token: LinkToken
    ) -> LinkView | None:
        """What the page shows of the request; None when the token does not fit it."""
        base = LinkView(
            state=LinkState.OPEN,
            message="",
            title=session.title,
            session_id=session.id,
            console_url=session_link(self._public_url, session.id),
            principal=token.principal,
            expires=float(token.expires),
        )
        if token.option < 0 and event.HasField("approval_request"):
            asked = event.approval_request
            return replace(
                base,
                kind="approval",
                action=t.ActionKind.Name(asked.kind).removeprefix("ACTION_KIND_"),
                tool=asked.tool,
                detail=asked.detail,
                scope_label=asked.scope_label,
                choice=choice_label(token.decision),
                refuses=token.decision == t.DECISION_DENY,
            )
        question = event.question
        if event.HasField("question") and 0 <= token.option < len(question.options):
            return replace(
                base,
                kind="question",
                question=question.question,
                choice=f"Answer “{question.options[token.option]}”",
            )
        return None


def _with(view: LinkView, state: LinkState, message: str) -> LinkView:
    return replace(view, state=state, message=message)


def _gone(message: str) -> LinkView:
    return LinkView(state=LinkState.GONE, message=message)


def _outcome(choice: str, token: LinkToken) -> str:
    """What a decision made of `choice` did, in the past tense."""
    if token.option >= 0:
        return choice.replace("Answer", "Answered", 1)
    done: dict[int, str] = {
        t.DECISION_ONCE: "Approved once",
        t.DECISION_SESSION: "Approved for this session",
        t.DECISION_ALWAYS: "Approved always",
        t.DECISION_DENY: "Denied",
    }
    return done.get(token.decision, "Decided")


def _answered(found: _Found) -> LinkView:
    """The page of a request that was resolved already: by whom, how, and to what."""
    assert found.pending.resolution is not None
    done = outcome_from_json(found.pending.request_id, found.pending.resolution).event
    if done.via == "withdrawn":
        message = "This request is no longer open: its turn ended first."
    elif done.via == "timeout":
        message = "This request timed out" + (
            ", and was denied." if found.view.kind == "approval" else " unanswered."
        )
    else:
        if found.view.kind == "approval":
            what = _outcome("", LinkToken("", "", "", 0, decision=done.decision)).lower()
        else:
            what = "answered " + ", ".join(f"“{a}”" for a in done.answers)
        who = f" by {done.resolved_by}" if done.resolved_by else ""
        how = _VIA.get(done.via, done.via)
        message = f"Already answered{who}: {what} ({how})."
    return replace(
        found.view,
        state=LinkState.ANSWERED,
        message=message,
        resolved_by=done.resolved_by,
        via=done.via,
    )
