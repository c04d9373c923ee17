"""The statements of approvals: the requests a turn waits on, and the rules that answer them.

A pending request is a tool call the caller must approve (or a question it must answer);
a rule approves or denies such calls ahead of time, for the session (SESSION) or for the
caller in the workspace (ALWAYS). Which rule applies to a call is the core's to decide:
here they are only kept and read.
"""

from __future__ import annotations

from itertools import product

from blitz.store.sql_dialect import FLAGS, Dialect, marks
from blitz.v1 import session_pb2 as s

__all__ = ["PENDING_COLUMNS", "RULE_COLUMNS", "ApprovalStatements"]

# The columns of a PendingRecord and a RuleRecord, in the order of their fields.
PENDING_COLUMNS = "session_id, request_id, turn_id, event, expires, resolution"
RULE_COLUMNS = (
    "id, scope, kind, scope_label, session_id, workspace, caller, create_time, request_id,"
    " match_kind, pattern, effect, expire_time"
)


class ApprovalStatements:
    """Pending requests' and approval rules' statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql

        # Pending requests
        # A request id the session used before replaces that (resolved) request: ids are
        # the model's tool-call ids, and some servers count them from 0 in every response.
        self.put_pending = sql(
            f"INSERT INTO pending ({PENDING_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (session_id, request_id) DO UPDATE SET turn_id = excluded.turn_id,"
            " event = excluded.event, expires = excluded.expires,"
            " resolution = excluded.resolution, resolve_time = NULL"
        )
        self._pending = {
            (by_turn, by_request, open_only): sql(
                f"SELECT {PENDING_COLUMNS} FROM pending WHERE session_id = ?"
                + (" AND turn_id = ?" if by_turn else "")
                + (" AND request_id = ?" if by_request else "")
                + (" AND resolution IS NULL" if open_only else "")
                + " ORDER BY request_id"  # SQLite's key order; PostgreSQL's only so
            )
            for by_turn, by_request, open_only in product(FLAGS, repeat=3)
        }
        self.resolve_pending = sql(
            "UPDATE pending SET resolution = ?, resolve_time = ?"
            " WHERE session_id = ? AND request_id = ? AND resolution IS NULL"
        )

        # Approval rules
        self.add_rule = sql(f"INSERT INTO rules ({RULE_COLUMNS}) VALUES ({marks(13)})")
        # Parameters: session_id, caller, workspace, now. ALWAYS: the caller in the workspace.
        self.rules_for = sql(
            f"SELECT {RULE_COLUMNS} FROM rules"
            f" WHERE ((scope = {s.RULE_SCOPE_SESSION} AND session_id = ?)"
            f" OR (scope = {s.RULE_SCOPE_ALWAYS} AND caller = ? AND workspace = ?))"
            " AND (expire_time IS NULL OR expire_time > ?) ORDER BY create_time, id"
        )
        self.delete_rule = sql("DELETE FROM rules WHERE id = ?")

    def list_pending(
        self, session_id: str, turn_id: str | None, request_id: str | None, open_only: bool
    ) -> tuple[str, list[object]]:
        """The SELECT of a session's requests, of one turn or one id, or only the open."""
        args: list[object] = [session_id]
        if turn_id is not None:
            args.append(turn_id)
        if request_id is not None:
            args.append(request_id)
        return self._pending[turn_id is not None, request_id is not None, open_only], args
