"""Masking secrets in what clients and logs see: tokens, keys, passwords, URL credentials.

The agent keeps the raw values (a command still runs with its real token); only copies shown
to people are masked: tool arguments and results, a command's live output, approval
details and diffs, decisions' edited commands, notices, errors, log lines. The event log
applies `redact_event` to every event it stores, whatever its kind. The model's own words
(its text and thoughts, a question it asks, a turn's output) are not tool output and are
shown as written. Masking is by shape and by name, so it errs toward hiding: a value that
merely looks like a key is hidden too. It is idempotent, and must never change an event's
meaning beyond the masked value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from google.protobuf.struct_pb2 import Struct, Value

from blitz.v1.turn_pb2 import ErrorInfo, TurnEvent

__all__ = ["MASK", "TOOL_AUTHORS", "is_secret_name", "redact_event", "redact_text"]

MASK = "***"

_NAME = (
    r"[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|credential|authorization)[A-Za-z0-9_.-]*"
)

# Each pattern keeps its first group and masks the rest of the match.
_PATTERNS: list[re.Pattern[str]] = [
    # Authorization: Bearer ..., Basic ...
    re.compile(r"(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}", re.I),
    # scheme://user:password@host
    re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+(?=@)", re.I),
    # ?token=... &api_key=... in URLs
    re.compile(rf"([?&]{_NAME}=)[^&\s#'\"]+", re.I),
    # NAME=value, NAME: value, "name": "value" (environment, flags, JSON, YAML)
    re.compile(rf"(\b{_NAME}[\"']?\s*[=:]\s*[\"']?)(?!\*\*\*|bearer\b|basic\b)[^\s\"'&,;]+", re.I),
    # --password value, --token=value
    re.compile(rf"(--{_NAME}[= ])(?!\*\*\*)\S+", re.I),
]

# Secrets recognisable by shape alone, masked whole.
_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-)?[A-Za-z0-9_-]{16,}"
    r"|gh[opsu]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
)

_SECRET_KEY = re.compile(rf"^{_NAME}$", re.I)


def is_secret_name(name: str) -> bool:
    """Whether a key or variable called `name` holds a secret (`api_key`, `DB_PASSWORD`)."""
    return bool(_SECRET_KEY.match(name))


def redact_text(text: str) -> str:
    """`text` with every secret-looking value replaced by `***`."""
    if not text:
        return text
    text = _SHAPES.sub(MASK, text)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def _redact_value(value: Value, secret: bool) -> None:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        value.string_value = (
            MASK if secret and value.string_value else redact_text(value.string_value)
        )
    elif kind == "struct_value":
        _redact_struct(value.struct_value)
    elif kind == "list_value":
        for item in value.list_value.values:
            _redact_value(item, secret)


def _redact_struct(struct: Struct) -> None:
    for key, value in struct.fields.items():
        _redact_value(value, is_secret_name(key))


def _approval(event: TurnEvent) -> None:
    request = event.approval_request
    request.detail = redact_text(request.detail)
    request.diff = redact_text(request.diff)
    request.scope_label = redact_text(request.scope_label)


def _text(event: TurnEvent) -> None:
    if event.author in TOOL_AUTHORS:
        event.text.text = redact_text(event.text.text)


def _notice(event: TurnEvent) -> None:
    event.notice.text = redact_text(event.notice.text)


def _resolution(event: TurnEvent) -> None:
    resolution = event.resolution
    resolution.command = redact_text(resolution.command)
    resolution.reason = redact_text(resolution.reason)


def _finished(event: TurnEvent) -> None:
    if event.finished.HasField("error"):
        _error(event.finished.error)


def _error(error: ErrorInfo) -> None:
    error.message = redact_text(error.message)
    for key, value in error.metadata.items():
        error.metadata[key] = MASK if is_secret_name(key) and value else redact_text(value)


# Authors of text events that a tool writes, rather than a model (live command output).
TOOL_AUTHORS = frozenset({"run_command"})

_BY_KIND: dict[str, Callable[[TurnEvent], None]] = {
    "text": _text,
    "tool_call": lambda e: _redact_struct(e.tool_call.args),
    "tool_result": lambda e: _redact_struct(e.tool_result.result),
    "approval_request": _approval,
    "notice": _notice,
    "resolution": _resolution,
    "finished": _finished,
}


def redact_event(event: TurnEvent) -> TurnEvent:
    """Mask secrets in place in whatever `event` carries of tool input or output, notices
    and errors (see the module doc); returns it."""
    mask = _BY_KIND.get(event.WhichOneof("kind") or "")
    if mask is not None:
        mask(event)
    return event
