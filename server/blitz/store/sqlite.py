"""The SQLite engine: the store's contract in SQL over one file. The default.

One connection serves the whole process, on the event loop's thread
(`sqlite_connection.py`): each method is one statement or one transaction, run to its end
without an await, so it is one atomic step and has committed when it returns. The schema
is `sqlite_schema.py`, WAL its journal. One process owns the file: several replicas need a
server database.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import astuple
from pathlib import Path

from blitz.store import sql_parts
from blitz.store.records import (
    Changes,
    EventRow,
    FileOriginal,
    ImageRecord,
    LedgerRow,
    PendingRecord,
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
)
from blitz.store.sql_parts import (
    SESSION_TABLES,
    TURN_COLUMNS,
    due_parked_turns,
    older_turn_histories,
    session_update,
)
from blitz.store.sqlite_connection import CHECKPOINT_EVERY, Row, SqliteConnection, transaction
from blitz.v1.turn_pb2 import TurnEvent

__all__ = ["SqliteStore"]

_SESSION_COLUMNS = (
    "id, owner, title, workspace, model, labels, state, create_time, update_time, turn_id,"
    " approval_timeout,"
    " (SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = sessions.id),"
    " tasks, plan"
)
_RULE_COLUMNS = (
    "id, scope, kind, scope_label, session_id, workspace, caller, create_time, request_id"
)
_TOKEN_COLUMNS = "id, name, hash, admin, create_time, revoke_time"
_IMAGE_COLUMNS = "id, session_id, media_type, data, create_time"
# The columns of each record, in the order of its fields.
_PENDING_COLUMNS = "session_id, request_id, turn_id, event, expires, resolution"
_LEDGER_COLUMNS = (
    "session_id, turn_id, model, input, cached, cache_write, output, cost_usd, priced,"
    " search_queries, search_cost_usd, time,"
    " tokens_unknown"
)


def _session(row: Row) -> SessionRecord:
    values = list(row)
    values[5] = json.loads(values[5])  # labels
    return SessionRecord(*values)


def _turn(row: Row) -> TurnRecord:
    values = list(row)
    values[2] = TurnState(values[2])
    values[9] = json.loads(values[9])  # steer
    return TurnRecord(*values)


def _pending(row: Row) -> PendingRecord:
    return PendingRecord(*row)


def _token(row: Row) -> TokenRecord:
    values = list(row)
    values[3] = bool(values[3])  # admin
    return TokenRecord(*values)


def _ledger(row: Row) -> LedgerRow:
    values = list(row)
    values[8] = bool(values[8])  # priced
    values[12] = bool(values[12])  # tokens_unknown
    return LedgerRow(*values)


class SqliteStore:
    """`async with SqliteStore(path) as store:` — opens, migrates, closes."""

    def __init__(self, path: str | Path, *, checkpoint_every: float = CHECKPOINT_EVERY) -> None:
        self._sql = SqliteConnection(path, checkpoint_every=checkpoint_every)
        self._execute = self._sql.execute
        self._execute_many = self._sql.execute_many
        self._fetch = self._sql.fetch

    @property
    def shared(self) -> bool:
        return False  # one process owns the file

    async def __aenter__(self) -> SqliteStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        await self._sql.open()

    async def close(self) -> None:
        await self._sql.close()

    # Sessions

    async def create_session(self, rec: SessionRecord) -> None:
        await self._execute(
            "INSERT INTO sessions (id, owner, title, workspace, model, labels, state,"
            " create_time, update_time, turn_id, approval_timeout, tasks, plan)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
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
            ),
        )

    async def get_session(self, session_id: str) -> SessionRecord | None:
        rows = await self._fetch(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        )
        return _session(rows[0]) if rows else None

    async def list_sessions(self, query: SessionQuery) -> list[SessionRecord]:
        where = ["1"]
        args: list[object] = []
        if query.owner is not None:
            where.append("owner = ?")
            args.append(query.owner)
        if query.state:
            where.append("state = ?")
            args.append(query.state)
        if query.before is not None:
            when, last_id = query.before
            where.append("(create_time < ? OR (create_time = ? AND id < ?))")
            args += [when, when, last_id]
        for key, value in query.labels.items():
            where.append("json_extract(labels, ?) = ?")
            args += [f'$."{key}"', value]
        sql = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(where)}"
            " ORDER BY create_time DESC, id DESC LIMIT ?"
        )
        return [_session(row) for row in await self._fetch(sql, (*args, query.limit))]

    async def update_session(self, session_id: str, change: SessionChange) -> bool:
        sql, args = session_update(session_id, change, "?")
        return await self._execute(sql, args) == 1

    async def delete_session(self, session_id: str) -> bool:
        return await self._sql.call(self._delete_session, session_id)

    def _delete_session(self, session_id: str) -> bool:
        db = self._sql.db
        with transaction(db):
            deleted = 0
            for table, key in SESSION_TABLES:
                cur = db.execute(f"DELETE FROM {table} WHERE {key} = ?", (session_id,))
                deleted = cur.rowcount if table == "sessions" else deleted
        return deleted == 1

    # Turns

    async def list_turns(self, page: TurnPage) -> list[TurnRecord]:
        where, args = "session_id = ?", list[object]([page.session_id])
        if page.after is not None:
            when, last_id = page.after
            where += " AND (create_time > ? OR (create_time = ? AND turn_id > ?))"
            args += [when, when, last_id]
        rows = await self._fetch(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE {where} ORDER BY create_time, turn_id LIMIT ?",
            (*args, page.limit),
        )
        return [_turn(row) for row in rows]

    async def create_turn(
        self, rec: TurnRecord, *, lease_until: float, session: SessionChange | None = None
    ) -> bool:
        return await self._sql.call(self._create_turn, rec, lease_until, session)

    def _create_turn(
        self, rec: TurnRecord, lease_until: float, session: SessionChange | None
    ) -> bool:
        db = self._sql.db
        with transaction(db):
            if session is not None:
                sql, args = session_update(rec.session_id, session, "?")
                if db.execute(sql, args).rowcount != 1:
                    return False
            db.execute(
                f"INSERT INTO turns ({TURN_COLUMNS}, lease_until)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
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
                    lease_until,
                ),
            )
        return True

    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None:
        rows = await self._fetch(
            f"SELECT {TURN_COLUMNS} FROM turns WHERE session_id = ? AND turn_id = ?",
            (session_id, turn_id),
        )
        return _turn(rows[0]) if rows else None

    async def update_turn(self, rec: TurnRecord) -> bool:
        changed = await self._execute(
            "UPDATE turns SET state = ?1, first_seq = ?, model_calls = ?, cost_usd = ?,"
            " history = ?, owner = CASE WHEN ?1 = 'running' THEN owner ELSE '' END"
            " WHERE session_id = ? AND turn_id = ? AND epoch = ? AND state = 'running'",
            (
                rec.state.value,
                rec.first_seq,
                rec.model_calls,
                rec.cost_usd,
                rec.history,
                rec.session_id,
                rec.turn_id,
                rec.epoch,
            ),
        )
        return changed == 1

    async def claim_turn(
        self,
        session_id: str,
        turn_id: str,
        *,
        state: TurnState,
        owner: str,
        lease_until: float,
        expired_before: float | None = None,
    ) -> TurnRecord | None:
        sql, args = sql_parts.claim_turn(
            "?",
            session_id,
            turn_id,
            state=state.value,
            owner=owner,
            lease_until=lease_until,
            expired_before=expired_before,
        )
        rows = await self._fetch(sql, args)
        return _turn(rows[0]) if rows else None

    async def renew_leases(self, owner: str, *, lease_until: float) -> list[TurnControl]:
        rows = await self._fetch(
            "UPDATE turns SET lease_until = ? WHERE owner = ? AND state = 'running'"
            " RETURNING session_id, turn_id, epoch, cancel_requested, steer <> '[]'",
            (lease_until, owner),
        )
        return [TurnControl(r[0], r[1], r[2], bool(r[3]), bool(r[4])) for r in rows]

    async def turns_in_state(
        self,
        state: TurnState,
        *,
        lease_ended_before: float | None = None,
        session_id: str | None = None,
    ) -> list[TurnRecord]:
        sql = f"SELECT {TURN_COLUMNS} FROM turns WHERE state = ?"
        args: list[object] = [state.value]
        if lease_ended_before is not None:
            sql += " AND (lease_until IS NULL OR lease_until < ?)"
            args.append(lease_ended_before)
        if session_id is not None:
            sql += " AND session_id = ?"
            args.append(session_id)
        return [_turn(row) for row in await self._fetch(sql, args)]

    async def count_turns(self, state: TurnState) -> int:
        rows = await self._fetch("SELECT COUNT(*) FROM turns WHERE state = ?", (state.value,))
        return int(rows[0][0])

    async def parked_turns_due(self, *, now: float, settled_before: float) -> list[TurnRecord]:
        sql, args = due_parked_turns("?", now, settled_before)
        return [_turn(row) for row in await self._fetch(sql, args)]

    async def request_cancel(self, session_id: str, turn_id: str) -> bool:
        changed = await self._execute(
            "UPDATE turns SET cancel_requested = 1"
            " WHERE session_id = ? AND turn_id = ? AND state <> 'finished'",
            (session_id, turn_id),
        )
        return changed == 1

    async def add_steer(self, session_id: str, turn_id: str, text: str) -> bool:
        changed = await self._execute(
            "UPDATE turns SET steer = json_insert(steer, '$[#]', ?)"
            " WHERE session_id = ? AND turn_id = ? AND state <> 'finished' AND steer_open",
            (text, session_id, turn_id),
        )
        return changed == 1

    async def take_steer(self, session_id: str, turn_id: str, *, close: bool = False) -> list[str]:
        return await self._sql.call(self._take_steer, session_id, turn_id, close)

    def _take_steer(self, session_id: str, turn_id: str, close: bool) -> list[str]:
        db = self._sql.db
        with transaction(db):
            row = db.execute(
                "SELECT steer FROM turns WHERE session_id = ? AND turn_id = ?",
                (session_id, turn_id),
            ).fetchone()
            db.execute(
                "UPDATE turns SET steer = '[]', steer_open = steer_open AND NOT ?"
                " WHERE session_id = ? AND turn_id = ?",
                (close, session_id, turn_id),
            )
        return json.loads(row[0]) if row else []

    # Events

    async def append_events(
        self,
        events: Sequence[TurnEvent],
        *,
        fences: Mapping[tuple[str, str], int] | None = None,
    ) -> set[tuple[str, str]]:
        if not events:
            return set()
        return await self._sql.call(self._append, events, fences or {})

    def _append(
        self, events: Sequence[TurnEvent], fences: Mapping[tuple[str, str], int]
    ) -> set[tuple[str, str]]:
        db = self._sql.db
        lost: set[tuple[str, str]] = set()
        try:
            with transaction(db):
                for (sid, tid), epoch in fences.items():
                    held = db.execute(
                        "SELECT 1 FROM turns WHERE session_id = ? AND turn_id = ?"
                        " AND state = 'running' AND epoch = ?",
                        (sid, tid, epoch),
                    ).fetchone()
                    if held is None:
                        lost.add((sid, tid))
                kept = [e for e in events if (e.session_id, e.turn_id) not in lost]
                # One MAX per session: SQLite answers it from the end of the primary key
                # (O(log n)), where a GROUP BY over several sessions reads every event of
                # each, which made every append of a long session dearer than the last.
                last: dict[str, int] = {}
                for sid in {e.session_id for e in kept}:
                    (top,) = db.execute(
                        "SELECT MAX(seq) FROM events WHERE session_id = ?", (sid,)
                    ).fetchone()
                    last[sid] = top or 0
                rows = []
                for event in kept:
                    event.seq = last.get(event.session_id, 0) + 1
                    last[event.session_id] = event.seq
                    data = event.SerializeToString()
                    rows.append((event.session_id, event.seq, event.turn_id, data))
                db.executemany(
                    "INSERT INTO events (session_id, seq, turn_id, data) VALUES (?,?,?,?)", rows
                )
                sql, firsts = sql_parts.first_seqs(kept, "?")
                if firsts:
                    db.executemany(sql, firsts)
        except BaseException:
            for event in events:
                event.seq = 0
            raise
        return lost

    async def read_events(self, session_id: str, *, after_seq: int, limit: int) -> list[EventRow]:
        rows = await self._fetch(
            "SELECT seq, turn_id, data FROM events WHERE session_id = ? AND seq > ?"
            " ORDER BY seq LIMIT ?",
            (session_id, after_seq, limit),
        )
        return [EventRow(session_id, row[0], row[1], row[2]) for row in rows]

    async def last_event_of_turn(self, session_id: str, turn_id: str) -> EventRow | None:
        # The key is walked from the session's newest event back: a turn being looked at
        # is its session's latest, so this stops after a few rows.
        rows = await self._fetch(
            "SELECT seq, data FROM events WHERE session_id = ? AND turn_id = ?"
            " ORDER BY seq DESC LIMIT 1",
            (session_id, turn_id),
        )
        return EventRow(session_id, rows[0][0], turn_id, rows[0][1]) if rows else None

    async def last_seqs(self, session_ids: Sequence[str]) -> dict[str, int]:
        marks = ",".join("?" * len(session_ids))
        rows = await self._fetch(
            f"SELECT session_id, MAX(seq) FROM events WHERE session_id IN ({marks})"
            " GROUP BY session_id",
            list(session_ids),
        )
        return {row[0]: row[1] for row in rows}

    async def changes(self) -> AsyncIterator[Changes]:
        # One process owns the file: its own appends reach its readers directly.
        await asyncio.Event().wait()
        yield Changes()  # pragma: no cover - never reached

    # Pending requests

    async def put_pending(self, recs: Sequence[PendingRecord]) -> None:
        # A request id the session used before replaces that (resolved) request: ids are the
        # model's tool-call ids, and some servers count them from 0 in every response.
        await self._execute_many(
            f"INSERT INTO pending ({_PENDING_COLUMNS}) VALUES (?,?,?,?,?,?)"
            " ON CONFLICT (session_id, request_id) DO UPDATE SET turn_id = excluded.turn_id,"
            " event = excluded.event, expires = excluded.expires,"
            " resolution = excluded.resolution, resolve_time = NULL",
            [astuple(r) for r in recs],
        )

    async def stamp_pending(self, session_id: str, request_id: str, event: bytes) -> None:
        await self._execute(
            "UPDATE pending SET event = ? WHERE session_id = ? AND request_id = ?",
            (event, session_id, request_id),
        )

    async def list_pending(
        self,
        session_id: str,
        *,
        turn_id: str | None = None,
        request_id: str | None = None,
        open_only: bool = True,
    ) -> list[PendingRecord]:
        sql = f"SELECT {_PENDING_COLUMNS} FROM pending WHERE session_id = ?"
        args: list[object] = [session_id]
        if turn_id is not None:
            sql += " AND turn_id = ?"
            args.append(turn_id)
        if request_id is not None:
            sql += " AND request_id = ?"
            args.append(request_id)
        if open_only:
            sql += " AND resolution IS NULL"
        return [_pending(row) for row in await self._fetch(sql, args)]

    async def resolve_pending(self, session_id: str, request_id: str, resolution: str) -> bool:
        changed = await self._execute(
            "UPDATE pending SET resolution = ?, resolve_time = ?"
            " WHERE session_id = ? AND request_id = ? AND resolution IS NULL",
            (resolution, time.time(), session_id, request_id),
        )
        return changed == 1

    # Usage ledger

    async def add_ledger(self, row: LedgerRow) -> None:
        await self._execute(
            f"INSERT INTO ledger ({_LEDGER_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            astuple(row),
        )

    async def ledger(self, session_id: str) -> list[LedgerRow]:
        rows = await self._fetch(
            f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        return [_ledger(row) for row in rows]

    async def usage_totals(self, session_id: str) -> UsageTotals:
        (r,) = await self._fetch(
            "SELECT COUNT(*), COALESCE(SUM(input), 0), COALESCE(SUM(cached), 0),"
            " COALESCE(SUM(cache_write), 0), COALESCE(SUM(output), 0), TOTAL(cost_usd),"
            " COALESCE(MIN(priced), 1), COALESCE(SUM(search_queries), 0),"
            " TOTAL(search_cost_usd),"
            " (SELECT input FROM ledger"
            "  WHERE session_id = ?1 ORDER BY id DESC LIMIT 1),"
            " COALESCE(MAX(tokens_unknown), 0)"
            " FROM ledger WHERE session_id = ?1",
            (session_id,),
        )
        return UsageTotals(
            calls=r[0],
            input=r[1],
            cached=r[2],
            cache_write=r[3],
            output=r[4],
            cost_usd=r[5],
            priced=bool(r[6]),
            search_queries=r[7],
            search_cost_usd=r[8],
            last_prompt=r[9] or 0,
            tokens_unknown=bool(r[10]),
        )

    # Approval rules

    async def add_rule(self, rule: RuleRecord) -> None:
        await self._execute(
            f"INSERT INTO rules ({_RULE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)", astuple(rule)
        )

    async def rules_for(self, *, session_id: str, caller: str) -> list[RuleRecord]:
        rows = await self._fetch(
            f"SELECT {_RULE_COLUMNS} FROM rules WHERE (scope = 1 AND session_id = ?)"
            " OR (scope = 2 AND caller = ?) ORDER BY create_time, id",
            (session_id, caller),
        )
        return [RuleRecord(*row) for row in rows]

    async def delete_rule(self, rule_id: str) -> bool:
        return await self._execute("DELETE FROM rules WHERE id = ?", (rule_id,)) == 1

    # Images

    async def add_image(self, image: ImageRecord) -> None:
        await self._execute(
            f"INSERT INTO images ({_IMAGE_COLUMNS}) VALUES (?,?,?,?,?)", astuple(image)
        )

    async def get_image(self, session_id: str, image_id: str) -> ImageRecord | None:
        rows = await self._fetch(
            f"SELECT {_IMAGE_COLUMNS} FROM images WHERE session_id = ? AND id = ?",
            (session_id, image_id),
        )
        return ImageRecord(*rows[0]) if rows else None

    # Bearer tokens

    async def add_token(self, token: TokenRecord) -> None:
        await self._execute(
            f"INSERT INTO tokens ({_TOKEN_COLUMNS}) VALUES (?,?,?,?,?,?)", astuple(token)
        )

    async def find_token(self, hash: str) -> TokenRecord | None:
        rows = await self._fetch(f"SELECT {_TOKEN_COLUMNS} FROM tokens WHERE hash = ?", (hash,))
        return _token(rows[0]) if rows else None

    async def list_tokens(self) -> list[TokenRecord]:
        rows = await self._fetch(f"SELECT {_TOKEN_COLUMNS} FROM tokens ORDER BY create_time, id")
        return [_token(row) for row in rows]

    async def revoke_tokens(self, id_or_name: str, *, now: float) -> int:
        return await self._execute(
            "UPDATE tokens SET revoke_time = ? WHERE (id = ? OR name = ?) AND revoke_time IS NULL",
            (now, id_or_name, id_or_name),
        )

    async def ping(self) -> None:
        await self._fetch("SELECT 1")

    # Agent state

    async def get_history(self, session_id: str) -> bytes | None:
        rows = await self._fetch(
            "SELECT history FROM histories WHERE session_id = ?", (session_id,)
        )
        return rows[0][0] if rows else None

    async def set_history(self, session_id: str, history: bytes) -> None:
        await self._execute(
            "INSERT INTO histories (session_id, history) VALUES (?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET history = excluded.history",
            (session_id, history),
        )

    async def keep_turn_history(self, session_id: str, turn_id: str, *, newest: int) -> None:
        await self._sql.call(self._keep_turn_history, session_id, turn_id, newest)

    def _keep_turn_history(self, session_id: str, turn_id: str, newest: int) -> None:
        db = self._sql.db
        with transaction(db):
            db.execute(
                "INSERT INTO turn_histories (session_id, turn_id, history)"
                " VALUES (?, ?, COALESCE("
                "  (SELECT history FROM histories WHERE session_id = ?), x''))"
                " ON CONFLICT (session_id, turn_id)"
                " DO UPDATE SET history = excluded.history",
                (session_id, turn_id, session_id),
            )
            db.execute(older_turn_histories("?"), (session_id, session_id, newest))

    async def get_turn_history(self, session_id: str, turn_id: str) -> bytes | None:
        rows = await self._fetch(
            "SELECT history FROM turn_histories WHERE session_id = ? AND turn_id = ?",
            (session_id, turn_id),
        )
        return rows[0][0] if rows else None

    # Workspace files as they were

    async def keep_original(self, original: FileOriginal) -> bool:
        stored = await self._execute(
            "INSERT INTO file_originals (session_id, path, content) VALUES (?, ?, ?)"
            " ON CONFLICT (session_id, path) DO NOTHING",
            (original.session_id, original.path, original.content),
        )
        return stored == 1

    async def originals(self, session_id: str) -> list[FileOriginal]:
        rows = await self._fetch(
            "SELECT path, content FROM file_originals WHERE session_id = ? ORDER BY path",
            (session_id,),
        )
        return [
            FileOriginal(session_id, path, None if content is None else bytes(content))
            for path, content in rows
        ]
