"""What a delivery says: its body in each format, made once from the stored event.

The standard format is JSON in the shape the Standard Webhooks specification suggests:

    {"type": "approval_request", "timestamp": "2026-…Z",
     "data": {"session_id", "title", "labels", "turn_id", "seq", "time", "url"?,
              "outcome"?, "reason"?, "event": {…the TurnEvent in protobuf's JSON mapping…}}}

`type` is the event's kind (or `ping`), `timestamp` when it was stored. The event is the
one the log stored, so it is masked as every event is (`blitz.redact`), and it is cut to
fit `BODY_MAX` the way the log cuts an event (`blitz.size_limits.fit`: the longest strings
keep their start and say how much went). A `finished` event adds its `outcome`
("succeeded" or "failed") and, when it failed, the error's `reason`. Where the server
knows its public URL, `url` links to the session in the console, and an approval or a
question adds `links`, the signed links that answer it (`blitz.core.links.offers`):
`[{"label", "url", "expire_time", "decision" | "answer"}]`.

The Slack format is a message for an incoming webhook: a line of `text` and a few blocks
with the essentials (an approval's kind, command or path and rule scope; a question and
its options; a turn's outcome). Everything in it that a model or a command wrote is
escaped for Slack's mrkdwn (`&`, `<`, `>`), so it can neither mention a channel nor make
a link. The same links come as buttons (their `value` the link's token, for Slack's
interactivity, `blitz.core.links.slack`) and as text, for a client without buttons.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from google.protobuf import json_format

from blitz.size_limits import fit
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh

if TYPE_CHECKING:
    from blitz.core.links.offers import Offer

__all__ = [
    "BODY_MAX",
    "PING",
    "body_of",
    "message_id",
    "mrkdwn_escaped",
    "ping_body",
    "session_link",
]

# The most bytes a body holds.
BODY_MAX = 256 * 1024
PING = "ping"
_CUT_WHY = f"a webhook's body holds at most {BODY_MAX // 1024} KiB"
# Characters of a model's or command's text a Slack message shows.
_SLACK_SHOWN = 600
# Characters of a Slack button's text (Slack takes 75).
_BUTTON_SHOWN = 70
# The block_ids of the blocks a Slack message's links are in (`core/links/slack.py`
# removes blocks whose id starts `blitz_` when it updates a message).
_LINKS_BLOCK = "blitz_links"
_ACTIONS_BLOCK = "blitz_actions"


def message_id(session_id: str, seq: int) -> str:
    """The `webhook-id` of a session's event: the same for every webhook and attempt."""
    return f"msg_{session_id}_{seq}"


def session_link(public_url: str, session_id: str) -> str:
    """Where the console shows the session, under the server's public URL ("" if none)."""
    if not public_url:
        return ""
    return f"{public_url.rstrip('/')}/#/sessions/{quote(session_id, safe='')}"


def _rfc3339(seconds: float) -> str:
    return (
        datetime.fromtimestamp(seconds, tz=UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def body_of(
    event: t.TurnEvent,
    *,
    format: int,
    title: str,
    labels: Mapping[str, str],
    link: str,
    offers: Sequence[Offer] = (),
) -> bytes:
    """The body of a delivery of `event` (stored, numbered, masked) in `format`, with the
    links that answer it (`offers`)."""
    if format == wh.WEBHOOK_FORMAT_SLACK:
        return _json(_slack(event, title=title, link=link, offers=offers))
    kind = event.WhichOneof("kind") or ""
    stored = event.time.seconds + event.time.nanos / 1e9
    data: dict[str, Any] = {
        "session_id": event.session_id,
        "title": title,
        "labels": dict(labels),
        "turn_id": event.turn_id,
        "seq": event.seq,
        "time": _rfc3339(stored),
    }
    if link:
        data["url"] = link
    if offers:
        data["links"] = [_link_of(offer) for offer in offers]
    if kind == "finished":
        failed = event.finished.HasField("error")
        data["outcome"] = "failed" if failed else "succeeded"
        if failed:
            data["reason"] = event.finished.error.reason
    envelope = {"type": kind, "timestamp": _rfc3339(stored), "data": data}
    room = BODY_MAX - len(_json({**envelope, "data": {**data, "event": {}}}))
    data["event"] = _event_within(event, room)
    return _json(envelope)


def ping_body(webhook_id: str, *, format: int, now: float) -> bytes:
    """A test delivery's body."""
    text = f"Blitz webhook test: webhook {webhook_id} is reached"
    if format == wh.WEBHOOK_FORMAT_SLACK:
        return _json({"text": _escape(text)})
    data = {"webhook_id": webhook_id, "message": text}
    return _json({"type": PING, "timestamp": _rfc3339(now), "data": data})


def _link_of(offer: Offer) -> dict[str, str]:
    found = {"label": offer.label, "url": offer.url, "expire_time": _rfc3339(offer.expires)}
    if offer.answer:
        found["answer"] = offer.answer
    else:
        found["decision"] = t.Decision.Name(offer.decision)  # type: ignore[arg-type]
    return found


def _json(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _event_within(event: t.TurnEvent, room: int) -> dict[str, Any]:
    """The event in protobuf's JSON mapping, cut until its JSON holds at most `room` bytes."""
    found = json_format.MessageToDict(event)
    if len(_json(found)) <= room:
        return found
    cut = t.TurnEvent()
    cut.CopyFrom(event)
    for share in (0.75, 0.5, 0.25, 0.1):  # JSON escapes can make text longer than proto
        fit(cut, max(1024, int(room * share)), why=_CUT_WHY)
        found = json_format.MessageToDict(cut)
        if len(_json(found)) <= room:
            return found
    kind = event.WhichOneof("kind") or "event"
    return {"notice": {"text": f"a {kind} event too large for a webhook's body", "error": True}}


# Slack


def mrkdwn_escaped(text: str) -> str:
    """Text as Slack's mrkdwn shows it, and no more: no mention, no link, no markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_escape = mrkdwn_escaped


def _shown(text: str, limit: int = _SLACK_SHOWN) -> str:
    text = text if len(text) <= limit else text[:limit] + "…"
    return _escape(text)


def _code(text: str) -> str:
    return "```" + _shown(text).replace("```", "'''") + "```"


def _slack(event: t.TurnEvent, *, title: str, link: str, offers: Sequence[Offer]) -> dict[str, Any]:
    kind = event.WhichOneof("kind") or ""
    where = _escape(title or event.session_id)
    if link:
        where = f"<{_escape(link)}|{where}>"
    headline, details = _slack_lines(event, kind)
    text = f"{headline} · {where}"
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": text}},
    ]
    if details:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": details}})
    if offers:
        blocks.extend(_slack_links(offers))
    context = f"Blitz · session {_escape(event.session_id)} · seq {event.seq}"
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": context}]})
    return {"text": text, "blocks": blocks}


def _slack_links(offers: Sequence[Offer]) -> list[dict[str, Any]]:
    """The links as buttons (their value the token, for the app's interactivity) and as
    text, for a client without buttons (or an app without interactivity)."""
    shown = " · ".join(f"<{offer.url}|{_shown(offer.label, 100)}>" for offer in offers)
    buttons = []
    for number, offer in enumerate(offers):
        label = offer.label if len(offer.label) <= _BUTTON_SHOWN else offer.label[:69] + "…"
        button: dict[str, Any] = {
            "type": "button",
            "action_id": f"blitz_link_{number}",
            "text": {"type": "plain_text", "text": label or "(empty)", "emoji": False},
            "value": offer.token,
        }
        if offer.refuses:
            button["style"] = "danger"
        elif number == 0 and not offer.answer:
            button["style"] = "primary"
        buttons.append(button)
    return [
        {"type": "actions", "block_id": _ACTIONS_BLOCK, "elements": buttons},
        {
            "type": "section",
            "block_id": _LINKS_BLOCK,
            "text": {"type": "mrkdwn", "text": f"Answer here: {shown}"},
        },
    ]


def _slack_lines(event: t.TurnEvent, kind: str) -> tuple[str, str]:
    """A headline and the details under it."""
    if kind == "approval_request":
        asked = event.approval_request
        action = t.ActionKind.Name(asked.kind).removeprefix("ACTION_KIND_")
        details = _code(asked.detail)
        if asked.scope_label:
            details += f"\nrule scope: `{_shown(asked.scope_label, 200)}`"
        if asked.agent:
            details += f"\nasked by sub-agent {_escape(asked.agent)}"
        return f":raised_hand: *Approval needed* ({action}, {_escape(asked.tool)})", details
    if kind == "question":
        asked = event.question
        details = _shown(asked.question)
        if asked.options:
            details += "\n" + " | ".join(_shown(o, 100) for o in asked.options)
        return ":question: *A question for you*", details
    if kind == "plan_proposed":
        return ":clipboard: *A plan is proposed*", _shown(event.plan_proposed.plan)
    if kind == "resolution":
        done = event.resolution
        how = t.Decision.Name(done.decision).removeprefix("DECISION_") if done.decision else ""
        who = f" by {_escape(done.resolved_by)}" if done.resolved_by else ""
        return f":white_check_mark: *Resolved* ({_escape(done.via)} {how}{who})".replace(
            " )", ")"
        ), ""
    if kind == "finished":
        finished = event.finished
        if finished.HasField("error"):
            error = finished.error
            return f":x: *Turn failed* ({_escape(error.reason)})", _shown(error.message)
        return ":checkered_flag: *Turn finished*", _shown(finished.output)
    if kind == "session_state":
        state = t.SessionStateChange.State.Name(event.session_state.state)
        return f":information_source: *Session {state.removeprefix('STATE_').lower()}*", ""
    if kind == "flow_step":
        step = event.flow_step
        return f":gear: *Workflow step* {_escape(step.title or step.id)}", _escape(step.status)
    return f"*{_escape(kind)}*", ""
