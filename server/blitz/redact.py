"""Masking secrets: by shape and name in what people see, and the server's own everywhere.

Two kinds of masking, both idempotent, neither changing a text's meaning beyond the value:

- **By shape and name** (`redact_text`, `redact_event`): tokens, keys, passwords and URL
  credentials in what clients and logs see — the turn as `accepted` echoes it, tool
  arguments and results, a command's live output, approval details and diffs, decisions'
  edited commands, notices, errors, log lines. The event log applies `redact_event` to
  every event it stores, whatever its kind. It errs toward hiding: a value that merely
  looks like a key is hidden too; but a name that only contains a keyword (`PWD`,
  `max_tokens`) with a plain number or a path as its value is not a secret. The model's
  own words (its text and thoughts, a question it asks, its plan, a turn's output) are
  shown as written, but for the server's own secrets. The agent's tools keep the raw
  values: a command still runs with its real token, and the model reads the user's files
  as they are.
- **The server's own secrets, by value** (`mask_known`): the provider keys and bearer
  tokens the server was configured with (`add_known_secrets`, at start) are masked wherever
  they would leave the process — in everything above, the model's own words included
  (a model that repeats a token it read), and in tool results sent to the model and files
  read by clients — however a command or file came by them. A secret a model streams is
  masked in each merged chunk and in the whole text that follows them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from google.protobuf.struct_pb2 import Struct, Value

from blitz.v1.turn_pb2 import ErrorInfo, TurnEvent

__all__ = [
    "MASK",
    "TOOL_AUTHORS",
    "add_known_secrets",
    "is_secret_name",
    "mask_known",
    "mask_known_bytes",
    "redact_event",
    "redact_text",
]

MASK = "***"

_NAME = (
    r"[A-Za-z0-9_.-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|credential|authorization)[A-Za-z0-9_.-]*"
)

# Names that contain a keyword and hold no secret.
_NOT_SECRET_NAMES = frozenset({"pwd", "oldpwd"})
# Values no secret looks like: plain numbers, booleans, and paths.
_PLAIN_VALUE = re.compile(r"^(?:[-+]?\d+(?:\.\d+)?|true|false|null|none|/[\w./-]*)$", re.I)

# NAME=value, NAME: value, "name": "value" (environment, flags, JSON, YAML).
_NAMED = re.compile(
    rf"(\b({_NAME})[\"']?\s*[=:]\s*[\"']?)(?!\*\*\*|bearer\b|basic\b)([^\s\"'&,;]+)", re.I
)

# What follows a flag in the server's own guidance and is no secret: a word of prose, a
# flag, an environment variable's name, a placeholder in capitals, a bracket.
_PROSE = (
    r"(?:or|and|nor|to|is|with|for|the|a|an|if|when|instead|then|in|of|as)\b[,.;:)]?(?:\s|$)"
    r"|-|\(|\[|`|(?-i:BLITZ_[A-Z_]+\b|[A-Z][A-Z_]{2,}(?:\s|$|[,.;:)\]]))"
)

# Each pattern keeps its first group and masks the rest of the match.
_PATTERNS: list[re.Pattern[str]] = [
    # Authorization: Bearer ..., Basic ...
    re.compile(r"(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}", re.I),
    # scheme://user:password@host
    re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+(?=@)", re.I),
    # ?token=... &api_key=... in URLs
    re.compile(rf"([?&]{_NAME}=)[^&\s#'\"]+", re.I),
    # --password value, --token=value; not a word of the prose around a flag ("give
    # --tokens or --tokens-file"), another flag, or a placeholder (`--token TOKEN`).
    re.compile(rf"(--{_NAME}[= ])(?!\*\*\*|{_PROSE})\S+", re.I),
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
    return bool(_SECRET_KEY.match(name)) and name.lower() not in _NOT_SECRET_NAMES


# Every ASCII text one of the patterns above matches holds one of these, lowercased (the
# names' keywords, the schemes and auth words), or one of the shapes' starts as written:
# a text with none of them is masked for the server's own secrets alone, without running
# the patterns (most of a turn's events: a few microseconds each, not a few dozen).
_CLUES = (
    "token", "secret", "passw", "pwd", "api", "access", "private", "credential",
    "authorization", "bearer", "basic", "://",
)  # fmt: skip
_SHAPE_CLUES = ("sk-", "gh", "github_pat_", "xox", "AKIA", "AIza", "eyJ")


def redact_text(text: str) -> str:
    """`text` with every secret-looking value replaced by `***`."""
    if not text:
        return text
    if text.isascii():  # case-insensitive matching is lowercasing there
        lowered = text.lower()
        if not any(clue in lowered for clue in _CLUES) and not any(
            clue in text for clue in _SHAPE_CLUES
        ):
            return mask_known(text)
    return _by_patterns(text)


def _by_patterns(text: str) -> str:
    text = _SHAPES.sub(MASK, mask_known(text))
    text = _NAMED.sub(_named, text)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


def _named(match: re.Match[str]) -> str:
    name, value = match.group(2), match.group(3)
    if name.lower() in _NOT_SECRET_NAMES or _PLAIN_VALUE.match(value):
        return match.group(0)
    return match.group(1) + MASK


# The server's own secrets, by value: at most one alternation of the literal values.
_known: set[str] = set()
_known_text: re.Pattern[str] | None = None
_known_bytes: re.Pattern[bytes] | None = None
# Shorter values would mask ordinary words.
_KNOWN_MIN = 8


def add_known_secrets(values: Iterable[str]) -> None:
    """Mask these exact values wherever `mask_known` runs, from now on, in this process."""
    global _known_text, _known_bytes
    fresh = {v for v in values if len(v) >= _KNOWN_MIN} - _known
    if not fresh:
        return
    _known.update(fresh)
    ordered = sorted(_known, key=len, reverse=True)
    _known_text = re.compile("|".join(re.escape(v) for v in ordered))
    _known_bytes = re.compile(b"|".join(re.escape(v.encode()) for v in ordered))


def mask_known(text: str) -> str:
    """`text` with the server's own secrets replaced by `***`."""
    return _known_text.sub(MASK, text) if _known_text is not None and text else text


def mask_known_bytes(data: bytes) -> bytes:
    """`data` with the server's own secrets (UTF-8) replaced by `***`."""
    return _known_bytes.sub(MASK.encode(), data) if _known_bytes is not None and data else data


def _redact_value(value: Value, secret: bool) -> None:
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        text = value.string_value
        plain = not text or _PLAIN_VALUE.match(text)
        value.string_value = MASK if secret and not plain else redact_text(text)
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
    if request.HasField("hook_edit"):
        _redact_struct(request.hook_edit.original_input)
        _redact_struct(request.hook_edit.input)


def _hook(event: TurnEvent) -> None:
    outcome = event.hook
    outcome.reason = redact_text(outcome.reason)
    outcome.error = redact_text(outcome.error)
    outcome.additional_context = redact_text(outcome.additional_context)
    outcome.system_message = redact_text(outcome.system_message)
    _redact_struct(outcome.updated_input)


def _text(event: TurnEvent) -> None:
    if event.author in TOOL_AUTHORS:
        event.text.text = redact_text(event.text.text)
    else:
        event.text.text = mask_known(event.text.text)


def _question(event: TurnEvent) -> None:
    question = event.question
    question.question = mask_known(question.question)
    question.options[:] = [mask_known(option) for option in question.options]


def _plan(event: TurnEvent) -> None:
    plan = event.plan_proposed
    plan.plan = mask_known(plan.plan)
    for item in plan.tasks:
        item.content = mask_known(item.content)


def _tasks(event: TurnEvent) -> None:
    for item in event.tasks.items:
        item.content = mask_known(item.content)


def _tool_result(event: TurnEvent) -> None:
    _redact_struct(event.tool_result.result)


def _tool_output(event: TurnEvent) -> None:
    event.tool_output.output = redact_text(event.tool_output.output)


def _notice(event: TurnEvent) -> None:
    event.notice.text = redact_text(event.notice.text)


def _flow_step(event: TurnEvent) -> None:
    event.flow_step.output = redact_text(event.flow_step.output)


def _resolution(event: TurnEvent) -> None:
    resolution = event.resolution
    resolution.command = redact_text(resolution.command)
    resolution.reason = redact_text(resolution.reason)


def _accepted(event: TurnEvent) -> None:
    # The turn as recorded, echoed to every watcher of the session: a token the user
    # pasted into a prompt is not shown to them (the model still gets the prompt as sent).
    turn = event.accepted.turn
    turn.text = redact_text(turn.text)
    turn.prompt = redact_text(turn.prompt)
    turn.read_only = redact_text(turn.read_only)
    for block in turn.context:
        block.url = redact_text(block.url)
        block.html = redact_text(block.html)
        block.text = redact_text(block.text)


def _finished(event: TurnEvent) -> None:
    finished = event.finished
    finished.output = mask_known(finished.output)
    finished.leftover[:] = [mask_known(text) for text in finished.leftover]
    if finished.HasField("error"):
        _error(finished.error)


def _error(error: ErrorInfo) -> None:
    error.message = redact_text(error.message)
    for key, value in error.metadata.items():
        error.metadata[key] = MASK if is_secret_name(key) and value else redact_text(value)


# Authors of text events that a tool writes, rather than a model: live command output, as
# logs written before it became a partial `tool_result` hold it.
TOOL_AUTHORS = frozenset({"run_command"})

_BY_KIND: dict[str, Callable[[TurnEvent], None]] = {
    "accepted": _accepted,
    "text": _text,
    "tool_call": lambda e: _redact_struct(e.tool_call.args),
    "tool_result": _tool_result,
    "tool_output": _tool_output,
    "file_changed": lambda e: setattr(e.file_changed, "path", redact_text(e.file_changed.path)),
    "approval_request": _approval,
    "question": _question,
    "plan_proposed": _plan,
    "tasks": _tasks,
    "notice": _notice,
    "flow_step": _flow_step,
    "resolution": _resolution,
    "finished": _finished,
    "hook": _hook,
}


def redact_event(event: TurnEvent) -> TurnEvent:
    """Mask secrets in place in whatever `event` carries of tool input or output, notices
    and errors (see the module doc); returns it."""
    mask = _BY_KIND.get(event.WhichOneof("kind") or "")
    if mask is not None:
        mask(event)
    return event
