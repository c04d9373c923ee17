"""Requests built from Python values: a `Turn` from keyword arguments, a `Decision` or a
`SessionState` from a word, a `Duration` from seconds.

Kept apart from the clients so the async and sync clients build the same messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any, TypedDict, Unpack

from google.protobuf import duration_pb2

from blitz.v1 import session_pb2, turn_pb2

__all__ = [
    "ContextLike",
    "DecisionLike",
    "TurnOptions",
    "build_turn",
    "decision_value",
    "duration",
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
