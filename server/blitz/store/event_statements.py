"""The statements of a session's events: appending one, reading them back in order.

Each event has its session's next `seq`, which each engine numbers its own way (sqlite.py,
postgres.py): nothing here picks one. A turn's first event also sets the turn's `first_seq`.
"""

from __future__ import annotations

from blitz.store.sql_dialect import Dialect

__all__ = ["EventStatements"]


class EventStatements:
    """The event log's statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql

        self.append_event = sql(
            "INSERT INTO events (session_id, seq, turn_id, data) VALUES (?, ?, ?, ?)"
        )
        # A turn's first_seq from its `accepted` event (a turn's first): see rows.first_seqs.
        self.first_seq = sql(
            "UPDATE turns SET first_seq = ? WHERE session_id = ? AND turn_id = ? AND first_seq = 0"
        )
        self.read_events = sql(
            "SELECT seq, turn_id, data FROM events WHERE session_id = ? AND seq > ?"
            " ORDER BY seq LIMIT ?"
        )
        # SQLite walks its key from the session's newest event back: a turn being looked
        # at is its session's latest, so this stops after a few rows.
        self.last_event_of_turn = sql(
            "SELECT seq, data FROM events WHERE session_id = ? AND turn_id = ?"
            " ORDER BY seq DESC LIMIT 1"
        )
