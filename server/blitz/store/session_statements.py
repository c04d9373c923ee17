"""The statements of a session's row: creating, reading, listing, changing, deleting.

A session's deletion deletes its rows in every table that keeps any (`_SESSION_TABLES`),
so a table added elsewhere that keys rows by session must be named here too. A listing
or a change has one text per shape of its optional parts, built on first use.
"""

from __future__ import annotations

import json

from blitz.store.records import SessionChange, SessionQuery
from blitz.store.sql_dialect import Dialect, Shapes
from blitz.v1 import session_pb2 as s

__all__ = ["SessionStatements"]

# A session's, but for `last_seq` between them, which each engine keeps its own way.
_SESSION_HEAD = (
    "id, owner, title, workspace, model, labels, state, create_time, update_time, turn_id,"
    " approval_timeout"
)
_SESSION_TAIL = "tasks, plan, mode, repository"

# SessionChange's fields, by column.
_CHANGEABLE = (
    "state", "turn_id", "model", "title", "labels", "approval_timeout", "tasks", "plan", "mode"
)  # fmt: skip
# What a session's deletion deletes: each table's rows of the session (rules: only its
# SESSION rules; an ALWAYS rule belongs to its caller and workspace).
_SESSION_TABLES = (
    ("events", "session_id"),
    ("turns", "session_id"),
    ("pending", "session_id"),
    ("ledger", "session_id"),
    ("images", "session_id"),
    ("histories", "session_id"),
    ("turn_histories", "session_id"),
    ("file_originals", "session_id"),
    ("webhook_outbox", "session_id"),
    ("checkpoints", "session_id"),
    ("checkpoint_blobs", "session_id"),
    ("workflow_runs", "session_id"),
    ("rules", f"scope = {s.RULE_SCOPE_SESSION} AND session_id"),
    ("sessions", "id"),
)


class SessionStatements:
    """A session's statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql
        sessions = f"SELECT {_SESSION_HEAD}, {dialect.last_seq}, {_SESSION_TAIL} FROM sessions"

        self.create_session = sql(
            f"INSERT INTO sessions ({_SESSION_HEAD}, {_SESSION_TAIL})"
            f" VALUES (?, ?, ?, ?, ?, {dialect.json}, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        self.get_session = sql(f"{sessions} WHERE id = ?")
        self._session_pages = Shapes(lambda *shape: sql(_session_page(sessions, dialect, *shape)))
        self._session_updates = Shapes(lambda *shape: sql(_session_update(dialect.json, *shape)))
        self.delete_session = tuple(
            sql(f"DELETE FROM {table} WHERE {key} = ?") for table, key in _SESSION_TABLES
        )

    def list_sessions(self, query: SessionQuery) -> tuple[str, list[object]]:
        args: list[object] = []
        if query.owner is not None:
            args.append(query.owner)
        if query.state:
            args.append(query.state)
        if query.before is not None:
            when, last_id = query.before
            args += [when, when, last_id]
        for key, value in query.labels.items():
            args += [key, value]
        args.append(query.limit)
        shape = (
            query.owner is not None,
            bool(query.state),
            query.before is not None,
            len(query.labels),
        )
        return self._session_pages[shape], args

    def update_session(self, session_id: str, change: SessionChange) -> tuple[str, list[object]]:
        """The UPDATE of `change`. A closed session keeps its state."""
        columns: list[str] = []
        args: list[object] = [change.update_time]
        for column in _CHANGEABLE:
            value = getattr(change, column)
            if value is None:
                continue
            if column == "labels":
                value = json.dumps(value, sort_keys=True)
            elif (column == "plan" and value == b"") or (
                column == "approval_timeout" and not value
            ):
                value = None  # no plan any more; the server's default timeout
            columns.append(column)
            args.append(value)
        args.append(session_id)
        if change.expect_state is not None:
            args.append(change.expect_state)
        if change.expect_turn_id is not None:
            args.append(change.expect_turn_id)
        shape = (
            tuple(columns),
            change.expect_state is not None,
            change.expect_turn_id is not None,
        )
        return self._session_updates[shape], args


def _session_update(labels: str, columns: tuple[str, ...], by_state: bool, by_turn: bool) -> str:
    sets = ["update_time = ?"]
    for column in columns:
        if column == "state":
            closed = s.SESSION_STATE_CLOSED
            sets.append(f"state = CASE WHEN state = {closed} THEN state ELSE ? END")
        elif column == "labels":
            sets.append(f"labels = {labels}")
        else:
            sets.append(f"{column} = ?")
    where = (
        "id = ?" + (" AND state = ?" if by_state else "") + (" AND turn_id = ?" if by_turn else "")
    )
    return f"UPDATE sessions SET {', '.join(sets)} WHERE {where}"


def _session_page(
    sessions: str, dialect: Dialect, by_owner: bool, by_state: bool, before: bool, labels: int
) -> str:
    where = ["TRUE"]
    if by_owner:
        where.append("owner = ?")
    if by_state:
        where.append("state = ?")
    if before:
        where.append("(create_time < ? OR (create_time = ? AND id < ?))")
    where += [dialect.label_is] * labels
    return f"{sessions} WHERE {' AND '.join(where)} ORDER BY create_time DESC, id DESC LIMIT ?"
