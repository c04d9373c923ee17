"""The SQL both engines run alike, each statement written once, with `?` for a parameter.

`Statements(dialect)` is every such statement in one engine's SQL, built when the engine's
module is imported. The few fragments the engines write differently (a session's last
seq, a label's test, a JSON parameter, appending steer text, booleans summed up) come from
its `Dialect`, and each `?` becomes its driver's placeholder. Per call, an engine picks a
statement (one with optional conditions has a text for each combination of them) and
puts its parameters together; it never builds text. A statement only one engine runs
stays in that engine's module, and nothing here runs one.

The text is SQLite's own, so every `?` in it is a parameter, and making each a `%s`
(psycopg's) is safe as long as no `?` stands in a quoted literal, no `%` stands anywhere
(psycopg would read it as a placeholder) and no parameter is numbered (`?1`):
`Dialect.sql` refuses such text.

(A little over the house's 450 lines: it is the SQL text of both engines, one statement
after another, and splitting it would only scatter the statements a reader compares.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import product

from blitz.store.records import (
    SessionChange,
    SessionQuery,
    TurnPage,
    TurnState,
)
from blitz.v1 import session_pb2 as s

__all__ = [
    "CHECKPOINT_COLUMNS",
    "FLAGS",
    "IMAGE_COLUMNS",
    "LEDGER_COLUMNS",
    "PENDING_COLUMNS",
    "RULE_COLUMNS",
    "TOKEN_COLUMNS",
    "TURN_COLUMNS",
    "Dialect",
    "Statements",
    "marks",
]

# The columns of each record, in the order of its fields.
TURN_COLUMNS = (
    "session_id, turn_id, state, turn, create_time, deadline, first_seq, model_calls,"
    " cost_usd, steer, history, usage_before, owner, epoch, queued"
)
PENDING_COLUMNS = "session_id, request_id, turn_id, event, expires, resolution"
LEDGER_COLUMNS = (
    "session_id, turn_id, model, input, cached, cache_write, output, cost_usd, priced,"
    " search_queries, search_cost_usd, time, tokens_unknown"
)
RULE_COLUMNS = (
    "id, scope, kind, scope_label, session_id, workspace, caller, create_time, request_id,"
    " match_kind, pattern, effect, expire_time"
)
IMAGE_COLUMNS = "id, session_id, media_type, data, create_time"
TOKEN_COLUMNS = "id, name, hash, admin, create_time, revoke_time"
CHECKPOINT_COLUMNS = "session_id, turn_id, at, manifest, create_time"
# A session's, but for `last_seq` between them, which each engine keeps its own way.
_SESSION_HEAD = (
    "id, owner, title, workspace, model, labels, state, create_time, update_time, turn_id,"
    " approval_timeout"
)
_SESSION_TAIL = "tasks, plan, mode"

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
FLAGS = (False, True)


@dataclass(frozen=True, kw_only=True)
class Dialect:
    """What an engine writes its own way in the statements both run, each with `?`."""

    # Its driver's placeholder for a parameter: "?" (sqlite3) or "%s" (psycopg).
    placeholder: str
    # The session's newest seq (0: none yet), as a column of a SELECT from `sessions`.
    last_seq: str
    # Whether a session has a label of this value: parameters the key, then the value.
    label_is: str
    # A parameter of JSON text, as a JSON column (labels, steer) takes it.
    json: str
    # The turn's steer with one more text (a parameter) at its end.
    steer_appended: str
    # Two columns of ledger rows: whether every one was priced, and whether any had its
    # tokens unknown (booleans: SQLite keeps them as integers).
    ledger_flags: str
    # A parameter of a JSON list of strings, as a list a column can be `IN`.
    json_texts: str = "(SELECT value FROM json_each(?))"
    # What ends a SELECT that takes rows for this transaction alone, skipping those
    # another holds, of the table `{alias}` names ("" where one process owns the file).
    lock_skipping: str = ""
    # What ends a SELECT that locks its row until the transaction ends ("": the same).
    lock: str = ""

    def sql(self, text: str) -> str:
        """`text`, written with `?` for each parameter, in this dialect's placeholders."""
        literals = text.split("'")[1::2]
        if "%" in text or any("?" in lit for lit in literals) or re.search(r"\?\d", text):
            raise ValueError(f"a placeholder would be mistaken in {text!r}")
        return text.replace("?", self.placeholder)


class _Shapes(dict[tuple[object, ...], str]):
    """A statement whose text depends on more than flags (which fields a change sets, how
    many labels a query tests): built for a shape on its first use, then kept. There are
    few: 2⁸·4 changes at most, and the core lets a query test 64 labels at most."""

    def __init__(self, build: Callable[..., str]) -> None:
        super().__init__()
        self._build = build

    def __missing__(self, shape: tuple[object, ...]) -> str:
        text = self[shape] = self._build(*shape)
        return text


class Statements:
    """Every statement both engines run alike, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql
        sessions = f"SELECT {_SESSION_HEAD}, {dialect.last_seq}, {_SESSION_TAIL} FROM sessions"
        turns = f"SELECT {TURN_COLUMNS} FROM turns"

        # Sessions
        self.create_session = sql(
            f"INSERT INTO sessions ({_SESSION_HEAD}, {_SESSION_TAIL})"
            f" VALUES (?, ?, ?, ?, ?, {dialect.json}, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        self.get_session = sql(f"{sessions} WHERE id = ?")
        self._session_pages = _Shapes(lambda *shape: sql(_session_page(sessions, dialect, *shape)))
        self._session_updates = _Shapes(lambda *shape: sql(_session_update(dialect.json, *shape)))
        self.delete_session = tuple(
            sql(f"DELETE FROM {table} WHERE {key} = ?") for table, key in _SESSION_TABLES
        )

        # Turns
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
        self._claims = {
            expired: sql(
                "UPDATE turns SET state = 'running', owner = ?, epoch = epoch + 1,"
                " lease_until = ?, queued = NULL"
                " WHERE session_id = ? AND turn_id = ? AND state = ?"
                + (" AND (lease_until IS NULL OR lease_until < ?)" if expired else "")
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

        # Events
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

        # Usage ledger
        self.add_ledger = sql(f"INSERT INTO ledger ({LEDGER_COLUMNS}) VALUES ({marks(13)})")
        self.ledger = sql(f"SELECT {LEDGER_COLUMNS} FROM ledger WHERE session_id = ? ORDER BY id")
        # Parameters: session_id twice.
        self.usage_totals = sql(
            "SELECT COUNT(*), CAST(COALESCE(SUM(input), 0) AS BIGINT),"
            " CAST(COALESCE(SUM(cached), 0) AS BIGINT),"
            " CAST(COALESCE(SUM(cache_write), 0) AS BIGINT),"
            " CAST(COALESCE(SUM(output), 0) AS BIGINT), COALESCE(SUM(cost_usd), 0.0),"
            " CAST(COALESCE(SUM(search_queries), 0) AS BIGINT),"
            " COALESCE(SUM(search_cost_usd), 0.0),"
            " (SELECT input FROM ledger WHERE session_id = ? ORDER BY id DESC LIMIT 1),"
            f" {dialect.ledger_flags} FROM ledger WHERE session_id = ?"
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

        # Images
        self.add_image = sql(f"INSERT INTO images ({IMAGE_COLUMNS}) VALUES ({marks(5)})")
        self.get_image = sql(f"SELECT {IMAGE_COLUMNS} FROM images WHERE session_id = ? AND id = ?")

        # Bearer tokens
        self.add_token = sql(f"INSERT INTO tokens ({TOKEN_COLUMNS}) VALUES ({marks(6)})")
        self.find_token = sql(f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE hash = ?")
        self.list_tokens = sql(f"SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY create_time, id")
        self.revoke_tokens = sql(
            "UPDATE tokens SET revoke_time = ? WHERE (id = ? OR name = ?) AND revoke_time IS NULL"
        )
        self.ping = sql("SELECT 1")

        # Agent state
        self.get_history = sql("SELECT history FROM histories WHERE session_id = ?")
        self.set_history = sql(
            "INSERT INTO histories (session_id, history) VALUES (?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET history = excluded.history"
        )
        # Parameters: session_id, turn_id, session_id, b"" (for a session with none).
        # Parameters: owner, name, the folder for a new name; then owner, name.
        self.claim_workspace = sql(
            "INSERT INTO workspace_names (owner, name, folder) VALUES (?, ?, ?)"
            " ON CONFLICT (owner, name) DO NOTHING"
        )
        self.workspace_folder = sql(
            "SELECT folder FROM workspace_names WHERE owner = ? AND name = ?"
        )
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
        # Workflow runs: parameters session_id, turn_id, state, update_time.
        self.put_workflow_run = sql(
            "INSERT INTO workflow_runs (session_id, turn_id, state, update_time)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (session_id, turn_id)"
            " DO UPDATE SET state = excluded.state, update_time = excluded.update_time"
        )
        self.get_workflow_run = sql(
            "SELECT state FROM workflow_runs WHERE session_id = ? AND turn_id = ?"
        )
        self.get_turn_history = sql(
            "SELECT history FROM turn_histories WHERE session_id = ? AND turn_id = ?"
        )

        # Workspace files as they were
        self.keep_original = sql(
            "INSERT INTO file_originals (session_id, path, content) VALUES (?, ?, ?)"
            " ON CONFLICT (session_id, path) DO NOTHING"
        )
        self.originals = sql(
            "SELECT path, content FROM file_originals WHERE session_id = ? ORDER BY path"
        )

        # Rewinding: parameters session_id, turn_id.
        self.drop_turn_history = sql(
            "DELETE FROM turn_histories WHERE session_id = ? AND turn_id = ?"
        )

        # Workspace checkpoints
        self.put_checkpoint = sql(
            f"INSERT INTO checkpoints ({CHECKPOINT_COLUMNS})"
            f" VALUES ({marks(5)}) ON CONFLICT (session_id, turn_id, at)"
            " DO UPDATE SET manifest = excluded.manifest, create_time = excluded.create_time"
        )
        self.put_checkpoint_blob = sql(
            "INSERT INTO checkpoint_blobs (session_id, hash, content) VALUES (?, ?, ?)"
            " ON CONFLICT (session_id, hash) DO NOTHING"
        )
        self.checkpointed_turns = sql(
            "SELECT turn_id FROM checkpoints WHERE session_id = ? AND at = 'start'"
            " ORDER BY create_time, turn_id"
        )
        self.get_checkpoints = sql(
            "SELECT at, manifest, create_time FROM checkpoints"
            " WHERE session_id = ? AND turn_id = ? ORDER BY at DESC"
        )
        # Parameters: session_id, the hashes as a JSON array.
        self.checkpoint_blobs = sql(
            "SELECT hash, content FROM checkpoint_blobs"
            f" WHERE session_id = ? AND hash IN {dialect.json_texts}"
        )
        self.checkpoint_blob_hashes = sql("SELECT hash FROM checkpoint_blobs WHERE session_id = ?")
        self.drop_checkpoint = sql("DELETE FROM checkpoints WHERE session_id = ? AND turn_id = ?")
        self.drop_checkpoint_blob = sql(
            "DELETE FROM checkpoint_blobs WHERE session_id = ? AND hash = ?"
        )

    # The statements whose text depends on a call's optional parts, each with its
    # parameters.

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

    def list_pending(
        self, session_id: str, turn_id: str | None, request_id: str | None, open_only: bool
    ) -> tuple[str, list[object]]:
        args: list[object] = [session_id]
        if turn_id is not None:
            args.append(turn_id)
        if request_id is not None:
            args.append(request_id)
        return self._pending[turn_id is not None, request_id is not None, open_only], args


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


def marks(count: int) -> str:
    return ", ".join(["?"] * count)
