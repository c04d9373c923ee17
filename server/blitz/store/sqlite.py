"""The SQLite engine: one file, WAL, a versioned schema. The zero-set-up default.

One connection serves the whole process (aiosqlite runs it on its own thread), so every
method is naturally serialised; each commits before it returns. Never hold a transaction
open across an await of anything but this connection, and close every cursor (`_exec`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import aiosqlite

from blitz.store.records import (
    EventRow,
    ImageRecord,
    LedgerRow,
    PendingRecord,
    RuleRecord,
    SessionRecord,
    TurnRecord,
    UsageTotals,
)

__all__ = ["SqliteStore"]

# Each entry moves the schema one version up; never edit a released entry, append one.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        title TEXT NOT NULL,
        workspace TEXT NOT NULL,
        model TEXT NOT NULL,
        labels TEXT NOT NULL,
        state INTEGER NOT NULL,
        create_time REAL NOT NULL,
        update_time REAL NOT NULL,
        turn_id TEXT NOT NULL DEFAULT '',
        history BLOB
    );
    CREATE INDEX sessions_by_owner ON sessions (owner, create_time DESC, id DESC);
    CREATE TABLE turns (
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        state TEXT NOT NULL,
        turn BLOB NOT NULL,
        create_time REAL NOT NULL,
        deadline REAL,
        first_seq INTEGER NOT NULL,
        model_calls INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        steer TEXT NOT NULL,
        history BLOB,
        usage_before BLOB NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    ) WITHOUT ROWID;
    CREATE INDEX turns_by_state ON turns (state);
    CREATE TABLE events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        turn_id TEXT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE pending (
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        event BLOB NOT NULL,
        expires REAL,
        resolution TEXT,
        PRIMARY KEY (session_id, request_id)
    ) WITHOUT ROWID;
    CREATE TABLE ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        model TEXT NOT NULL,
        input INTEGER NOT NULL,
        cached INTEGER NOT NULL,
        cache_write INTEGER NOT NULL,
        output INTEGER NOT NULL,
        cost_usd REAL NOT NULL,
        priced INTEGER NOT NULL,
        search_queries INTEGER NOT NULL,
        search_cost_usd REAL NOT NULL,
        time REAL NOT NULL
    );
    CREATE INDEX ledger_by_session ON ledger (session_id, id);
    """,
    """
    ALTER TABLE sessions ADD COLUMN approval_timeout REAL;
    CREATE TABLE rules (
        id TEXT PRIMARY KEY,
        scope INTEGER NOT NULL,
        kind INTEGER NOT NULL,
        scope_label TEXT NOT NULL,
        session_id TEXT NOT NULL,
        workspace TEXT NOT NULL,
        caller TEXT NOT NULL,
        create_time REAL NOT NULL,
        request_id TEXT NOT NULL
    );
    CREATE INDEX rules_by_session ON rules (session_id);
    CREATE INDEX rules_by_workspace ON rules (caller, workspace);
    """,
    """
    ALTER TABLE sessions ADD COLUMN tasks BLOB;
    ALTER TABLE sessions ADD COLUMN plan BLOB;
    CREATE TABLE images (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        media_type TEXT NOT NULL,
        data BLOB NOT NULL,
        create_time REAL NOT NULL
    );
    CREATE INDEX images_by_session ON images (session_id);
    """,
]

_SESSION_COLUMNS = (
    "id, owner, title, workspace, model, labels, state, create_time, update_time, turn_id,"
    " approval_timeout"
)
_RULE_COLUMNS = (
    "id, scope, kind, scope_label, session_id, workspace, caller, create_time, request_id"
)
_TURN_COLUMNS = (
    "session_id, turn_id, state, turn, create_time, deadline, first_seq, model_calls,"
    " cost_usd, steer, history, usage_before"
)
_LEDGER_COLUMNS = (
    "session_id, turn_id, model, input, cached, cache_write, output, cost_usd, priced,"
    " search_queries, search_cost_usd, time"
)


async def _exec(db: aiosqlite.Connection, sql: str, params: Sequence[object] = ()) -> int:
    """Run one statement; returns the number of rows it changed.

    Every cursor is closed here, on the connection's thread. One left to the garbage
    collector is reset from the event loop's thread instead, racing the connection's next
    statement: "bad parameter or other API misuse" under load.
    """
    async with db.execute(sql, params) as cur:
        return cur.rowcount


async def _exec_many(db: aiosqlite.Connection, sql: str, rows: Sequence[Sequence[object]]) -> None:
    """Run one statement for each of `rows`; the cursor is closed as `_exec`'s is."""
    async with db.executemany(sql, rows):
        pass


def _session(row: aiosqlite.Row) -> SessionRecord:
    return SessionRecord(
        id=row[0],
        owner=row[1],
        title=row[2],
        workspace=row[3],
        model=row[4],
        labels=json.loads(row[5]),
        state=row[6],
        create_time=row[7],
        update_time=row[8],
        turn_id=row[9],
        approval_timeout=row[10],
    )


def _turn(row: aiosqlite.Row) -> TurnRecord:
    return TurnRecord(
        session_id=row[0],
        turn_id=row[1],
        state=row[2],
        turn=row[3],
        create_time=row[4],
        deadline=row[5],
        first_seq=row[6],
        model_calls=row[7],
        cost_usd=row[8],
        steer=json.loads(row[9]),
        history=row[10],
        usage_before=row[11],
    )


def _pending(row: aiosqlite.Row) -> PendingRecord:
    return PendingRecord(
        session_id=row[0],
        request_id=row[1],
        turn_id=row[2],
        event=row[3],
        expires=row[4],
        resolution=row[5],
    )


class SqliteStore:
    """`async with SqliteStore(path) as store:` — opens, migrates, closes."""

    def __init__(self, path: str | Path) -> None:
        self._path = str(path)
        self._db: aiosqlite.Connection | None = None

    async def __aenter__(self) -> SqliteStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self) -> None:
        if self._path != ":memory:":
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
        db = await aiosqlite.connect(self._path, isolation_level=None)
        try:
            await _exec(db, "PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode loses no committed transaction on a process crash (only
            # on power loss), and is several times faster than FULL.
            await _exec(db, "PRAGMA synchronous=NORMAL")
            await _exec(db, "PRAGMA busy_timeout=5000")
            await self._migrate(db)
        except BaseException:
            await db.close()
            raise
        self._db = db

    async def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    @property
    def db(self) -> aiosqlite.Connection:
        if self._db is None:
            raise RuntimeError("store is not open")
        return self._db

    async def _migrate(self, db: aiosqlite.Connection) -> None:
        async with db.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        version = row[0] if row else 0
        if version > len(MIGRATIONS):
            raise RuntimeError(
                f"database schema version {version} is newer than this server knows "
                f"({len(MIGRATIONS)}); upgrade the server"
            )
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            async with db.executescript(
                f"BEGIN; {script}; PRAGMA user_version = {number}; COMMIT;"
            ):
                pass

    # Sessions

    async def create_session(self, rec: SessionRecord) -> None:
        await _exec(
            self.db,
            f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
            ),
        )

    async def get_session(self, session_id: str) -> SessionRecord | None:
        async with self.db.execute(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        ) as cur:
            row = await cur.fetchone()
        return _session(row) if row else None

    async def list_sessions(
        self,
        *,
        owner: str,
        state: int,
        labels: dict[str, str],
        limit: int,
        before: tuple[float, str] | None,
    ) -> list[SessionRecord]:
        where = ["owner = ?"]
        args: list[object] = [owner]
        if state:
            where.append("state = ?")
            args.append(state)
        if before is not None:
            where.append("(create_time < ? OR (create_time = ? AND id < ?))")
            args += [before[0], before[0], before[1]]
        for key, value in labels.items():
            where.append("json_extract(labels, ?) = ?")
            args += [f'$."{key}"', value]
        sql = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(where)}"
            " ORDER BY create_time DESC, id DESC LIMIT ?"
        )
        async with self.db.execute(sql, (*args, limit)) as cur:
            return [_session(row) for row in await cur.fetchall()]

    async def set_session_state(
        self, session_id: str, *, state: int, turn_id: str, now: float
    ) -> None:
        await _exec(
            self.db,
            "UPDATE sessions SET state = ?, turn_id = ?, update_time = ? WHERE id = ?",
            (state, turn_id, now, session_id),
        )

    async def set_session_model(self, session_id: str, model: str) -> None:
        await _exec(self.db, "UPDATE sessions SET model = ? WHERE id = ?", (model, session_id))

    # Turns

    async def create_turn(self, rec: TurnRecord) -> None:
        await _exec(
            self.db,
            f"INSERT INTO turns ({_TURN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                rec.session_id,
                rec.turn_id,
                rec.state,
                rec.turn,
                rec.create_time,
                rec.deadline,
                rec.first_seq,
                rec.model_calls,
                rec.cost_usd,
                json.dumps(rec.steer),
                rec.history,
                rec.usage_before,
            ),
        )

    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None:
        async with self.db.execute(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE session_id = ? AND turn_id = ?",
            (session_id, turn_id),
        ) as cur:
            row = await cur.fetchone()
        return _turn(row) if row else None

    async def update_turn(self, rec: TurnRecord) -> None:
        await _exec(
            self.db,
            "UPDATE turns SET state = ?, first_seq = ?, model_calls = ?, cost_usd = ?,"
            " steer = ?, history = ? WHERE session_id = ? AND turn_id = ?",
            (
                rec.state,
                rec.first_seq,
                rec.model_calls,
                rec.cost_usd,
                json.dumps(rec.steer),
                rec.history,
                rec.session_id,
                rec.turn_id,
            ),
        )

    async def set_turn_state(
        self, session_id: str, turn_id: str, *, state: str, expect: str
    ) -> bool:
        changed = await _exec(
            self.db,
            "UPDATE turns SET state = ? WHERE session_id = ? AND turn_id = ? AND state = ?",
            (state, session_id, turn_id, expect),
        )
        return changed == 1

    async def turns_in_state(self, state: str) -> list[TurnRecord]:
        async with self.db.execute(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE state = ?", (state,)
        ) as cur:
            return [_turn(row) for row in await cur.fetchall()]

    # Events

    async def append_events(self, rows: Sequence[EventRow]) -> None:
        db = self.db
        await _exec(db, "BEGIN")
        try:
            await _exec_many(
                db,
                "INSERT INTO events (session_id, seq, turn_id, data) VALUES (?,?,?,?)",
                [(r.session_id, r.seq, r.turn_id, r.data) for r in rows],
            )
        except BaseException:
            await _exec(db, "ROLLBACK")
            raise
        await _exec(db, "COMMIT")

    async def read_events(self, session_id: str, *, after_seq: int, limit: int) -> list[EventRow]:
        async with self.db.execute(
            "SELECT seq, turn_id, data FROM events WHERE session_id = ? AND seq > ?"
            " ORDER BY seq LIMIT ?",
            (session_id, after_seq, limit),
        ) as cur:
            return [EventRow(session_id, row[0], row[1], row[2]) for row in await cur.fetchall()]

    async def last_seq(self, session_id: str) -> int:
        async with self.db.execute(
            "SELECT MAX(seq) FROM events WHERE session_id = ?", (session_id,)
        ) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    async def last_event_of_turn(self, session_id: str, turn_id: str) -> EventRow | None:
        # The key is walked from the session's newest event back: a turn being looked at
        # is its session's latest, so this stops after a few rows.
        async with self.db.execute(
            "SELECT seq, data FROM events WHERE session_id = ? AND turn_id = ?"
            " ORDER BY seq DESC LIMIT 1",
            (session_id, turn_id),
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else EventRow(session_id, row[0], turn_id, row[1])

    # Pending requests

    async def add_pending(self, recs: Sequence[PendingRecord]) -> None:
        # A request id the session used before replaces that (resolved) request: ids are the
        # model's tool-call ids, and some servers count them from 0 in every response.
        await _exec_many(
            self.db,
            "INSERT INTO pending (session_id, request_id, turn_id, event, expires, resolution)"
            " VALUES (?,?,?,?,?,?) ON CONFLICT (session_id, request_id) DO UPDATE SET"
            " turn_id = excluded.turn_id, event = excluded.event, expires = excluded.expires,"
            " resolution = excluded.resolution",
            [
                (r.session_id, r.request_id, r.turn_id, r.event, r.expires, r.resolution)
                for r in recs
            ],
        )

    async def get_pending(self, session_id: str, request_id: str) -> PendingRecord | None:
        async with self.db.execute(
            "SELECT session_id, request_id, turn_id, event, expires, resolution FROM pending"
            " WHERE session_id = ? AND request_id = ?",
            (session_id, request_id),
        ) as cur:
            row = await cur.fetchone()
        return _pending(row) if row else None

    async def list_pending(
        self, session_id: str, *, turn_id: str | None = None, open_only: bool = True
    ) -> list[PendingRecord]:
        sql = (
            "SELECT session_id, request_id, turn_id, event, expires, resolution FROM pending"
            " WHERE session_id = ?"
        )
        args: list[object] = [session_id]
        if turn_id is not None:
            sql += " AND turn_id = ?"
            args.append(turn_id)
        if open_only:
            sql += " AND resolution IS NULL"
        async with self.db.execute(sql, args) as cur:
            return [_pending(row) for row in await cur.fetchall()]

    async def set_pending_event(self, session_id: str, request_id: str, event: bytes) -> None:
        await _exec(
            self.db,
            "UPDATE pending SET event = ? WHERE session_id = ? AND request_id = ?",
            (event, session_id, request_id),
        )

    async def resolve_pending(self, session_id: str, request_id: str, resolution: str) -> bool:
        changed = await _exec(
            self.db,
            "UPDATE pending SET resolution = ?"
            " WHERE session_id = ? AND request_id = ? AND resolution IS NULL",
            (resolution, session_id, request_id),
        )
        return changed == 1

    # Usage ledger

    async def add_ledger(self, row: LedgerRow) -> None:
        await _exec(
            self.db,
            f"INSERT INTO ledger ({_LEDGER_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                row.session_id,
                row.turn_id,
                row.model,
                row.input,
                row.cached,
                row.cache_write,
                row.output,
                row.cost_usd,
                int(row.priced),
                row.search_queries,
                row.search_cost_usd,
                row.time,
            ),
        )

    async def ledger(self, session_id: str) -> list[LedgerRow]:
        async with self.db.execute(
            f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE session_id = ? ORDER BY id",
            (session_id,),
        ) as cur:
            rows = await cur.fetchall()
        return [
            LedgerRow(
                session_id=r[0],
                turn_id=r[1],
                model=r[2],
                input=r[3],
                cached=r[4],
                cache_write=r[5],
                output=r[6],
                cost_usd=r[7],
                priced=bool(r[8]),
                search_queries=r[9],
                search_cost_usd=r[10],
                time=r[11],
            )
            for r in rows
        ]

    async def usage_totals(self, session_id: str) -> UsageTotals:
        async with self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(input), 0), COALESCE(SUM(cached), 0),"
            " COALESCE(SUM(cache_write), 0), COALESCE(SUM(output), 0), TOTAL(cost_usd),"
            " COALESCE(MIN(priced), 1), COALESCE(SUM(search_queries), 0),"
            " TOTAL(search_cost_usd),"
            " (SELECT input + cached + cache_write FROM ledger"
            "  WHERE session_id = ?1 ORDER BY id DESC LIMIT 1)"
            " FROM ledger WHERE session_id = ?1",
            (session_id,),
        ) as cur:
            r = await cur.fetchone()
        assert r is not None  # an aggregate always has a row
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
        )

    # Approval rules

    async def add_rule(self, rule: RuleRecord) -> None:
        await _exec(
            self.db,
            f"INSERT INTO rules ({_RULE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                rule.id,
                rule.scope,
                rule.kind,
                rule.scope_label,
                rule.session_id,
                rule.workspace,
                rule.caller,
                rule.create_time,
                rule.request_id,
            ),
        )

    async def rules_for(self, *, session_id: str, workspace: str, caller: str) -> list[RuleRecord]:
        async with self.db.execute(
            f"SELECT {_RULE_COLUMNS} FROM rules WHERE (scope = 1 AND session_id = ?)"
            " OR (scope = 2 AND workspace = ? AND caller = ?) ORDER BY create_time, id",
            (session_id, workspace, caller),
        ) as cur:
            return [RuleRecord(*row) for row in await cur.fetchall()]

    async def delete_rule(self, rule_id: str) -> bool:
        changed = await _exec(self.db, "DELETE FROM rules WHERE id = ?", (rule_id,))
        return changed == 1

    # Session notes: the task list, the proposed plan

    async def set_tasks(self, session_id: str, tasks: bytes) -> None:
        await _exec(self.db, "UPDATE sessions SET tasks = ? WHERE id = ?", (tasks, session_id))

    async def get_tasks(self, session_id: str) -> bytes | None:
        return await self._column("tasks", session_id)

    async def set_plan(self, session_id: str, plan: bytes | None) -> None:
        await _exec(self.db, "UPDATE sessions SET plan = ? WHERE id = ?", (plan, session_id))

    async def get_plan(self, session_id: str) -> bytes | None:
        return await self._column("plan", session_id)

    async def _column(self, column: str, session_id: str) -> bytes | None:
        async with self.db.execute(
            f"SELECT {column} FROM sessions WHERE id = ?", (session_id,)
        ) as cur:
            row = await cur.fetchone()
        return row[0] if row else None

    # Images

    async def add_image(self, image: ImageRecord) -> None:
        await _exec(
            self.db,
            "INSERT INTO images (id, session_id, media_type, data, create_time) VALUES (?,?,?,?,?)",
            (image.id, image.session_id, image.media_type, image.data, image.create_time),
        )

    async def get_image(self, session_id: str, image_id: str) -> ImageRecord | None:
        async with self.db.execute(
            "SELECT id, session_id, media_type, data, create_time FROM images"
            " WHERE session_id = ? AND id = ?",
            (session_id, image_id),
        ) as cur:
            row = await cur.fetchone()
        return ImageRecord(*row) if row else None

    # Agent state

    async def get_history(self, session_id: str) -> bytes | None:
        return await self._column("history", session_id)

    async def set_history(self, session_id: str, history: bytes) -> None:
        await _exec(self.db, "UPDATE sessions SET history = ? WHERE id = ?", (history, session_id))
