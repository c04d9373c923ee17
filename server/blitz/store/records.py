"""Plain records the store reads and writes. No behaviour, no engine specifics. What a turn
writes with its events is made of them, in `writes.py`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# The webhooks' records, a module of their own, are the store's records too.
from blitz.store.webhook_records import (
    OUTBOX_KINDS,
    AttemptOutcome,
    AttemptRecord,
    DeliveryPage,
    DeliveryRecord,
    DeliveryState,
    Expanded,
    OutboxItem,
    OutboxStats,
    Recorded,
    WebhookRecord,
)

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
    "TurnPage",
    "TurnRecord",
    "TurnState",
    "UsageTotals",
    "WebhookRecord",
]


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
    # The repository its workspace was cloned from (a serialized blitz.v1.Repository);
    # None: a plain folder. Set as it is made, never changed.
    repository: bytes | None = None


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


@dataclass(frozen=True)
class Checkpoint:
    """What a session's workspace held at the start or the end of one of its turns (for
    RewindSession and ForkSession): a manifest of its entries, whose files' contents are
    the session's checkpoint blobs, by hash (`Store.put_checkpoint`)."""

    session_id: str
    turn_id: str
    # "start" (before the agent ran) or "end" (after it).
    at: str
    # The manifest, zlib-compressed JSON (its format is blitz.core.files.manifests'). None: an
    # end the same as its turn's start (the turn made no tool call), stored as a
    # reference, not a copy.
    manifest: bytes | None
    create_time: float
