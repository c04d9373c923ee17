"""SQL both engines write alike, each with its own placeholder (`?` or `%s`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from blitz.store.records import SessionChange
from blitz.v1 import session_pb2 as s
from blitz.v1.turn_pb2 import TurnEvent

__all__ = [
    "SESSION_TABLES",
    "TURN_COLUMNS",
    "claim_turn",
    "due_parked_turns",
    "first_seqs",
    "older_turn_histories",
    "session_update",
]

# A turn's columns, in the order of TurnRecord's fields.
TURN_COLUMNS = (
    "session_id, turn_id, state, turn, create_time, deadline, first_seq, model_calls,"
    " cost_usd, steer, history, usage_before, owner, epoch"
)
# SessionChange's fields, by column.
_CHANGEABLE = (
    "state",
    "turn_id",
    "model",
    "title",
    "labels",
    "approval_timeout",
    "tasks",
    "plan",
)
# What a session's deletion deletes: each table's rows of the session (rules: only its
# SESSION rules; an ALWAYS rule belongs to its caller and workspace).
SESSION_TABLES = (
    ("events", "session_id"),
    ("turns", "session_id"),
    ("pending", "session_id"),
    ("ledger", "session_id"),
    ("images", "session_id"),
    ("histories", "session_id"),
    ("turn_histories", "session_id"),
    ("file_originals", "session_id"),
    ("rules", f"scope = {s.RULE_SCOPE_SESSION} AND session_id"),
    ("sessions", "id"),
)


def first_seqs(events: Sequence[TurnEvent], mark: str) -> tuple[str, list[tuple[int, str, str]]]:
    """The UPDATE that sets each turn's first_seq from its `accepted` event (a turn's first,
    numbered), with its rows: written in the events' transaction, no write of its own."""
    sql = (
        f"UPDATE turns SET first_seq = {mark}"
        f" WHERE session_id = {mark} AND turn_id = {mark} AND first_seq = 0"
    )
    rows = [(e.seq, e.session_id, e.turn_id) for e in events if e.HasField("accepted")]
    return sql, rows


def session_update(session_id: str, change: SessionChange, mark: str) -> tuple[str, list[object]]:
    """The UPDATE of `change` and its arguments. A closed session keeps its state."""
    sets: list[str] = [f"update_time = {mark}"]
    args: list[object] = [change.update_time]
    for column in _CHANGEABLE:
        value = getattr(change, column)
        if value is None:
            continue
        if column == "state":
            closed = s.SESSION_STATE_CLOSED
            sets.append(f"state = CASE WHEN state = {closed} THEN state ELSE {mark} END")
        elif column == "labels":
            # JSON text; PostgreSQL's column is JSONB.
            sets.append(f"labels = {mark}" + ("::jsonb" if mark == "%s" else ""))
            value = json.dumps(value, sort_keys=True)
        else:
            sets.append(f"{column} = {mark}")
        if (column == "plan" and value == b"") or (column == "approval_timeout" and not value):
            value = None  # no plan any more; the server's default timeout
        args.append(value)
    where = [f"id = {mark}"]
    args.append(session_id)
    if change.expect_state is not None:
        where.append(f"state = {mark}")
        args.append(change.expect_state)
    if change.expect_turn_id is not None:
        where.append(f"turn_id = {mark}")
        args.append(change.expect_turn_id)
    return f"UPDATE sessions SET {', '.join(sets)} WHERE {' AND '.join(where)}", args


def due_parked_turns(mark: str, now: float, settled_before: float) -> tuple[str, list[object]]:
    """The query of `Store.parked_turns_due`."""
    requests = "FROM pending p WHERE p.session_id = t.session_id AND p.turn_id = t.turn_id"
    columns = ", ".join(f"t.{c.strip()}" for c in TURN_COLUMNS.split(","))
    sql = (
        f"SELECT {columns} FROM turns t WHERE t.state = 'parked' AND ("
        f" t.deadline <= {mark}"
        f" OR EXISTS (SELECT 1 {requests} AND p.resolution IS NULL AND p.expires <= {mark})"
        " OR EXISTS (SELECT 1 FROM sessions x WHERE x.id = t.session_id"
        f"  AND (x.state = {s.SESSION_STATE_CLOSED} OR x.turn_id <> t.turn_id))"
        f" OR NOT EXISTS (SELECT 1 {requests}"
        f"  AND (p.resolution IS NULL OR p.resolve_time >= {mark})))"
    )
    return sql, [now, now, settled_before]


def older_turn_histories(placeholder: str) -> str:
    """DELETE of a session's kept turn histories but its newest (by the turn's start):
    parameters session_id, session_id, how many to keep."""
    p = placeholder
    return (
        f"DELETE FROM turn_histories WHERE session_id = {p} AND turn_id NOT IN ("
        " SELECT h.turn_id FROM turn_histories h JOIN turns t"
        "  ON t.session_id = h.session_id AND t.turn_id = h.turn_id"
        f" WHERE h.session_id = {p} ORDER BY t.create_time DESC, t.turn_id DESC LIMIT {p})"
    )


def claim_turn(
    mark: str,
    session_id: str,
    turn_id: str,
    *,
    state: str,
    owner: str,
    lease_until: float,
    expired_before: float | None,
) -> tuple[str, list[object]]:
    """Store.claim_turn's UPDATE … RETURNING the turn, and its parameters."""
    sql = (
        f"UPDATE turns SET state = 'running', owner = {mark}, epoch = epoch + 1,"
        f" lease_until = {mark} WHERE session_id = {mark} AND turn_id = {mark}"
        f" AND state = {mark}"
    )
    args: list[object] = [owner, lease_until, session_id, turn_id, state]
    if expired_before is not None:
        sql += f" AND (lease_until IS NULL OR lease_until < {mark})"
        args.append(expired_before)
    return f"{sql} RETURNING {TURN_COLUMNS}", args
