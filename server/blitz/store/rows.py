"""Records to statements' parameters and rows back to records, written once for both engines.

Both drivers give a row as a tuple in the order of its SELECT's columns, which
`statements.py` keeps in the order of each record's fields. BLOB and BYTEA come back as
bytes, JSON as its text (the PostgreSQL engine reads JSONB so, as SQLite keeps it), and
booleans as SQLite's integers or PostgreSQL's booleans, which `bool()` makes alike. No SQL
here, and nothing an engine does its own way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from blitz.store.records import (
    OUTBOX_KINDS,
    AttemptRecord,
    DeliveryRecord,
    DeliveryState,
    LedgerRow,
    OutboxItem,
    SessionRecord,
    TokenRecord,
    TurnControl,
    TurnRecord,
    TurnState,
    UsageTotals,
    WebhookRecord,
)
from blitz.store.statements import (
    CHECKPOINT_COLUMNS,
    IMAGE_COLUMNS,
    LEDGER_COLUMNS,
    PENDING_COLUMNS,
    RULE_COLUMNS,
    TOKEN_COLUMNS,
)
from blitz.v1.turn_pb2 import TurnEvent

__all__ = [
    "Row",
    "attempts_json",
    "checkpoint_params",
    "delivery",
    "delivery_params",
    "first_seqs",
    "image_params",
    "ledger",
    "ledger_params",
    "outbox_item",
    "outbox_rows",
    "pending_params",
    "rule_params",
    "session",
    "session_params",
    "token",
    "token_params",
    "turn",
    "turn_control",
    "turn_params",
    "usage_totals",
    "webhook",
    "webhook_params",
]

Row = tuple[Any, ...]


def _fields(columns: str) -> attrgetter[Any]:
    """A record's values, as a tuple in the order of `columns` (its fields' names)."""
    return attrgetter(*(column.strip() for column in columns.split(",")))


pending_params = _fields(PENDING_COLUMNS)
ledger_params = _fields(LEDGER_COLUMNS)
rule_params = _fields(RULE_COLUMNS)
image_params = _fields(IMAGE_COLUMNS)
token_params = _fields(TOKEN_COLUMNS)
checkpoint_params = _fields(CHECKPOINT_COLUMNS)


def session_params(rec: SessionRecord) -> Row:
    """`Statements.create_session`'s parameters."""
    return (
        rec.id,
        rec.owner,
        rec.title,
        rec.workspace,
        rec.model,
        json.dumps(rec.labels, sort_keys=True),
        rec.state,
        rec.create_time,
        rec.update_time,
        rec.turn_id,
        rec.approval_timeout,
        rec.tasks,
        rec.plan,
        rec.mode,
        rec.repository,
    )


def session(row: Row) -> SessionRecord:
    values = list(row)
    values[5] = json.loads(values[5])  # labels
    return SessionRecord(*values)


def turn_params(rec: TurnRecord, lease_until: float) -> Row:
    """`Statements.create_turn`'s parameters."""
    return (
        rec.session_id,
        rec.turn_id,
        rec.state.value,
        rec.turn,
        rec.create_time,
        rec.deadline,
        rec.first_seq,
        rec.model_calls,
        rec.cost_usd,
        json.dumps(rec.steer),
        rec.history,
        rec.usage_before,
        rec.owner,
        rec.epoch,
        rec.queued,
        lease_until,
    )


def turn(row: Row) -> TurnRecord:
    values = list(row)
    values[2] = TurnState(values[2])
    values[9] = json.loads(values[9])  # steer
    return TurnRecord(*values)


def turn_control(row: Row) -> TurnControl:
    return TurnControl(row[0], row[1], row[2], bool(row[3]), bool(row[4]))


def first_seqs(events: Sequence[TurnEvent]) -> list[Row]:
    """`Statements.first_seq`'s rows: each `accepted` event's seq, session and turn."""
    return [(e.seq, e.session_id, e.turn_id) for e in events if e.HasField("accepted")]


def ledger(row: Row) -> LedgerRow:
    values = list(row)
    values[8] = bool(values[8])  # priced
    values[12] = bool(values[12])  # tokens_unknown
    return LedgerRow(*values)


def usage_totals(row: Row) -> UsageTotals:
    return UsageTotals(
        calls=row[0],
        input=row[1],
        cached=row[2],
        cache_write=row[3],
        output=row[4],
        cost_usd=row[5],
        search_queries=row[6],
        search_cost_usd=row[7],
        last_prompt=row[8] or 0,
        priced=bool(row[9]),
        tokens_unknown=bool(row[10]),
    )


def token(row: Row) -> TokenRecord:
    values = list(row)
    values[3] = bool(values[3])  # admin
    return TokenRecord(*values)


def outbox_rows(events: Sequence[TurnEvent]) -> list[Row]:
    """`Statements.add_outbox`'s rows: each stored event a webhook may be told of."""
    found = []
    for e in events:
        kind = e.WhichOneof("kind")
        if kind in OUTBOX_KINDS:
            found.append((e.session_id, e.seq, kind, e.time.seconds + e.time.nanos / 1e9))
    return found


def outbox_item(row: Row) -> OutboxItem:
    labels = json.loads(row[7]) if row[7] is not None else None
    data = bytes(row[5]) if row[5] is not None else None
    return OutboxItem(row[0], row[1], row[2], row[3], row[4], data, row[6], labels, row[8] or "")


def webhook_params(rec: WebhookRecord) -> Row:
    """`Statements.add_webhook`'s parameters, in WEBHOOK_COLUMNS' order."""
    return (
        rec.id,
        rec.owner,
        rec.url,
        json.dumps(rec.events),
        json.dumps(rec.labels, sort_keys=True),
        rec.session_id,
        rec.description,
        rec.format,
        rec.state,
        rec.state_reason,
        rec.server_wide,
        rec.declared,
        rec.secret,
        rec.previous_secret,
        rec.previous_until,
        rec.failures,
        rec.create_time,
        rec.update_time,
    )


def webhook(row: Row) -> WebhookRecord:
    values = list(row)
    values[3] = json.loads(values[3])  # events
    values[4] = json.loads(values[4])  # labels
    values[10] = bool(values[10])  # server_wide
    return WebhookRecord(*values)


def attempts_json(attempts: Sequence[AttemptRecord]) -> str:
    return json.dumps([list(vars(a).values()) for a in attempts])


def delivery_params(rec: DeliveryRecord) -> Row:
    """`Statements.add_delivery`'s parameters, in DELIVERY_COLUMNS' order."""
    return (
        rec.id,
        rec.webhook_id,
        rec.message_id,
        rec.kind,
        rec.session_id,
        rec.turn_id,
        rec.seq,
        rec.body,
        rec.state.value,
        rec.tries,
        attempts_json(rec.attempts),
        rec.next_attempt,
        rec.deadline,
        rec.event_time,
        rec.create_time,
        rec.lease_owner,
        rec.lease_until,
    )


def delivery(row: Row) -> DeliveryRecord:
    values = list(row)
    values[7] = bytes(values[7])  # body
    values[8] = DeliveryState(values[8])
    values[10] = [AttemptRecord(*a) for a in json.loads(values[10])]
    return DeliveryRecord(*values)
