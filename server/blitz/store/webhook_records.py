"""The store's records of webhooks: subscriptions, the outbox, deliveries and attempts.

Plain records as records.py's (which re-exports them), apart because they are one idea.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "DECLARED",
    "OUTBOX_KINDS",
    "WEBHOOK_KINDS",
    "AttemptOutcome",
    "AttemptRecord",
    "DeliveryPage",
    "DeliveryRecord",
    "DeliveryState",
    "Expanded",
    "Fairness",
    "OutboxItem",
    "OutboxStats",
    "Recorded",
    "WebhookRecord",
]

# The kinds of event a webhook may be told of, in the docs' order: each one stored gets a
# row in the webhook outbox, in the transaction that stores it (`Store.append_events`).
WEBHOOK_KINDS = (
    "approval_request",
    "question",
    "plan_proposed",
    "resolution",
    "finished",
    "flow_step",
    "session_state",
)
OUTBOX_KINDS = frozenset(WEBHOOK_KINDS)
# Whose share of the delivery workers the operator's declared webhooks use: one of their
# own, which no principal can be called (a principal's name starts alphanumeric, and ""
# is the one caller of a server without tokens).
DECLARED = "(declared)"


@dataclass
class WebhookRecord:
    """A subscription: where to POST which events of whose sessions, and how to sign them."""

    id: str
    # The principal whose sessions it hears of (the creator); "" for a declared one.
    owner: str
    url: str
    # Event kinds (OUTBOX_KINDS' names), or ["*"].
    events: list[str]
    # Only sessions with every one of these labels.
    labels: dict[str, str]
    # Only this session ("": any).
    session_id: str
    description: str
    # A blitz.v1.WebhookFormat value.
    format: int
    # A blitz.v1.WebhookState value, and why it is not active.
    state: int
    state_reason: str
    # It hears of every principal's sessions.
    server_wide: bool
    # Its name in the configuration file ("": made through the API).
    declared: str
    # The signing secret ("whsec_…"), and during a rotation the previous one, until then.
    secret: str
    previous_secret: str = ""
    previous_until: float | None = None
    # Failed attempts in a row.
    failures: int = 0
    create_time: float = 0.0
    update_time: float = 0.0


class DeliveryState(enum.StrEnum):
    """Where a delivery is; stored as the value."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


@dataclass
class AttemptRecord:
    """One POST of a delivery and what came of it."""

    number: int
    time: float
    # The HTTP status; 0: no answer.
    status: int
    # Seconds from the request's start to the answer's headers or the failure.
    latency: float
    # Why it failed without an answer (or why an answer counts as a failure).
    error: str = ""
    # The answer's first bytes, as text.
    response: str = ""


@dataclass
class DeliveryRecord:
    """One event (or a ping) on its way to one webhook."""

    id: str
    webhook_id: str
    # The `webhook-id` header: the same for every attempt.
    message_id: str
    # The event's kind, or "ping".
    kind: str
    # "" and 0 for a ping.
    session_id: str
    turn_id: str
    seq: int
    # The body as sent, made once (JSON, UTF-8).
    body: bytes
    state: DeliveryState
    # Attempts made, and the latest of them (at most `ATTEMPTS_KEPT`).
    tries: int
    attempts: list[AttemptRecord]
    # While pending: not before then; given up after `deadline`.
    next_attempt: float
    deadline: float
    # When the event was stored, and when the delivery was made.
    event_time: float
    create_time: float
    # The process sending it now, until its lease ends.
    lease_owner: str = ""
    lease_until: float | None = None
    # Whose share of the delivery workers it uses: its webhook's owner, or `DECLARED` for
    # a webhook the operator declared. Only `claim_deliveries` fills it in ("" elsewhere).
    principal: str = ""


@dataclass(frozen=True, kw_only=True)
class DeliveryPage:
    """Which deliveries `list_deliveries` returns: one webhook's, newest first."""

    webhook_id: str
    limit: int
    # (create_time, id) of the last delivery of the previous page.
    before: tuple[float, str] | None = None


@dataclass(frozen=True)
class OutboxItem:
    """A stored event a webhook may be told of, as `expand_outbox` hands it over: with the
    event and its session's owner, labels and title (None and "" when the session is
    gone)."""

    id: int
    session_id: str
    seq: int
    kind: str
    time: float
    event: bytes | None
    owner: str | None
    labels: dict[str, str] | None
    title: str = ""


@dataclass(frozen=True, kw_only=True)
class AttemptOutcome:
    """What `record_attempt` writes of an attempt: the delivery's next state and what the
    attempt means for its webhook."""

    # The delivery's state after it; PENDING: tried again at `next_attempt`.
    state: DeliveryState
    next_attempt: float = 0.0
    # "success" (its failures count from 0 again), "failure" (one more; at `pause_after`
    # in a row an active webhook becomes FAILING, for `reason`), "gone" (it becomes GONE,
    # for `reason`), or "none" (a ping: the webhook is left as it is).
    webhook: str = "none"
    pause_after: int = 0
    reason: str = ""
    now: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Fairness:
    """How `claim_deliveries` shares what it takes between principals (each delivery's
    `principal`): none of `skip`'s, at most `each` of any one (0: no bound), and
    round-robin: every principal's first due, then every one's second, and so on, with
    `busy`'s after the others' in each round."""

    skip: tuple[str, ...] = ()
    each: int = 0
    busy: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recorded:
    """What `record_attempt` did: whether it wrote (the caller still held the delivery's
    lease), and the webhook if this attempt is the one that stopped it (FAILING or GONE)."""

    written: bool
    stopped: WebhookRecord | None = None


@dataclass(frozen=True)
class Expanded:
    """What `expand_outbox` did: the outbox rows it took, the deliveries it stored in their
    place, and whether any webhook existed (when none did, it only dropped old rows)."""

    taken: int
    made: int
    webhooks: bool


@dataclass(frozen=True)
class OutboxStats:
    """How much waits to be told: events not yet matched to webhooks, and deliveries
    pending, each with the time of the oldest event among them (None: none)."""

    events: int
    oldest_event: float | None
    pending: int
    oldest_pending: float | None
