"""Checking what clients send: every bad input is INVALID_ARGUMENT naming its field.

Pure functions of a request (and, for answers and decisions, of the request they answer);
they read no store and change nothing. The service calls them before it acts, so a refused
call leaves no trace.

Every string and list a client sends has a limit (docs/protocol.md, "Limits"): what it
sends is stored, shown to others and sent to a model, so no field may be as large as a
request can be. A value over its limit is INVALID_ARGUMENT whose metadata names the field
and the `limit`; the message never echoes the value.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Mapping
from pathlib import Path

from google.protobuf import json_format
from google.protobuf.duration_pb2 import Duration

from blitz.core.driver.slash_commands import parse_command
from blitz.errors import BlitzError, invalid_argument
from blitz.forms import values_problem
from blitz.paths import too_long
from blitz.size_limits import clip
from blitz.store import SessionChange, SessionRecord, TurnRecord
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = [
    "check_answers",
    "check_decision",
    "check_fork",
    "check_labels",
    "check_mode",
    "check_steer",
    "check_turn",
    "page_token",
    "require",
    "session_page",
    "session_settings",
    "session_update",
    "turn_page",
    "workspace_name",
]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_LABEL_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$")
_DEFAULT_PAGE = 50
_MAX_PAGE = 500

# Limits, in characters unless said otherwise (docs/protocol.md lists them).
_ID_MAX = 512  # any id a client names: session, request, rule, turn
_TITLE_MAX = 500
_MODEL_MAX = 256
_LABELS_MAX = 64  # labels on a session, or in a ListSessions filter
_LABEL_VALUE_MAX = 256
_PAGE_TOKEN_MAX = 1024
_TEXT_MAX = 256 * 1024  # Turn.text
_PROMPT_MAX = 1024 * 1024  # Turn.prompt
_READ_ONLY_MAX = 1000  # Turn.read_only, a reason shown to the model and the client
_CONTEXT_MAX = 32  # Turn.context blocks
_CONTEXT_CONTENT_MAX = 1024 * 1024  # one block's html and text together
_CONTEXT_FIELD_MAX = 8192  # a block's kind, url and title
_GRANTS_MAX = 64  # Turn.fetch_grants
_GRANT_MAX = 300
_IMAGES_MAX = 16  # Turn.image_ids
_TURN_BYTES_MAX = 4 * 1024 * 1024  # the whole Turn, serialized
_STEER_MAX = 64 * 1024  # SteerRequest.text
_REASON_MAX = 4096  # DecideRequest.reason
_COMMAND_MAX = 64 * 1024  # DecideRequest.command
_RULE_PATTERN_MAX = 1024  # DecideRequest.rule.pattern
_ANSWERS_MAX = 64  # AnswerRequest.answers
_ANSWER_MAX = 16 * 1024
_DURATION_MAX_S = 30 * 24 * 3600  # Turn.timeout, CreateSessionRequest.approval_timeout

# The limits above that a client can check before it sends (GetServerInfo's `limits`).
CLIENT_LIMITS: dict[str, int] = {
    "turn_text_chars": _TEXT_MAX,
    "turn_prompt_chars": _PROMPT_MAX,
    "title_chars": _TITLE_MAX,
    "labels": _LABELS_MAX,
    "label_value_chars": _LABEL_VALUE_MAX,
    "images_per_turn": _IMAGES_MAX,
    "page_size": _MAX_PAGE,
    "steer_text_chars": _STEER_MAX,
    "answers": _ANSWERS_MAX,
    "answer_chars": _ANSWER_MAX,
}


def _too_long(field: str, limit: int, unit: str = "characters") -> BlitzError:
    return invalid_argument(field, f"{field} is longer than {limit:,} {unit}", limit=str(limit))


def _too_many(field: str, limit: int) -> BlitzError:
    return invalid_argument(field, f"{field} has more than {limit:,} entries", limit=str(limit))


def _bounded(value: str, field: str, limit: int) -> str:
    if len(value) > limit:
        raise _too_long(field, limit)
    return value


def require(value: str, field: str) -> str:
    """An id the call names: present, and no longer than any id can be."""
    if not value:
        raise invalid_argument(field, f"{field} is required")
    return _bounded(value, field, _ID_MAX)


def check_labels(labels: Mapping[str, str], field: str = "labels") -> None:
    if len(labels) > _LABELS_MAX:
        raise _too_many(field, _LABELS_MAX)
    for key, value in labels.items():
        if not _LABEL_KEY.match(key):
            raise invalid_argument(
                field, "label keys are 1-63 letters, digits or ._/- starting alphanumeric"
            )
        if len(value) > _LABEL_VALUE_MAX:
            raise invalid_argument(
                field,
                f"label values are at most {_LABEL_VALUE_MAX} characters",
                limit=str(_LABEL_VALUE_MAX),
                key=key,
            )


def _duration_seconds(duration: Duration, field: str) -> float:
    """A positive duration of at most 30 days, in seconds (never an overflow)."""
    if not 0 <= duration.nanos < 1_000_000_000:
        raise invalid_argument(field, f"{field} is not a valid duration")
    seconds = duration.seconds + duration.nanos / 1e9
    if seconds <= 0:
        raise invalid_argument(field, f"{field} must be positive")
    if seconds > _DURATION_MAX_S:
        raise invalid_argument(
            field, f"{field} is longer than 30 days", limit=f"{_DURATION_MAX_S}s"
        )
    return seconds


def check_mode(mode: int, field: str, *, bypass_allowed: bool) -> None:
    """A SessionMode a client asks for: one the protocol has, and BYPASS only where the
    operator allows it (`--allow-bypass-mode`)."""
    if mode not in t.SessionMode.values():
        raise invalid_argument(field, f"{field} {mode} is not a SessionMode")
    if mode == t.SESSION_MODE_BYPASS and not bypass_allowed:
        raise invalid_argument(
            field, "this server does not allow the bypass mode (--allow-bypass-mode)"
        )


def session_settings(req: s.CreateSessionRequest, *, bypass_allowed: bool = False) -> float | None:
    """Check a new session's title, labels and mode; its approval timeout in seconds, if
    set."""
    _bounded(req.title, "title", _TITLE_MAX)
    _bounded(req.model, "model", _MODEL_MAX)
    check_labels(req.labels)
    check_mode(req.mode, "mode", bypass_allowed=bypass_allowed)
    if not req.HasField("approval_timeout"):
        return None
    return _duration_seconds(req.approval_timeout, "approval_timeout")


def workspace_name(name: str, *, session_id: str, root: Path, admin: bool = False) -> str:
    """The workspace the session names under `root`: `name`, or the session's id.

    A name is one or more plain folder names joined by '/': nothing absolute, no empty, `.`
    or `..` component, no backslash or NUL. So it names a folder below the root, never the
    root itself (every session's folder) nor anything above it. A first folder name that
    starts with `@` is a principal's own folder (`@alice/…`, see `SessionCalls`): only an
    admin may name one. That no folder of it is a link is checked where it is opened
    (`blitz.paths.Workspace.named`).
    """
    if not name:
        return session_id
    if "\\" in name or "\x00" in name or any(p in ("", ".", "..") for p in name.split("/")):
        raise invalid_argument(
            "workspace",
            "workspace must be one or more plain folder names joined by '/', "
            "inside the server's root",
        )
    if name.startswith("@") and not admin:
        raise invalid_argument(
            "workspace", "workspace names that start with '@' are principals' own folders"
        )
    # As long as it may be below the folder of a principal of the longest name.
    if too_long(str(root / ("@" + "x" * 64) / name)):
        raise invalid_argument("workspace", "workspace is too long a folder name")
    return name


def session_page(req: s.ListSessionsRequest) -> tuple[int, tuple[float, str] | None]:
    """The page size and where the page starts (after the token's session), checked."""
    if req.page_size < 0:
        raise invalid_argument("page_size", "page_size must not be negative")
    if req.state not in s.SessionState.values():
        raise invalid_argument("state", f"state {req.state} is not a SessionState")
    check_labels(req.labels)
    return _page(req.page_size, req.page_token)


def turn_page(req: s.ListTurnsRequest) -> tuple[int, tuple[float, str] | None]:
    """The page size and where the page starts (after the token's turn), checked."""
    require(req.session_id, "session_id")
    return _page(req.page_size, req.page_token)


def _page(page_size: int, token: str) -> tuple[int, tuple[float, str] | None]:
    if page_size < 0:
        raise invalid_argument("page_size", "page_size must not be negative")
    size = min(page_size or _DEFAULT_PAGE, _MAX_PAGE)
    if not token:
        return size, None
    refused = invalid_argument("page_token", "page_token is not one this server gave")
    if len(token) > _PAGE_TOKEN_MAX:
        raise refused
    try:
        raw = base64.urlsafe_b64decode(token.encode()).decode()
        when, bar, last_id = raw.partition("|")
        start = float(when)
    except ValueError:
        raise refused from None
    # A token this server gave holds a session's or turn's creation time and its id; nothing
    # else ("nan|x", "inf|", "1e308|x") could have come from one.
    if not bar or not last_id or not math.isfinite(start) or not 0 <= start < 1e12:
        raise refused
    return size, (start, last_id)


def page_token(last: SessionRecord | TurnRecord) -> str:
    """The token of the page that follows `last`."""
    last_id = last.id if isinstance(last, SessionRecord) else last.turn_id
    return token_after(last.create_time, last_id)


def page_of(page_size: int, token: str) -> tuple[int, tuple[float, str] | None]:
    """The size and start of a page of any listing paged by (creation time, id), checked."""
    return _page(page_size, token)


def token_after(create_time: float, last_id: str) -> str:
    """The token of the page after the item made at `create_time` with id `last_id`."""
    return base64.urlsafe_b64encode(f"{create_time!r}|{last_id}".encode()).decode()


# What UpdateSession's mask may name.
_UPDATABLE = ("title", "labels", "approval_timeout", "mode")


def session_update(
    req: s.UpdateSessionRequest, *, now: float, bypass_allowed: bool = False
) -> SessionChange:
    """The change an UpdateSession asks for: the fields its mask names, each checked as
    CreateSession checks it. An unset approval_timeout named in the mask is 0.0: back to
    the server's default; an unspecified mode, ASK."""
    require(req.session_id, "session_id")
    paths = list(req.update_mask.paths)
    if not paths:
        raise invalid_argument(
            "update_mask",
            "update_mask must name the fields to change",
            accepted=", ".join(_UPDATABLE),
        )
    if len(paths) > len(_UPDATABLE):
        # Each field once: a mask of ten thousand paths is refused before it is read.
        raise _too_many("update_mask", len(_UPDATABLE))
    for path in paths:
        if path not in _UPDATABLE:
            raise invalid_argument(
                "update_mask",
                f"update_mask names {path[:64]!r}, which UpdateSession does not change",
                accepted=", ".join(_UPDATABLE),
            )
    title = labels = timeout = mode = None
    if "mode" in paths:
        check_mode(req.mode, "mode", bypass_allowed=bypass_allowed)
        mode = req.mode or t.SESSION_MODE_ASK
    if "title" in paths:
        title = _bounded(req.title, "title", _TITLE_MAX)
    if "labels" in paths:
        check_labels(req.labels)
        labels = dict(req.labels)
    if "approval_timeout" in paths:
        timeout = 0.0
        if req.HasField("approval_timeout"):
            timeout = _duration_seconds(req.approval_timeout, "approval_timeout")
    return SessionChange(
        update_time=now, title=title, labels=labels, approval_timeout=timeout, mode=mode
    )


def check_fork(req: s.ForkSessionRequest) -> None:
    require(req.session_id, "session_id")
    require(req.turn_id, "turn_id")
    _bounded(req.title, "title", _TITLE_MAX)


def check_turn(req: s.RunTurnRequest, *, bypass_allowed: bool = False) -> None:
    turn = req.turn
    check_mode(turn.mode, "turn.mode", bypass_allowed=bypass_allowed)
    if req.turn_id and not _ID.match(req.turn_id):
        raise invalid_argument(
            "turn_id", "turn_id must be 1-128 letters, digits or ._:- starting alphanumeric"
        )
    if not req.HasField("turn") or not (turn.text or turn.prompt or turn.accepted):
        raise invalid_argument("turn.text", "the turn needs text (or a prompt)")
    _check_turn_sizes(turn)
    if turn.max_turns < 0:
        raise invalid_argument("turn.max_turns", "max_turns must not be negative")
    if turn.max_cost_usd < 0 or not math.isfinite(turn.max_cost_usd):
        raise invalid_argument("turn.max_cost_usd", "max_cost_usd must be a positive amount")
    if turn.HasField("timeout"):
        _duration_seconds(turn.timeout, "turn.timeout")
    if turn.command:
        parse_command(turn.text)  # unknown commands fail before the turn starts
    if turn.plan and turn.accepted:
        raise invalid_argument("turn.accepted", "a turn cannot both propose and accept a plan")
    if turn.aside and (turn.plan or turn.accepted):
        raise invalid_argument("turn.aside", "an aside turn neither proposes nor accepts plans")
    if req.busy not in s.BusyStrategy.values():
        raise invalid_argument("busy", "busy must be REJECT, ENQUEUE or INTERRUPT")


def _check_turn_sizes(turn: t.Turn) -> None:
    _bounded(turn.text, "turn.text", _TEXT_MAX)
    _bounded(turn.prompt, "turn.prompt", _PROMPT_MAX)
    _bounded(turn.read_only, "turn.read_only", _READ_ONLY_MAX)
    if len(turn.fetch_grants) > _GRANTS_MAX:
        raise _too_many("turn.fetch_grants", _GRANTS_MAX)
    for grant in turn.fetch_grants:
        _bounded(grant, "turn.fetch_grants", _GRANT_MAX)
    if len(turn.image_ids) > _IMAGES_MAX:
        raise _too_many("turn.image_ids", _IMAGES_MAX)
    for image_id in turn.image_ids:
        _bounded(image_id, "turn.image_ids", _ID_MAX)
    if len(turn.context) > _CONTEXT_MAX:
        raise _too_many("turn.context", _CONTEXT_MAX)
    for block in turn.context:
        for name in ("kind", "url", "title"):
            _bounded(getattr(block, name), f"turn.context.{name}", _CONTEXT_FIELD_MAX)
        if len(block.html) + len(block.text) > _CONTEXT_CONTENT_MAX:
            raise _too_long("turn.context", _CONTEXT_CONTENT_MAX)
    if turn.ByteSize() > _TURN_BYTES_MAX:
        raise _too_long("turn", _TURN_BYTES_MAX, "bytes")


def check_steer(req: s.SteerRequest) -> str:
    text = req.text
    if req.expected_turn_id and not _ID.match(req.expected_turn_id):
        raise invalid_argument("expected_turn_id", "expected_turn_id is not a turn id")
    if not text:
        raise invalid_argument("text", "text is required")
    return _bounded(text, "text", _STEER_MAX)


def check_decision(req: s.DecideRequest, request: t.TurnEvent | None = None) -> None:
    """Check a decision alone, then (given) against the request it decides."""
    if req.decision == t.DECISION_UNSPECIFIED or req.decision not in t.Decision.values():
        raise invalid_argument("decision", "decision must be DENY, ONCE, SESSION or ALWAYS")
    _bounded(req.reason, "reason", _REASON_MAX)
    _bounded(req.command, "command", _COMMAND_MAX)
    if req.interrupt and req.decision != t.DECISION_DENY:
        raise invalid_argument("interrupt", "only a DENY can also stop the turn")
    if req.HasField("rule"):
        _check_rule(req)
    if request is None:
        return
    if not request.HasField("approval_request"):
        raise invalid_argument("request_id", "that request is a question: use Answer")
    if req.command:
        if not request.approval_request.scope_label.startswith("command"):
            raise invalid_argument("command", "only a command's approval takes a command")
        if req.decision == t.DECISION_DENY:
            raise invalid_argument("command", "an edited command needs an approving decision")


def _check_rule(req: s.DecideRequest) -> None:
    """The rule a decision makes, alone (rules.py checks it against the request)."""
    rule = req.rule
    if req.decision not in (t.DECISION_SESSION, t.DECISION_ALWAYS):
        raise invalid_argument("rule", "only a SESSION or ALWAYS decision makes a rule")
    if rule.match not in t.RuleMatchKind.values():
        raise invalid_argument("rule.match", f"rule.match {rule.match} is not a RuleMatchKind")
    if rule.effect not in t.RuleEffect.values():
        raise invalid_argument("rule.effect", f"rule.effect {rule.effect} is not a RuleEffect")
    if rule.match in (t.RULE_MATCH_COMMAND_PREFIX, t.RULE_MATCH_PATH_GLOB):
        if not rule.pattern.strip():
            raise invalid_argument("rule.pattern", "a prefix or glob rule needs a pattern")
        _bounded(rule.pattern, "rule.pattern", _RULE_PATTERN_MAX)
    if rule.HasField("lasts"):
        _duration_seconds(rule.lasts, "rule.lasts")


def check_feedback(req: s.RejectPlanRequest) -> None:
    _bounded(req.feedback, "feedback", _STEER_MAX)


def check_answers(req: s.AnswerRequest, request: t.TurnEvent | None = None) -> None:
    """Check answers alone, then (given) against the question they answer."""
    if len(req.answers) > _ANSWERS_MAX:
        raise _too_many("answers", _ANSWERS_MAX)
    for answer in req.answers:
        _bounded(answer, "answers", _ANSWER_MAX)
    if request is None:
        return
    if not request.HasField("question"):
        raise invalid_argument("request_id", "that request is an approval: use Decide")
    question = request.question
    if question.HasField("form"):
        _check_form_answer(req, question)
        return
    if req.HasField("values") or req.decline:
        raise invalid_argument("values", "this question has no form: give answers")
    answers = list(req.answers)
    if not answers or any(not a for a in answers):
        raise invalid_argument("answers", "give at least one non-empty answer")
    if len(answers) > 1 and not question.multi_select:
        raise invalid_argument("answers", "this question takes one answer")
    if question.options:
        for answer in answers:
            if answer not in question.options:
                raise invalid_argument(
                    "answers",
                    f"{clip(answer, 100, what='answer')!r} is not one of the options",
                    options=clip("|".join(question.options), 1000, what="options"),
                )


def _check_form_answer(req: s.AnswerRequest, question: t.Question) -> None:
    """A form's answer: its values, which the form validates, or a decline."""
    if req.answers:
        raise invalid_argument("answers", "this question is a form: give values (or decline)")
    if req.decline:
        if req.HasField("values"):
            raise invalid_argument("values", "a declined form has no values")
        return
    if not req.HasField("values"):
        raise invalid_argument("values", "this question is a form: give its values")
    form, values = json_format.MessageToDict(question.form), json_format.MessageToDict(req.values)
    field, why = values_problem(form, values)
    if why:
        raise invalid_argument(f"values.{field}" if field else "values", why)
