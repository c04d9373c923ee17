"""A pending request as its event says it: its id, its expiry, its step, how long it waited.

A request is stored as the event that announced it (`PendingRecord.event`), so what is
said of it — its id, when the approval timeout ends it and how, the workflow step it was
asked in, the time it was announced — is read from and written to that event, here, the
same way wherever a request is parked, asked, resolved or withdrawn (pending.py,
by_rule.py). These are pure functions of events, except `observe_wait`, which only
records a metric; none stores or announces anything.
"""

from __future__ import annotations

import time

from blitz import metrics
from blitz.store import PendingRecord
from blitz.v1 import turn_pb2 as t

__all__ = ["decision_of", "observe_wait", "of_step", "request_id_of", "stamp_expiry"]


def request_id_of(event: t.TurnEvent) -> str:
    if event.HasField("approval_request"):
        return event.approval_request.request_id
    return event.question.request_id


def stamp_expiry(event: t.TurnEvent, expires: float) -> None:
    """Say on the request when the approval timeout ends it, and how, so that a client can
    count down ("auto-deny in 4:59")."""
    if event.HasField("question"):
        event.question.expire_time.FromNanoseconds(round(expires * 1e9))
        event.question.on_expire = t.EXPIRY_ACTION_UNANSWERED
    else:
        event.approval_request.expire_time.FromNanoseconds(round(expires * 1e9))
        event.approval_request.on_expire = t.EXPIRY_ACTION_DENY


def of_step(event: t.TurnEvent, request: t.TurnEvent | bytes) -> t.TurnEvent:
    """`event` (a request's resolution) in the workflow step its request was of, if any."""
    asked = t.TurnEvent.FromString(request) if isinstance(request, bytes) else request
    if asked.HasField("step"):
        event.step.CopyFrom(asked.step)
    return event


def observe_wait(pending: PendingRecord, resolution: t.Resolution) -> None:
    """Count the resolution, and how long the request waited, from the time its announced
    event carries."""
    event = t.TurnEvent.FromString(pending.event)
    kind = "approval" if event.HasField("approval_request") else "question"
    # Not announced: its process died first, and how long it waited is not known.
    waited = time.time() - event.time.ToNanoseconds() / 1e9 if event.HasField("time") else None
    metrics.request_resolved(kind, resolution.via, decision_of(resolution, kind), waited)


def decision_of(resolution: t.Resolution, kind: str) -> str:
    """What was decided, as the metrics name it: once, session, always, deny (or none,
    withdrawn) for an approval; answered, declined or unanswered for a question."""
    if kind == "approval":
        if resolution.decision == t.DECISION_UNSPECIFIED:
            return "none"
        return t.Decision.Name(resolution.decision).removeprefix("DECISION_").lower()
    if resolution.declined:
        return "declined"
    return "answered" if resolution.answers or resolution.values.fields else "unanswered"
