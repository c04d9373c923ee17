"""Checking what clients send: every bad input is INVALID_ARGUMENT naming its field.

Pure functions of a request (and, for answers and decisions, of the request they answer);
they read no store and change nothing. The service calls them before it acts, so a refused
call leaves no trace.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

from blitz.core.slash_commands import parse_command
from blitz.errors import invalid_argument
from blitz.paths import too_long
from blitz.store import SessionRecord
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t

__all__ = [
    "check_answers",
    "check_decision",
    "check_labels",
    "check_turn",
    "page_token",
    "require",
    "session_page",
    "session_settings",
    "workspace_name",
]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_LABEL_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$")
_TITLE_MAX = 500
_DEFAULT_PAGE = 50
_MAX_PAGE = 500


def require(value: str, field: str) -> str:
    if not value:
        raise invalid_argument(field, f"{field} is required")
    return value


def check_labels(labels: Iterable[str]) -> None:
    for key in labels:
        if not _LABEL_KEY.match(key):
            raise invalid_argument(
                "labels", "label keys are 1-63 letters, digits or ._/- starting alphanumeric"
            )


def session_settings(req: s.CreateSessionRequest) -> float | None:
    """Check a new session's title and labels; its approval timeout in seconds, if set."""
    if len(req.title) > _TITLE_MAX:
        raise invalid_argument(
            "title", f"title is longer than {_TITLE_MAX} characters", limit=str(_TITLE_MAX)
        )
    check_labels(req.labels)
    if not req.HasField("approval_timeout"):
        return None
    seconds = req.approval_timeout.ToTimedelta().total_seconds()
    if seconds <= 0:
        raise invalid_argument("approval_timeout", "approval_timeout must be positive")
    return seconds


def workspace_name(name: str, *, session_id: str, root: Path) -> str:
    """The session's workspace folder under `root`: `name`, or the session's id.

    A name is one or more plain folder names joined by '/': nothing absolute, no empty, `.`
    or `..` component, no backslash or NUL. So it names a folder below the root, never the
    root itself (every session's folder) nor anything above it. Sessions that give the same
    name share the folder, on purpose. That no folder of it is a link is checked where it
    is opened (`blitz.paths.Workspace.named`).
    """
    if not name:
        return session_id
    if "\\" in name or "\x00" in name or any(p in ("", ".", "..") for p in name.split("/")):
        raise invalid_argument(
            "workspace",
            "workspace must be one or more plain folder names joined by '/', "
            "inside the server's root",
        )
    if too_long(str(root / name)):
        raise invalid_argument("workspace", "workspace is too long a folder name")
    return name


def session_page(req: s.ListSessionsRequest) -> tuple[int, tuple[float, str] | None]:
    """The page size and where the page starts (after the token's session), checked."""
    if req.page_size < 0:
        raise invalid_argument("page_size", "page_size must not be negative")
    if req.state not in s.SessionState.values():
        raise invalid_argument("state", f"state {req.state} is not a SessionState")
    check_labels(req.labels)
    size = min(req.page_size or _DEFAULT_PAGE, _MAX_PAGE)
    if not req.page_token:
        return size, None
    try:
        raw = base64.urlsafe_b64decode(req.page_token.encode()).decode()
        when, _, last_id = raw.partition("|")
        return size, (float(when), last_id)
    except ValueError:
        raise invalid_argument("page_token", "page_token is not one this server gave") from None


def page_token(last: SessionRecord) -> str:
    """The token of the page that follows `last`."""
    return base64.urlsafe_b64encode(f"{last.create_time!r}|{last.id}".encode()).decode()


def check_turn(req: s.RunTurnRequest) -> None:
    turn = req.turn
    if req.turn_id and not _ID.match(req.turn_id):
        raise invalid_argument(
            "turn_id", "turn_id must be 1-128 letters, digits or ._:- starting alphanumeric"
        )
    if not req.HasField("turn") or not (turn.text or turn.prompt or turn.accepted):
        raise invalid_argument("turn.text", "the turn needs text (or a prompt)")
    if turn.max_turns < 0:
        raise invalid_argument("turn.max_turns", "max_turns must not be negative")
    if turn.max_cost_usd < 0 or not math.isfinite(turn.max_cost_usd):
        raise invalid_argument("turn.max_cost_usd", "max_cost_usd must be a positive amount")
    if turn.HasField("timeout") and turn.timeout.ToTimedelta() <= timedelta(0):
        raise invalid_argument("turn.timeout", "timeout must be positive")
    if turn.command:
        parse_command(turn.text)  # unknown commands fail before the turn starts
    if turn.plan and turn.accepted:
        raise invalid_argument("turn.accepted", "a turn cannot both propose and accept a plan")
    if turn.aside and (turn.plan or turn.accepted):
        raise invalid_argument("turn.aside", "an aside turn neither proposes nor accepts plans")


def check_decision(req: s.DecideRequest, request: t.TurnEvent | None = None) -> None:
    """Check a decision alone, then (given) against the request it decides."""
    if req.decision == t.DECISION_UNSPECIFIED or req.decision not in t.Decision.values():
        raise invalid_argument("decision", "decision must be DENY, ONCE, SESSION or ALWAYS")
    if request is None:
        return
    if not request.HasField("approval_request"):
        raise invalid_argument("request_id", "that request is a question: use Answer")
    if req.command:
        if request.approval_request.kind != t.ACTION_KIND_COMMAND:
            raise invalid_argument("command", "only a COMMAND approval takes a command")
        if req.decision == t.DECISION_DENY:
            raise invalid_argument("command", "an edited command needs an approving decision")


def check_answers(req: s.AnswerRequest, request: t.TurnEvent) -> None:
    """Check answers against the question they answer."""
    if not request.HasField("question"):
        raise invalid_argument("request_id", "that request is an approval: use Decide")
    question = request.question
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
                    f"{answer!r} is not one of the options",
                    options="|".join(question.options),
                )
