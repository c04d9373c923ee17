"""Requests built from Python values: a `Turn` from keyword arguments, a `Decision` or a
`SessionState` from a word, a `Duration` from seconds.

Kept apart from the clients so the async and sync clients build the same messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any, TypedDict, Unpack

from google.protobuf import duration_pb2

from blitz.v1 import session_pb2, turn_pb2, workspace_pb2

__all__ = [
    "ContextLike",
    "DecisionLike",
    "SourceLike",
    "TurnOptions",
    "build_turn",
    "decision_value",
    "duration",
    "export_format_value",
    "repository_source",
    "source_value",
    "state_value",
]

DecisionLike = str | int
"""A decision as a word ("once", "session", "always", "deny") or a `Decision` enum value."""

ContextLike = turn_pb2.ContextBlock | Mapping[str, str]
"""A context block as a message or a dict of its fields (kind, url, title, html, text)."""

_DECISIONS = {
    "deny": turn_pb2.DECISION_DENY,
    "once": turn_pb2.DECISION_ONCE,
    "session": turn_pb2.DECISION_SESSION,
    "always": turn_pb2.DECISION_ALWAYS,
}


def decision_value(decision: DecisionLike) -> int:
    """The `Decision` enum value of "once"/"session"/"always"/"deny" (any case) or an enum."""
    if isinstance(decision, str):
        word = decision.lower().removeprefix("decision_")
        if word not in _DECISIONS:
            raise ValueError(f"decision must be one of {', '.join(_DECISIONS)}; got {decision!r}")
        return _DECISIONS[word]
    if decision not in _DECISIONS.values():
        raise ValueError(f"not a Decision value: {decision!r}")
    return int(decision)


_STATES = {
    "idle": session_pb2.SESSION_STATE_IDLE,
    "running": session_pb2.SESSION_STATE_RUNNING,
    "parked": session_pb2.SESSION_STATE_PARKED,
    "closed": session_pb2.SESSION_STATE_CLOSED,
}


def state_value(state: str | int | None) -> int:
    """The `SessionState` value of "idle"/"running"/"parked"/"closed" (any case) or an enum;
    0 (any state) for None."""
    if state is None:
        return 0
    if isinstance(state, str):
        word = state.lower().removeprefix("session_state_")
        if word not in _STATES:
            raise ValueError(f"state must be one of {', '.join(_STATES)}; got {state!r}")
        return _STATES[word]
    return int(state)


def busy_value(busy: str | int) -> int:
    """The `BusyStrategy` value of "reject"/"enqueue"/"interrupt" (any case) or an enum."""
    if isinstance(busy, str):
        word = busy.lower().removeprefix("busy_strategy_")
        names = {"reject", "enqueue", "interrupt"}
        if word not in names:
            raise ValueError(f"busy must be one of reject, enqueue, interrupt; got {busy!r}")
        return int(session_pb2.BusyStrategy.Value(f"BUSY_STRATEGY_{word.upper()}"))
    return int(busy)


def mode_value(mode: str | int) -> int:
    """The `SessionMode` value of "ask"/"accept_edits"/"read_only"/"plan"/"bypass" (any
    case) or an enum."""
    if isinstance(mode, str):
        name = "SESSION_MODE_" + mode.upper().removeprefix("SESSION_MODE_").replace("-", "_")
        if name not in turn_pb2.SessionMode.keys() or name.endswith("UNSPECIFIED"):
            raise ValueError(
                f"mode must be one of ask, accept_edits, read_only, plan, bypass; got {mode!r}"
            )
        return int(turn_pb2.SessionMode.Value(name))
    return int(mode)


SourceLike = session_pb2.RepositorySource | str
"""A repository to clone a session from: the message, or "URL" / "URL@REF" (`repository_source`)."""


def repository_source(
    text: str, *, depth: int = 0, submodules: bool = False
) -> session_pb2.RepositorySource:
    """The RepositorySource of "URL" or "URL@REF": the ref is what follows the last `@`
    after the URL's host, so `file:///srv/a.git@main` is `file:///srv/a.git` at `main`,
    and the `@` of `https://user@host/a.git` is no ref's (the server refuses a URL with a
    user in it). ValueError for an empty URL or ref, or a negative depth."""
    text = text.strip()
    scheme = text.find("://")
    if scheme >= 0:
        path = text.find("/", scheme + 3)
        start = len(text) if path < 0 else path
    else:  # a local path, or scp's `host:path` (which the server refuses)
        start = text.find(":") + 1
    at = text.rfind("@", start)
    url, ref = (text[:at], text[at + 1 :]) if at >= 0 else (text, "")
    if not url:
        raise ValueError(f"no repository URL in {text!r}")
    if at >= 0 and not ref:
        raise ValueError(f"{text!r} ends with @: give a branch, tag or commit after it")
    if depth < 0:
        raise ValueError(f"depth must not be negative; got {depth}")
    return session_pb2.RepositorySource(url=url, ref=ref, depth=depth, submodules=submodules)


def source_value(source: SourceLike) -> session_pb2.RepositorySource:
    """A RepositorySource from the message or "URL[@REF]"."""
    if isinstance(source, str):
        return repository_source(source)
    return source


_FORMATS = {
    "patch": workspace_pb2.EXPORT_FORMAT_PATCH,
    "diff": workspace_pb2.EXPORT_FORMAT_DIFF,
    "bundle": workspace_pb2.EXPORT_FORMAT_BUNDLE,
    "push": workspace_pb2.EXPORT_FORMAT_PUSH,
}


def export_format_value(fmt: str | int) -> int:
    """The `ExportFormat` value of "patch"/"diff"/"bundle"/"push" (any case) or an enum."""
    if isinstance(fmt, str):
        word = fmt.lower().removeprefix("export_format_")
        if word not in _FORMATS:
            raise ValueError(f"format must be one of {', '.join(_FORMATS)}; got {fmt!r}")
        return _FORMATS[word]
    return int(fmt)


def duration(value: float | timedelta) -> duration_pb2.Duration:
    """A Duration from seconds or a timedelta."""
    result = duration_pb2.Duration()
    if isinstance(value, timedelta):
        result.FromTimedelta(value)
    else:
        result.FromNanoseconds(round(value * 1e9))
    return result


class TurnOptions(TypedDict, total=False):
    """The Turn's fields besides `text`, as keyword arguments of `run` (see turn.proto).

    prompt: sent to the model instead of `text`. plan: plan mode. accepted: carry out the
    proposed plan. read_only: a reason; every change is refused without asking. aside: a side
    question beside a running turn. command: `text` is a server command ("/help").
    max_turns: model-call limit (0: the server's). max_cost_usd: cost cap (0: the server's).
    timeout: wall-clock deadline in seconds or a timedelta, time parked included.
    fetch_grants: hosts the agent may fetch without asking. image_ids: uploaded images.
    context: attached content, as ContextBlock messages or dicts of their fields.
    mode: this turn's mode ("accept_edits", "read_only", "plan", ...; the session's when
    unset).
    """

    prompt: str
    plan: bool
    accepted: bool
    read_only: str
    aside: bool
    command: bool
    max_turns: int
    max_cost_usd: float
    timeout: float | timedelta
    fetch_grants: Iterable[str]
    image_ids: Iterable[str]
    context: Iterable[ContextLike]
    mode: str | int


def build_turn(text: str, **options: Unpack[TurnOptions]) -> turn_pb2.Turn:
    """A `Turn` message: `text` and the options, each the Turn field of the same name."""
    fields: dict[str, Any] = dict(options)
    for name in ("fetch_grants", "image_ids"):
        if name in fields:
            fields[name] = list(fields[name])
    if "context" in fields:
        fields["context"] = [
            block if isinstance(block, turn_pb2.ContextBlock) else turn_pb2.ContextBlock(**block)
            for block in fields["context"]
        ]
    if "timeout" in fields:
        fields["timeout"] = duration(fields["timeout"])
    if "mode" in fields:
        fields["mode"] = mode_value(fields["mode"])
    return turn_pb2.Turn(text=text, **fields)
