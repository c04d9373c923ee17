"""Storage: one interface (`Store`), engines behind it (SQLite, PostgreSQL), chosen by URL."""

from __future__ import annotations

from pathlib import Path

from blitz.store.base import Expand, LeaseRenewer, Store
from blitz.store.hook_records import HookRecord
from blitz.store.records import (
    OUTBOX_KINDS,
    AttemptOutcome,
    AttemptRecord,
    Changes,
    Checkpoint,
    DeliveryPage,
    DeliveryRecord,
    DeliveryState,
    EventRow,
    Expanded,
    FileOriginal,
    ImageRecord,
    LedgerRow,
    OutboxItem,
    OutboxStats,
    PendingRecord,
    Recorded,
    RuleRecord,
    SessionChange,
    SessionQuery,
    SessionRecord,
    TokenRecord,
    TurnControl,
    TurnPage,
    TurnRecord,
    TurnState,
    UsageTotals,
    WebhookRecord,
)
from blitz.store.schedule_records import FiringRecord, FiringState, ScheduleRecord
from blitz.store.sqlite import SqliteStore
from blitz.store.writes import (
    CheckpointWrite,
    FlowWrite,
    PendingWrite,
    SessionUpdate,
    TurnEnd,
    TurnStart,
    TurnUpdate,
    TurnWrite,
)

__all__ = [
    "OUTBOX_KINDS",
    "AttemptOutcome",
    "AttemptRecord",
    "Changes",
    "Checkpoint",
    "CheckpointWrite",
    "DeliveryPage",
    "DeliveryRecord",
    "DeliveryState",
    "EventRow",
    "Expand",
    "Expanded",
    "FileOriginal",
    "FiringRecord",
    "FiringState",
    "FlowWrite",
    "HookRecord",
    "ImageRecord",
    "LeaseRenewer",
    "LedgerRow",
    "OutboxItem",
    "OutboxStats",
    "PendingRecord",
    "PendingWrite",
    "Recorded",
    "RuleRecord",
    "ScheduleRecord",
    "SessionChange",
    "SessionQuery",
    "SessionRecord",
    "SessionUpdate",
    "SqliteStore",
    "Store",
    "TokenRecord",
    "TurnControl",
    "TurnEnd",
    "TurnPage",
    "TurnRecord",
    "TurnStart",
    "TurnState",
    "TurnUpdate",
    "TurnWrite",
    "UsageTotals",
    "WebhookRecord",
    "open_store",
]


def open_store(url: str | Path, *, lease: float | None = None) -> Store:
    """The store for `url`: `postgresql://…` (several replicas), `sqlite:///path/to.db` or
    a plain file path (one process).

    Use it as `async with open_store(url) as store:`. The PostgreSQL engine is imported
    only when asked for. `lease`: the turn lease (seconds) processes sharing the store
    hold their turns by; a transaction that a stalled process left open lasts no longer.
    """
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        from blitz.store.postgres import STALLED_AFTER, PostgresStore

        return PostgresStore(text, stalled_after=lease or STALLED_AFTER)
    if text.startswith("sqlite:///"):
        return SqliteStore(text.removeprefix("sqlite:///"))
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise ValueError(
            f"unsupported database URL scheme {scheme!r}; use postgresql://… or sqlite:///PATH"
        )
    return SqliteStore(text)
