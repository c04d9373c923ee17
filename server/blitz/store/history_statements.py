"""The statements of agent state: a session's message history, the copies kept per turn,
and a workflow run's state.

A session's history is the agent's messages after its last completed turn, one blob
replaced whole. A copy of it is kept for each of the session's newest turns, so a rewind
can put the session back as it was before one of them. A workflow run's turn keeps the
state its last `flow_step` wrote, replaced whole at each.
"""

from __future__ import annotations

from blitz.store.sql_dialect import Dialect

__all__ = ["HistoryStatements"]


class HistoryStatements:
    """Agent state's statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql

        self.get_history = sql("SELECT history FROM histories WHERE session_id = ?")
        self.set_history = sql(
            "INSERT INTO histories (session_id, history) VALUES (?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET history = excluded.history"
        )

        # Turn histories. Parameters: session_id, turn_id, session_id, b"" (for a session
        # with none).
        self.keep_turn_history = sql(
            "INSERT INTO turn_histories (session_id, turn_id, history)"
            " VALUES (?, ?, COALESCE((SELECT history FROM histories WHERE session_id = ?), ?))"
            " ON CONFLICT (session_id, turn_id) DO UPDATE SET history = excluded.history"
        )
        # A session's kept turn histories but its newest (by the turn's start):
        # parameters session_id, session_id, how many to keep.
        self.older_turn_histories = sql(
            "DELETE FROM turn_histories WHERE session_id = ? AND turn_id NOT IN ("
            " SELECT h.turn_id FROM turn_histories h JOIN turns t"
            "  ON t.session_id = h.session_id AND t.turn_id = h.turn_id"
            " WHERE h.session_id = ? ORDER BY t.create_time DESC, t.turn_id DESC LIMIT ?)"
        )
        self.get_turn_history = sql(
            "SELECT history FROM turn_histories WHERE session_id = ? AND turn_id = ?"
        )
        # Rewinding: parameters session_id, turn_id.
        self.drop_turn_history = sql(
            "DELETE FROM turn_histories WHERE session_id = ? AND turn_id = ?"
        )

        # Workflow runs: parameters session_id, turn_id, state, update_time.
        self.put_workflow_run = sql(
            "INSERT INTO workflow_runs (session_id, turn_id, state, update_time)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (session_id, turn_id)"
            " DO UPDATE SET state = excluded.state, update_time = excluded.update_time"
        )
        self.get_workflow_run = sql(
            "SELECT state FROM workflow_runs WHERE session_id = ? AND turn_id = ?"
        )
