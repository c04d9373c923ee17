"""Plain records the store reads and writes. No behaviour, no engine specifics."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = [
    "OUTBOX_KINDS",
    "AttemptOutcome",
    "AttemptRecord",
    "Changes",
    "Checkpoint",
    "DeliveryPage",
    "DeliveryRecord",
    "DeliveryState",
    "EventRow",
    "Expanded",
    "FileOriginal",
    "FlowWrite",
    "ImageRecord",
    "LedgerRow",
    "OutboxItem",
    "OutboxStats",
    "PendingRecord",
    "Recorded",
    "RuleRecord",
    "SessionChange",
    "SessionQuery",
    "SessionRecord",
    "TokenRecord",
    "TurnControl",
    "TurnEnd",
    "TurnPage",
    "TurnRecord",
    "TurnState",
    "UsageTotals",
    "WebhookRecord",
]

# The kinds of event a webhook may be told of: each one stored gets a row in the webhook
# outbox, in the transaction that stores it (`Store.append_events`).
OUTBOX_KINDS = frozenset(
    {
        "approval_request",
        "question",
        "plan_proposed",
        "resolution",
        "finished",
        "flow_step",
        "session_state",
    }
)


class TurnState(enum.StrEnum):
    """Where a turn is in its life; stored as the value."""

    RUNNING = "running"
    PARKED = "parked"
    FINISHED = "finished"
    # Accepted, waiting for its session's turns before it (BUSY_STRATEGY_ENQUEUE).
    QUEUED = "queued"


@dataclass
class SessionRecord:
    id: str
    owner: str
    title: str
    workspace: str
    model: str
    labels: dict[str, str] = field(default_factory=dict)
    # A blitz.v1.SessionState value.
    state: int = 1
    create_time: float = 0.0
    update_time: float = 0.0
    # The running or parked turn ("" when idle).
    turn_id: str = ""
    # Seconds an approval or question may wait; None: the server's default.
    approval_timeout: float | None = None
    # The seq of the session's newest event (0: none yet); kept by the store, read only.
    last_seq: int = 0
    # The task list as the last finished turn left it (a serialized blitz.v1.Tasks).
    tasks: bytes | None = None
    # The plan the last plan-mode turn proposed, until a turn accepts or supersedes it.
    plan: bytes | None = None
    # How its turns' actions are approved (a blitz.v1.SessionMode value).
    mode: int = 1


@dataclass(frozen=True, kw_only=True)
class SessionQuery:
    """Which sessions `list_sessions` returns: newest first, a page at a time."""

    # The principal whose sessions these are; None: everyone's (an admin's view).
    owner: str | None
    limit: int
    # A blitz.v1.SessionState value; 0: any.
    state: int = 0
    # Every one of these labels, with these values.
    labels: dict[str, str] = field(default_factory=dict)
    # (create_time, id) of the last session of the previous page.
    before: tuple[float, str] | None = None


@dataclass(frozen=True, kw_only=True)
class SessionChange:
    """What `update_session` changes; a field left None stays as it is."""

    update_time: float
    # A blitz.v1.SessionState value.
    state: int | None = None
    # The running or parked turn ("": none).
    turn_id: str | None = None
    model: str | None = None
    title: str | None = None
    # Replaces the labels whole.
    labels: dict[str, str] | None = None
    # Seconds; 0.0: back to the server's default (stored as none).
    approval_timeout: float | None = None
    tasks: bytes | None = None
    # b"": no plan any more.
    plan: bytes | None = None
    # A blitz.v1.SessionMode value.
    mode: int | None = None
    # Change only a session in this state, or whose turn is this one (`update_session`
    # says whether it changed it): what decides a race between processes.
    expect_state: int | None = None
    expect_turn_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class TurnPage:
    """Which turns `list_turns` returns: one session's, oldest first, a page at a time."""

    session_id: str
    limit: int
    # (create_time, turn_id) of the last turn of the previous page.
    after: tuple[float, str] | None = None


@dataclass
class TurnRecord:
    session_id: str
    turn_id: str
    state: TurnState
    # The serialized blitz.v1.Turn as the client sent it.
    turn: bytes
    create_time: float
    # Wall-clock (Unix) deadline, or None for none.
    deadline: float | None = None
    # The seq of the turn's `accepted` event.
    first_seq: int = 0
    model_calls: int = 0
    cost_usd: float = 0.0
    # Steer texts queued and not yet taken (read only: `add_steer`, `take_steer`).
    steer: list[str] = field(default_factory=list)
    # While parked: the agent's serialized message history, to resume from.
    history: bytes | None = None
    # The session's Usage before the turn, serialized.
    usage_before: bytes = b""
    # The process running the turn ("" while parked or finished), on a lease it renews.
    owner: str = ""
    # Raised each time a process takes the turn (starts, resumes or takes it over): the
    # fence every write of the turn's holder is checked against, so a holder that lost
    # the turn can write nothing more of it.
    epoch: int = 0
    # While queued: its place in its session's queue, lowest first (an interrupting turn
    # goes before those queued: negative); None once it has started.
    queued: float | None = None


@dataclass(frozen=True)
class TurnControl:
    """A running turn its holder still holds, and what others asked of it."""

    session_id: str
    turn_id: str
    epoch: int
    # Someone asked for it to be cancelled (`request_cancel`).
    cancel: bool
    # Steer text waits for it (`add_steer`).
    steer: bool


@dataclass(frozen=True)
class FlowWrite:
    """A workflow run's state (`blitz.core.workflow_runs`), written in the transaction that
    appends the step's `flow_step` event (`append_events`), and only if the turn is still
    held at the event's fence: the log and the run's state never disagree on a step."""

    session_id: str
    turn_id: str
    state: bytes
    update_time: float


@dataclass(frozen=True)
class TurnEnd:
    """How a turn ends, written in the transaction that appends its `finished`
    (`append_events`): the turn recorded finished (its counters kept, its history let go),
    the history as it left it kept for forks, and its session let go. So no process ever
    finds a session free whose last turn has no `finished`, and none dies in between."""

    session_id: str
    turn_id: str
    # The epoch its holder holds it at: the end is written only if still held at it.
    epoch: int
    model_calls: int
    cost_usd: float
    first_seq: int
    # The session's release (`expect_turn_id` this turn); None for an aside.
    release: SessionChange | None = None
    # Keep the session's history as this turn left it, for a fork at it, among the
    # session's newest this many (0: not at all: an aside).
    keep_history: int = 0


@dataclass(frozen=True)
class Changes:
    """What the processes sharing a store announced, a batch at a time (`changes`)."""

    # The sessions appended to, with the last seq each reached.
    seqs: dict[str, int] = field(default_factory=dict)
    # Turns someone asked something of: to cancel, or to take steer text.
    turns: tuple[tuple[str, str], ...] = ()


@dataclass
class PendingRecord:
    session_id: str
    request_id: str
    turn_id: str
    # The approval_request or question TurnEvent, serialized, as clients saw it.
    event: bytes
    # Wall-clock (Unix) time after which an approval is denied, or None.
    expires: float | None = None
    # JSON of how it was resolved, or None while open.
    resolution: str | None = None


@dataclass
class EventRow:
    session_id: str
    seq: int
    turn_id: str
    data: bytes


@dataclass
class LedgerRow:
    session_id: str
    turn_id: str
    model: str
    input: int = 0
    cached: int = 0
    cache_write: int = 0
    output: int = 0
    cost_usd: float = 0.0
    priced: bool = True
    search_queries: int = 0
    search_cost_usd: float = 0.0
    time: float = 0.0
    # The provider reported no token counts: the token fields are 0 meaning unknown.
    tokens_unknown: bool = False


@dataclass
class UsageTotals:
    """A session's ledger summed: what `Usage` reports."""

    calls: int = 0
    input: int = 0
    cached: int = 0
    cache_write: int = 0
    output: int = 0
    cost_usd: float = 0.0
    # False when any call's price is unknown.
    priced: bool = True
    search_queries: int = 0
    search_cost_usd: float = 0.0
    # The latest call's input, which counts the cached and cache-write tokens too: the
    # size of the last prompt.
    last_prompt: int = 0
    # True when any call's token counts are unknown (the sums are then a lower bound).
    tokens_unknown: bool = False


@dataclass
class RuleRecord:
    """An approval rule made by a SESSION or ALWAYS decision."""

    id: str
    # A blitz.v1.RuleScope value.
    scope: int
    # A blitz.v1.ActionKind value.
    kind: int
    scope_label: str
    # SESSION rules: their session. ALWAYS rules: the workspace and caller they cover.
    session_id: str
    workspace: str
    caller: str
    create_time: float
    request_id: str = ""
    # What it matches (match_kind, a blitz.v1.RuleMatchKind: EXACT matches scope_label), its
    # pattern, whether it allows or denies (a blitz.v1.RuleEffect), when it stops.
    match_kind: int = 1
    pattern: str = ""
    effect: int = 1
    expire_time: float | None = None


@dataclass
class ImageRecord:
    """An uploaded image, for Turn.image_ids."""

    id: str
    session_id: str
    media_type: str
    data: bytes
    create_time: float


@dataclass
class TokenRecord:
    """A bearer token: the principal it stands for, and the hash of its secret (never the
    secret itself)."""

    id: str
    # The principal's name: every token of one name is the same principal.
    name: str
    # SHA-256 of the token, hex.
    hash: str
    admin: bool
    create_time: float
    revoke_time: float | None = None


@dataclass
class FileOriginal:
    """A workspace file as it was before a session first changed it (for its diff)."""

    session_id: str
    # Relative to the workspace, '/'-separated.
    path: str
    # None: the file did not exist.
    content: bytes | None


# Webhooks


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


@dataclass(frozen=True)
class Checkpoint:
    """What a session's workspace held at the start or the end of one of its turns (for
    RewindSession and ForkSession): a manifest of its entries, whose files' contents are
    the session's checkpoint blobs, by hash (`Store.put_checkpoint`)."""

    session_id: str
    turn_id: str
    # "start" (before the agent ran) or "end" (after it).
    at: str
    # The manifest, zlib-compressed JSON (its format is blitz.core.manifests'). None: an
    # end the same as its turn's start (the turn made no tool call), stored as a
    # reference, not a copy.
    manifest: bytes | None
    create_time: float
