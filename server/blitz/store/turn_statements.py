"""The statements of a turn's row: its start, its leases and claims, its end, its steering.

A turn is taken by one server at a time: a claim bumps its `epoch` and sets its lease,
and every later write of the turn names that epoch, so a server that lost the turn
changes nothing. Which turns are due again (a lease run out, a parked turn whose wait is
over) is asked here too; the turn's events are `event_statements.py`'s.
"""

from __future__ import annotations

from itertools import product

from blitz.store.records import TurnPage, TurnState
from blitz.store.sql_dialect import FLAGS, Dialect
from blitz.v1 import session_pb2 as s

__all__ = ["TURN_COLUMNS", "TurnStatements"]

# A TurnRecord's columns, in the order of its fields.
TURN_COLUMNS = (
    "session_id, turn_id, state, turn, create_time, deadline, first_seq, model_calls,"
    " cost_usd, steer, history, usage_before, owner, epoch, queued"
)


class TurnStatements:
    """A turn's statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql
        turns = f"SELECT {TURN_COLUMNS} FROM turns"

        self._turn_pages = {
            after: sql(
                f"{turns} WHERE session_id = ?"
                + (" AND (create_time > ? OR (create_time = ? AND turn_id > ?))" if after else "")
                + " ORDER BY create_time, turn_id LIMIT ?"
            )
            for after in FLAGS
        }
        self.create_turn = sql(
            f"INSERT INTO turns ({TURN_COLUMNS}, lease_until)"
            f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, {dialect.json}, ?, ?, ?, ?, ?, ?)"
        )
        self.get_turn = sql(f"{turns} WHERE session_id = ? AND turn_id = ?")
        # Parameters: state, first_seq, model_calls, cost_usd, history, the state again (a
        # turn that stops running has no owner), session_id, turn_id, epoch.
        self.update_turn = sql(
            "UPDATE turns SET state = ?, first_seq = ?, model_calls = ?, cost_usd = ?,"
            " history = ?, owner = CASE WHEN ? = 'running' THEN owner ELSE '' END"
            " WHERE session_id = ? AND turn_id = ? AND epoch = ? AND state = 'running'"
        )
        # A claim locks the row FOR UPDATE first (PostgreSQL): so it waits for an append
        # of the turn's holder, whose fence holds the row FOR KEY SHARE, which the lease
        # renewals' plain UPDATE does not wait for.
        self._claims = {
            expired: sql(
                "UPDATE turns SET state = 'running', owner = ?, epoch = epoch + 1,"
                " lease_until = ?, queued = NULL"
                " WHERE (session_id, turn_id) IN (SELECT session_id, turn_id FROM turns"
                "  WHERE session_id = ? AND turn_id = ? AND state = ?"
                + (" AND (lease_until IS NULL OR lease_until < ?)" if expired else "")
                + f"{dialect.lock})"
                + f" RETURNING {TURN_COLUMNS}"
            )
            for expired in FLAGS
        }
        # Parameters: owner, lease_until, deadline, usage_before, session_id, turn_id.
        self.start_queued = sql(
            "UPDATE turns SET state = 'running', owner = ?, epoch = epoch + 1,"
            " lease_until = ?, queued = NULL, deadline = ?, usage_before = ?"
            " WHERE session_id = ? AND turn_id = ? AND state = 'queued'"
            f" RETURNING {TURN_COLUMNS}"
        )
        self.queued_turns = sql(
            f"{turns} WHERE session_id = ? AND state = 'queued'"
            " ORDER BY queued, create_time, turn_id"
        )
        self.renew_leases = sql(
            "UPDATE turns SET lease_until = ? WHERE owner = ? AND state = 'running'"
            " RETURNING session_id, turn_id, epoch, cancel_requested, steer <> '[]'"
        )
        self._in_state = {
            (ended, one): sql(
                f"{turns} WHERE state = ?"
                + (" AND (lease_until IS NULL OR lease_until < ?)" if ended else "")
                + (" AND session_id = ?" if one else "")
            )
            for ended, one in product(FLAGS, repeat=2)
        }
        self.count_turns = sql("SELECT COUNT(*) FROM turns WHERE state = ?")
        self._parked_due = sql(_parked_due())
        # Parameters of the next two: (the steer text,) session_id, turn_id.
        self.request_cancel = sql(
            "UPDATE turns SET cancel_requested = TRUE"
            " WHERE session_id = ? AND turn_id = ? AND state <> 'finished'"
        )
        self.add_steer = sql(
            f"UPDATE turns SET steer = {dialect.steer_appended}"
            " WHERE session_id = ? AND turn_id = ? AND state <> 'finished' AND steer_open"
        )

    # The statements whose text depends on a call's optional parts, each with its
    # parameters.

    def list_turns(self, page: TurnPage) -> tuple[str, list[object]]:
        args: list[object] = [page.session_id]
        if page.after is not None:
            when, last_id = page.after
            args += [when, when, last_id]
        args.append(page.limit)
        return self._turn_pages[page.after is not None], args

    def claim_turn(
        self,
        session_id: str,
        turn_id: str,
        *,
        state: TurnState,
        owner: str,
        lease_until: float,
        expired_before: float | None,
    ) -> tuple[str, list[object]]:
        """The UPDATE that takes the turn, RETURNING it."""
        args: list[object] = [owner, lease_until, session_id, turn_id, state.value]
        if expired_before is not None:
            args.append(expired_before)
        return self._claims[expired_before is not None], args

    def turns_in_state(
        self, state: TurnState, lease_ended_before: float | None, session_id: str | None
    ) -> tuple[str, list[object]]:
        args: list[object] = [state.value]
        if lease_ended_before is not None:
            args.append(lease_ended_before)
        if session_id is not None:
            args.append(session_id)
        return self._in_state[lease_ended_before is not None, session_id is not None], args

    def parked_turns_due(self, now: float, settled_before: float) -> tuple[str, list[object]]:
        return self._parked_due, [now, now, settled_before]


def _parked_due() -> str:
    """`Store.parked_turns_due`: parameters now, now, settled_before."""
    requests = "FROM pending p WHERE p.session_id = t.session_id AND p.turn_id = t.turn_id"
    columns = ", ".join(f"t.{c.strip()}" for c in TURN_COLUMNS.split(","))
    return (
        f"SELECT {columns} FROM turns t WHERE t.state = 'parked' AND ("
        " t.deadline <= ?"
        f" OR EXISTS (SELECT 1 {requests} AND p.resolution IS NULL AND p.expires <= ?)"
        " OR EXISTS (SELECT 1 FROM sessions x WHERE x.id = t.session_id"
        f"  AND (x.state = {s.SESSION_STATE_CLOSED} OR x.turn_id <> t.turn_id))"
        f" OR NOT EXISTS (SELECT 1 {requests}"
        "  AND (p.resolution IS NULL OR p.resolve_time >= ?)))"
    )
